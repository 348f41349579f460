"""The AVX-512 FMA tensor intrinsics (minitvm.tir.tensor_intrin.x86): tensorized matmuls match
numpy, their machine code multiplies-and-adds with vfmadd on zmm registers, and a CPU without
AVX-512F is refused by name."""

from __future__ import annotations

import re

import numpy as np
import pytest

import minitvm
from minitvm import tir
from minitvm.script import tir as T
from minitvm.tir.schedule import ScheduleError
from minitvm.tir.tensor_intrin import x86

needs_avx512 = pytest.mark.skipif(not x86.has_avx512f(), reason="this CPU has no AVX-512F")


def _matmul(n: int, m: int, k: int):
    @T.prim_func
    def matmul(A: T.Buffer((n, k), "float32"), B: T.Buffer((k, m), "float32"), C: T.Buffer((n, m), "float32")):
        for i, j, kk in T.grid(n, m, k):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, kk])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    return matmul


def _run(mod, n: int, m: int, k: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, k)).astype("float32")
    b = rng.standard_normal((k, m)).astype("float32")
    c = np.full((n, m), np.nan, "float32")  # the kernel must write every element
    lib = minitvm.build(mod)
    lib[lib.entry_name](a, b, c)
    return c, a.astype("float64") @ b.astype("float64"), lib


def _zmm_fmas(asm: str) -> list[str]:
    return re.findall(r"vfmadd\d+ps\s+[^\n]*%zmm\d+", asm)


def _tile_schedule(n: int, m: int, k: int, rows: int, cols: int, kc: int):
    sch = tir.Schedule(_matmul(n, m, k))
    C = sch.get_block("C")
    i, j, kk = sch.get_loops(C)
    i0, i1 = sch.split(i, [None, rows])
    j0, j1 = sch.split(j, [None, cols])
    k0, k1 = sch.split(kk, [None, kc])
    sch.reorder(i0, j0, k0, k1, i1, j1)
    sch.decompose_reduction(C, k0)
    sch.tensorize(k1, x86.avx512_fma_tile(rows, cols, kc))
    return sch


@needs_avx512
def test_register_tile_micro_kernel_matches_numpy_and_uses_zmm_fma():
    n, m, k = 24, 64, 48
    sch = _tile_schedule(n, m, k, rows=4, cols=32, kc=16)
    c, want, lib = _run(sch.mod, n, m, k)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-4)
    # 4 rows x 2 zmm per k step: the kernel body is zmm FMAs, not scalar or ymm code
    assert len(_zmm_fmas(lib.get_source("asm"))) >= 8
    assert "llvm.fma.v32f32" in lib.get_source("ll-raw")  # the impl's call, 32 lanes = 2 zmm


@needs_avx512
def test_single_fma_intrinsic_tensorizes_the_vector_loop_of_a_matmul():
    n, m, k = 8, 48, 20
    sch = tir.Schedule(_matmul(n, m, k))
    C = sch.get_block("C")
    i, j, kk = sch.get_loops(C)
    j0, j1 = sch.split(j, [None, 16])
    sch.reorder(i, j0, kk, j1)
    sch.decompose_reduction(C, kk)
    sch.tensorize(j1, x86.AVX512_FMA_F32_1x16)
    assert "llvm.fma" in sch.mod.script()
    c, want, lib = _run(sch.mod, n, m, k, seed=1)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-4)
    assert _zmm_fmas(lib.get_source("asm"))


def test_tensorize_refuses_a_cpu_without_avx512(monkeypatch):
    monkeypatch.setattr(x86, "host_cpu_features", lambda: frozenset({"sse2", "avx2", "fma"}))
    with pytest.raises(ScheduleError, match=r"cannot tensorize block C_update_o with avx512_fma_f32_4x32x8: "
                                            r"this CPU lacks avx512f"):
        _tile_schedule(8, 32, 16, rows=4, cols=32, kc=8)


def test_tensorize_refuses_a_block_that_is_not_the_intrinsics_computation():
    sch = tir.Schedule(_matmul(8, 32, 16))
    C = sch.get_block("C")
    i, j, kk = sch.get_loops(C)
    j0, j1 = sch.split(j, [None, 16])
    sch.reorder(i, j0, kk, j1)
    sch.decompose_reduction(C, kk)
    with pytest.raises(ScheduleError, match="does not match intrinsic buffer"):
        sch.tensorize(j1, x86.avx512_fma_tile(2, 16, 4))


@pytest.mark.parametrize("rows, cols, k, why", [(4, 24, 8, "multiple of 16"), (8, 64, 8, "zmm accumulators"),
                                                 (0, 16, 8, "positive int")])
def test_tile_sizes_are_checked(rows, cols, k, why):
    with pytest.raises(ValueError, match=why):
        x86.avx512_fma_tile(rows, cols, k)


def test_tile_registers_once_under_its_name():
    name = x86.avx512_fma_tile(2, 16, 4)
    assert name == "avx512_fma_f32_2x16x4"
    intrin = tir.TensorIntrin.get(name)
    assert x86.avx512_fma_tile(2, 16, 4) == name and tir.TensorIntrin.get(name) is intrin
    assert intrin.requires == ("avx512f",)
    assert 'T.call_llvm_pure_intrin("float32", "llvm.fma"' in intrin.impl.script()


# -- T.call_llvm_pure_intrin ------------------------------------------------------------------------


def test_call_llvm_pure_intrin_prints_parses_and_fuses_one_rounding():
    @T.prim_func
    def fma(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32")):
        for i in T.vectorized(64):
            with T.block("C"):
                vi = T.axis.spatial(64, i)
                C[vi] = T.call_llvm_pure_intrin("float32", "llvm.fma", A[vi], B[vi], C[vi])

    text = fma.script()
    assert 'T.call_llvm_pure_intrin("float32", "llvm.fma", A[vi], B[vi], C[vi])' in text
    minitvm.ir.assert_structural_equal(minitvm.script.from_source(text), fma)
    # a, b, c where a * b + c rounded once differs from rounding the product first
    a = np.full(64, 1 + 2.0 ** -13, "float32")
    b = np.full(64, 1 - 2.0 ** -13, "float32")
    c = np.full(64, -1.0, "float32")
    exact = a.astype("float64") * b.astype("float64") + c.astype("float64")  # -2^-26, exact in float64
    assert (a * b + c)[0] != exact[0]  # two roundings lose it
    for target in ("llvm", "python"):
        out = c.copy()
        minitvm.build(fma, target=target)["fma"](a, b, out)
        assert out[0] == np.float32(exact[0]), target


def test_call_llvm_pure_intrin_refuses_what_it_cannot_mean():
    x = tir.Var("x", "float32")
    with pytest.raises(ValueError, match="Unknown llvm intrinsic function llvm.foo"):
        tir.call_llvm_pure_intrin("float32", "llvm.foo", x, x, x)
    with pytest.raises(NotImplementedError, match="no vector dtypes"):
        tir.call_llvm_pure_intrin("float32x16", "llvm.fma.v16f32", x, x, x)
    with pytest.raises(NotImplementedError, match=r"must be \.f32"):
        tir.call_llvm_pure_intrin("float32", "llvm.fma.v16f32", x, x, x)
    with pytest.raises(TypeError, match="takes 3 operands"):
        tir.call_llvm_pure_intrin("float32", "llvm.fma", x, x)
    assert tir.call_llvm_pure_intrin("float32", "llvm.fma.f32", x, x, x).args[0].value == "llvm.fma.f32"
