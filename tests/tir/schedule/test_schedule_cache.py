"""cache_read / cache_write placement, size and redirection, as TVM decides them."""

import numpy as np
import pytest

import minitvm
from minitvm import tir
from minitvm.script import tir as T


def _names_in_order(stmt):
    names = []

    def visit(n):
        if isinstance(n, tir.Block):
            names.append(n.name_hint)
        return True

    tir.pre_order_visit(stmt, visit)
    return names


def _alloc(func, name):
    found = []
    tir.post_order_visit(func.body, lambda n: found.extend(
        b for b in n.alloc_buffers if b.name == name) if isinstance(n, tir.Block) else None)
    assert len(found) == 1, name
    return found[0]


@T.prim_func
def tiled_pipeline(A: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32"), D: T.Buffer((64,), "float32")):
    B = T.alloc_buffer((64,))
    for i in range(4):
        for j in range(16):
            with T.block("B"):
                vi = T.axis.spatial(64, i * 16 + j)
                B[vi] = A[vi] * T.float32(3)
        for j in range(16):
            with T.block("C"):
                vi = T.axis.spatial(64, i * 16 + j)
                C[vi] = B[vi] + T.float32(1)
    for i in range(64):
        with T.block("D"):
            vi = T.axis.spatial(64, i)
            D[vi] = B[vi] - T.float32(1)


def test_cache_read_goes_after_the_writer_inside_the_shared_loop(same_numbers, trace_replays):
    sch = tir.Schedule(tiled_pipeline)
    sch.cache_read("C", 0, "global")
    func = sch.mod["main"]
    # the copy runs per tile of loop i, between the producer and the first reader
    i_loop = func.body.block.body[0]
    assert [s.body.block.name_hint for s in i_loop.body.seq] == ["B", "B_global", "C"]
    copy = i_loop.body[1]
    assert copy.extent.value == 16
    # inside a loop the cache keeps the buffer's shape; both readers now use it
    assert [int(d) for d in _alloc(func, "B_global").shape] == [64]
    d_block = func.body.block.body[1].body.block
    assert d_block.reads[0].buffer.name == "B_global"
    same_numbers(tiled_pipeline, sch.mod)
    trace_replays(sch, tiled_pipeline)


def test_cache_read_for_chosen_consumers_only(same_numbers, trace_replays):
    sch = tir.Schedule(tiled_pipeline)
    sch.cache_read("C", 0, "global", consumer_blocks=["D"])
    func = sch.mod["main"]
    # D alone reads the cache, so the copy goes before D, at the top level, over all of B
    assert _names_in_order(func.body) == ["root", "B", "C", "B_global", "D"]
    c_block = func.body.block.body[0].body[1].body.block
    assert c_block.reads[0].buffer.name == "B"
    same_numbers(tiled_pipeline, sch.mod)
    trace_replays(sch, tiled_pipeline)


@T.prim_func
def tile_scope(A: T.Buffer((32, 32), "float32"), C: T.Buffer((32, 32), "float32")):
    B = T.alloc_buffer((32, 32))
    for io, jo in T.grid(4, 4):
        with T.block("tile"):
            ti, tj = T.axis.remap("SS", [io, jo])
            for x, y in T.grid(8, 8):
                with T.block("B"):
                    vi = T.axis.spatial(32, ti * 8 + x)
                    vj = T.axis.spatial(32, tj * 8 + y)
                    B[vi, vj] = A[vi, vj] + T.float32(2)
            for x, y in T.grid(8, 8):
                with T.block("C"):
                    vi = T.axis.spatial(32, ti * 8 + x)
                    vj = T.axis.spatial(32, tj * 8 + y)
                    C[vi, vj] = B[vi, vj] * B[vi, vj]


def test_cache_in_a_block_scope_is_compact(same_numbers):
    sch = tir.Schedule(tile_scope)
    sch.cache_read("C", 0, "local")
    func = sch.mod["main"]
    cache = _alloc(func, "B_local")
    assert [int(d) for d in cache.shape] == [8, 8]  # only the tile the scope writes
    text = func.script()
    assert "B_local[v0, v1] = B[ti * 8 + v0, tj * 8 + v1]" in text
    assert "C[vi, vj] = B_local[vi - ti * 8, vj - tj * 8] * B_local[vi - ti * 8, vj - tj * 8]" in text
    same_numbers(tile_scope, sch.mod)
    a = np.random.default_rng(11).standard_normal((32, 32)).astype("float32")
    c = minitvm.nd.array(np.zeros((32, 32), "float32"))
    minitvm.build(sch.mod)["tile_scope"](minitvm.nd.array(a), c)
    np.testing.assert_allclose(c.numpy(), (a + 2) ** 2, rtol=1e-5)


def test_cache_write_copies_out_before_the_consumers(same_numbers, trace_replays):
    sch = tir.Schedule(tiled_pipeline)
    sch.cache_write("B", 0, "local")
    func = sch.mod["main"]
    i_loop = func.body.block.body[0]
    assert [s.body.block.name_hint for s in i_loop.body.seq] == ["B", "B_local", "C"]
    b_block = i_loop.body[0].body.block
    assert b_block.writes[0].buffer.name == "B_local"
    same_numbers(tiled_pipeline, sch.mod)
    trace_replays(sch, tiled_pipeline)


def test_cache_write_with_a_consumer_reading_the_cache(same_numbers):
    sch = tir.Schedule(tiled_pipeline)
    sch.cache_write("B", 0, "local", consumer_blocks=["C"])
    func = sch.mod["main"]
    # C reads the cache in the tile; the copy out only has to precede D, at the top level
    assert _names_in_order(func.body) == ["root", "B", "C", "B_local", "D"]
    c_block = func.body.block.body[0].body[1].body.block
    assert c_block.reads[0].buffer.name == "B_local"
    same_numbers(tiled_pipeline, sch.mod)


@T.prim_func
def guarded_tail(A: T.Buffer((60,), "float32"), C: T.Buffer((60,), "float32")):
    B = T.alloc_buffer((60,))
    for i, j in T.grid(8, 8):
        with T.block("B"):
            T.where(i * 8 + j < 60)
            vi = T.axis.spatial(60, i * 8 + j)
            B[vi] = A[vi] + T.float32(1)
    for i in range(60):
        with T.block("C"):
            vi = T.axis.spatial(60, i)
            C[vi] = B[vi] * T.float32(2)


def test_cache_of_a_guarded_writer_stays_inside_the_buffer(same_numbers):
    sch = tir.Schedule(guarded_tail)
    sch.cache_read("C", 0, "shared")
    assert [int(d) for d in _alloc(sch.mod["main"], "B_shared").shape] == [60]
    same_numbers(guarded_tail, sch.mod)


def test_cache_write_needs_the_single_writer():
    @T.prim_func
    def f(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
        B = T.alloc_buffer((8,))
        for i in range(4):
            with T.block("B0"):
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi]
        for i in range(4):
            with T.block("B1"):
                vi = T.axis.spatial(8, i + 4)
                B[vi] = A[vi] * T.float32(2)
        for i in range(8):
            with T.block("C"):
                vi = T.axis.spatial(8, i)
                C[vi] = B[vi]

    sch = tir.Schedule(f)
    with pytest.raises(tir.ScheduleError, match=r"B must be written by a single block, but 2 blocks write it"):
        sch.cache_write("B0", 0, "local")
