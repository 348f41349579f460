"""sch.reindex: a copy stage whose buffer is indexed by the block's iterators."""

import re

import pytest

from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.script import tir as T


@T.prim_func
def transposed_scale(A: T.Buffer((16, 8), "float32"), B: T.Buffer((8, 16), "float32")):
    for i, j in T.grid(8, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vj, vi] * 2.0


@T.prim_func
def transposed_scale_reindexed(A: T.Buffer((16, 8), "float32"), B: T.Buffer((8, 16), "float32")):
    A_reindex = T.alloc_buffer((8, 16))
    for i, j in T.grid(8, 16):
        with T.block("A_reindex"):
            vi, vj = T.axis.remap("SS", [i, j])
            A_reindex[vi, vj] = A[vj, vi]
    for i, j in T.grid(8, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A_reindex[vi, vj] * 2.0


@T.prim_func
def matmul(A: T.Buffer((8, 12), "float32"), B: T.Buffer((12, 6), "float32"), C: T.Buffer((8, 6), "float32")):
    for i, j, k in T.grid(8, 6, 12):
        with T.block("matmul"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = 0.0
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@T.prim_func
def matmul_reindexed(A: T.Buffer((8, 12), "float32"), B: T.Buffer((12, 6), "float32"),
                     C: T.Buffer((8, 6), "float32")):
    B_reindex = T.alloc_buffer((6, 12))
    C_reindex = T.alloc_buffer((8, 6))
    for j, k in T.grid(6, 12):
        with T.block("B_reindex"):
            vj, vk = T.axis.remap("SS", [j, k])
            B_reindex[vj, vk] = B[vk, vj]
    for i, j, k in T.grid(8, 6, 12):
        with T.block("matmul"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C_reindex[vi, vj] = 0.0
            C_reindex[vi, vj] = C_reindex[vi, vj] + A[vi, vk] * B_reindex[vj, vk]
    for i, j in T.grid(8, 6):
        with T.block("C_reindex"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = C_reindex[vi, vj]


@T.prim_func
def read_twice(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32")):
    for i, j in T.grid(8, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vj, vi] + A[vi, vj]


@pytest.mark.parametrize("buffer", [("read", 0), "A"])
def test_reindex_read_follows_the_block_iterators(buffer, same_numbers, trace_replays):
    sch = tir.Schedule(transposed_scale)
    rv = sch.reindex("B", buffer)
    assert sch.get(rv).name_hint == "A_reindex"
    assert_structural_equal(sch.mod["main"],
                            transposed_scale_reindexed.with_attr("global_symbol", "transposed_scale"))
    trace_replays(sch, transposed_scale)
    same_numbers(transposed_scale, sch.mod)


def test_reindex_an_accumulator_by_name_is_its_write(same_numbers, trace_replays):
    sch = tir.Schedule(matmul)
    sch.reindex(sch.get_block("matmul"), "B")  # read at [vk, vj]: only j and k are used
    sch.reindex("matmul", "C")  # read and written: the write, a copy out after the block
    assert_structural_equal(sch.mod["main"], matmul_reindexed.with_attr("global_symbol", "matmul"))
    assert re.search(r"reindex\(block=b\d+, buffer=.\W?write\W?, 0.\)", "\n".join(sch.trace.as_python()))
    trace_replays(sch, matmul)
    same_numbers(matmul, sch.mod)


def test_reindex_refuses_two_access_patterns():
    sch = tir.Schedule(read_twice)
    with pytest.raises(tir.ScheduleError, match="block B accesses A at more than one index pattern"):
        sch.reindex("B", "A")


def test_reindex_refuses_a_bad_buffer():
    sch = tir.Schedule(read_twice)
    with pytest.raises(tir.ScheduleError, match="does not access a buffer named 'Z'"):
        sch.reindex("B", "Z")
    with pytest.raises(tir.ScheduleError, match="read index 3 is out of range"):
        sch.reindex("B", ("read", 3))


def test_reindex_refuses_loops_shared_with_another_block():
    sch = tir.Schedule(transposed_scale)
    sch.reindex("B", ("read", 0))
    sch.compute_at(sch.get_block("A_reindex"), sch.get_loops(sch.get_block("B"))[0])
    with pytest.raises(tir.ScheduleError, match="chain of loops"):
        sch.reindex("B", ("write", 0))
