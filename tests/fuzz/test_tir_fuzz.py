"""Differential fuzzing of TensorIR: random programs x random schedules.

Every random program (minitvm.testing.fuzz.tir_programs) is built with TE; the LLVM
backend and the reference interpreter must both compute what numpy computes, before and
after a random sequence of schedule primitives, and every function must survive the
printer/parser round trip.  A primitive that refuses (ScheduleError) must leave the
schedule as it was (apply_schedule checks that).
"""

import numpy as np
from hypothesis import given, note

import minitvm
from minitvm import tir
from minitvm.testing.fuzz import apply_schedule, assert_round_trip, schedule_steps, tir_programs, tolerance


def run(func, arrays, target):
    """Build ``func`` for ``target`` and call it on copies of ``arrays`` plus an empty output."""
    args = [minitvm.nd.array(a.copy()) for a in arrays[:-1]]
    out = minitvm.nd.array(np.full_like(arrays[-1], 7))  # garbage, not zeros: every element must be written
    minitvm.build(func, target=target)["main"](*args, out)
    for a, before in zip(args, arrays):
        np.testing.assert_array_equal(a.numpy(), before, err_msg=f"{target} wrote an input array")
    return out.numpy()


def check_against_numpy(program, func, seed=1):
    """The interpreter first (it raises on out-of-bounds accesses), then LLVM.  A program that
    divides by zero must fail in both (the meaning minitvm.tir.semantics gives it)."""
    inputs = program.random_inputs(seed)
    try:
        want, scale = program.reference(inputs)
    except ZeroDivisionError:
        check_division_by_zero(program, func, inputs)
        return
    for target in ("python", "llvm"):
        got = run(func, inputs + [want], target)
        np.testing.assert_allclose(got, want, **tolerance(program.dtype, scale),
                                   err_msg=f"{target} differs from numpy\n{func.script()}")


def check_division_by_zero(program, func, inputs):
    """numpy met a zero divisor: both backends fail the same way, or -- when the division was
    simplified away (``(2 // x) % 1`` folds to 0, as in TVM) -- compute the same values."""
    results = []
    for target in ("python", "llvm"):
        try:
            results.append(run(func, inputs + [np.zeros(program.stages[-1].shape, program.dtype)], target))
        except RuntimeError as err:
            assert "integer division by zero" in str(err), f"{target}: {err}"
            results.append(None)
    if results[0] is None or results[1] is None:
        assert results[0] is None and results[1] is None, f"only one backend failed:\n{func.script()}"
    else:
        np.testing.assert_array_equal(results[1], results[0], err_msg=func.script())


@given(program=tir_programs())
def test_random_program_matches_numpy(program):
    note(repr(program))
    func = program.build()
    assert_round_trip(func)
    check_against_numpy(program, func)


@given(program=tir_programs(), steps=schedule_steps())
def test_random_schedule_keeps_the_numbers(program, steps):
    sch = tir.Schedule(program.build())
    applied = apply_schedule(sch, steps)
    note(f"applied: {applied}\n{sch.trace}")
    func = sch.mod["main"]
    assert_round_trip(func)
    check_against_numpy(program, func)
