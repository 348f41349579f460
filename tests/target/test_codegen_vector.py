"""Vectorized loops become SIMD code: right numbers, vector instructions, fallbacks."""

import re

import numpy as np
import pytest

import minitvm
from minitvm import tir
from minitvm.script import tir as T
from minitvm.tir.tensor_intrin import x86


@T.prim_func
def matmul(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    for i, j, k in T.grid(64, 64, 64):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def _tiled(mod):
    sch = tir.Schedule(mod)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, factors=[None, 4])
    j0, j1 = sch.split(j, factors=[None, 32])
    sch.reorder(i0, j0, k, i1, j1)
    sch.unroll(i1)
    sch.vectorize(j1)  # before decompose_reduction, as TVM requires
    sch.decompose_reduction(c, k)
    return sch.mod


def test_tiled_matmul_keeps_accumulators_in_vector_registers():
    # the instructions of a build for an AVX-512 CPU (read on any machine), the numbers of this CPU's
    asm = minitvm.build(_tiled(matmul), target=x86.AVX512_TARGET).get_source("asm")
    assert re.search(r"vfmadd\w+\s+.*zmm", asm), "expected fused multiply-adds on 512-bit registers"
    lib = minitvm.build(_tiled(matmul))
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 64, 64)).astype("float32")
    c = np.empty((64, 64), "float32")
    lib["matmul"](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_elementwise_vector_loop_all_dtypes(dtype):
    @T.prim_func
    def f(A: T.Buffer((100,), dtype), B: T.Buffer((100,), dtype), C: T.Buffer((100,), dtype)):
        for i in range(100):
            with T.block("C"):
                vi = T.axis.spatial(100, i)
                C[vi] = T.max(A[vi] * B[vi] + A[vi], B[vi]) - A[99 - vi]

    sch = tir.Schedule(f)
    (i,) = sch.get_loops(sch.get_block("C"))
    _, inner = sch.split(i, factors=[None, 16])  # 100 = 7 * 16 - 12: the tail is predicated
    sch.vectorize(inner)
    rng = np.random.default_rng(1)
    a = (rng.standard_normal(100) * 10).astype(dtype)
    b = (rng.standard_normal(100) * 10).astype(dtype)
    c = np.zeros(100, dtype)
    minitvm.build(sch.mod)["f"](a, b, c)
    np.testing.assert_allclose(c, np.maximum(a * b + a, b) - a[::-1], rtol=1e-5)


def test_unsupported_body_falls_back_to_a_loop():
    @T.prim_func
    def f(A: T.Buffer((64,), "int32"), B: T.Buffer((64,), "int32")):
        for i in T.vectorized(64):
            with T.block("B"):
                vi = T.axis.spatial(64, i)
                B[vi] = A[vi] // 3 + A[vi] % 5 + vi // 7

    a = np.random.default_rng(2).integers(-100, 100, 64).astype("int32")
    b = np.zeros(64, "int32")
    minitvm.build(f)["f"](a, b)
    np.testing.assert_array_equal(b, a // 3 + a % 5 + np.arange(64) // 7)


def test_gather_and_broadcast_loads():
    @T.prim_func
    def f(A: T.Buffer((64, 8), "float32"), s: T.Buffer((1,), "float32"), B: T.Buffer((8, 64), "float32")):
        for i, j in T.grid(8, 64):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vj, vi] * s[0]

    sch = tir.Schedule(f)
    _, j = sch.get_loops(sch.get_block("B"))
    sch.vectorize(j)
    rng = np.random.default_rng(3)
    a, s = rng.standard_normal((64, 8)).astype("float32"), np.array([2.5], "float32")
    b = np.zeros((8, 64), "float32")
    minitvm.build(sch.mod)["f"](a, s, b)
    np.testing.assert_allclose(b, a.T * 2.5, rtol=1e-6)


def test_undef_vector_is_one_constant_per_type():
    """Broadcasts and shuffles take the all-undef vector of their type: one constant per type
    (its lanes formatted once, not at each use and each reuse lookup), the same text as new."""
    from llvmlite import ir

    from minitvm.target.codegen.vector import _undef

    vt = ir.VectorType(ir.FloatType(), 16)
    undef = _undef(vt)
    assert _undef(ir.VectorType(ir.FloatType(), 16)) is undef
    assert str(undef) == str(ir.Constant(vt, ir.Undefined))
    assert _undef(ir.VectorType(ir.FloatType(), 8)) is not undef
    assert _undef(ir.VectorType(ir.IntType(32), 16)) is not undef


@pytest.mark.parametrize("stride", [2, 3, 4, 5])
def test_small_strided_loads_are_one_load_and_a_shuffle(stride):
    """A load whose index steps by 2-4 per lane is one contiguous load of exactly the span the
    lanes cover plus a shuffle (a wider stride stays a per-lane gather); the last lane reads the
    buffer's last element, so a load past it would read outside the buffer."""
    n = 13

    @T.prim_func
    def f(A: T.Buffer(((n - 1) * stride + 1,), "float32"), B: T.Buffer((n,), "float32")):
        for j in range(n):
            with T.block("B"):
                vj = T.axis.remap("S", [j])
                B[vj] = A[vj * stride] + T.float32(1)

    sch = tir.Schedule(f)
    sch.vectorize(sch.get_loops(sch.get_block("B"))[0])
    lib = minitvm.build(sch.mod)
    ir_text = lib.get_source("ll")
    span = (n - 1) * stride + 1
    assert (f"load <{span} x float>" in ir_text) == (stride <= 4), ir_text
    a = np.random.default_rng(stride).standard_normal(span).astype("float32")
    b = np.zeros(n, "float32")
    lib["f"](a, b)
    np.testing.assert_array_equal(b, a[::stride] + np.float32(1))
