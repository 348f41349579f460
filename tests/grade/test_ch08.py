"""Graders for chapter 8 (``exercises/ch08.py``): one test per exercise, worth ``points``.

The starting programs are written here (some at other sizes than in the exercise file), so
editing them there changes nothing. Programs are compared with ``assert_structural_equal``;
numbers by building for this CPU and running on random data against numpy; instructions by
reading the assembly (``lib.get_source("asm")``) of a build for an AVX-512 CPU
(``x86.AVX512_TARGET``), so that a grade is the same on every machine, with or without AVX-512.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import minitvm
from minitvm import tir
from minitvm.grade.mistakes import Mistake, assert_equal_or_name, assert_structural_equal_or_name
from minitvm.ir import IRModule, replace
from minitvm.script import ir as I
from minitvm.script import tir as T
from minitvm.testing import assert_allclose
from minitvm.tir.tensor_intrin import x86


@pytest.fixture
def ex(grade_module):
    return grade_module("ch08")


def _loops(func: tir.PrimFunc) -> dict[str, str]:
    """loop variable name -> loop kind, for every loop of ``func``."""
    kinds: dict[str, str] = {}

    def visit(node):
        if isinstance(node, tir.For):
            kinds[node.loop_var.name] = node.kind

    tir.post_order_visit(func.body, visit)
    return kinds


def _schedule(result, what: str) -> tir.Schedule:
    assert isinstance(result, tir.Schedule), f"{what} must return a tir.Schedule, not {type(result).__name__}"
    return result


def _zmm_fmas(asm: str) -> list[str]:
    return re.findall(r"vfmadd\d+ps\s+[^\n]*%zmm\d+", asm)


def _avx512_asm(mod: IRModule) -> str:
    """The assembly of ``mod`` built for an AVX-512 CPU: read here, never run (this CPU may lack it)."""
    return minitvm.build(mod, target=x86.AVX512_TARGET).get_source("asm")


# ------------------------------------------------------------------ 8.1: the lowered loop nest


@I.ir_module
class ColSum:
    @T.prim_func
    def main(A: T.Buffer((32, 48), "float32"), B: T.Buffer((48,), "float32")):
        T.func_attr({"global_symbol": "col_sum", "tir.noalias": True})
        for j, i in T.grid(48, 32):
            with T.block("B"):
                vj, vi = T.axis.remap("SR", [j, i])
                with T.init():
                    B[vj] = T.float32(0)
                B[vj] = B[vj] + A[vi, vj]


def _lowered_col_sum_variant(guard_init: bool = True, flatten: str = "row-major"):
    """Exercise 8.1 as learners predict it wrongly: the init unguarded, A flattened column-major,
    or A not flattened at all."""
    @T.prim_func
    def col_sum(A: T.Buffer((32, 48), "float32"), B: T.Buffer((48,), "float32")):
        T.func_attr({"global_symbol": "col_sum", "tir.noalias": True, "tir.lowered": True})
        A_1 = T.Buffer((1536,), "float32", data=A.data)
        for j, i in T.grid(48, 32):
            if guard_init:
                if i == 0:
                    B[j] = T.float32(0.0)
            else:
                B[j] = T.float32(0.0)
            if flatten == "row-major":
                B[j] = B[j] + A_1[i * 48 + j]
            elif flatten == "column-major":
                B[j] = B[j] + A_1[j * 32 + i]
            else:
                B[j] = B[j] + A[i, j]

    return col_sum


LOWERED_COL_SUM_MISTAKES = [
    Mistake("the init runs at every i: lowering keeps T.init()'s meaning by guarding it with `if i == 0:`",
            lambda: _lowered_col_sum_variant(guard_init=False)),
    Mistake("A is flattened column-major: a row-major (32, 48) buffer puts A[i, j] at i * 48 + j",
            lambda: _lowered_col_sum_variant(flatten="column-major")),
    Mistake("A is still indexed in two dimensions: lowering flattens every buffer access to one index",
            lambda: _lowered_col_sum_variant(flatten="none")),
]


@pytest.mark.points(2)
@pytest.mark.hint("The lowering passes, one by one: what becomes of a block, of its T.init(), of a 2-D buffer?",
                  "print minitvm.lower of a smaller example and compare line by line")
def test_lowered_col_sum(ex):
    """Exercise 8.1: the lowered ColSum, written by hand, is what minitvm.lower produces."""
    yours = ex.lowered_col_sum()
    assert isinstance(yours, tir.PrimFunc), f"lowered_col_sum must return a tir.PrimFunc, not {type(yours).__name__}"
    assert_structural_equal_or_name(yours, minitvm.lower(ColSum)["main"], LOWERED_COL_SUM_MISTAKES)
    a = np.random.default_rng(81).standard_normal((32, 48)).astype("float32")
    b = np.zeros(48, "float32")
    minitvm.build(yours)["col_sum"](a, b)
    assert_allclose(b, a.sum(axis=0), rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ 8.2: a TIR pass


@T.prim_func
def _scale(A: T.Buffer((8, 16, 4), "float32"), B: T.Buffer((8, 16, 4), "float32"),
           C: T.Buffer((8, 3), "float32")):
    T.func_attr({"global_symbol": "scale", "tir.noalias": True})
    for i in T.parallel(8):
        for j in range(16):
            for k in range(4):
                with T.block("B"):
                    vi, vj, vk = T.axis.remap("SSS", [i, j, k])
                    B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)
    for p in range(8):
        for q in T.vectorized(3):
            with T.block("C"):
                vp, vq = T.axis.remap("SS", [p, q])
                C[vp, vq] = A[vp, vq, 0] + T.float32(1)


@T.prim_func
def _symbolic(a: T.handle, b: T.handle):
    T.func_attr({"global_symbol": "symbolic", "tir.noalias": True})
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    for i in range(n):
        with T.block("B"):
            vi = T.axis.spatial(n, i)
            B[vi] = A[vi] + T.float32(1)


def _unroll_variant(max_extent: int, strict: bool = False, any_kind: bool = False, outermost_only: bool = False):
    """Exercise 8.2 as learners get it wrong: ``extent < max_extent``, parallel/vectorized loops
    unrolled too, or the mutator not visiting the body of a loop."""
    class Unroller(tir.StmtExprMutator):
        def visit_for_(self, loop: tir.For) -> tir.For:
            body = loop.body if outermost_only else self.visit(loop.body)
            extent = loop.extent.value if isinstance(loop.extent, tir.IntImm) else None
            small = extent is not None and (extent < max_extent if strict else extent <= max_extent)
            unroll = small and (any_kind or loop.kind == tir.ForKind.SERIAL)
            return replace(loop, kind=tir.ForKind.UNROLLED if unroll else loop.kind, body=body)

    @tir.transform.prim_func_pass(opt_level=0, name="UnrollVariant")
    def unroll(func, mod, ctx):
        return func.with_body(Unroller().visit(func.body))

    return unroll


UNROLL_CASES = {4: {"i": "parallel", "j": "serial", "k": "unrolled", "p": "serial", "q": "vectorized"},
                16: {"i": "parallel", "j": "unrolled", "k": "unrolled", "p": "unrolled", "q": "vectorized"}}


def _unroll_mistakes() -> list[Mistake]:
    """Each mistaken pass's loop kinds at every max_extent of the grader (one max_extent alone
    cannot tell some of them apart)."""
    def kinds(**wrong):
        return lambda: {m: _loops(_unroll_variant(m, **wrong)(IRModule({"scale": _scale}))["scale"])
                        for m in UNROLL_CASES}
    return [
        Mistake("a loop of extent exactly max_extent is left serial: small means extent <= max_extent",
                kinds(strict=True)),
        Mistake("parallel or vectorized loops were unrolled too: only serial loops change kind",
                kinds(any_kind=True)),
        Mistake("loops inside other loops are untouched: visit_for_ must visit the loop's body as well",
                kinds(outermost_only=True)),
    ]


@pytest.mark.points(2)
@pytest.mark.hint("The lowering passes, one by one: a TIR pass is a mutator over statements; which loops count as "
                  "small?",
                  "only serial loops whose extent is a constant no larger than max_extent change; a mutator that "
                  "changes a loop must still visit the loop's body")
def test_unroll_small_loops(ex):
    """Exercise 8.2: the pass unrolls serial loops of constant extent <= max_extent, and only those."""
    got = {}
    for max_extent in UNROLL_CASES:
        unroll = ex.unroll_small_loops(max_extent)
        assert isinstance(unroll, minitvm.transform.Pass), \
            f"unroll_small_loops must return a Pass, not {type(unroll).__name__}"
        mod = unroll(IRModule({"scale": _scale}))
        assert isinstance(mod, IRModule), "the pass must return an IRModule"
        got[max_extent] = _loops(mod["scale"])
        rng = np.random.default_rng(82)
        a = rng.standard_normal((8, 16, 4)).astype("float32")
        b, c = np.zeros((8, 16, 4), "float32"), np.zeros((8, 3), "float32")
        minitvm.build(mod)["scale"](a, b, c)
        assert_allclose(b, a * 2, rtol=1e-6, atol=1e-6)
        assert_allclose(c, a[:, :3, 0] + 1, rtol=1e-6, atol=1e-6)
    wrong = [f"max_extent={m}: loop kinds {got[m]}, expected {want}" for m, want in UNROLL_CASES.items()
             if got[m] != want]
    assert_equal_or_name(got, UNROLL_CASES, _unroll_mistakes(), "; ".join(wrong))
    symbolic = ex.unroll_small_loops(1000)(IRModule({"symbolic": _symbolic}))
    assert _loops(symbolic["symbolic"]) == {"i": "serial"}, "a loop of symbolic extent must stay serial"


# ------------------------------------------------------------------ 8.3: an instruction


@I.ir_module
class MulAdd:
    @T.prim_func
    def main(X: T.Buffer((2048,), "float32"), W: T.Buffer((2048,), "float32"), Y: T.Buffer((2048,), "float32"),
             Z: T.Buffer((2048,), "float32")):
        T.func_attr({"global_symbol": "mul_add", "tir.noalias": True})
        for i in range(2048):
            with T.block("Z"):
                vi = T.axis.spatial(2048, i)
                Z[vi] = X[vi] * W[vi] + Y[vi]


@pytest.mark.points(2)
@pytest.mark.hint("Vector instructions after vectorize: a zmm register holds 16 float32 lanes",
                  "the vectorized loop must be as wide as a zmm register, with the multiply and the add in its body")
def test_fma_on_zmm(ex):
    """Exercise 8.3: a vectorized loop whose assembly multiplies-and-adds on zmm registers."""
    sch = _schedule(ex.fma_on_zmm(MulAdd), "fma_on_zmm")
    kinds = _loops(sch.mod["main"])
    assert "vectorized" in kinds.values(), f"no vectorized loop in your schedule (loops: {kinds})"
    lib = minitvm.build(sch.mod)
    rng = np.random.default_rng(83)
    x, w, y = (rng.standard_normal(2048).astype("float32") for _ in range(3))
    z = np.zeros(2048, "float32")
    lib["mul_add"](x, w, y, z)
    assert_allclose(z, x * w + y, rtol=1e-5, atol=1e-5)
    asm = _avx512_asm(sch.mod)
    ymm = re.findall(r"vfmadd\d+ps\s+[^\n]*%ymm\d+", asm)
    assert _zmm_fmas(asm), ("no vfmadd...ps on %zmm registers in the assembly"
                            + (f" (found {ymm[0].split()[0]} on %ymm: 8 lanes, not 16)" if ymm else ""))


# ------------------------------------------------------------------ 8.4: the bounds checks


@I.ir_module
class Gather:
    @T.prim_func
    def main(A: T.Buffer((512,), "float32"), idx: T.Buffer((128,), "int32"), B: T.Buffer((128,), "float32")):
        T.func_attr({"global_symbol": "gather", "tir.noalias": True})
        for i in range(128):
            with T.block("B"):
                vi = T.axis.spatial(128, i)
                B[vi] = A[idx[vi]]


@I.ir_module
class Scatter:
    @T.prim_func
    def main(A: T.Buffer((128,), "float32"), idx: T.Buffer((128,), "int32"), B: T.Buffer((512,), "float32")):
        T.func_attr({"global_symbol": "scatter", "tir.noalias": True})
        for i in range(128):
            with T.block("B"):
                vi = T.axis.spatial(128, i)
                B[idx[vi]] = A[vi]


@I.ir_module
class TwoGathers:
    @T.prim_func
    def main(P: T.Buffer((64,), "float32"), Q: T.Buffer((64,), "float32"), r: T.Buffer((32,), "int32"),
             s: T.Buffer((32,), "int32"), Out: T.Buffer((32,), "float32")):
        T.func_attr({"global_symbol": "two_gathers", "tir.noalias": True})
        for i in range(32):
            with T.block("Out"):
                vi = T.axis.spatial(32, i)
                Out[vi] = P[r[vi]] * Q[s[vi]] + P[vi]


@pytest.mark.points(2)
@pytest.mark.hint("What bounds checks cost: the checks are AssertStmt nodes in the module the build compiled",
                  "each check's message begins with the name of its buffer")
def test_checked_accesses(ex):
    """Exercise 8.4: the buffers whose accesses get a run-time bounds check."""
    for mod, want in [(Gather, ["A"]), (Scatter, ["B"]), (TwoGathers, ["P", "Q"]), (MulAdd, [])]:
        got = ex.checked_accesses(mod)
        assert list(got) == want, f"{mod['main'].attrs['global_symbol']}: {list(got)}, expected {want}"


# ------------------------------------------------------------------ 8.5: the parallel regions


@T.prim_func
def _two_stages(A: T.Buffer((64, 32), "float32"), B: T.Buffer((64, 32), "float32"),
                C: T.Buffer((64, 32), "float32")):
    T.func_attr({"global_symbol": "two_stages", "tir.noalias": True})
    for i, j in T.grid(64, 32):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + T.float32(1)
    for i, j in T.grid(64, 32):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] * T.float32(3)


def _parallel(func: tir.PrimFunc, blocks: list[str]) -> IRModule:
    sch = tir.Schedule(func)
    for name in blocks:
        sch.parallel(sch.get_loops(sch.get_block(name))[0])
    return sch.mod


@pytest.mark.points(2)
@pytest.mark.hint("The parallel region after parallel: each parallel loop becomes a function passed to the thread "
                  "pool's run call",
                  "read the IR before LLVM's optimizations (the 'll-raw' source), in order")
def test_parallel_regions(ex):
    """Exercise 8.5: the functions handed to minitvm's thread pool, in call order."""
    for blocks in ([], ["B"], ["C"], ["B", "C"]):
        lib = minitvm.build(_parallel(_two_stages, blocks))
        outlined = re.findall(r'define internal void @"?(\w+\.parallel\d+)"?\(', lib.get_source("ll-raw"))
        got = ex.parallel_regions(lib)
        assert list(got) == outlined, f"parallel blocks {blocks}: {list(got)}, expected {outlined}"
        assert len(outlined) == len(blocks)


# ------------------------------------------------------------------ 8.6: tensorize


def matmul(n: int) -> IRModule:
    @I.ir_module
    class MatMul:
        @T.prim_func
        def main(A: T.Buffer((n, n), "float32"), B: T.Buffer((n, n), "float32"), C: T.Buffer((n, n), "float32")):
            T.func_attr({"global_symbol": "main", "tir.noalias": True})
            for i, j, k in T.grid(n, n, n):
                with T.block("C"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    with T.init():
                        C[vi, vj] = T.float32(0)
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    return MatMul


def _gflops(lib, n: int, args, number: int) -> float:
    seconds = min(lib.time_evaluator("main", minitvm.cpu(), number=number)(*args).mean for _ in range(3))
    return 2 * n**3 / seconds / 1e9


#: tensorized tilings from 2 x 16 to 4 x 32 run 25-40x the naive loop nest here (AVX-512); the margin is
#: for a busy machine and for CPUs that run the kernel on narrower registers
_SPEEDUP = 4


@pytest.mark.points(3)
@pytest.mark.hint("Tensorize: a hand-written inner kernel: tensorize replaces a loop nest that computes exactly "
                  "what the intrinsic's description computes: print the description and compare it with your loops",
                  "the description's loops run k outside the rows x cols tile: your innermost three loops must have "
                  "its extents, in its order")
def test_tensorize_matmul(ex):
    """Exercise 8.6: a tensorized matmul, right, on zmm FMAs, and 4x the naive loop nest's speed."""
    n = 128
    start = matmul(n)
    sch = _schedule(ex.tensorize_matmul(start), "tensorize_matmul")
    assert any(inst.kind.name == "Tensorize" for inst in sch.trace.insts), \
        "the schedule never called tensorize: the micro-kernel must do the inner work"
    assert 'T.call_llvm_pure_intrin("float32", "llvm.fma"' in sch.mod.script(), \
        "the micro-kernel's llvm.fma is not in the module: tensorize with x86.avx512_fma_tile(rows, cols, k)"
    rng = np.random.default_rng(86)
    a, b = (rng.standard_normal((n, n)).astype("float32") for _ in range(2))
    args = [minitvm.nd.array(a), minitvm.nd.array(b), minitvm.nd.array(np.full((n, n), np.nan, "float32"))]
    lib = minitvm.build(sch.mod)
    lib["main"](*args)
    assert_allclose(args[2].numpy(), a @ b, rtol=1e-4, atol=1e-4)
    assert _zmm_fmas(_avx512_asm(sch.mod)), "no vfmadd...ps on %zmm registers in the build for an AVX-512 CPU"
    naive = _gflops(minitvm.build(start), n, args, number=1)
    fast = _gflops(lib, n, args, number=5)
    assert fast >= _SPEEDUP * naive, (f"{fast:.1f} GFLOP/s is {fast / naive:.1f}x the naive {naive:.1f} GFLOP/s, not "
                                      f"{_SPEEDUP}x: the micro-kernel should do most of the work")
