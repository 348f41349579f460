"""The MLC course's bmm_relu exercise: a schedule of the naive program reproduces the target."""

import numpy as np

import minitvm
from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.script import ir as I
from minitvm.script import tir as T


@I.ir_module
class MyBmmRelu:
    @T.prim_func
    def bmm_relu(A: T.Buffer((16, 128, 128), "float32"), B: T.Buffer((16, 128, 128), "float32"),
                 C: T.Buffer((16, 128, 128), "float32")):
        T.func_attr({"global_symbol": "bmm_relu", "tir.noalias": True})
        Y = T.alloc_buffer((16, 128, 128), "float32")
        for n, i, j, k in T.grid(16, 128, 128, 128):
            with T.block("Y"):
                vn, vi, vj, vk = T.axis.remap("SSSR", [n, i, j, k])
                with T.init():
                    Y[vn, vi, vj] = T.float32(0)
                Y[vn, vi, vj] = Y[vn, vi, vj] + A[vn, vi, vk] * B[vn, vk, vj]
        for n, i, j in T.grid(16, 128, 128):
            with T.block("C"):
                vn, vi, vj = T.axis.remap("SSS", [n, i, j])
                C[vn, vi, vj] = T.max(Y[vn, vi, vj], T.float32(0))


@I.ir_module
class TargetModule:
    @T.prim_func
    def bmm_relu(A: T.Buffer((16, 128, 128), "float32"), B: T.Buffer((16, 128, 128), "float32"),
                 C: T.Buffer((16, 128, 128), "float32")):
        T.func_attr({"global_symbol": "bmm_relu", "tir.noalias": True})
        Y = T.alloc_buffer((16, 128, 128), "float32")
        for i0 in T.parallel(16):
            for i1, i2_0 in T.grid(128, 16):
                for ax0_init in T.vectorized(8):
                    with T.block("Y_init"):
                        n, i = T.axis.remap("SS", [i0, i1])
                        j = T.axis.spatial(128, i2_0 * 8 + ax0_init)
                        Y[n, i, j] = T.float32(0)
                for ax1_0 in T.serial(32):
                    for ax1_1 in T.unroll(4):
                        for ax0 in T.serial(8):
                            with T.block("Y_update"):
                                n, i = T.axis.remap("SS", [i0, i1])
                                j = T.axis.spatial(128, i2_0 * 8 + ax0)
                                k = T.axis.reduce(128, ax1_0 * 4 + ax1_1)
                                Y[n, i, j] = Y[n, i, j] + A[n, i, k] * B[n, k, j]
                for i2_1 in T.vectorized(8):
                    with T.block("C"):
                        n, i = T.axis.remap("SS", [i0, i1])
                        j = T.axis.spatial(128, i2_0 * 8 + i2_1)
                        C[n, i, j] = T.max(Y[n, i, j], T.float32(0))


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
    sch = schedule_bmm_relu(MyBmmRelu)
    assert_structural_equal(sch.mod["bmm_relu"], TargetModule["bmm_relu"])


def test_scheduled_bmm_relu_matches_numpy():
    sch = schedule_bmm_relu(MyBmmRelu)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((16, 128, 128)).astype("float32")
    b = rng.standard_normal((16, 128, 128)).astype("float32")
    c = minitvm.nd.empty((16, 128, 128), "float32")
    lib = minitvm.build(sch.mod, target="llvm")
    lib["bmm_relu"](minitvm.nd.array(a), minitvm.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)


def test_trace_replays_to_the_same_module():
    sch = schedule_bmm_relu(MyBmmRelu)
    replay = tir.Schedule(MyBmmRelu)
    sch.trace.apply_to_schedule(replay)
    assert_structural_equal(replay.mod, sch.mod)
    text = str(sch.trace)
    assert "sch.compute_at(" in text and "sch.decompose_reduction(" in text
