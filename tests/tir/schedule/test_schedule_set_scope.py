"""sch.set_scope: an intermediate buffer moves to another storage scope (TVM's semantics)."""

import pytest

from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.script import tir as T


@T.prim_func
def two_stage(A: T.Buffer((32, 16), "float32"), C: T.Buffer((32, 16), "float32")):
    B = T.alloc_buffer((32, 16))
    for i, j in T.grid(32, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * 2.0
    for i, j in T.grid(32, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + 1.0


@T.prim_func
def two_stage_shared(A: T.Buffer((32, 16), "float32"), C: T.Buffer((32, 16), "float32")):
    B = T.alloc_buffer((32, 16), scope="shared")
    for i, j in T.grid(32, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * 2.0
    for i, j in T.grid(32, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + 1.0


@T.prim_func
def two_stage_views(A: T.Buffer((32, 16), "float32"), C: T.Buffer((32, 16), "float32")):
    B = T.alloc_buffer((32, 16))
    for i, j in T.grid(32, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            Bv = T.match_buffer(B[vi, vj], ())
            Bv[()] = A[vi, vj] * 2.0
    for i, j in T.grid(32, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + 1.0


@pytest.mark.parametrize("block", ["B", None])
@pytest.mark.parametrize("buffer", [0, "B"])
def test_set_scope_rewrites_allocation_and_uses(block, buffer, same_numbers, trace_replays):
    sch = tir.Schedule(two_stage)
    sch.set_scope(block or sch.get_block("B"), buffer, "shared")
    assert_structural_equal(sch.mod["main"], two_stage_shared.with_attr("global_symbol", "two_stage"))
    trace_replays(sch, two_stage)
    assert "buffer_index=0" in "\n".join(sch.trace.as_python())  # a name is recorded as its index
    same_numbers(two_stage, sch.mod)


def test_set_scope_follows_match_buffer_views(trace_replays):
    sch = tir.Schedule(two_stage_views)
    sch.set_scope("B", 0, "local")
    block = sch.get(sch.get_block("B"))
    assert block.match_buffers[0].buffer.scope == "local"
    assert block.match_buffers[0].source.buffer.scope == "local"
    assert sch.mod["main"].body.block.alloc_buffers[0].scope == "local"
    trace_replays(sch, two_stage_views)


def test_set_scope_to_the_same_scope_changes_nothing():
    sch = tir.Schedule(two_stage)
    sch.set_scope("B", 0, "global")
    assert_structural_equal(sch.mod["main"], two_stage.with_attr("global_symbol", "two_stage"))


def test_set_scope_refuses_a_parameter():
    sch = tir.Schedule(two_stage)
    with pytest.raises(tir.ScheduleError, match="C .*not allocated by a block"):
        sch.set_scope("C", 0, "shared")


@pytest.mark.parametrize("index", [1, -1])
def test_set_scope_refuses_a_write_index_out_of_range(index):
    sch = tir.Schedule(two_stage)
    with pytest.raises(tir.ScheduleError, match="block B writes 1 buffer"):
        sch.set_scope("B", index, "shared")


def test_set_scope_refuses_an_unknown_scope():
    sch = tir.Schedule(two_stage)
    with pytest.raises(tir.ScheduleError, match="'test_scope' is not a storage scope"):
        sch.set_scope("B", 0, "test_scope")
