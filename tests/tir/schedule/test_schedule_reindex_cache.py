"""sch.reindex_cache_read / reindex_cache_write: a cache in a scope, laid out by an index map
of the block iterators, placed where cache_read / cache_write would place it."""

import numpy as np
import pytest

import minitvm
from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.script import tir as T
from minitvm.transform import PassContext


@T.prim_func
def two_stage(A: T.Buffer((16, 8), "float32"), C: T.Buffer((16, 8), "float32")):
    B = T.alloc_buffer((16, 8))
    for i, j in T.grid(16, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * 2.0
    for i, j in T.grid(16, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + 1.0


@T.prim_func
def two_stage_cache_read(A: T.Buffer((16, 8), "float32"), C: T.Buffer((16, 8), "float32")):
    B = T.alloc_buffer((16, 8))
    B_shared = T.alloc_buffer((8, 8, 2), scope="shared")
    for i, j in T.grid(16, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * 2.0
    for i, j in T.grid(16, 8):
        with T.block("B_shared"):
            vi, vj = T.axis.remap("SS", [i, j])
            B_shared[vj, vi // 2, vi % 2] = B[vi, vj]
    for i, j in T.grid(16, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B_shared[vj, vi // 2, vi % 2] + 1.0


@T.prim_func
def row_sums(A: T.Buffer((4, 6, 5), "float32"), C: T.Buffer((4,), "float32")):
    B = T.alloc_buffer((4, 6))
    for i, j in T.grid(4, 6):
        for k in range(5):
            with T.block("B"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    B[vi, vj] = 0.0
                B[vi, vj] = B[vi, vj] + A[vi, vj, vk]
        with T.block("C"):
            vi, vj = T.axis.remap("SR", [i, j])
            with T.init():
                C[vi] = 0.0
            C[vi] = C[vi] + B[vi, vj]


@T.prim_func
def row_sums_cached(A: T.Buffer((4, 6, 5), "float32"), C: T.Buffer((4,), "float32")):
    B = T.alloc_buffer((4, 6))
    B_local = T.alloc_buffer((6, 4), scope="local")
    C_local = T.alloc_buffer((4,), scope="local")
    for i, j in T.grid(4, 6):
        for k in range(5):
            with T.block("B"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    B_local[vj, vi] = 0.0
                B_local[vj, vi] = B_local[vj, vi] + A[vi, vj, vk]
        with T.block("B_local"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = B_local[vj, vi]
        with T.block("C"):
            vi, vj = T.axis.remap("SR", [i, j])
            with T.init():
                C_local[vi] = 0.0
            C_local[vi] = C_local[vi] + B[vi, vj]
    for i in range(4):
        with T.block("C_local"):
            vi = T.axis.spatial(4, i)
            C[vi] = C_local[vi]


def test_reindex_cache_read_lays_the_cache_out_by_the_index_map(same_numbers, trace_replays):
    sch = tir.Schedule(two_stage)
    rv = sch.reindex_cache_read("C", 0, "shared", lambda i, j: (j, i // 2, i % 2))
    assert sch.get(rv).name_hint == "B_shared"
    assert_structural_equal(sch.mod["main"], two_stage_cache_read.with_attr("global_symbol", "two_stage"))
    trace_replays(sch, two_stage)
    same_numbers(two_stage, sch.mod)


def test_reindex_cache_write_goes_before_the_consumer_or_at_the_end(same_numbers, trace_replays):
    sch = tir.Schedule(row_sums)
    sch.reindex_cache_write("B", 0, "local", lambda i, j, k: (j, i))  # consumer C shares loops i, j
    sch.reindex_cache_write("C", 0, "local", lambda i, j: (i,))  # no consumer: after everything
    assert_structural_equal(sch.mod["main"], row_sums_cached.with_attr("global_symbol", "row_sums"))
    trace_replays(sch, row_sums)
    same_numbers(row_sums, sch.mod)


@pytest.mark.parametrize("read", [True, False])
def test_reindex_cache_refuses_a_map_using_other_iterators(read):
    sch = tir.Schedule(two_stage)
    with pytest.raises(tir.ScheduleError, match="iterator vi appears in the access of B but not in the index map"):
        if read:
            sch.reindex_cache_read("C", 0, "shared", lambda i, j: (j * 2,))
        else:
            sch.reindex_cache_write("B", 0, "shared", lambda i, j: (j,))


@T.prim_func
def tiled_copy(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(4):
        with T.block("tile"):
            vi = T.axis.spatial(4, i)
            T.reads(A[vi * 4:vi * 4 + 4])
            T.writes(B[vi * 4:vi * 4 + 4])
            for j in range(4):
                with T.block("elem"):
                    vj = T.axis.spatial(16, vi * 4 + j)
                    B[vj] = A[vj]


@pytest.mark.parametrize("read", [True, False])
def test_reindex_cache_refuses_a_region_that_is_not_a_point(read):
    sch = tir.Schedule(tiled_copy)
    cache = sch.reindex_cache_read if read else sch.reindex_cache_write
    with pytest.raises(tir.ScheduleError, match="block tile .* a region of [AB], not a single point"):
        cache("tile", 0, "shared", lambda i: (i,))


def test_reindex_cache_refuses_an_unknown_scope():
    sch = tir.Schedule(two_stage)
    with pytest.raises(tir.ScheduleError, match="'texture_x' is not a storage scope"):
        sch.reindex_cache_read("C", 0, "texture_x", lambda i, j: (i, j))


@T.prim_func
def scale_rows(a: T.handle, c: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n, 8))
    C = T.match_buffer(c, (n, 8))
    for i, j in T.grid(n, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * 2.0


def test_reindex_cache_with_a_symbolic_extent(trace_replays):
    sch = tir.Schedule(scale_rows)
    sch.reindex_cache_read("C", 0, "local", lambda i, j: (j, i))
    sch.reindex_cache_write("C", 0, "local", lambda i, j: (j, i))
    text = sch.mod["main"].script()
    assert 'A_local = T.alloc_buffer((8, n), scope="local")' in text
    assert "C[vi, vj] = C_local[vj, vi]" in text
    trace_replays(sch, scale_rows)
    a = np.random.default_rng(0).random((5, 8), dtype="float32")
    out = minitvm.nd.array(np.zeros((5, 8), "float32"))
    minitvm.build(sch.mod)["scale_rows"](minitvm.nd.array(a), out)
    np.testing.assert_allclose(out.numpy(), a * 2, rtol=1e-6)


@T.prim_func
def two_readers(A: T.Buffer((8, 8), "float32"), C: T.Buffer((8, 8), "float32"), D: T.Buffer((8, 8), "float32")):
    for i, j in T.grid(8, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * 2.0
    for i, j in T.grid(8, 8):
        with T.block("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = A[vj, vi] + 1.0


def test_reindex_cache_read_of_a_parameter_goes_first_in_the_scope(same_numbers):
    sch = tir.Schedule(two_readers)
    sch.reindex_cache_read("D", 0, "local", lambda i, j: (j, i))
    root = sch.mod["main"].body.block
    assert [s.body.body.block.name_hint for s in root.body.seq] == ["A_local", "C", "D"]
    same_numbers(two_readers, sch.mod)


@pytest.mark.parametrize("read", [True, False], ids=["read", "write"])
def test_reindex_cache_under_a_non_dividing_split_gets_the_split_guard(read, trace_replays):
    # The stage copies the split loops (16 -> 4 x 5) and ran for rows 16 .. 19 too: the build
    # proved B[19, j] out of bounds.  It now carries the guard the split gave block C.
    sch = tir.Schedule(two_stage)
    i, _ = sch.get_loops("C")
    sch.split(i, [None, 5])
    cache = getattr(sch, "reindex_cache_read" if read else "reindex_cache_write")
    rv = cache("C", 0, "local", lambda i, j: (j, i))
    stage_text = sch.mod.script().split(f'T.block("{sch.get(rv).name_hint}")')[1].split("T.reads")[0]
    assert "T.where(i_0 * 5 + i_1 < 16)" in stage_text
    a = np.random.default_rng(5).standard_normal((16, 8)).astype("float32")
    for target in ("llvm", "python"):
        with PassContext(config={"tir.bounds_check": True}):
            lib = minitvm.build(sch.mod, target=target)
        out = minitvm.nd.array(np.full((16, 8), np.nan, "float32"))
        lib["two_stage"](minitvm.nd.array(a), out)
        np.testing.assert_allclose(out.numpy(), a * 2 + 1, rtol=1e-6, err_msg=target)
    trace_replays(sch, two_stage)
