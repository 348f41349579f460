"""The MLC course's GPU chapter (part 1), written the course's way with ``import minitvm as
tvm``: the three schedules (vector add on blocks and threads, the window sum through shared
memory, the 1024^3 matmul with local and then shared tiles) built for the emulated GPU
(``target="cuda-emulated"``; the course's ``target="cuda"`` needs an NVIDIA GPU) and run on
``tvm.cuda(0)``, the emulated device, against numpy on seeded random data."""

from __future__ import annotations

import numpy as np

import minitvm as tvm
from minitvm.script import tir as T

RNG = np.random.default_rng(9)


@tvm.script.ir_module
class MyModuleVecAdd:
    @T.prim_func
    def main(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32"), C: T.Buffer((1024,), "float32")) -> None:
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i in T.grid(1024):
            with T.block("C"):
                vi = T.axis.remap("S", [i])
                C[vi] = A[vi] + B[vi]


@tvm.script.ir_module
class MyModuleWindowSum:
    @T.prim_func
    def main(A: T.Buffer((1027,), "float32"), B: T.Buffer((1024,), "float32")) -> None:
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i in T.grid(1024):
            with T.block("C"):
                vi = T.axis.remap("S", [i])
                B[vi] = A[vi] + A[vi + 1] + A[vi + 2]


@tvm.script.ir_module
class MyModuleMatmul:
    @T.prim_func
    def main(A: T.Buffer((1024, 1024), "float32"), B: T.Buffer((1024, 1024), "float32"),
             C: T.Buffer((1024, 1024), "float32")) -> None:
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i, j, k in T.grid(1024, 1024, 1024):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = 0.0
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def test_vector_add_bound_to_blocks_and_threads():
    sch = tvm.tir.Schedule(MyModuleVecAdd)
    block_C = sch.get_block("C")
    i, = sch.get_loops(block=block_C)
    i0, i1 = sch.split(i, [None, 128])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    rt_mod = tvm.compile(sch.mod, target="cuda-emulated")
    A_np = RNG.uniform(size=(1024,)).astype("float32")
    B_np = RNG.uniform(size=(1024,)).astype("float32")
    A_nd, B_nd = tvm.runtime.tensor(A_np), tvm.runtime.tensor(B_np)
    C_nd = tvm.runtime.tensor(np.zeros((1024,), dtype="float32"))
    rt_mod["main"](A_nd, B_nd, C_nd)
    np.testing.assert_allclose(C_nd.numpy(), A_np + B_np)


def test_window_sum_with_cooperative_fetching_into_shared_memory():
    sch = tvm.tir.Schedule(MyModuleWindowSum)
    nthread = 128
    block_C = sch.get_block("C")
    i, = sch.get_loops(block=block_C)
    i0, i1 = sch.split(i, [None, nthread])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    A_shared = sch.cache_read(block_C, read_buffer_index=0, storage_scope="shared")
    sch.compute_at(A_shared, i1)
    ax = sch.get_loops(A_shared)[-1]
    ax0, ax1 = sch.split(ax, [None, nthread])
    sch.bind(ax1, "threadIdx.x")
    rt_mod = tvm.compile(sch.mod, target="cuda-emulated")
    source = rt_mod.imported_modules[0].get_source()
    assert "__shared__ float A_shared" in source and "__syncthreads();" in source
    A_np = RNG.uniform(size=(1027,)).astype("float32")
    B_nd = tvm.nd.empty((1024,), "float32", tvm.cuda(0))
    rt_mod["main"](tvm.nd.array(A_np, tvm.cuda(0)), B_nd)
    np.testing.assert_allclose(B_nd.numpy(), A_np[:1024] + A_np[1:1025] + A_np[2:1026], rtol=1e-6)


def blocking(sch, tile_local_y, tile_local_x, tile_block_y, tile_block_x, tile_k):
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


def cache_read_and_coop_fetch(sch, block, nthread, read_idx, read_loc):
    read_cache = sch.cache_read(block=block, read_buffer_index=read_idx, storage_scope="shared")
    sch.compute_at(block=read_cache, loop=read_loc)
    # vectorized cooperative fetch
    inner0, inner1 = sch.get_loops(block=read_cache)[-2:]
    inner = sch.fuse(inner0, inner1)
    _, tx, vec = sch.split(loop=inner, factors=[None, nthread, 4])
    sch.vectorize(vec)
    sch.bind(tx, "threadIdx.x")


def blocking_with_shared(sch, tile_local_y, tile_local_x, tile_block_y, tile_block_x, tile_k):
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


def test_matmul_local_then_shared_blocking_at_the_course_size():
    A_np = RNG.uniform(size=(1024, 1024)).astype("float32")
    B_np = RNG.uniform(size=(1024, 1024)).astype("float32")
    want = A_np @ B_np
    dev = tvm.cuda(0)
    A_nd, B_nd = tvm.runtime.tensor(A_np, dev), tvm.runtime.tensor(B_np, dev)
    reports = []
    for sch in (blocking(tvm.tir.Schedule(MyModuleMatmul), 8, 8, 8, 8, 4),
                blocking_with_shared(tvm.tir.Schedule(MyModuleMatmul), 8, 8, 8, 8, 8)):
        rt_mod = tvm.compile(sch.mod, target="cuda-emulated")
        C_nd = tvm.runtime.tensor(np.zeros((1024, 1024), dtype="float32"), dev)
        evaluator = rt_mod.mod.time_evaluator("main", dev, number=1)
        assert evaluator(A_nd, B_nd, C_nd).mean > 0  # the emulation's own time on this CPU
        np.testing.assert_allclose(C_nd.numpy(), want, rtol=1e-4)
        reports.append(rt_mod.report()[0])
    local, shared = reports
    assert local.flops == shared.flops == 2 * 1024 ** 3
    # shared tiles: every block loads its A rows and B columns once per k step, not per thread
    assert shared.global_bytes < local.global_bytes / 30
