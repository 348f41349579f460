"""Smoke test of benchmarks/matmul.py: it runs end to end at a small size and every minitvm
schedule computes the right numbers (checked inside the script).  Speed is never asserted."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_matmul_benchmark_runs_small(capsys):
    matmul = _load("matmul")
    rows = matmul.main(["--size", "128", "--repeat", "1", "--rounds", "1", "--warmup", "0",
                        "--naive-size", "32", "--naive-repeat", "1", "--no-torch", "--no-json",
                        "--wait-idle", "0", "--omp-wait-policy", "env"])
    names = [r.name for r in rows]
    assert names == ["numpy", "minitvm naive", "minitvm default", "minitvm tiled", "minitvm packed", "minitvm best"]
    for r in rows[1:]:
        assert r.max_abs_err is not None and r.max_abs_err < 1e-2
        assert r.gflops is not None and r.gflops > 0
    assert not rows[1].comparable  # the naive row was timed at another size: no ratios
    out = capsys.readouterr().out
    assert "vs numpy" in out and "sch.tensorize" in out


def test_common_table_and_json(tmp_path, monkeypatch):
    common = _load("common")
    monkeypatch.setattr(common, "RESULTS_DIR", tmp_path)
    t = common.time_fn(lambda: None, repeat=3, warmup=1)
    assert t.repeat == 3 and t.min <= t.median <= t.max
    timings = common.time_interleaved({"a": lambda: None, "b": lambda: None}, repeat=2, rounds=2, warmup=0)
    assert [len(x.samples) for x in timings.values()] == [4, 4]
    calls = []
    fns = {name: (lambda name=name: calls.append(name)) for name in ("numpy", "a", "b")}
    timings = common.time_interleaved(fns, repeat=2, rounds=1, warmup=0, side_by_side=["a", "b"])
    assert "".join(c[0] for c in calls) == "n" * 3 + "ab" + "abab"  # a warm-up call each, then in turn
    assert [len(x.samples) for x in timings.values()] == [2, 2, 2]
    rows = [common.Row("numpy", common.Timing(2.0, 2.0, 2.0, 1), flops=4e9),
            common.Row("mine", common.Timing(1.0, 1.0, 1.0, 1), flops=4e9)]
    text = common.print_table(rows, baselines=("numpy",))
    assert "2.00x" in text
    path = common.write_json("demo", rows, env={})
    data = json.loads(path.read_text())
    assert data["rows"][1]["ratio_vs_numpy"] == pytest.approx(2.0)
    assert (tmp_path / "demo-latest.json").exists()
