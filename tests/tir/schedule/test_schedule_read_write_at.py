"""sch.read_at / sch.write_at: a tile of a buffer copied at a named loop (TVM's ReadAt/WriteAt)."""

import pytest

from minitvm import tir
from minitvm.script import tir as T
from minitvm.testing.programs import mm_relu


@T.prim_func
def row_sums(A: T.Buffer((64, 48), "float32"), B: T.Buffer((64,), "float32")):
    for i0, i1, k in T.grid(8, 8, 48):
        with T.block("B"):
            vi = T.axis.spatial(64, i0 * 8 + i1)
            vk = T.axis.reduce(48, k)
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk] * T.float32(0.5)


def test_read_at_copies_the_tile_a_loop_reads(same_numbers, trace_replays):
    sch = tir.Schedule(row_sums)
    i0, _, _ = sch.get_loops("B")
    copy = sch.read_at(i0, "B", 0, "shared")
    block = sch.get(copy)
    assert block.name_hint == "A_shared" and block.annotations["auto_copy"]
    assert [iv.dom.extent.value for iv in block.iter_vars] == [8]  # one iterator: i0
    region = block.reads[0].region
    assert [r.extent.value for r in region] == [8, 48]  # 8 rows of A per i0
    assert sch.get(sch.get_block("B")).reads[0].buffer.scope == "shared"
    trace_replays(sch, row_sums)
    assert any("sch.read_at(loop=" in line for line in sch.trace.as_python())
    same_numbers(row_sums, sch.mod)


def test_write_at_writes_back_after_the_last_write(same_numbers, trace_replays):
    sch = tir.Schedule(row_sums)
    i0, _, _ = sch.get_loops("B")
    copy = sch.write_at(i0, "B", 0, "local")
    body = sch.get(i0).body
    assert body.seq[-1].block.name_hint == sch.get(copy).name_hint == "B_local"
    assert [r.extent.value for r in sch.get(copy).writes[0].region] == [8]
    trace_replays(sch, row_sums)
    same_numbers(row_sums, sch.mod)


def test_read_at_a_loop_the_block_is_not_under_is_refused():
    sch = tir.Schedule(mm_relu)  # the matmul Y and the relu C sit in loop nests of their own
    with pytest.raises(tir.ScheduleError, match="not under the loop"):
        sch.read_at(sch.get_loops("C")[0], "Y", 0, "shared")
