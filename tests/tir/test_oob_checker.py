"""tir.analysis.OOBChecker: out-of-bounds accesses refused when they can be proven.

The first cases are TVM's own (tests/python/tir-analysis/test_tir_analysis_oob.py): a load or
store past the end, with or without a loop, and an index of unknown range that is not flagged.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import minitvm
from minitvm import tir
from minitvm.ir import IRModule
from minitvm.script import tir as T
from minitvm.testing.programs import mm_relu, split_with_where
from minitvm.tir.oob_checker import out_of_bounds_accesses


@T.prim_func
def bad_load(A: T.Buffer((2, 3), "float32"), B: T.Buffer((3, 2), "float32")):
    B[0, 0] = A[2, 2]


@T.prim_func
def bad_load_loop(A: T.Buffer((2, 3), "float32"), B: T.Buffer((3, 2), "float32")):
    for i in range(3):
        B[i, 0] = A[i, 2]


@T.prim_func
def bad_store(A: T.Buffer((2, 3), "float32"), B: T.Buffer((3, 2), "float32")):
    B[0, 3] = A[1, 2]


@T.prim_func
def bad_store_loop(A: T.Buffer((2, 3), "float32"), B: T.Buffer((3, 2), "float32")):
    for i in range(3):
        B[0, i] = A[1, i]


@T.prim_func
def unknown_bounds(A: T.Buffer((2, 3), "float32"), B: T.Buffer((3, 2), "float32"), N: T.int32):
    for i in range(3):
        B[0, N] = A[1, i]


def _check(func):
    return tir.analysis.OOBChecker()(IRModule({"main": func}))


@pytest.mark.parametrize("func, buffer", [(bad_load, "A"), (bad_load_loop, "A"), (bad_store, "B"),
                                          (bad_store_loop, "B")])
def test_tvm_cases_are_refused_naming_the_buffer(func, buffer):
    with pytest.raises(tir.OutOfBoundsError, match=f"buffer {buffer}") as err:
        _check(func)
    # no schedule is involved: not a ScheduleError; a TVMError (as TVM's) and an IndexError
    # (as the run-time BoundsError)
    assert not isinstance(err.value, tir.ScheduleError)
    assert isinstance(err.value, minitvm.TVMError) and isinstance(err.value, IndexError)
    assert [loc.what.split(" dimension")[0] for loc in err.value.locations] == [f"buffer {buffer}"]


def test_the_build_raises_it_with_the_message():
    with pytest.raises(tir.OutOfBoundsError, match=r"^main: out of bounds memory access, provable before running:\n"
                                                   r"  Out of bounds memory access on buffer A dimension 0: index i "
                                                   r"reaches \[0, 2\] but the valid range is \[0, 1\] \(extent 2\)"):
        minitvm.build(bad_load_loop.with_attr("global_symbol", "main"))


def test_an_index_of_unknown_range_is_left_to_run_time():
    _check(unknown_bounds)


def test_the_message_names_index_range_extent_and_statement():
    (loc,) = out_of_bounds_accesses(bad_load_loop)
    lines = Path(__file__).read_text().splitlines()
    line = next(k for k, text in enumerate(lines, 1) if text.strip() == "B[i, 0] = A[i, 2]")
    assert str(loc) == ("Out of bounds memory access on buffer A dimension 0: index i reaches [0, 2] but the "
                        "valid range is [0, 1] (extent 2); in `B[i, 0] = A[i, 2]` "
                        f"(TVMScript line {line} of {__file__})")


@T.prim_func
def one_past(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(17):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            B[vi] = A[vi] + T.float32(1)


@T.prim_func
def far(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi * 100000000] = A[vi]


def test_a_loop_past_the_blocks_domain_is_refused():
    (loc,) = out_of_bounds_accesses(one_past)
    with_block = one_past.body.block.body.body  # the ``with T.block("B")`` line
    assert str(loc) == ("block B binding vi: vi = i reaches [0, 16] but the block's domain is [0, 15] "
                        f"(extent 16); the loops run past it (TVMScript line {with_block.span.line} of {__file__})")
    assert with_block.span.line_text == 'with T.block("B"):'



def test_block_variables_range_over_their_domain():
    (loc,) = out_of_bounds_accesses(far)
    assert (loc.what, loc.index, loc.lo, loc.hi, loc.extent) == (
        "buffer B dimension 0", "vi * 100000000", 0, 700000000, 8)


@T.prim_func
def padded(A: T.Buffer((8,), "float32"), B: T.Buffer((10,), "float32")):
    for i in range(10):
        with T.block("B"):
            vi = T.axis.spatial(10, i)
            B[vi] = T.if_then_else(1 <= vi and vi < 9, A[vi - 1], T.float32(0))


@T.prim_func
def gathered(A: T.Buffer((8,), "float32"), idx: T.Buffer((4,), "int32"), B: T.Buffer((4,), "float32")):
    for i in range(4):
        with T.block("B"):
            vi = T.axis.spatial(4, i)
            B[vi] = A[idx[vi]]


@pytest.mark.parametrize("func", [padded, gathered, split_with_where, mm_relu],
                         ids=["guarded-by-a-condition", "index-read-from-a-buffer", "predicated-split", "matmul"])
def test_what_cannot_be_proven_out_of_bounds_passes(func):
    assert out_of_bounds_accesses(func) == []
    _check(func)


def test_scheduled_programs_pass():
    sch = tir.Schedule(mm_relu)
    i, j, k = sch.get_loops(sch.get_block("Y"))
    io, ii = sch.split(i, factors=[None, 8])
    sch.reorder(io, j, k, ii)
    sch.parallel(io)
    assert out_of_bounds_accesses(sch.mod["main"]) == []
    minitvm.build(sch.mod, target="llvm")


@T.prim_func
def predicated(A: T.Buffer((16, 16), "float32"), C: T.Buffer((15, 13), "float32")):
    for i, j in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.where(i < 15 and j < 13)
            C[vi, vj] = A[vi, vj] * T.float32(0.5)


def test_a_block_predicate_may_be_what_keeps_its_accesses_in_bounds():
    assert out_of_bounds_accesses(predicated) == []


@T.prim_func
def empty_copy(A: T.Buffer((0,), "float32"), B: T.Buffer((0,), "float32")):
    for i in range(0):
        with T.block("B"):
            vi = T.axis.spatial(0, i)
            B[vi] = A[vi]


def test_a_loop_that_never_runs_makes_no_access():
    # an empty tensor's kernel (torch allows zero-size dimensions) is not out of bounds
    assert out_of_bounds_accesses(empty_copy) == []
    minitvm.build(empty_copy)["empty_copy"](np.zeros(0, "float32"), np.zeros(0, "float32"))
