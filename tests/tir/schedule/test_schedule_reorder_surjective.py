"""reorder accepts TVM's surjective bindings: terms may overlap (v0 * 2 + v1) but not leave gaps."""

import pytest

from minitvm import tir
from minitvm.script import tir as T


@T.prim_func
def overlapping(A: T.Buffer((14, 4), "float32"), B: T.Buffer((14, 4), "float32")):
    for v0, v1, v2 in T.grid(6, 4, 4):
        with T.block("B"):
            i = T.axis.spatial(14, v0 * 2 + v1)
            j = T.axis.spatial(4, v2)
            B[i, j] = A[i, j] + 1.0


@T.prim_func
def gapped(A: T.Buffer((32, 4), "float32"), B: T.Buffer((32, 4), "float32")):
    for v0, v1 in T.grid(8, 4):
        with T.block("B"):
            i = T.axis.spatial(32, v0 * 4)
            j = T.axis.spatial(4, v1)
            B[i, j] = A[i, j] + 1.0


def test_overlapping_binding_reorders(same_numbers, trace_replays):
    sch = tir.Schedule(overlapping)
    v0, v1, v2 = sch.get_loops("B")
    sch.reorder(v0, v2, v1)
    assert [sch.get(lp).loop_var.name for lp in sch.get_loops("B")] == ["v0", "v2", "v1"]
    trace_replays(sch, overlapping)
    same_numbers(overlapping, sch.mod)


def test_binding_with_gaps_is_refused():
    sch = tir.Schedule(gapped)
    v0, v1 = sch.get_loops("B")
    with pytest.raises(tir.ScheduleError, match="affine"):
        sch.reorder(v1, v0)
