"""sch.merge: sibling loop nests of equal extents become one nest running both bodies."""

import pytest

from minitvm import tir
from minitvm.script import tir as T


@T.prim_func
def two_maps(A: T.Buffer((12, 8), "float32"), C: T.Buffer((12, 8), "float32"), D: T.Buffer((12, 4), "float32")):
    for i, j in T.grid(12, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * 2.0
    for i, j in T.grid(12, 4):
        with T.block("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = A[vi, vj * 2] - 1.0


def test_outer_loops_merge_and_results_stay(same_numbers, trace_replays):
    sch = tir.Schedule(two_maps)
    merged = sch.merge(sch.get_loops("C")[0], sch.get_loops("D")[0])
    assert sch.get(merged).loop_var.name == "i_m"
    assert [lp.loop_var.name for lp in map(sch.get, sch.get_loops("D"))] == ["i_m", "j"]
    assert sch.get_loops("C")[0].loop_var is sch.get_loops("D")[0].loop_var
    trace_replays(sch, two_maps)
    assert any(line.startswith("l") and "= sch.merge(" in line for line in sch.trace.as_python())
    same_numbers(two_maps, sch.mod)


def test_different_extents_are_refused():
    sch = tir.Schedule(two_maps)
    with pytest.raises(tir.ScheduleError, match="different extents"):
        sch.merge(sch.get_loops("C")[1], sch.get_loops("D")[1])


def test_different_depths_are_refused():
    sch = tir.Schedule(two_maps)
    with pytest.raises(tir.ScheduleError, match="deep"):
        sch.merge(sch.get_loops("C")[1], sch.get_loops("D")[0])


def test_one_loop_is_not_enough():
    sch = tir.Schedule(two_maps)
    with pytest.raises(ValueError, match="at least 2"):
        sch.merge(sch.get_loops("C")[0])
