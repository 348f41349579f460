"""sch.annotate_buffer_access: a block's read/write region stated by hand and marked explicit."""

import pytest

from minitvm import tir
from minitvm.script import tir as T


@T.prim_func
def gather(A: T.Buffer((32,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((32,))
    for i in range(32):
        with T.block("B"):
            vi = T.axis.spatial(32, i)
            B[vi] = A[vi] + 1.0
    for i in range(16):
        with T.block("C"):
            vi = T.axis.spatial(16, i)
            C[vi] = B[T.min(vi * 2 + 1, 31)] * 0.5


def _block(sch, name):
    return sch.get(sch.get_block(name))


def test_read_region_is_replaced_and_annotated(trace_replays, same_numbers):
    sch = tir.Schedule(gather)
    sch.annotate_buffer_access("C", 0, "read", lambda vi: [(vi * 2, vi * 2 + 2)])
    c = _block(sch, "C")
    region = c.reads[0].region[0]
    assert region.extent.value == 2 and region.min.script() == "vi * 2"
    assert [int(x.value) for x in c.annotations["explicit_read_region"]] == [0]
    assert 'T.block_attr({"explicit_read_region": [T.int32(0)]})' in sch.mod.script()
    trace_replays(sch, gather)
    same_numbers(gather, sch.mod)


def test_single_index_means_one_element_and_indices_are_not_repeated():
    sch = tir.Schedule(gather)
    sch.annotate_buffer_access("B", 0, "write", lambda vi: [vi])
    sch.annotate_buffer_access("B", 0, "write", lambda vi: [vi])
    b = _block(sch, "B")
    assert b.writes[0].region[0].extent.value == 1
    assert [int(x.value) for x in b.annotations["explicit_write_region"]] == [0]


def test_wrong_number_of_ranges_and_bad_index_are_refused():
    sch = tir.Schedule(gather)
    with pytest.raises(ValueError, match="must match"):
        sch.annotate_buffer_access("C", 0, "read", lambda vi: [(0, 1), (0, 1)])
    with pytest.raises(tir.ScheduleError, match="out of range"):
        sch.annotate_buffer_access("C", 3, "read", lambda vi: [(vi, vi + 1)])
