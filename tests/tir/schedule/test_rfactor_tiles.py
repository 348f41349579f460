"""rfactor as TVM lays it out: partial sums in a copy of the loop nest, the final reduction in
the original loops; negative factor axes; a whole reduction rfactored into plain stores; the
loops it refuses (two blocks, a guard over dropped loops, a loop the reduction does not use)
and the split guard it keeps."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import tir
from minitvm.script import tir as T
from minitvm.testing.programs import softmax


@T.prim_func
def row_dot(x: T.Buffer((1, 64), "float32"), W: T.Buffer((32, 64), "float32"), Y: T.Buffer((1, 32), "float32")):
    for i, j, k in T.grid(1, 32, 64):
        with T.block("Y"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                Y[vi, vj] = T.float32(0)
            Y[vi, vj] = Y[vi, vj] + x[vi, vk] * W[vj, vk]


def test_rfactor_under_a_spatial_tile_loop_writes_back_only_that_tile():
    sch = tir.Schedule(row_dot)
    i, j, k = sch.get_loops(sch.get_block("Y"))
    k0, k1 = sch.split(k, [None, 16])
    j0, j1 = sch.split(j, [None, 4])
    sch.reorder(i, j0, k0, j1, k1)  # j1 (spatial) sits between the reduction loops k0 and k1
    sch.rfactor(k1, 2)
    text = sch.mod.script()
    # as TVM: the partial sums run in a copy of the whole nest; the write-back keeps the
    # original loops except the other reduction loop k_0 (j_1 stays, so each tile is combined)
    assert "for i, j_0, j_1, k_1 in T.grid(1, 8, 4, 16):" in text, text
    assert text.count("for i, j_0, k_0, j_1, k_1 in T.grid(1, 8, 4, 4, 16):") == 1, text
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((1, 64)).astype("float32"), rng.standard_normal((32, 64)).astype("float32")
    for target in ("llvm", "python"):
        out = minitvm.nd.array(np.full((1, 32), np.nan, "float32"))
        minitvm.build(sch.mod, target=target)["row_dot"](minitvm.nd.array(x), minitvm.nd.array(w), out)
        np.testing.assert_allclose(out.numpy(), x @ w.T, rtol=1e-5, atol=1e-5)


@T.prim_func
def col_sums(A: T.Buffer((64, 16), "float32"), B: T.Buffer((16,), "float32")):
    for k, j in T.grid(64, 16):
        with T.block("B"):
            vk, vj = T.axis.remap("RS", [k, j])
            with T.init():
                B[vj] = T.float32(0)
            B[vj] = B[vj] + A[vk, vj]


def test_rfactor_negative_axis_counts_from_the_end(same_numbers):
    sch = tir.Schedule(col_sums)
    k, _ = sch.get_loops("B")
    k0, k1 = sch.split(k, [None, 8])
    rf = sch.rfactor(k1, -1)  # -1: the new axis goes last, as TVM
    write = sch.get(rf).writes[0]
    assert [int(s) for s in write.buffer.shape] == [16, 8]
    same_numbers(col_sums, sch.mod)


def test_rfactor_of_the_whole_reduction_stores_partials():
    sch = tir.Schedule(col_sums)
    k, _ = sch.get_loops("B")
    rf = sch.rfactor(k, 0)
    block = sch.get(rf)
    # no reduction iterator is left in the rfactor block: each partial is a plain store
    assert block.init is None and all(iv.iter_type == "spatial" for iv in block.iter_vars)
    rng = np.random.default_rng(11)
    a = rng.standard_normal((64, 16)).astype("float32")
    out = minitvm.nd.array(np.full((16,), np.nan, "float32"))
    minitvm.build(sch.mod)["col_sums"](minitvm.nd.array(a), out)
    np.testing.assert_allclose(out.numpy(), a.sum(axis=0), rtol=1e-5, atol=1e-5)


def _softmax_with_sum_under_norm():
    """softmax with the row sum moved under the normalizing block's column loop j."""
    sch = tir.Schedule(softmax)
    sch.compute_at(sch.get_block("sum"), sch.get_loops("out")[1])
    return sch


@pytest.mark.parametrize("at", [0, 1], ids=["i", "j"])
def test_rfactor_of_a_loop_holding_two_blocks_is_refused(at):
    # the loop j holds the row sum and the block reading it: rfactor of j was accepted and the
    # softmax was off by up to 0.29. TVM refuses it (the loop must have only one child block).
    sch = _softmax_with_sum_under_norm()
    loop = sch.get_loops("sum")[at]
    before = sch.mod
    with pytest.raises(tir.ScheduleError) as err:
        sch.rfactor(loop, 0)
    name = "ij"[at]
    assert f"cannot rfactor at loop {name}: the loop is required to have only one child block" in str(err.value)
    assert "holds 2: sum, out" in str(err.value)
    assert sch.mod is before


def test_rfactor_of_the_reduction_loop_inside_the_shared_loop_keeps_the_numbers():
    sch = _softmax_with_sum_under_norm()
    sch.rfactor(sch.get_loops("sum")[2], 0)  # ax0 holds the row sum alone: legal
    a = np.random.default_rng(5).standard_normal((4, 16)).astype("float32")
    e = np.exp(a - a.max(axis=1, keepdims=True))
    for target in ("llvm", "python"):
        out = minitvm.nd.array(np.full((4, 16), np.nan, "float32"))
        minitvm.build(sch.mod, target=target)["softmax"](minitvm.nd.array(a), out)
        np.testing.assert_allclose(out.numpy(), e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("factors", [[None, 5], [5, None], [None, 3, 2]])
def test_rfactor_after_a_non_dividing_spatial_split_keeps_the_guard(factors):
    # The split of j (16 columns) leaves a guard such as `j_0 * 5 + j_1 < 16`; the write-back block
    # lost it and the build refused the out-of-bounds columns (TVM drops it too, and writes past
    # B's end).
    sch = tir.Schedule(col_sums)
    _, j = sch.get_loops("B")
    sch.split(j, factors)
    sch.rfactor(sch.get_loops("B")[0], 0)
    guards = [line for line in sch.mod.script().splitlines() if "T.where(" in line]
    assert len(guards) == 2, sch.mod.script()  # the rfactor block's and the write-back block's
    a = np.random.default_rng(9).standard_normal((64, 16)).astype("float32")
    for target in ("llvm", "python"):
        out = minitvm.nd.array(np.full(16, np.nan, "float32"))
        minitvm.build(sch.mod, target=target)["col_sums"](minitvm.nd.array(a), out)
        np.testing.assert_allclose(out.numpy(), a.sum(axis=0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("factors,at", [([None, 5], 0), ([None, 5], 1), ([None, 5, 4], 1)])
def test_rfactor_after_a_non_dividing_reduction_split_keeps_the_numbers(factors, at):
    # The guard `k_0 * 5 + k_1 < 64` uses a loop the final reduction drops, and lets every partial
    # result through at that loop's first iteration: each partial is initialized there, so the
    # write-back combines all of them, unguarded (a row of 197 in 8 partial sums is this case).
    sch = tir.Schedule(col_sums)
    k, _ = sch.get_loops("B")
    sch.split(k, factors)
    sch.rfactor(sch.get_loops("B")[at], 0)
    guards = [line for line in sch.mod.script().splitlines() if "T.where(" in line]
    assert len(guards) == 1, sch.mod.script()  # the rfactor block's
    a = np.random.default_rng(3).standard_normal((64, 16)).astype("float32")
    for target in ("llvm", "python"):
        out = minitvm.nd.array(np.full(16, np.nan, "float32"))
        minitvm.build(sch.mod, target=target)["col_sums"](minitvm.nd.array(a), out)
        np.testing.assert_allclose(out.numpy(), a.sum(axis=0), rtol=1e-5, atol=1e-5)


@T.prim_func
def col_sums_of_10(A: T.Buffer((10, 4), "float32"), B: T.Buffer((4,), "float32")):
    for k, j in T.grid(10, 4):
        with T.block("B"):
            vk, vj = T.axis.remap("RS", [k, j])
            with T.init():
                B[vj] = T.float32(0)
            B[vj] = B[vj] + A[vk, vj]


def test_rfactor_leaving_a_partial_result_unwritten_is_refused():
    # A [None, 4, 4] split of 10: the guard `k_1 * 4 + k_2 < 10` fails for k_1 = 3 at k_2 = 0, and
    # for every k_2, so partial result 3 is never initialized or written. TVM accepts this and
    # reads it (NaN).
    sch = tir.Schedule(col_sums_of_10)
    k, _ = sch.get_loops("B")
    sch.split(k, [None, 4, 4])
    before = sch.mod
    with pytest.raises(tir.ScheduleError, match=r"cannot rfactor at loop k_1: block B has a predicate .* left by "
                                                r"a split that does not divide its loop\) over reduction loops"):
        sch.rfactor(sch.get_loops("B")[1], 0)
    assert sch.mod is before


@T.prim_func
def row_sums_repeated(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32")):
    for i, j, k in T.grid(4, 3, 8):  # noqa: B007 - j repeats the reduction on purpose
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


def test_rfactor_of_a_loop_binding_no_reduction_iterator_is_refused():
    # j (3 iterations) repeats the whole row sum: rfactor of j would add 3 partial results that are
    # each the full sum. TVM accepts it and computes 3x the sum; minitvm refuses.
    sch = tir.Schedule(row_sums_repeated)
    with pytest.raises(tir.ScheduleError, match="cannot rfactor at loop j: the loop binds no reduction iterator "
                                                "of block B, so each of its 3 partial results"):
        sch.rfactor(sch.get_loops("B")[1], 0)


@T.prim_func
def row_normalize(A: T.Buffer((6, 197), "float32"), B: T.Buffer((6, 197), "float32")):
    s = T.alloc_buffer((6,), "float32")
    for i, k in T.grid(6, 197):
        with T.block("sum"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                s[vi] = T.float32(0)
            s[vi] = s[vi] + A[vi, vk]
    for i, j in T.grid(6, 197):
        with T.block("div"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] / s[vi]


def test_partial_results_of_a_non_dividing_split_move_under_a_row_loop_with_their_guard():
    # A row of 197 in 16 partial sums: the partials' block keeps `k_0 * 16 + k_1 < 197`, a guard
    # on its own iterators (13 x 16 positions cover 208 columns), not a split's padding. compute_at
    # rebuilds its loops and says the guard of the new ones: dropping it (TVM rebuilds the
    # predicate from the consumer's region alone) would read 11 columns past each row.
    sch = tir.Schedule(row_normalize)
    _, k = sch.get_loops("sum")
    sch.split(k, [None, 16])
    rf = sch.rfactor(sch.get_loops("sum")[-1], 1)
    row = sch.get_loops("div")[0]
    sch.compute_at("sum", row)
    sch.compute_at(rf, row)
    text = sch.mod.script()
    assert text.count("for i in T.grid(6)") + text.count("for i in range(6)") == 1, text  # one row loop
    assert "T.where(ax1 * 16 + ax0 < 197)" in text, text
    a = np.random.default_rng(4).standard_normal((6, 197)).astype("float32") + 3
    for target in ("llvm", "python"):
        out = minitvm.nd.array(np.full((6, 197), np.nan, "float32"))
        minitvm.build(sch.mod, target=target)["row_normalize"](minitvm.nd.array(a), out)
        np.testing.assert_allclose(out.numpy(), a / a.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
