"""transform_layout(pad_value=...): a padded layout's padding gets the value, in a block of its own."""

import numpy as np
import pytest

import minitvm
from minitvm import tir
from minitvm.script import tir as T


@T.prim_func
def doubled(A: T.Buffer((14,), "float32"), B: T.Buffer((14,), "float32")):
    for i in range(14):
        with T.block("B"):
            vi = T.axis.spatial(14, i)
            B[vi] = A[vi] * T.float32(2)


def _run(func, shape_b, seed=5):
    a = np.random.default_rng(seed).standard_normal(14).astype("float32")
    b = minitvm.nd.array(np.zeros(shape_b, "float32"))
    minitvm.build(func)[func.attrs["global_symbol"]](minitvm.nd.array(a), b)
    return a, b.numpy().reshape(-1)


@pytest.mark.parametrize("pad_value", [-1.5, -1.0, lambda i, j: T.Cast("float32", i * 4 + j)])
def test_a_row_major_writer_stores_the_pad_value_itself(pad_value, trace_replays):
    sch = tir.Schedule(doubled)
    sch.transform_layout("B", ("write", 0), lambda i: [i // 4, i % 4], pad_value=pad_value)
    func = sch.mod["main"]
    # TVM's form: the writer runs over the new layout and chooses with T.if_then_else
    assert "T.if_then_else(v0 == 3 and 2 <= v1" in func.script()
    assert [iv.dom.extent.value for iv in sch.get(sch.get_block("B")).iter_vars] == [4, 4]
    if not callable(pad_value):
        trace_replays(sch, doubled)
    a, got = _run(func, (4, 4))
    np.testing.assert_allclose(got[:14], a * 2, rtol=1e-6)
    want_pad = [pad_value] * 2 if not callable(pad_value) else [14.0, 15.0]
    np.testing.assert_array_equal(got[14:], want_pad)


@T.prim_func
def doubled_and_counted(A: T.Buffer((14,), "float32"), B: T.Buffer((14,), "float32"),
                        C: T.Buffer((14,), "float32")):
    for i in range(14):
        with T.block("B"):
            vi = T.axis.spatial(14, i)
            B[vi] = A[vi] * T.float32(2)
            C[vi] = T.float32(1)


def test_a_writer_with_other_effects_gets_a_padding_block_after_it(trace_replays):
    sch = tir.Schedule(doubled_and_counted)
    sch.transform_layout("B", ("write", 0), lambda i: [i // 4, i % 4], pad_value=-1.5)
    func = sch.mod["main"]
    pad = sch.get(sch.get_block("buffer_B_padding"))
    assert [iv.dom.extent.value for iv in pad.iter_vars] == [4, 4]
    assert "T.where(i == 3 and 2 <= j)" in func.script()  # only the last row's tail is padding
    trace_replays(sch, doubled_and_counted)
    a = np.random.default_rng(5).standard_normal(14).astype("float32")
    b, c = minitvm.nd.array(np.zeros((4, 4), "float32")), minitvm.nd.array(np.zeros(14, "float32"))
    minitvm.build(func)["doubled_and_counted"](minitvm.nd.array(a), b, c)
    got = b.numpy().reshape(-1)
    np.testing.assert_allclose(got[:14], a * 2, rtol=1e-6)
    np.testing.assert_array_equal(got[14:], [-1.5, -1.5])
    np.testing.assert_array_equal(c.numpy(), np.ones(14, "float32"))


def test_padding_an_input_no_block_writes_is_refused():
    sch = tir.Schedule(doubled)
    with pytest.raises(NotImplementedError, match="no block writes"):
        sch.transform_layout("B", ("read", 0), lambda i: [i // 4, i % 4], pad_value=0.0)


@T.prim_func
def rows(A: T.Buffer((6, 8), "float32"), B: T.Buffer((6, 8), "float32")):
    for i, j in T.grid(6, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + T.float32(1)


def test_padding_whole_rows(trace_replays):
    sch = tir.Schedule(rows)
    sch.transform_layout("B", ("write", 0), lambda i, j: [i // 4, i % 4, j], pad_value=7.0)
    trace_replays(sch, rows)
    a = np.random.default_rng(6).standard_normal((6, 8)).astype("float32")
    b = minitvm.nd.array(np.zeros((2, 4, 8), "float32"))
    minitvm.build(sch.mod["main"])["rows"](minitvm.nd.array(a), b)
    got = b.numpy().reshape(8, 8)
    np.testing.assert_allclose(got[:6], a + 1, rtol=1e-6)
    np.testing.assert_array_equal(got[6:], np.full((2, 8), 7.0, "float32"))
