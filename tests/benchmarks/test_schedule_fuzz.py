"""Smoke test of benchmarks/schedule_fuzz.py (random schedules on four kernels, checked against
numpy): a run of 5 sequences per kernel fills the table and finds nothing wrong, and the checker
does report a kernel whose numbers differ from numpy's."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from pathlib import Path

import numpy as np

from minitvm.testing.fuzz import Step

ROOT = Path(__file__).resolve().parents[2]


def _load():
    spec = importlib.util.spec_from_file_location("_bench_schedule_fuzz", ROOT / "benchmarks" / "schedule_fuzz.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_main_runs_every_kernel_and_prints_the_table(capsys):
    fuzz = _load()
    stats = fuzz.main(["--count", "20", "--seed", "3", "--max-steps", "4"])
    assert [s.kernel for s in stats] == ["matmul", "conv2d", "softmax", "matmul+relu"]
    for s in stats:
        assert s.tried == 5 and sum(s.counts.values()) == 5
        assert s.counts["wrong"] == s.counts["build_error"] == s.counts["crash"] == 0, s.failures
    out = capsys.readouterr().out
    assert "kernel" in out and "wrong" in out and "total" in out and "load average" in out


def test_wrong_numbers_are_reported_with_the_steps_and_trace():
    fuzz = _load()
    kernel = fuzz.kernels(1)[0]
    steps = [Step("split", (0, 0, 3, 0, 0))]
    assert fuzz.run_sequence(kernel, steps)[0] == "accepted"
    off = dataclasses.replace(kernel, expected=kernel.expected + 0.01 * np.abs(kernel.expected).max())
    outcome, applied, refused, report = fuzz.run_sequence(off, steps)
    assert (outcome, applied, refused) == ("wrong", 1, 0)
    assert report.startswith("[matmul] max |error|") and "Step(primitive='split'" in report
    assert "sch.split(" in report
