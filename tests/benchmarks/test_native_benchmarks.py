"""The compile-time, call-overhead, decode-overhead and busy-machine benchmark sections run and
report (speed is never asserted: the rows only have to be there and be numbers)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import busy  # noqa: E402
import call_overhead  # noqa: E402
import compile_time  # noqa: E402
import decode_overhead  # noqa: E402


def test_compile_time_measures_cold_and_cached():
    r = compile_time.measure("mlp", repeat=1)
    assert not r.error and r.kernels >= 1
    assert r.cold.median > 0 and r.cached.median > 0 and r.cold_cpu.median > 0 and r.cold_thread.median > 0
    assert "mlp" in compile_time.table([r])


def test_call_overhead_rows_compare_native_and_bytecode():
    (row,) = call_overhead.measure(["empty-ish (x + 1)"], repeat=5, rounds=1)
    assert row[0] == "empty-ish (x + 1)" and float(row[1]) > 0 and float(row[2]) > 0


def test_decode_overhead_rows_compare_native_bytecode_and_static():
    (row,) = decode_overhead.measure(16, [4], repeat=3, rounds=1)
    assert row[1:3] == ["1", "4"] and all(float(row[k]) > 0 for k in (3, 4, 7)) and row[6].endswith("x")


def test_busy_rows_have_a_ratio():
    (row,) = busy.measure(["mlp"], [1], calls=10)
    assert row[0] == "mlp b=1" and row[6].endswith("x")


def test_transformers_group_names_every_architecture_and_tvm_summary_takes_the_median():
    from minitvm.testing import transformers_zoo

    names = compile_time.model_names("mlp, transformers")
    assert names == ["mlp"] + [f"hf_{a}" for a in transformers_zoo.ARCHITECTURES]
    rows = []
    timing = compile_time.Timing.of
    for name, ours, tvm in [("a", 1.0, [2.0, 1.0]), ("b", 3.0, [1.0, 1.0]), ("c", 2.0, [1.0, 4.0]), ("d", 1, "no")]:
        r = compile_time.CompileResult(name, cold=timing([ours]), cold_cpu=timing([ours]))
        r.extra["tvm"] = tvm
        rows.append(r)
    summary = compile_time.tvm_summary(rows)
    assert "3 models both compiled" in summary and "wall 2.00x" in summary and "CPU 1.00x" in summary
    assert summary.endswith("TVM failed on 1: d")
