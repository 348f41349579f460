"""CompactBufferAllocation: a tile's buffer is allocated inside the tile loop, at tile size."""

import numpy as np

import minitvm
from minitvm import tir
from minitvm.script import tir as T
from minitvm.tir.transform import CompactBufferAllocation


@T.prim_func
def matmul(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    for i, j, k in T.grid(64, 64, 64):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def _local_accumulator(reduction_outside: bool = False):
    sch = tir.Schedule(matmul)
    c = sch.get_block("C")
    local = sch.cache_write(c, 0, "local")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, factors=[None, 4])
    j0, j1 = sch.split(j, factors=[None, 16])
    if reduction_outside:
        sch.reorder(k, i0, j0, i1, j1)
    else:
        sch.reorder(i0, j0, k, i1, j1)
        sch.reverse_compute_at(local, j0)
    return sch.mod


def _allocations(func):
    found = []
    tir.post_order_visit(func.body, lambda n: found.append(n) if isinstance(n, tir.Allocate) else None)
    return found


def test_tile_accumulator_shrinks_into_the_tile_loop():
    mod = CompactBufferAllocation()(_local_accumulator())
    func = mod["main"]
    assert func.body.block.alloc_buffers == ()
    (alloc,) = _allocations(func)
    assert [int(s) for s in alloc.buffer.shape] == [4, 16]
    text = mod.script()
    assert "C_local[vi - i_0 * 4, vj - j_0 * 16]" in text or "C_local[i_1, j_1]" in text, text


def test_not_moved_inside_a_reduction_loop():
    # the accumulator lives across iterations of k: it must stay allocated outside k
    mod = CompactBufferAllocation()(_local_accumulator(reduction_outside=True))
    func = mod["main"]
    assert [b.name for b in func.body.block.alloc_buffers] == ["C_local"]
    assert _allocations(func) == []


def test_numbers_unchanged_on_both_backends():
    mod = _local_accumulator()
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 64, 64)).astype("float32")
    for target in ("llvm", "python"):
        c = np.zeros((64, 64), "float32")
        minitvm.build(mod, target=target)["matmul"](a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_a_cache_inside_a_partitioned_loop_shrinks_into_its_piece():
    """``loop_partition`` wraps each piece in a block; a cache written inside a piece is allocated
    in that block, and is compacted there just as the root block's: to the tile, in the tile loop
    (else a 6 x 16 accumulator stays a 60 x 64 array in memory)."""
    sch = tir.Schedule(matmul)
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, factors=[None, 6])  # 64 = 6 * 10 + 4: the last tile is partial
    j0, j1 = sch.split(j, factors=[None, 16])
    sch.reorder(i0, j0, k, i1, j1)
    sch.loop_partition(i0, [10, None])
    for piece in ("C_i_00", "C_i_01"):
        block = sch.get_block(piece)
        local = sch.cache_write(block, 0, "local")
        sch.reverse_compute_at(local, sch.get_loops(block)[-4])
    func = CompactBufferAllocation()(sch.mod)["main"]
    shapes = sorted([int(s) for s in a.buffer.shape] for a in _allocations(func))
    assert shapes == [[4, 16], [6, 16]], func.script()
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 64, 64)).astype("float32")
    c = np.zeros((64, 64), "float32")
    minitvm.build(sch.mod, target="llvm")["matmul"](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
