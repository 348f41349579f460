"""sch.add_unit_loop: a loop of extent 1 above a block or a loop."""
# ruff: noqa: F841, B007  (TVMScript: a block iterator and unit loops bound but unused, as in TVM)

import pytest

from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.script import tir as T


@T.prim_func
def scalar_add(A: T.Buffer((), "int32"), B: T.Buffer((), "int32"), C: T.Buffer((), "int32")):
    with T.block("C"):
        vi = T.axis.spatial(1, 0)
        C[()] = A[()] + B[()]


@T.prim_func
def scalar_add_one_loop(A: T.Buffer((), "int32"), B: T.Buffer((), "int32"), C: T.Buffer((), "int32")):
    for u in range(1):
        with T.block("C"):
            vi = T.axis.spatial(1, 0)
            C[()] = A[()] + B[()]


@T.prim_func
def scalar_add_two_loops(A: T.Buffer((), "int32"), B: T.Buffer((), "int32"), C: T.Buffer((), "int32")):
    for u1, u2 in T.grid(1, 1):
        with T.block("C"):
            vi = T.axis.spatial(1, 0)
            C[()] = A[()] + B[()]


def test_add_unit_loop_above_a_block_then_above_that_loop(same_numbers, trace_replays):
    sch = tir.Schedule(scalar_add)
    loop = sch.add_unit_loop(sch.get_block("C"))
    assert_structural_equal(sch.mod["main"], scalar_add_one_loop.with_attr("global_symbol", "scalar_add"))
    outer = sch.add_unit_loop(loop)
    assert_structural_equal(sch.mod["main"], scalar_add_two_loops.with_attr("global_symbol", "scalar_add"))
    assert [lp.loop_var for lp in map(sch.get, sch.get_loops(sch.get_block("C")))] == [outer.loop_var, loop.loop_var]
    trace_replays(sch, scalar_add)
    same_numbers(scalar_add, sch.mod)


def test_add_unit_loop_refuses_the_root_block():
    sch = tir.Schedule(scalar_add)
    with pytest.raises(tir.ScheduleError, match="root block"):
        sch.add_unit_loop("root")
