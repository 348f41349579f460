"""Shared checks for schedule tests: a scheduled function must compute what the original did."""

import numpy as np
import pytest

import minitvm
from minitvm.driver.build_module import export_name
from minitvm.ir import IRModule
from minitvm.testing.tir_builders import random_arguments


def run(mod_or_func, args, target):
    mod = mod_or_func if isinstance(mod_or_func, IRModule) else IRModule({"main": mod_or_func})
    gv = mod.get_global_vars()[0]
    name = export_name(gv.name_hint, mod[gv])  # the build exports the global_symbol, as TVM
    arrays = [a.copy() for a in args]
    minitvm.build(mod, target=target)[name](*arrays)
    return arrays


def assert_same_numbers(original, scheduled, targets=("llvm", "python"), seed=0):
    """Run both on one set of random inputs; every argument must end up equal."""
    func = original if not isinstance(original, IRModule) else original[original.keys()[0]]
    args = random_arguments(func, seed)
    expected = run(original, args, "llvm")
    for target in targets:
        got = run(scheduled, args, target)
        for e, g in zip(expected, got):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5, err_msg=f"target {target}")


@pytest.fixture
def same_numbers():
    return assert_same_numbers


def assert_trace_replays(sch, original):
    """``sch.trace.as_python()`` run on a fresh schedule of ``original`` gives the same module,
    and so does the trace as a tuning database stores it (JSON; index maps read back by the
    arithmetic-only lambda parser, never evaluated)."""
    import json

    from minitvm import tir
    from minitvm.ir import assert_structural_equal
    from minitvm.script import tir as T

    fresh = tir.Schedule(original)
    exec("\n".join(sch.trace.as_python()), {"T": T}, {"sch": fresh})  # the printed trace is the program
    assert_structural_equal(fresh.mod, sch.mod)
    from_json = tir.Schedule(original)
    tir.schedule.Trace.apply_json_to_schedule(json.loads(json.dumps(sch.trace.as_json())), from_json)
    assert_structural_equal(from_json.mod, sch.mod)


@pytest.fixture
def trace_replays():
    return assert_trace_replays
