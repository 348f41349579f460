"""Chapter 9 exercises: GPUs and the emulated GPU (solved).

Each function takes an ``IRModule`` (the starting programs are below; the graders pass their
own copies, sometimes at other sizes) and returns the ``s_tir.Schedule`` after your
transformations, or writes a kernel, or predicts a number. Try them here or in a notebook::

    import minitvm
    from exercises import ch09
    sch = ch09.bind_elementwise(ch09.VectorAdd)
    lib = minitvm.tirx.build(sch.mod, target="cuda-emulated")
    print(lib.imported_modules[0].get_source())
    print(lib.report())

The graders (``tests/grade/test_ch09.py``) build every GPU kernel for ``"cuda-emulated"``, run
it against numpy and read the emulator's report (threads, shared memory, bytes moved); the
tensorized blocks of 9.8-9.10 are built for the CPU (9.10: an int8 matmul on AVX-512 VNNI).
Run them with ``minitvm grade ch09`` or ``minitvm.grade.check("ch09")``.
"""

from __future__ import annotations

from minitvm import s_tir, tirx
from minitvm.ir import IRModule
from minitvm.script import ir as I
from minitvm.script import tirx as T

# ---------------------------------------------------------------- starting programs


@I.ir_module
class VectorAdd:
    @T.prim_func
    def main(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32"), C: T.Buffer((1024,), "float32")):
        T.func_attr({"global_symbol": "main", "tirx.noalias": True})
        for i in range(1024):
            with T.sblock("C"):
                vi = T.axis.spatial(1024, i)
                C[vi] = A[vi] + B[vi]


@I.ir_module
class Transpose:
    @T.prim_func
    def main(A: T.Buffer((256, 128), "float32"), B: T.Buffer((128, 256), "float32")):
        T.func_attr({"global_symbol": "main", "tirx.noalias": True})
        for i, j in T.grid(128, 256):
            with T.sblock("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vj, vi]


@I.ir_module
class WindowSum:
    @T.prim_func
    def main(A: T.Buffer((1026,), "float32"), B: T.Buffer((1024,), "float32")):
        T.func_attr({"global_symbol": "main", "tirx.noalias": True})
        for i in range(1024):
            with T.sblock("C"):
                vi = T.axis.spatial(1024, i)
                B[vi] = A[vi] + A[vi + 1] + A[vi + 2]


@I.ir_module
class MatMul:
    @T.prim_func
    def main(A: T.Buffer((256, 256), "float32"), B: T.Buffer((256, 256), "float32"),
             C: T.Buffer((256, 256), "float32")):
        T.func_attr({"global_symbol": "main", "tirx.noalias": True})
        for i, j, k in T.grid(256, 256, 256):
            with T.sblock("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


# ---------------------------------------------------------------- exercises


def bind_elementwise(mod: IRModule, nthread: int = 128) -> s_tir.Schedule:
    """Exercise 9.1: run block "C" on the GPU, ``nthread`` threads per block.

    Every element of ``C`` is computed by its own GPU thread, in thread blocks of ``nthread``
    threads each (the length is a multiple of ``nthread``): the grader reads the launch shape,
    ``n // nthread`` blocks of ``nthread`` threads, from the emulator's report.
    """
    # BEGIN SOLUTION
    sch = s_tir.Schedule(mod)
    i, = sch.get_loops(sch.get_sblock("C"))
    i0, i1 = sch.split(i, [None, nthread])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    return sch
    # END SOLUTION


def bind_2d_tiles(mod: IRModule, tile: int = 16) -> s_tir.Schedule:
    """Exercise 9.2: a 2-D grid of 2-D blocks for the transpose (block "B").

    Each thread block computes one ``tile x tile`` square of ``B`` with ``tile x tile`` threads,
    one element each, and the blocks form a 2-D grid over ``B``. The ``x`` axes (of the grid and
    of a block) run along ``B``'s columns, the ``y`` axes along its rows, as in CUDA, where
    neighbouring ``threadIdx.x`` write neighbouring addresses.
    """
    # BEGIN SOLUTION
    sch = s_tir.Schedule(mod)
    i, j = sch.get_loops(sch.get_sblock("B"))
    i0, i1 = sch.split(i, [None, tile])
    j0, j1 = sch.split(j, [None, tile])
    sch.reorder(i0, j0, i1, j1)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    sch.bind(i1, "threadIdx.y")
    sch.bind(j1, "threadIdx.x")
    return sch
    # END SOLUTION


def window_sum_shared(mod: IRModule, nthread: int = 128) -> s_tir.Schedule:
    """Exercise 9.3: the window sum through shared memory, fetched cooperatively.

    Blocks of ``nthread`` threads, one output each (as in 9.1); the threads of a block read
    their inputs from a copy of ``A`` in the block's ``"shared"`` memory, which they fill
    together: each element of the block's window is fetched from global memory by one thread,
    once (the emulator refuses a copy that every thread writes whole: a race). The grader checks
    the numbers, that the shared copy holds no more than a block needs (at most ``2 * nthread``
    floats) and that each block loads its ``nthread + 2`` inputs from global memory once.
    """
    # BEGIN SOLUTION
    sch = bind_elementwise(mod, nthread)
    block = sch.get_sblock("C")
    i1 = sch.get_loops(block)[-1]
    cache = sch.cache_read(block, 0, "shared")
    sch.compute_at(cache, i1)
    ax = sch.get_loops(cache)[-1]
    _, ax1 = sch.split(ax, [None, nthread])
    sch.bind(ax1, "threadIdx.x")
    return sch
    # END SOLUTION


def reverse_chunks() -> tirx.PrimFunc:
    """Exercise 9.4 (open): write a GPU kernel in TVMScript, threads and shared memory by hand.

    ``B[128 * b + t] = A[128 * b + 127 - t]`` for a 1024-element float32 ``A``: each thread
    block reverses one chunk of 128 elements, with 128 threads, through a shared-memory copy of
    its chunk, and every element of ``A`` and ``B`` crosses global memory once (the emulator's
    report counts the bytes). No schedule: the function launches its threads and allocates its
    shared array itself, with the statements the lowered kernels the chapter prints are made of
    (``T.launch_thread``; ``T.allocate`` viewed through a ``T.Buffer(..., data=..., scope=...)``).
    Return the ``T.prim_func`` (parameters ``A`` and ``B``).
    """
    # BEGIN SOLUTION
    @T.prim_func
    def reverse(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32")):
        T.func_attr({"global_symbol": "main", "tirx.noalias": True})
        bx = T.launch_thread("blockIdx.x", 8)
        tx = T.launch_thread("threadIdx.x", 128)
        S = T.allocate([128], "float32", "shared")
        S_1 = T.Buffer((128,), data=S, scope="shared")
        S_1[tx] = A[bx * 128 + tx]
        B[bx * 128 + tx] = S_1[127 - tx]

    return reverse
    # END SOLUTION


def matmul_local_tiles(mod: IRModule, v: int = 4) -> s_tir.Schedule:
    """Exercise 9.5: the course's local blocking: each thread accumulates a ``v x v`` tile of C.

    The shape of the course's first GPU matmul: thread blocks of ``8 x 8`` threads in a 2-D
    grid (rows on the ``y`` axes, columns on the ``x`` axes), each thread computing a ``v x v``
    tile of ``C`` that it accumulates in ``"local"`` memory (registers) and writes to ``C`` once,
    at the end. The grader reads the grid, the block and each thread's local memory
    (``v * v`` floats) from the emulator's report, and checks the numbers.
    """
    # BEGIN SOLUTION
    sch = s_tir.Schedule(mod)
    block = sch.get_sblock("C")
    c_local = sch.cache_write(block, 0, "local")
    i, j, k = sch.get_loops(block)
    i0, i1, i2 = sch.split(i, [None, 8, v])
    j0, j1, j2 = sch.split(j, [None, 8, v])
    k0, k1 = sch.split(k, [None, 4])
    sch.reorder(i0, j0, i1, j1, k0, k1, i2, j2)
    sch.reverse_compute_at(c_local, j1)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    sch.bind(i1, "threadIdx.y")
    sch.bind(j1, "threadIdx.x")
    sch.decompose_reduction(block, k0)
    return sch
    # END SOLUTION


def matmul_shared_tiles(mod: IRModule) -> s_tir.Schedule:
    """Exercise 9.6 (open): a matmul whose thread blocks share their operands through shared memory.

    In 9.5's local blocking every thread streams its own rows of ``A`` and columns of ``B`` from
    global memory, though the threads of a block need the same ones. Schedule block "C" so that
    the threads of a block stage the parts of ``A`` and ``B`` they need in ``"shared"`` memory,
    fetched cooperatively (each element by one thread), and compute from there. Any schedule
    with these properties passes (the grader reads them from the emulator's report, for a
    128 x 128 matmul):

    * the numbers match numpy;
    * at least 4 thread blocks, each of at least 32 threads (the 1024-thread limit holds too);
    * at most 8 KiB of shared memory per block (a GPU has 48 KiB for all the blocks it runs at
      once);
    * at most 1/16 of the global-memory traffic of 9.5's local blocking, which loads two floats
      for every multiply-add.

    The course's schedule, in the chapter, is one answer.
    """
    # BEGIN SOLUTION
    sch = s_tir.Schedule(mod)
    block = sch.get_sblock("C")
    c_local = sch.cache_write(block, 0, "local")
    i, j, k = sch.get_loops(block)
    i0, i1, i2 = sch.split(i, [None, 8, 8])
    j0, j1, j2 = sch.split(j, [None, 8, 8])
    k0, k1 = sch.split(k, [None, 8])
    sch.reorder(i0, j0, i1, j1, k0, k1, i2, j2)
    sch.reverse_compute_at(c_local, j1)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    tx = sch.fuse(i1, j1)
    sch.bind(tx, "threadIdx.x")
    for index in (0, 1):
        cache = sch.cache_read(block, index, "shared")
        sch.compute_at(cache, k0)
        inner = sch.fuse(*sch.get_loops(cache)[-2:])
        _, t, vec = sch.split(inner, [None, 64, 4])
        sch.vectorize(vec)
        sch.bind(t, "threadIdx.x")
    sch.decompose_reduction(block, k0)
    return sch
    # END SOLUTION


def window_sum_global_bytes(n: int, nthread: int, shared: bool) -> int:
    """Exercise 9.7: predict the global-memory traffic of the window sum, in bytes.

    ``B[i] = A[i] + A[i + 1] + A[i + 2]`` for ``n`` float32 outputs (``n`` a multiple of
    ``nthread``), bound as in 9.1. Without shared memory every thread loads its three inputs
    from global memory and stores one output; with the cooperative shared cache of 9.3
    (``shared=True``) each block loads its ``nthread + 2`` inputs once. Count every load and
    store of every thread, 4 bytes each (the emulator's report counts the same way).
    """
    # BEGIN SOLUTION
    if not shared:
        return n * (3 + 1) * 4
    blocks = n // nthread
    return blocks * ((nthread + 2) + nthread) * 4
    # END SOLUTION


# ---------------------------------------------------------------- tensorized blocks (9.8, 9.9)
# The section "Beyond threads: tensorized blocks": C = A @ B.T cut into tile x tile x tile
# pieces, each the shape of one (imaginary) matrix instruction. These exercises build for the
# CPU (``minitvm.tirx.build(mod)``): the graders tensorize your blocks and compare with numpy.


@I.ir_module
class MatMulBT:
    @T.prim_func
    def main(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"),
             C: T.Buffer((128, 128), "float32")):
        T.func_attr({"global_symbol": "main", "tirx.noalias": True})
        for i, j, k in T.grid(128, 128, 128):
            with T.sblock("matmul"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]


def stage_tile_blocks(mod: IRModule, tile: int = 16) -> s_tir.Schedule:
    """Exercise 9.8: tensorized blocks with their operands in special memory, for ``MatMulBT``.

    The chapter's imaginary matrix unit, as a schedule of block "matmul" (the course's steps):
    one block per ``tile x tile x tile`` piece of the work (``blockize`` names it "matmul_o"),
    its init split off so that its update block, "matmul_o_update", only accumulates; the
    update reads ``A``'s and ``B``'s tiles from copies in ``"global.A_reg"`` and
    ``"global.B_reg"``, copied right before the piece that uses them (inside the loop over
    ``k``'s tiles), and adds into a copy of ``C``'s tile in ``"global.accumulator"``, written
    back once per tile of ``C`` (after the loop over ``k``'s tiles). The grader tensorizes
    "matmul_o_update" with an intrinsic described as in exercise 9.9 and checks the numbers.
    """
    # BEGIN SOLUTION
    sch = s_tir.Schedule(mod)
    i, j, k = sch.get_loops(sch.get_sblock("matmul"))
    i0, i1 = sch.split(i, [None, tile])
    j0, j1 = sch.split(j, [None, tile])
    k0, k1 = sch.split(k, [None, tile])
    sch.reorder(i0, j0, k0, i1, j1, k1)
    block = sch.blockize(i1)
    sch.compute_at(sch.cache_read(block, 0, "global.A_reg"), k0)
    sch.compute_at(sch.cache_read(block, 1, "global.B_reg"), k0)
    sch.reverse_compute_at(sch.cache_write(block, 0, "global.accumulator"), j0)
    sch.decompose_reduction(block, k0)
    return sch
    # END SOLUTION


def tile_matmul_description(tile: int = 16) -> tirx.PrimFunc:
    """Exercise 9.9: the description half of a ``TensorIntrin`` for the blocks of exercise 9.8.

    Write a ``T.prim_func`` with three ``T.handle`` parameters ``a, b, c`` matched (in that
    order) to ``tile x tile`` float32 buffers ``A`` in scope ``"global.A_reg"``, ``B`` in
    ``"global.B_reg"`` and ``C`` in ``"global.accumulator"``; its root block reads ``C, A, B``
    and writes ``C`` (all of each), and holds the loops ``i, j, k`` of one block computing
    ``C[i, j] = C[i, j] + A[i, k] * B[j, k]``. ``tensorize`` accepts a block only if it
    computes exactly what the description does, on buffers in the same scopes.
    """
    # BEGIN SOLUTION
    @T.prim_func
    def desc(a: T.handle, b: T.handle, c: T.handle):
        A = T.match_buffer(a, (tile, tile), "float32", offset_factor=tile, scope="global.A_reg")
        B = T.match_buffer(b, (tile, tile), "float32", offset_factor=tile, scope="global.B_reg")
        C = T.match_buffer(c, (tile, tile), "float32", offset_factor=tile, scope="global.accumulator")
        with T.sblock("root"):
            T.reads(C[0:tile, 0:tile], A[0:tile, 0:tile], B[0:tile, 0:tile])
            T.writes(C[0:tile, 0:tile])
            for i, j, k in T.grid(tile, tile, tile):
                with T.sblock("update"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]

    return desc
    # END SOLUTION


# ---------------------------------------------------------------- the CPU's int8 dot product (9.10)


@I.ir_module
class Int8MatMul:
    # C = A @ W.T in int32 for A uint8 and W int8, W given packed as B[j // 16, k // 4, j % 16, k % 4]
    @T.prim_func
    def main(A: T.Buffer((64, 64), "uint8"), B: T.Buffer((4, 16, 16, 4), "int8"),
             C: T.Buffer((64, 64), "int32")):
        T.func_attr({"global_symbol": "main", "tirx.noalias": True})
        for i, j, k in T.grid(64, 64, 64):
            with T.sblock("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = 0
                C[vi, vj] = C[vi, vj] + T.Cast("int32", A[vi, vk]) * T.Cast(
                    "int32", B[vj // 16, vk // 4, vj % 16, vk % 4])


def tensorize_int8_tile(mod: IRModule) -> s_tir.Schedule:
    """Exercise 9.10 (open): the int8 matmul (``Int8MatMul``) on the CPU's int8 dot-product instruction.

    AVX-512 VNNI's ``vpdpbusd`` adds, to each of 16 int32 lanes, the dot product of 4 unsigned
    bytes and 4 signed bytes; the tensor intrinsic ``"dot_16x4_vnni"``
    (``s_tir.tensor_intrin.x86.VNNI_DOT_16x4_INTRIN``; ``s_tir.TensorIntrin.get(name).desc`` is
    what it computes) wraps it. Schedule block "C" so that its work is done by that intrinsic
    and the results stay exact; any schedule ``tensorize`` accepts. The grader uses other sizes
    too (``j`` a multiple of 16, ``k`` of 4), checks the numbers against numpy, and reads
    ``vpdpbusd`` in a build for a CPU with VNNI (``x86.VNNI_TARGET``). On a CPU without VNNI the
    kernel still runs: LLVM computes each step with ordinary integer instructions.
    """
    # BEGIN SOLUTION
    from minitvm.s_tir.tensor_intrin.x86 import VNNI_DOT_16x4_INTRIN

    sch = s_tir.Schedule(mod)
    block = sch.get_sblock("C")
    i, j, k = sch.get_loops(block)
    j0, j1 = sch.split(j, [None, 16])
    k0, k1 = sch.split(k, [None, 4])
    sch.reorder(i, j0, k0, j1, k1)
    sch.decompose_reduction(block, k0)
    sch.tensorize(j1, VNNI_DOT_16x4_INTRIN)
    return sch
    # END SOLUTION
