"""The MLC course's GPU programs (part 1 of "GPU and hardware acceleration") and their
schedules, written the course's way, at any size: shared by the GPU tests and chapter 9.

``vector_add(n)``, ``window_sum(n)`` and ``matmul(n)`` build the unscheduled PrimFuncs;
``bind_vector_add``, ``window_sum_shared``, ``matmul_local_blocking`` and
``matmul_shared_blocking`` apply the course's schedules to a ``tir.Schedule``.
"""

from __future__ import annotations

from .. import te, tir

__all__ = ["vector_add", "window_sum", "matmul", "bind_vector_add", "window_sum_shared",
           "matmul_local_blocking", "matmul_shared_blocking", "cache_read_and_coop_fetch"]


def vector_add(n: int = 1024) -> tir.PrimFunc:
    """C[i] = A[i] + B[i]."""
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    return te.create_prim_func([A, B, C]).with_attr("global_symbol", "main")


def window_sum(n: int = 1024) -> tir.PrimFunc:
    """B[i] = A[i] + A[i + 1] + A[i + 2] (A has n + 2 elements)."""
    A = te.placeholder((n + 2,), name="A")
    B = te.compute((n,), lambda i: A[i] + A[i + 1] + A[i + 2], name="C")
    return te.create_prim_func([A, B]).with_attr("global_symbol", "main")


def matmul(n: int = 1024) -> tir.PrimFunc:
    """C = A @ B, n x n float32 (block "C", as the course's MyModuleMatmul)."""
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C]).with_attr("global_symbol", "main")


def bind_vector_add(sch: tir.Schedule, nthread: int = 128) -> tir.Schedule:
    """Split the loop; blocks of ``nthread`` threads."""
    i, = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, [None, nthread])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    return sch


def window_sum_shared(sch: tir.Schedule, nthread: int = 128, cooperative: bool = True) -> tir.Schedule:
    """Bind to blocks/threads, cache A in shared memory per block and (``cooperative``) fetch it
    with all the threads of the block."""
    bind_vector_add(sch, nthread)
    block_C = sch.get_block("C")
    i1 = sch.get_loops(block_C)[-1]
    A_shared = sch.cache_read(block_C, read_buffer_index=0, storage_scope="shared")
    sch.compute_at(A_shared, i1)
    if cooperative:
        ax = sch.get_loops(A_shared)[-1]
        _, ax1 = sch.split(ax, [None, nthread])
        sch.bind(ax1, "threadIdx.x")
    return sch


def matmul_local_blocking(sch: tir.Schedule, tile_local_y: int = 8, tile_local_x: int = 8, tile_block_y: int = 8,
                          tile_block_x: int = 8, tile_k: int = 4) -> tir.Schedule:
    """The course's ``blocking``: a V x V tile of C per thread, accumulated in local memory."""
    block_C = sch.get_block("C")
    C_local = sch.cache_write(block_C, 0, "local")
    i, j, k = sch.get_loops(block=block_C)
    i0, i1, i2 = sch.split(loop=i, factors=[None, tile_block_y, tile_local_y])
    j0, j1, j2 = sch.split(loop=j, factors=[None, tile_block_x, tile_local_x])
    k0, k1 = sch.split(loop=k, factors=[None, tile_k])
    sch.unroll(k1)
    sch.reorder(i0, j0, i1, j1, k0, k1, i2, j2)
    sch.reverse_compute_at(C_local, j1)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    sch.bind(i1, "threadIdx.y")
    sch.bind(j1, "threadIdx.x")
    sch.decompose_reduction(block_C, k0)
    return sch


def cache_read_and_coop_fetch(sch: tir.Schedule, block: tir.schedule.BlockRV, nthread: int, read_idx: int,
                              read_loc: tir.schedule.LoopRV) -> None:
    """A shared cache of one input, fetched by all threads of the block, 4 floats at a time."""
    read_cache = sch.cache_read(block=block, read_buffer_index=read_idx, storage_scope="shared")
    sch.compute_at(block=read_cache, loop=read_loc)
    inner0, inner1 = sch.get_loops(block=read_cache)[-2:]
    inner = sch.fuse(inner0, inner1)
    _, tx, vec = sch.split(loop=inner, factors=[None, nthread, 4])
    sch.vectorize(vec)
    sch.bind(tx, "threadIdx.x")


def matmul_shared_blocking(sch: tir.Schedule, tile_local_y: int = 8, tile_local_x: int = 8, tile_block_y: int = 8,
                           tile_block_x: int = 8, tile_k: int = 8) -> tir.Schedule:
    """The course's ``blocking_with_shared``: local tiles plus shared tiles of A and B per block."""
    block_C = sch.get_block("C")
    C_local = sch.cache_write(block_C, 0, "local")
    i, j, k = sch.get_loops(block=block_C)
    i0, i1, i2 = sch.split(loop=i, factors=[None, tile_block_y, tile_local_y])
    j0, j1, j2 = sch.split(loop=j, factors=[None, tile_block_x, tile_local_x])
    k0, k1 = sch.split(loop=k, factors=[None, tile_k])
    sch.reorder(i0, j0, i1, j1, k0, k1, i2, j2)
    sch.reverse_compute_at(C_local, j1)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    tx = sch.fuse(i1, j1)
    sch.bind(tx, "threadIdx.x")
    nthread = tile_block_y * tile_block_x
    cache_read_and_coop_fetch(sch, block_C, nthread, 0, k0)
    cache_read_and_coop_fetch(sch, block_C, nthread, 1, k0)
    sch.decompose_reduction(block_C, k0)
    return sch
