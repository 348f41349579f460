"""Graders for chapter 9 (``exercises/ch09.py``): one test per exercise, worth ``points``.

The starting programs are built here (at sizes of the grader's choosing), so editing them in
the exercise file changes nothing. Every GPU kernel is built for ``"cuda-emulated"``: it must
match numpy on random data, and the emulator's report (grid, threads per block, shared and
local memory, bytes moved) must have the properties the exercise asks for -- the graders check
the shape, not the primitives that made it (``test_open_exercises_ch09.py`` proves them both
ways); 9.8 keeps the course's staging, on which the chapter's tensorize section builds.  Exercise 9.10's int8
matmul is built for ``"llvm"`` and checked exactly against numpy, and built for a CPU with
AVX-512 VNNI (``x86.VNNI_TARGET``, read on any machine) for ``vpdpbusd`` in its machine code.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import te, tir
from minitvm.ir import IRModule
from minitvm.script import tir as T
from minitvm.testing import assert_allclose
from minitvm.testing import gpu_programs as gp


@pytest.fixture
def ex(grade_module):
    return grade_module("ch09")


# ------------------------------------------------------------------ helpers


def _module(func) -> IRModule:
    return IRModule({"main": func})


def _transpose(n: int, m: int) -> IRModule:
    A = te.placeholder((m, n), name="A")
    B = te.compute((n, m), lambda i, j: A[j, i], name="B")
    return _module(te.create_prim_func([A, B]).with_attr("global_symbol", "main"))


def _scheduled(result) -> IRModule:
    if isinstance(result, tir.Schedule):
        return result.mod
    assert isinstance(result, IRModule), f"return the tir.Schedule (or its .mod), not {type(result).__name__}"
    return result


def _built(mod: IRModule):
    """``mod`` built for the emulated GPU and its report, counted at build time: a grader that checks
    the shape first fails a wrong schedule without emulating it."""
    lib = minitvm.build(mod, target="cuda-emulated")
    return lib, lib.report()[0]


def _run(mod: IRModule, seed: int, *, name: str = "main", lib=None):
    """Build for the emulated GPU (unless ``lib`` is the build), run on random inputs, return
    (outputs, report)."""
    lib = lib if lib is not None else minitvm.build(mod, target="cuda-emulated")
    func = mod[mod.keys()[0]]
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(tuple(int(s) for s in b.shape)).astype(b.dtype) for b in func.buffers]
    nd = [minitvm.nd.array(a, minitvm.cuda(0)) for a in arrays]
    lib[name](*nd)
    return [a.numpy() for a in nd], lib.report()[0]


# ------------------------------------------------------------------ 9.1


@pytest.mark.points(1)
@pytest.mark.hint("The GPU's shape: a grid of blocks of threads: one loop must become two, one counting blocks, one "
                  "counting the threads of a block",
                  "the inner loop's extent is the number of threads per block; each of the two loops is bound to "
                  "its own axis")
@pytest.mark.parametrize("n, nthread", [(1024, 128), (768, 256)])
def test_bind_elementwise(ex, n, nthread):
    """Exercise 9.1: the vector add on 8 blocks of 128 threads (and other sizes)."""
    mod = _scheduled(ex.bind_elementwise(_module(gp.vector_add(n)), nthread))
    (a, b, c), report = _run(mod, seed=n)
    assert_allclose(c, a + b, rtol=1e-6)
    assert report.grid == (n // nthread, 1, 1) and report.block == (nthread, 1, 1), \
        f"expected {n // nthread} blocks of {nthread} threads, got grid {report.grid}, block {report.block}"


# ------------------------------------------------------------------ 9.2


@pytest.mark.points(2)
@pytest.mark.hint("The GPU's shape: a 2-D grid of 2-D blocks needs both loops cut in two, the block parts outside "
                  "the thread parts",
                  "rows go to the y axes and columns to the x axes, of blocks and of threads alike")
def test_bind_2d_tiles(ex):
    """Exercise 9.2: a 2-D grid of 16 x 16 thread blocks for the transpose."""
    mod = _scheduled(ex.bind_2d_tiles(_transpose(64, 96), 16))
    (a, b), report = _run(mod, seed=2)
    assert_allclose(b, a.T)
    assert report.grid == (96 // 16, 64 // 16, 1), f"grid {report.grid}: blockIdx.x should run over columns"
    assert report.block == (16, 16, 1), f"block {report.block}: expected 16 x 16 threads"


# ------------------------------------------------------------------ 9.3


@pytest.mark.points(2)
@pytest.mark.hint("Window sum: sharing data through shared memory: the threads of a block first copy the window "
                  "they share, together",
                  "the copy goes under the loop bound to threads, and its own loop is shared out among the threads "
                  "(the chapter's race shows what happens otherwise)")
def test_window_sum_shared(ex):
    """Exercise 9.3: the window sum through a cooperatively fetched shared cache."""
    n, nthread = 512, 64
    mod = _scheduled(ex.window_sum_shared(_module(gp.window_sum(n)), nthread))
    (a, b), report = _run(mod, seed=3)
    assert_allclose(b, a[:-2] + a[1:-1] + a[2:], rtol=1e-5, atol=1e-6)
    assert report.shared_bytes > 0, "A is not cached in shared memory"
    assert report.shared_bytes <= 2 * nthread * 4, \
        f"the shared cache ({report.shared_bytes} B) holds more than a block needs"
    assert report.global_bytes == (n // nthread) * (nthread + 2 + nthread) * 4, \
        "each block should load its nthread + 2 inputs from global memory once"


# ------------------------------------------------------------------ 9.4


@pytest.mark.points(2)
@pytest.mark.hint("Window sum, the lowered kernel: T.launch_thread gives a thread its indices, and an array in "
                  "shared memory is one per block",
                  "one element per thread goes in and one comes out, and they need not be the same element: which "
                  "position of the chunk ends up at a thread's own?")
def test_reverse_chunks(ex):
    """Exercise 9.4: a TVMScript kernel with T.launch_thread and shared memory."""
    func = ex.reverse_chunks()
    assert isinstance(func, tir.PrimFunc), f"return the T.prim_func, not {type(func).__name__}"
    lib = minitvm.build(func, target="cuda-emulated", name="main")
    a = np.random.default_rng(4).standard_normal(1024).astype("float32")
    b = minitvm.nd.empty((1024,), "float32")
    lib["main"](minitvm.nd.array(a), b)
    assert_allclose(b.numpy(), a.reshape(8, 128)[:, ::-1].reshape(-1))
    shared = "__shared__" in lib.imported_modules[0].get_source()
    assert shared, "the kernel declares no shared array: go through a shared-memory copy of the chunk"
    report = lib.report()[0]
    grid, block, shared_bytes, global_bytes = report.grid, report.block, report.shared_bytes, report.global_bytes
    assert grid == (8, 1, 1) and block == (128, 1, 1), \
        f"expected 8 blocks of 128 threads (one chunk each), got grid {grid}, block {block}"
    assert shared_bytes <= 128 * 4, f"the shared array holds {shared_bytes} B: one chunk is 128 floats, {128 * 4} B"
    assert global_bytes == 2 * 1024 * 4, \
        f"the kernel moves {global_bytes} B through global memory; reading A and writing B once is {2 * 1024 * 4} B"


# ------------------------------------------------------------------ 9.5


@pytest.mark.points(2)
@pytest.mark.hint("Matrix multiplication: local tiles: each thread computes a v x v tile of C in local registers",
                  "i and j are each cut three ways: blocks, threads, the thread's own tile; the accumulator is a "
                  "local cache that goes back to C once per thread, after the sum over k")
@pytest.mark.parametrize("v", [2, 4])
def test_matmul_local_tiles(ex, v):
    """Exercise 9.5: the course's local blocking, v x v per thread."""
    n = 128
    mod = _scheduled(ex.matmul_local_tiles(_module(gp.matmul(n)), v))
    lib, report = _built(mod)
    assert report.block == (8, 8, 1), f"expected 8 x 8 threads per block, got {report.block}"
    assert report.grid == (n // (8 * v), n // (8 * v), 1)
    assert report.local_bytes == v * v * 4, f"each thread should accumulate a {v} x {v} tile in local memory"
    (a, b, c), _ = _run(mod, seed=5 + v, lib=lib)
    assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------ 9.6


#: 9.6's limits: shared memory per block, and the traffic as a fraction of 9.5's local blocking
SHARED_BUDGET = 8 * 1024
TRAFFIC_CUT = 16


def _local_blocking_bytes(n: int) -> int:
    """The global traffic of 9.5's local blocking for an n x n matmul: every multiply-add loads
    one float of A and one of B, and each element of C is stored once."""
    return (2 * n ** 3 + n * n) * 4


@pytest.mark.points(3)
@pytest.mark.hint("the section \"Matrix multiplication: shared tiles\": what do the threads of one block read "
                  "that the others read too?",
                  "stage one step of k at a time: a block's rows of A and columns of B for that step, copied "
                  "into shared memory by all its threads together, each copying a few elements")
def test_matmul_shared_tiles(ex):
    """Exercise 9.6: any matmul schedule whose blocks share their operands through shared memory."""
    n = 128
    mod = _scheduled(ex.matmul_shared_tiles(_module(gp.matmul(n))))
    lib, report = _built(mod)
    blocks, threads = int(np.prod(report.grid)), int(np.prod(report.block))
    assert blocks >= 4, f"{blocks} thread block(s) (grid {report.grid}): share the work among at least 4"
    assert threads >= 32, f"{threads} threads per block (block {report.block}): use at least 32, a warp"
    assert report.shared_bytes > 0, "nothing is staged in shared memory: the threads still read A and B " \
                                    "from global memory, each on its own"
    assert report.shared_bytes <= SHARED_BUDGET, \
        f"{report.shared_bytes} B of shared memory per block, over the {SHARED_BUDGET} B budget: stage less at a time"
    local = _local_blocking_bytes(n)
    assert report.global_bytes * TRAFFIC_CUT <= local, (
        f"{report.global_bytes} B of global traffic, {local / report.global_bytes:.1f}x less than the local "
        f"blocking's {local} B; at least {TRAFFIC_CUT}x less is wanted: stage both A and B, and let a block "
        "cover a larger tile of C, so that each copied element serves more of its threads")
    (a, b, c), _ = _run(mod, seed=6, lib=lib)
    assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------ 9.7


@pytest.mark.points(2)
@pytest.mark.hint("Window sum: sharing data through shared memory: count what one thread reads and writes in global "
                  "memory, then multiply",
                  "with shared memory, a block reads its window once, including the edges its neighbours also read")
@pytest.mark.parametrize("shared", [False, True])
def test_window_sum_global_bytes(ex, shared):
    """Exercise 9.7: predict the bytes the emulator counts."""
    rng = np.random.default_rng(7)
    for _ in range(2):
        nthread = int(rng.choice([32, 64, 128]))
        n = nthread * int(rng.integers(2, 9))
        sch = gp.window_sum_shared(tir.Schedule(gp.window_sum(n)), nthread) if shared else \
            gp.bind_vector_add(tir.Schedule(gp.window_sum(n)), nthread)
        want = minitvm.build(sch.mod, target="cuda-emulated").report()[0].global_bytes
        got = ex.window_sum_global_bytes(n, nthread, shared)
        assert got == want, (f"n={n}, nthread={nthread}, shared={shared}: you predicted {got} B, "
                             f"the emulator counts {want} B")


# ------------------------------------------------------------------ 9.8, 9.9: tensorized blocks
# These build for the CPU: the grader's own intrinsic (its description and a vectorized
# implementation) is tensorized into the learner's blocks, and the result compared with numpy.

_SCOPES = ("global.A_reg", "global.B_reg", "global.accumulator")


def _matmul_bt(n: int) -> IRModule:
    @T.prim_func
    def main(A: T.Buffer((n, n), "float32"), B: T.Buffer((n, n), "float32"), C: T.Buffer((n, n), "float32")):
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i, j, k in T.grid(n, n, n):
            with T.block("matmul"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]

    return _module(main)


def _tile_intrin(tile: int, desc: tir.PrimFunc | None = None) -> str:
    """Register ``C[tile, tile] += A @ B.T`` on buffers in ``_SCOPES`` (description ``desc``, or
    the grader's own), implemented as vectorized rows; return its name."""
    sa, sb, sc = _SCOPES

    @T.prim_func
    def own_desc(a: T.handle, b: T.handle, c: T.handle):
        A = T.match_buffer(a, (tile, tile), "float32", offset_factor=tile, scope=sa)
        B = T.match_buffer(b, (tile, tile), "float32", offset_factor=tile, scope=sb)
        C = T.match_buffer(c, (tile, tile), "float32", offset_factor=tile, scope=sc)
        with T.block("root"):
            T.reads(C[0:tile, 0:tile], A[0:tile, 0:tile], B[0:tile, 0:tile])
            T.writes(C[0:tile, 0:tile])
            for i, j, k in T.grid(tile, tile, tile):
                with T.block("update"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]

    @T.prim_func
    def impl(a: T.handle, b: T.handle, c: T.handle):
        A = T.match_buffer(a, (tile, tile), "float32", offset_factor=tile, scope=sa)
        B = T.match_buffer(b, (tile, tile), "float32", offset_factor=tile, scope=sb)
        C = T.match_buffer(c, (tile, tile), "float32", offset_factor=tile, scope=sc)
        with T.block("root"):
            T.reads(C[0:tile, 0:tile], A[0:tile, 0:tile], B[0:tile, 0:tile])
            T.writes(C[0:tile, 0:tile])
            for i, k in T.grid(tile, tile):
                for j in T.vectorized(tile):
                    C[i, j] = C[i, j] + A[i, k] * B[j, k]

    name = f"grade_ch09_tile{tile}_{'own' if desc is None else 'learner'}"
    tir.TensorIntrin.register(name, own_desc if desc is None else desc, impl, override=True)
    return name


def _staged_tiles(mod: IRModule, tile: int) -> tir.Schedule:
    """The grader's own schedule of exercise 9.8 (to grade 9.9 on its own)."""
    sch = tir.Schedule(mod)
    i, j, k = sch.get_loops(sch.get_block("matmul"))
    (i0, i1), (j0, j1), (k0, k1) = (sch.split(loop, [None, tile]) for loop in (i, j, k))
    sch.reorder(i0, j0, k0, i1, j1, k1)
    block = sch.blockize(i1)
    for index, scope in enumerate(_SCOPES[:2]):
        sch.compute_at(sch.cache_read(block, index, scope), k0)
    sch.reverse_compute_at(sch.cache_write(block, 0, _SCOPES[2]), j0)
    sch.decompose_reduction(block, k0)
    return sch


def _run_cpu(mod: IRModule, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = (rng.standard_normal((n, n)).astype("float32") for _ in range(2))
    c = np.empty((n, n), "float32")
    minitvm.build(mod)["main"](a, b, c)
    assert_allclose(c, a @ b.T, rtol=1e-4, atol=1e-4)


def _tensorized(sch: tir.Schedule, intrin: str) -> IRModule:
    try:
        sch.tensorize(sch.get_block("matmul_o_update"), intrin)
    except tir.ScheduleError as err:
        raise AssertionError(f"tensorize refused the block:\n{err}") from None
    return sch.mod


@pytest.mark.points(2)
@pytest.mark.hint("Beyond threads: tensorized blocks (blockize, Special memory scopes): the tile's three loops "
                  "become one block, whose inputs and output live in the special scopes",
                  "the operand copies belong inside the loop over k's tiles, the accumulator's write-back after it; "
                  "the update block only accumulates, so the init must be split off")
@pytest.mark.parametrize("n, tile", [(128, 16), (64, 8)])
def test_stage_tile_blocks(ex, n, tile):
    """Exercise 9.8: blockize the tiled matmul and stage the tiles in special memory scopes."""
    result = ex.stage_tile_blocks(_matmul_bt(n), tile)
    mod = _scheduled(result)
    _run_cpu(mod, n, seed=8 + tile)
    sch = tir.Schedule(mod)
    inside_k = "inside the loop over k's tiles, right before the piece that reads it"
    for name, loops, where in (("A_global.A_reg", 5, inside_k), ("B_global.B_reg", 5, inside_k),
                               ("C_global.accumulator", 4, "after the loop over k's tiles, once per tile of C")):
        try:
            got = len(sch.get_loops(sch.get_block(name)))
        except tir.ScheduleError:
            raise AssertionError(f"no block {name!r}: the tiles are not staged in the scopes the exercise "
                                 "names") from None
        assert got == loops, f"the copy {name!r} sits under {got} loops, not {loops}: it belongs {where}"
    _run_cpu(_tensorized(sch, _tile_intrin(tile)), n, seed=9 + tile)


@pytest.mark.points(2)
@pytest.mark.hint("Tensorize: declare the instruction, then use it: a description is the computation the intrinsic "
                  "does, on buffers in the scopes it reads and writes",
                  "tensorize compares your description with the staged block: same scopes, same reads, same update")
@pytest.mark.parametrize("tile", [16, 8])
def test_tile_matmul_description(ex, tile):
    """Exercise 9.9: a description that tensorize accepts for the staged blocks."""
    desc = ex.tile_matmul_description(tile)
    assert isinstance(desc, tir.PrimFunc), f"return the T.prim_func, not {type(desc).__name__}"
    scopes = [desc.buffer_map[p].scope for p in desc.params]
    assert scopes == list(_SCOPES), f"the description's buffers are in scopes {scopes}, expected {list(_SCOPES)}"
    n = 4 * tile
    mod = _tensorized(_staged_tiles(_matmul_bt(n), tile), _tile_intrin(tile, desc))
    _run_cpu(mod, n, seed=10 + tile)


# ------------------------------------------------------------------ 9.10


def _int8_matmul(m: int, n: int, k: int) -> IRModule:
    """C[i, j] = sum_k int32(A[i, k]) * int32(W[j, k]), W packed as B[j // 16, k // 4, j % 16, k % 4]."""
    A = te.placeholder((m, k), name="A", dtype="uint8")
    B = te.placeholder((n // 16, k // 4, 16, 4), name="B", dtype="int8")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(
        A[i, r].astype("int32") * B[j // 16, r // 4, j % 16, r % 4].astype("int32"), axis=r), name="C")
    return _module(te.create_prim_func([A, B, C]).with_attr("global_symbol", "main"))


@pytest.mark.points(2)
@pytest.mark.hint("An instruction the compiler does not find: int8 dot products: the intrinsic computes 16 outputs "
                  "from 4 int8 products each: which of your loops could be that?",
                  "print the intrinsic's description: tensorize accepts a loop whose nest computes exactly it, the "
                  "same extents in the same order")
@pytest.mark.parametrize("m, n, k", [(64, 64, 64), (8, 48, 40)])
def test_tensorize_int8_tile(ex, m, n, k):
    """Exercise 9.10: an int8 matmul tensorized with AVX-512 VNNI's dot_16x4_vnni."""
    from minitvm.tir.tensor_intrin import x86

    mod = _scheduled(ex.tensorize_int8_tile(_int8_matmul(m, n, k)))
    tensorized = "llvm.x86.avx512.vpdpbusd" in mod.script()
    assert tensorized, "no part of block C is tensorized with dot_16x4_vnni"
    rng = np.random.default_rng(m + n + k)
    a = rng.integers(0, 256, (m, k)).astype("uint8")
    w = rng.integers(-128, 128, (n, k)).astype("int8")
    packed = np.ascontiguousarray(w.reshape(n // 16, 16, k // 4, 4).transpose(0, 2, 1, 3))
    c = np.full((m, n), 7, "int32")
    lib = minitvm.build(mod, target="llvm")  # this CPU: vpdpbusd with VNNI, integer code without
    lib["main"](a, packed, c)
    np.testing.assert_array_equal(c, a.astype("int64") @ w.astype("int64").T)
    # the instruction, read in a build for a CPU with VNNI (the same on every machine)
    asm = minitvm.build(mod, target=x86.VNNI_TARGET).get_source("asm")
    assert "vpdpbusd" in asm, "the machine code for a CPU with VNNI has no vpdpbusd"
