"""rfactor of a tuple reduction of independent parts (topi's layer norm sums x and x² in one block)."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import te, tir, topi
from minitvm.tir.schedule import ScheduleError


def _layer_norm(shape):
    a = te.placeholder(shape, "float32", name="A")
    g = te.placeholder(shape[-1:], "float32", name="g")
    b = te.placeholder(shape[-1:], "float32", name="b")
    return te.create_prim_func([a, g, b, topi.nn.layer_norm(a, g, b, axis=-1)])


def _run(func, args):
    lib = minitvm.build(func.with_attr("global_symbol", "main"), target="llvm")
    arrs = [minitvm.nd.array(a) for a in args]
    lib["main"](*arrs)
    return arrs[-1].numpy()


@pytest.mark.parametrize("lanes", [16, 8])
def test_rfactor_splits_a_sum_and_a_sum_of_squares_into_partial_buffers_of_their_own(lanes):
    shape = (3, 5, 48)
    sch = tir.Schedule(_layer_norm(shape))
    red = sch.get_block("A_red_temp")
    _, k1 = sch.split(sch.get_loops(red)[-1], [None, lanes])
    rf = sch.rfactor(k1, 2)
    blk = sch.get(rf)
    # both parts get a partial buffer with the lane axis, and the final block combines both
    assert sorted(w.buffer.name for w in blk.writes) == ["A_red_temp_v0_rf", "A_red_temp_v1_rf"]
    assert all(tuple(int(x) for x in w.buffer.shape) == (3, 5, lanes) for w in blk.writes)
    final = sch.get(sch.get_block("A_red_temp"))
    assert sorted(r.buffer.name for r in final.reads) == ["A_red_temp_v0_rf", "A_red_temp_v1_rf"]
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape).astype("float32") + 2
    gamma, beta = rng.standard_normal(48).astype("float32"), rng.standard_normal(48).astype("float32")
    got = _run(sch.mod["main"], [x, gamma, beta, np.zeros(shape, "float32")])
    want = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * gamma + beta
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_rfactor_refuses_a_tuple_reduction_whose_parts_depend_on_each_other():
    # argmax keeps the index of the largest value: the index part reads the value part's old
    # result, so partial results per lane could not be combined part by part
    a = te.placeholder((4, 32), "float32", name="A")
    sch = tir.Schedule(te.create_prim_func([a, topi.argmax(a, axis=1)]))
    red = sch.get_block("A_red_temp")
    _, k1 = sch.split(sch.get_loops(red)[-1], [None, 8])
    with pytest.raises(ScheduleError, match="read each other"):
        sch.rfactor(k1, 1)
