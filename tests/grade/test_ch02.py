"""Graders for chapter 2 (``exercises/ch02.py``): one test per exercise, worth ``points``.

The starting programs and the target loop nests are copied here, so editing them in the
exercise file changes nothing. Structure is compared with ``assert_structural_equal``
(its message shows where the loop nests differ); numbers with numpy on random data.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import tir
from minitvm.grade.mistakes import Mistake, assert_structural_equal_or_name
from minitvm.ir import IRModule
from minitvm.script import ir as I
from minitvm.script import tir as T
from minitvm.testing import assert_allclose
from minitvm.testing.programs import BmmRelu, BmmReluTarget


@pytest.fixture
def ex(grade_module):
    return grade_module("ch02")


# ------------------------------------------------------------------ starting programs


@I.ir_module
class VectorAdd:
    @T.prim_func
    def main(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32"), C: T.Buffer((1024,), "float32")):
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i in range(1024):
            with T.block("C"):
                vi = T.axis.spatial(1024, i)
                C[vi] = A[vi] + B[vi]


@I.ir_module
class Relu2D:
    @T.prim_func
    def main(A: T.Buffer((64, 48), "float32"), B: T.Buffer((64, 48), "float32")):
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i, j in T.grid(64, 48):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = T.max(A[vi, vj], T.float32(0))


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


@I.ir_module
class MMRelu:
    @T.prim_func
    def main(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"),
             C: T.Buffer((128, 128), "float32")):
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        Y = T.alloc_buffer((128, 128), "float32")
        for i, j, k in T.grid(128, 128, 128):
            with T.block("Y"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
        for i, j in T.grid(128, 128):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = T.max(Y[vi, vj], T.float32(0))


# ------------------------------------------------------------------ targets


@T.prim_func
def vector_add_target(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32"),
                      C: T.Buffer((1024,), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    for i_0 in range(64):
        for i_1 in T.vectorized(16):
            with T.block("C"):
                vi = T.axis.spatial(1024, i_0 * 16 + i_1)
                C[vi] = A[vi] + B[vi]


@T.prim_func
def relu_fused_target(A: T.Buffer((64, 48), "float32"), B: T.Buffer((64, 48), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    for f_0 in T.parallel(192):
        for f_1 in T.vectorized(16):
            with T.block("B"):
                vi = T.axis.spatial(64, f_0 // 3)
                vj = T.axis.spatial(48, f_0 % 3 * 16 + f_1)
                B[vi, vj] = T.max(A[vi, vj], T.float32(0))


@T.prim_func
def tiled_matmul_target(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"),
                        C: T.Buffer((128, 128), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    for i_0, j_0, k, i_1, j_1 in T.grid(8, 8, 128, 16, 16):
        with T.block("C"):
            vi = T.axis.spatial(128, i_0 * 16 + i_1)
            vj = T.axis.spatial(128, j_0 * 16 + j_1)
            vk = T.axis.reduce(128, k)
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@T.prim_func
def relu_per_row_target(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"),
                        C: T.Buffer((128, 128), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    Y = T.alloc_buffer((128, 128), "float32")
    for i in range(128):
        for j, k in T.grid(128, 128):
            with T.block("Y"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
        for ax0 in range(128):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, ax0])
                C[vi, vj] = T.max(Y[vi, vj], T.float32(0))


@T.prim_func
def local_accumulator_target(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"),
                             C: T.Buffer((128, 128), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    C_local = T.alloc_buffer((128, 128), scope="local")
    for i_0, j_0 in T.grid(16, 4):
        for i_1_init, j_1_init in T.grid(8, 32):
            with T.block("C_init"):
                vi = T.axis.spatial(128, i_0 * 8 + i_1_init)
                vj = T.axis.spatial(128, j_0 * 32 + j_1_init)
                C_local[vi, vj] = T.float32(0)
        for k, i_1, j_1 in T.grid(128, 8, 32):
            with T.block("C_update"):
                vi = T.axis.spatial(128, i_0 * 8 + i_1)
                vj = T.axis.spatial(128, j_0 * 32 + j_1)
                vk = T.axis.reduce(128, k)
                C_local[vi, vj] = C_local[vi, vj] + A[vi, vk] * B[vk, vj]
        for ax0, ax1 in T.grid(8, 32):
            with T.block("C_local"):
                v0 = T.axis.spatial(128, i_0 * 8 + ax0)
                v1 = T.axis.spatial(128, j_0 * 32 + ax1)
                C[v0, v1] = C_local[v0, v1]


# ------------------------------------------------------------------ helpers


def _scheduled(result) -> IRModule:
    if isinstance(result, tir.Schedule):
        return result.mod
    assert isinstance(result, IRModule), f"return the tir.Schedule (or its .mod), not {type(result).__name__}"
    return result


def _check_numbers(original: IRModule, scheduled: IRModule, seed: int, rtol=1e-4):
    """Run both on the same random inputs; the scheduled one must compute the same outputs."""
    name = original.keys()[0] if hasattr(original, "keys") else "main"
    func = original[name]
    rng = np.random.default_rng(seed)
    args = [rng.standard_normal(tuple(int(s) for s in buf.shape)).astype(buf.dtype) for buf in func.buffers]
    outs = []
    for mod in (original, scheduled):
        arrays = [a.copy() for a in args]
        minitvm.build(mod, target="llvm")[name](*arrays)
        outs.append(arrays)
    for want, got in zip(*outs):
        assert_allclose(got, want, rtol=rtol, atol=rtol)


def _check(ex_fn, start: IRModule, target, seed: int, mistakes=()):
    """Your loop nest against the target (a mismatch shows the diff, and names a catalogued
    mistake when yours is one), then your numbers against the start's."""
    mod = _scheduled(ex_fn(start))
    name = start.keys()[0]
    assert_structural_equal_or_name(mod[name], target, mistakes)
    _check_numbers(start, mod, seed)


def _wrong_schedule(start: IRModule, says: str, steps) -> Mistake:
    """A catalogued mistake: ``steps(sch)`` is the mistaken schedule, applied to ``start``."""
    def computes():
        sch = tir.Schedule(start)
        steps(sch)
        return sch.mod[start.keys()[0]]
    return Mistake(says, computes)


def _split_vectorize(factors, vectorize: int | None):
    def steps(sch):
        loops = sch.split(sch.get_loops(sch.get_block("C"))[0], factors=factors)
        if vectorize is not None:
            sch.vectorize(loops[vectorize])
    return steps


VECTORIZE_ADD_MISTAKES = [
    _wrong_schedule(VectorAdd, "the split's factors are swapped: [None, 16] keeps 16 iterations in the inner "
                    "loop, [16, None] in the outer", _split_vectorize([16, None], 1)),
    _wrong_schedule(VectorAdd, "the outer loop is vectorized: a vector lane is one iteration of the inner loop, "
                    "so vectorize the loop of extent 16", _split_vectorize([None, 16], 0)),
    _wrong_schedule(VectorAdd, "the inner loop is split off but not vectorized", _split_vectorize([None, 16], None)),
]


def _fused_relu(factors, parallel: int, vectorize: int):
    def steps(sch):
        loops = sch.split(sch.fuse(*sch.get_loops(sch.get_block("B"))), factors=factors)
        sch.parallel(loops[parallel])
        sch.vectorize(loops[vectorize])
    return steps


def _reorder_relu(sch):
    i, j = sch.get_loops(sch.get_block("B"))
    sch.reorder(j, i)
    _fused_relu([None, 16], 0, 1)(sch)


FUSE_RELU_MISTAKES = [
    _wrong_schedule(Relu2D, "parallel and vectorize are on the wrong loops: threads share the outer loop, "
                    "vector lanes the inner one", _fused_relu([None, 16], 1, 0)),
    _wrong_schedule(Relu2D, "the split's factors are swapped: [None, 16] keeps 16 iterations in the inner loop",
                    _fused_relu([16, None], 0, 1)),
    _wrong_schedule(Relu2D, "the loops were reordered (j, i) before fusing: fuse i and j as they are, so the "
                    "fused loop walks B row by row", _reorder_relu),
]


def _tile(factors, order):
    def steps(sch):
        i, j, k = sch.get_loops(sch.get_block("C"))
        (i0, i1), (j0, j1) = sch.split(i, factors=factors), sch.split(j, factors=factors)
        loops = {"i0": i0, "i1": i1, "j0": j0, "j1": j1, "k": k}
        if order:
            sch.reorder(*(loops[name] for name in order))
    return steps


TILE_MATMUL_MISTAKES = [
    _wrong_schedule(matmul(128), "the loops are split but not reordered: tile loops first (i_0, j_0), then k, "
                    "then the loops inside a tile", _tile([None, 16], None)),
    _wrong_schedule(matmul(128), "k is innermost: here the reduction loop sits between the tile loops and the "
                    "loops inside a tile", _tile([None, 16], ["i0", "j0", "i1", "j1", "k"])),
    _wrong_schedule(matmul(128), "the split's factors are swapped: a 16 x 16 tile is the inner loop of "
                    "[None, 16]", _tile([16, None], ["i0", "j0", "k", "i1", "j1"])),
]


# ------------------------------------------------------------------ graders


@pytest.mark.points(1)
@pytest.mark.hint("Step 3 (vectorize and unroll): a vectorized loop's extent is the number of lanes: where does a "
                  "loop of 16 come from?",
                  "the one loop of VectorAdd must first become two; then only the inner one changes kind")
def test_vectorize_add(ex):
    """Exercise 2.1: split + vectorize an elementwise add."""
    _check(ex.vectorize_add, VectorAdd, vector_add_target, seed=21, mistakes=VECTORIZE_ADD_MISTAKES)


@pytest.mark.points(2)
@pytest.mark.hint("Step 5 (parallel and fuse): the two loops become one before that one is split",
                  "threads share out the outer part of the split, vector lanes are the inner part: each primitive "
                  "takes the loop it changes")
def test_fuse_relu_loops(ex):
    """Exercise 2.2: fuse, split, parallel, vectorize."""
    _check(ex.fuse_relu_loops, Relu2D, relu_fused_target, seed=22, mistakes=FUSE_RELU_MISTAKES)


@pytest.mark.points(2)
@pytest.mark.hint("Step 2 (split and reorder again: tiles): print sch.mod after each primitive and compare its loop "
                  "order with the target's",
                  "a split names its loops after the old one (i_0, i_1); reorder takes the loops in the order you "
                  "want them, outermost first")
def test_tile_matmul(ex):
    """Exercise 2.3: tile a matmul to the target loop nest."""
    _check(ex.tile_matmul, matmul(128), tiled_matmul_target, seed=23, mistakes=TILE_MATMUL_MISTAKES)


@pytest.mark.points(2)
@pytest.mark.hint("Producers and consumers: the ReLU (the consumer) moves under a loop of the matmul (its producer)",
                  "moving a consumer under its producer's loop is the reverse of compute_at; which of Y's loops "
                  "runs over the rows?")
def test_relu_per_row(ex):
    """Exercise 2.4: reverse_compute_at the ReLU under the matmul's row loop."""
    _check(ex.relu_per_row, MMRelu, relu_per_row_target, seed=24)


@pytest.mark.points(2)
@pytest.mark.hint("Step 6 (cache_write: a local accumulator): the local buffer is made by caching what block C "
                  "writes",
                  "after the cache: its write-back goes under the tile's loop (a consumer placed under a loop), "
                  "then the init gets its own loop nest (Step 4)")
def test_local_accumulator(ex):
    """Exercise 2.5: cache_write to a local accumulator, reverse_compute_at, decompose_reduction."""
    _check(ex.local_accumulator, matmul(128), local_accumulator_target, seed=25)


@pytest.mark.points(3)
@pytest.mark.hint("The trace: a schedule is a program: compare your sch.mod with the target after every primitive, "
                  "top down",
                  "the target's loop names tell which split made them (j_0, j_1 come from one split of j), and a "
                  "block's place tells which loop it was moved under")
def test_bmm_relu_schedule(ex):
    """Exercise 2.6: reproduce the bmm_relu target schedule."""
    _check(ex.bmm_relu_schedule, BmmRelu, BmmReluTarget["bmm_relu"], seed=26)


def _gflops(mod: IRModule, n: int, args, number: int) -> float:
    lib = minitvm.build(mod, target="llvm")
    seconds = min(lib.time_evaluator("main", minitvm.cpu(), number=number)(*args).mean for _ in range(3))
    return 2 * n**3 / seconds / 1e9


@pytest.mark.points(3)
@pytest.mark.hint("Step 1 (reorder: walk memory in order): the naive loop walks B down a column: every step misses "
                  "the cache",
                  "each of the chapter's steps wins on its own: memory order and tiles first, then vector lanes, "
                  "then both cores; measure after each")
def test_fast_matmul(ex):
    """Exercise 2.7: at least 3x the GFLOP/s of the naive matmul (both measured here)."""
    n = 512
    start = matmul(n)
    mod = _scheduled(ex.fast_matmul(start))
    rng = np.random.default_rng(27)
    a, b = (rng.standard_normal((n, n)).astype("float32") for _ in range(2))
    args = [minitvm.nd.array(a), minitvm.nd.array(b), minitvm.nd.empty((n, n), "float32")]
    minitvm.build(mod, target="llvm")["main"](*args)
    assert_allclose(args[2].numpy(), a @ b, rtol=1e-3, atol=1e-3)
    naive = _gflops(start, n, args, number=1)
    fast = _gflops(mod, n, args, number=5)
    assert fast >= 3 * naive, f"{fast:.1f} GFLOP/s is less than 3x the naive {naive:.1f} GFLOP/s"
