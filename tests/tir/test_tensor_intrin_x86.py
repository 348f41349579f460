"""The x86 tensor intrinsics (minitvm.tir.tensor_intrin.x86): tensorized matmuls match numpy on
every x86-64 CPU (on one without AVX-512, LLVM does each step with narrower instructions), and
built for an AVX-512 CPU each step is one instruction: vfmadd on zmm registers, vpdpbusd.  The
numbers come from builds for this CPU, the instructions from builds for a named AVX-512 CPU, so
every test runs and checks the same on every machine."""

from __future__ import annotations

import re

import numpy as np
import pytest

import minitvm
from minitvm import te, tir
from minitvm.script import tir as T
from minitvm.tir.schedule import ScheduleError
from minitvm.tir.tensor_intrin import x86

#: a CPU with AVX2 and FMA but neither AVX-512F nor VNNI, whose code runs on every machine CI uses:
#: LLVM does each 16-lane step of the intrinsics with narrower instructions
AVX2_CPU = "llvm -mcpu=haswell"


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


def _run(mod, n: int, m: int, k: int, seed: int = 0, target: str = "llvm"):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, k)).astype("float32")
    b = rng.standard_normal((k, m)).astype("float32")
    c = np.full((n, m), np.nan, "float32")  # the kernel must write every element
    lib = minitvm.build(mod, target=target)
    lib[lib.entry_name](a, b, c)
    return c, a.astype("float64") @ b.astype("float64"), lib


def _asm(mod, target: str) -> str:
    """The assembly of ``mod`` built for ``target`` (read, never run: it may be another CPU's)."""
    return minitvm.build(mod, target=target).get_source("asm")


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


@pytest.mark.parametrize("target", ["llvm", AVX2_CPU])
def test_register_tile_micro_kernel_matches_numpy(target):
    n, m, k = 24, 64, 48
    sch = _tile_schedule(n, m, k, rows=4, cols=32, kc=16)
    c, want, lib = _run(sch.mod, n, m, k, target=target)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-4)
    assert "llvm.fma.v32f32" in lib.get_source("ll-raw")  # the impl's call, 32 lanes = 2 zmm


def test_register_tile_micro_kernel_is_zmm_fmas_on_avx512_and_ymm_fmas_without():
    sch = _tile_schedule(24, 64, 48, rows=4, cols=32, kc=16)
    # 4 rows x 2 zmm per k step: the kernel body is zmm FMAs, not scalar or ymm code
    assert len(_zmm_fmas(_asm(sch.mod, x86.AVX512_TARGET))) >= 8
    # the same kernel for a CPU without AVX-512: each 16-lane FMA is two 8-lane ymm FMAs
    narrow = _asm(sch.mod, AVX2_CPU)
    assert "zmm" not in narrow and len(re.findall(r"vfmadd\d+ps\s+[^\n]*%ymm\d+", narrow)) >= 16


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
    for target in ("llvm", AVX2_CPU):
        c, want, _ = _run(sch.mod, n, m, k, seed=1, target=target)
        np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-4, err_msg=target)
    assert _zmm_fmas(_asm(sch.mod, x86.AVX512_TARGET))


def test_tensorize_does_not_ask_which_cpu_it_runs_on():
    # as TVM's: tensorize transforms the program; the intrinsic's ``requires`` only says with which
    # features each step is one instruction
    assert tir.TensorIntrin.get(x86.avx512_fma_tile(4, 32, 8)).requires == ("avx512f",)
    sch = _tile_schedule(8, 32, 16, rows=4, cols=32, kc=8)
    assert "llvm.fma" in sch.mod.script()


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
    assert tir.TensorIntrin.get("no_such_intrin", allow_missing=True) is None
    with pytest.raises(ValueError, match="no tensor intrinsic named 'no_such_intrin'"):
        tir.TensorIntrin.get("no_such_intrin")


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
    with pytest.raises(TypeError, match="operand x is float32, the call returns float32x16"):
        tir.call_llvm_pure_intrin("float32x16", "llvm.fma.v16f32", x, x, x)
    v = tir.Broadcast(x, 16)  # a vector form is read as TVM's (building it is refused: test_tvm_forms.py)
    assert tir.call_llvm_pure_intrin("float32x16", "llvm.fma.v16f32", v, v, v).dtype == "float32x16"
    with pytest.raises(NotImplementedError, match=r"must be \.f32"):
        tir.call_llvm_pure_intrin("float32", "llvm.fma.v16f32", x, x, x)
    with pytest.raises(TypeError, match="takes 3 operands"):
        tir.call_llvm_pure_intrin("float32", "llvm.fma", x, x)
    assert tir.call_llvm_pure_intrin("float32", "llvm.fma.f32", x, x, x).args[0].value == "llvm.fma.f32"


# -- dot_16x4_vnni: u8 x s8 -> int32 with vpdpbusd (AVX-512 VNNI) --------------------------------------

def _int8_matmul(m: int, n: int, k: int, x_cols: int | None = None):
    """compute[i, j] = sum_k int32(X[i, k]) * int32(W[j, k]), X uint8 and W int8 (TVM's VNNI test
    computation); X may have more columns than the reduction reads."""
    X = te.placeholder((m, x_cols or k), name="X", dtype="uint8")
    W = te.placeholder((n, k), name="W", dtype="int8")
    ak = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(X[i, ak].astype("int32") * W[j, ak].astype("int32"), axis=ak),
                   name="compute")
    return te.create_prim_func([X, W, C])


def _vnni_schedule(func):
    """W packed as [N/16, K/4, 16, 4]; the 16 x 4 inner tile (j inner, k inner) is the intrinsic."""
    sch = tir.Schedule(func)
    block = sch.get_block("compute")
    sch.transform_layout(block, "W", lambda i, j: [i // 16, j // 4, i % 16, j % 4])
    _, j, k = sch.get_loops(block)
    _, ji = sch.split(j, factors=[None, 16])
    ko, ki = sch.split(k, factors=[None, 4])
    sch.reorder(ko, ji, ki)
    sch.decompose_reduction(block, ko)
    sch.tensorize(ji, x86.VNNI_DOT_16x4_INTRIN)
    return sch


def _full_range_int8(m: int, n: int, k: int, x_cols: int | None = None, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 256, (m, x_cols or k)).astype("uint8")
    w = rng.integers(-128, 128, (n, k)).astype("int8")
    x[0, :], w[0, :] = 255, -128  # the extremes: 255 * -128 summed over all of k
    return x, w


def _pack_w(w: np.ndarray) -> np.ndarray:
    n, k = w.shape
    return np.ascontiguousarray(w.reshape(n // 16, 16, k // 4, 4).transpose(0, 2, 1, 3))


@pytest.mark.parametrize("target", ["llvm", AVX2_CPU, "python"])
def test_vnni_tensorized_int8_matmul_matches_numpy(target):
    m, n, k = 8, 32, 24
    sch = _vnni_schedule(_int8_matmul(m, n, k))
    x, w = _full_range_int8(m, n, k)
    out = np.full((m, n), -7, "int32")  # the init must overwrite it
    lib = minitvm.build(sch.mod, target=target)
    lib["main"](x, _pack_w(w), out)
    np.testing.assert_array_equal(out, x.astype("int64") @ w.astype("int64").T)


def test_vnni_tensorized_tile_is_vpdpbusd_with_vnni_and_integer_code_without():
    sch = _vnni_schedule(_int8_matmul(8, 32, 24))
    assert re.findall(r"vpdpbusd\s+[^\n]*%zmm", _asm(sch.mod, x86.VNNI_TARGET))
    # the same program for an AVX-512 CPU without VNNI: plain integer multiplies and adds
    assert "vpdpbusd" not in _asm(sch.mod, x86.AVX512_TARGET)


def test_vnni_impl_reads_words_of_the_packed_buffers():
    sch = _vnni_schedule(_int8_matmul(4, 16, 8))
    text = sch.mod.script()
    assert 'A_i32 = T.Buffer((1,), "int32", data=A.data)' in text
    assert 'T.call_llvm_pure_intrin("int32", "llvm.x86.avx512.vpdpbusd", C[i_1], A_i32[0], B_i32[i_1])' in text
    lowered = minitvm.lower(sch.mod).script()
    # row i of X starts at word i * 2 (8 bytes per row); tile (j_0, k_0) of W at word j_0 * 32 + k_0 * 16
    assert "A_i32[i * 2 + k_0]" in lowered and "B_i32[k_0 * 16 + i_1]" in lowered


def test_vnni_view_starting_inside_a_word_is_refused_when_lowered():
    # X rows of 10 bytes: row i's first four bytes start at byte 10 * i, not always on a word
    sch = _vnni_schedule(_int8_matmul(4, 16, 8, x_cols=10))
    with pytest.raises(ValueError, match=r"A_i32 \(a int32 view of A, which matches X\).*multiple of 4"):
        minitvm.build(sch.mod)


def test_vnni_intrinsic_is_tvms_16x4_dot_product():
    intrin = tir.TensorIntrin.get(x86.VNNI_DOT_16x4_INTRIN)
    assert x86.VNNI_DOT_16x4_INTRIN == "dot_16x4_vnni" and intrin.requires == ("avx512f", "avx512vnni")
    assert [intrin.desc.buffer_map[p].dtype for p in intrin.desc.params] == ["uint8", "int8", "int32"]
    assert 'C[vi] = C[vi] + T.Cast("int32", A[vk]) * T.Cast("int32", B[vi, vk])' in intrin.desc.script()
    minitvm.ir.assert_structural_equal(minitvm.script.from_source(intrin.impl.script()), intrin.impl)
