"""sch.loop_partition: a loop's range cut into consecutive pieces, each its own block."""

import pytest

from minitvm import tir
from minitvm.script import tir as T


@T.prim_func
def axpy(A: T.Buffer((20, 6), "float32"), B: T.Buffer((20, 6), "float32"), C: T.Buffer((20, 6), "float32")):
    for i, j in T.grid(20, 6):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * 3.0 + B[vi, vj]


def _names(sch):
    return [r.block.name_hint for r, _ in tir.schedule.tree.block_realizes(sch.mod["main"].body)]


def test_pieces_cover_the_range_and_compute_the_same(same_numbers, trace_replays):
    sch = tir.Schedule(axpy)
    i, _ = sch.get_loops("C")
    pieces = sch.loop_partition(i, factors=[3, 5])
    assert [(int(sch.get(p).min.value), int(sch.get(p).extent.value)) for p in pieces] == [(0, 3), (3, 5), (8, 12)]
    assert _names(sch) == ["root", "C_i_common", "C_i0_partition", "C_i0", "C_i1_partition", "C_i1",
                           "C_i2_partition", "C_i2"]
    middle = sch.get(sch.get_block("C_i1"))
    assert (int(middle.iter_vars[0].dom.min.value), int(middle.iter_vars[0].dom.extent.value)) == (3, 5)
    assert "C[3:8, 0:6]" in sch.mod.script()  # the write region narrowed to the piece
    trace_replays(sch, axpy)
    same_numbers(axpy, sch.mod)


def test_inferred_piece_and_nested_partition(same_numbers, trace_replays):
    sch = tir.Schedule(axpy)
    i, _ = sch.get_loops("C")
    sch.loop_partition(i, factors=[None, 4])  # [0, 16) and [16, 20): nothing appended
    _, j = sch.get_loops("C_i1")
    sch.loop_partition(j, factors=[1, None, 2])
    assert "C_i1_j2" in _names(sch)
    trace_replays(sch, axpy)
    same_numbers(axpy, sch.mod)


@pytest.mark.parametrize("factors, words", [
    ([12, 8], "leaves no iterations"),
    ([None, None], "only one factor"),
    ([0, 4], "not positive"),
])
def test_bad_factors_are_refused(factors, words):
    sch = tir.Schedule(axpy)
    i, _ = sch.get_loops("C")
    with pytest.raises(tir.ScheduleError, match=words):
        sch.loop_partition(i, factors=factors)


def test_annotated_loop_is_refused():
    sch = tir.Schedule(axpy)
    i, _ = sch.get_loops("C")
    sch.annotate(i, "pragma_note", 1)
    with pytest.raises(tir.ScheduleError, match="annotation"):
        sch.loop_partition(i, factors=[None, 4])
