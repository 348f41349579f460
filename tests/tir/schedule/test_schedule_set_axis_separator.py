"""sch.set_axis_separator and transform_layout's IndexMap.AXIS_SEPARATOR (TVM's semantics)."""

import pytest

from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.script import tir as T
from minitvm.tir import IndexMap


@T.prim_func
def scale_shift(A: T.Buffer((16, 12), "float32"), C: T.Buffer((16, 12), "float32")):
    B = T.alloc_buffer((16, 12))
    for i, j in T.grid(16, 12):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * 3.0
    for i, j in T.grid(16, 12):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] - 1.0


@T.prim_func
def scale_shift_separated(A: T.Buffer((16, 12), "float32"), C: T.Buffer((16, 12), "float32")):
    B = T.alloc_buffer((16, 12), axis_separators=[1])
    for i, j in T.grid(16, 12):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * 3.0
    for i, j in T.grid(16, 12):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] - 1.0


@T.prim_func
def with_views(A: T.Buffer((16, 12), "float32"), C: T.Buffer((16, 12), "float32")):
    B = T.alloc_buffer((16, 12))
    for i, j in T.grid(16, 12):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            Bv = T.match_buffer(B[vi, vj], ())
            Bv[()] = A[vi, vj] * 3.0
    for i, j in T.grid(16, 12):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] - 1.0


def _sep(func, name):
    for buf in func.buffer_map.values():
        if buf.name == name:
            return buf.axis_separators
    for alloc in func.body.block.alloc_buffers:
        if alloc.name == name:
            return alloc.axis_separators
    raise KeyError(name)


@pytest.mark.parametrize("how", ["primitive", "transform_layout_by_name", "transform_layout_by_buffer"])
def test_intermediate_buffer_gets_separators(how, same_numbers, trace_replays):
    sch = tir.Schedule(scale_shift)
    if how == "primitive":
        sch.set_axis_separator(sch.get_block("B"), ("write", 0), [1])
    elif how == "transform_layout_by_name":
        sch.transform_layout("B", "B", lambda i, j: [i, IndexMap.AXIS_SEPARATOR, j])
    else:
        buf = sch.get(sch.get_block("B")).writes[0].buffer
        sch.transform_layout("B", buf, lambda i, j: [i, IndexMap.AXIS_SEPARATOR, j])
    assert_structural_equal(sch.mod["main"], scale_shift_separated.with_attr("global_symbol", "scale_shift"))
    trace_replays(sch, scale_shift)
    assert any("set_axis_separator" in line for line in sch.trace.as_python())
    same_numbers(scale_shift, sch.mod)  # the CPU lays the groups out one after another


def test_parameter_buffer_changes_the_signature(same_numbers):
    sch = tir.Schedule(scale_shift)
    sch.set_axis_separator("B", ("read", 0), [1])
    assert _sep(sch.mod["main"], "A") == (1,)
    assert "axis_separators=[1]" in sch.mod.script()
    same_numbers(scale_shift, sch.mod)


def test_views_of_the_buffer_get_zero_separators():
    sch = tir.Schedule(with_views)
    sch.set_axis_separator("B", "B", [1])
    text = sch.mod.script()
    assert "T.alloc_buffer((16, 12), axis_separators=[1])" in text
    assert "axis_separators=[0]" in text  # the 0-d view cannot keep axis 1


def test_a_view_itself_is_refused():
    sch = tir.Schedule(with_views)
    view_block = sch.get(sch.get_block("B"))
    view = view_block.match_buffers[0].buffer
    from minitvm.tir.schedule.axis_separator import set_axis_separator

    with pytest.raises(tir.ScheduleError, match="match_buffer"):
        set_axis_separator(sch.mod["main"], view, [0])


def test_bad_buffer_index_is_an_assertion_like_tvm():
    sch = tir.Schedule(scale_shift)
    with pytest.raises(AssertionError):
        sch.set_axis_separator(sch.get_block("B"), ("write", 1), [1])
    with pytest.raises(AssertionError):
        sch.set_axis_separator(sch.get_block("B"), ("read", -1), [1])


def test_separator_outside_the_axes_is_refused():
    sch = tir.Schedule(scale_shift)
    with pytest.raises(tir.ScheduleError, match="outside"):
        sch.set_axis_separator("B", ("write", 0), [3])
    assert_structural_equal(sch.mod["main"], scale_shift.with_attr("global_symbol", "scale_shift"))


def test_transform_layout_and_block_layout_take_an_index_map(same_numbers, trace_replays):
    sch = tir.Schedule(scale_shift)
    sch.transform_layout("B", ("write", 0), IndexMap.from_func(lambda i, j: (j, i), index_dtype="int32"))
    sch.transform_block_layout("C", IndexMap.from_func(lambda i, j: (j, i)))
    assert [int(s.value) for s in sch.get(sch.get_block("B")).writes[0].buffer.shape] == [12, 16]
    trace_replays(sch, scale_shift)
    same_numbers(scale_shift, sch.mod)
