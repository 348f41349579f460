"""The MLC course's bmm_relu exercise: a schedule of the naive program reproduces the target."""

import numpy as np

import minitvm
from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.testing.programs import BmmRelu, BmmReluTarget


def schedule_bmm_relu(mod) -> tir.Schedule:
    sch = tir.Schedule(mod)
    block_y = sch.get_block("Y", func_name="bmm_relu")
    block_c = sch.get_block("C", func_name="bmm_relu")
    n, i, j = sch.get_loops(block_c)
    j0, j1 = sch.split(j, factors=[None, 8])
    sch.parallel(n)
    sch.compute_at(block_y, j0)
    ax0, ax1 = sch.get_loops(block_y)[3:]
    k0, k1 = sch.split(ax1, factors=[None, 4])
    sch.reorder(k0, k1, ax0)
    sch.unroll(k1)
    y_init = sch.decompose_reduction(block_y, k0)
    sch.vectorize(sch.get_loops(y_init)[-1])
    sch.vectorize(j1)
    return sch


def test_schedule_reproduces_the_target_structure():
    sch = schedule_bmm_relu(BmmRelu)
    assert_structural_equal(sch.mod["bmm_relu"], BmmReluTarget["bmm_relu"])


def test_scheduled_bmm_relu_matches_numpy():
    sch = schedule_bmm_relu(BmmRelu)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((16, 128, 128)).astype("float32")
    b = rng.standard_normal((16, 128, 128)).astype("float32")
    c = minitvm.nd.empty((16, 128, 128), "float32")
    lib = minitvm.build(sch.mod, target="llvm")
    lib["bmm_relu"](minitvm.nd.array(a), minitvm.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)


def test_trace_replays_to_the_same_module():
    sch = schedule_bmm_relu(BmmRelu)
    replay = tir.Schedule(BmmRelu)
    sch.trace.apply_to_schedule(replay)
    assert_structural_equal(replay.mod, sch.mod)
    text = str(sch.trace)
    assert "sch.compute_at(" in text and "sch.decompose_reduction(" in text
