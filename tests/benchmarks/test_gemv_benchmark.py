"""Smoke test of benchmarks/gemv.py at a small size: every GEMV kernel (float32, fused int8,
fused int4) computes x @ W.T of the weights it stands for.  Speed is never asserted."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str):
    sys.path.insert(0, str(ROOT / "benchmarks"))  # the script imports its sibling `common`
    try:
        spec = importlib.util.spec_from_file_location(f"_bench_{name}", ROOT / "benchmarks" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return module


def test_gemv_kernels_are_right_and_timed():
    gemv = _load("gemv")
    rows = gemv.measure(96, 128, 32, repeat=1, cold_mib=1)
    assert [r.name for r in rows] == ["minitvm fp32", "numpy fp32 (w @ x)", "minitvm int8", "minitvm int4 g32"]
    for r in rows:
        assert r.timing.median > 0 and r.extra["cold_median"] > 0
        assert r.max_abs_err is None or r.max_abs_err < 1e-4
    assert [r.extra["bytes"] for r in rows] == [96 * 128 * 4, 96 * 128 * 4, 96 * 128 + 96 * 4, 96 * 64 + 96 * 4 * 4]
    assert gemv.copy_bandwidth(mib=8, repeat=1) > 0 and gemv.read_bandwidth(mib=8, repeat=1) > 0
