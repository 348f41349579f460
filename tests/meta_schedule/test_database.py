"""ms.database: records in JSON lines, reloadable in a fresh process, queried as TVM's."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import minitvm
from minitvm import meta_schedule as ms
from minitvm import tir

from .workloads import matmul_64, split_j


def _record(db, mod, seed, secs):
    sch = split_j(tir.Schedule(mod, seed=seed))
    workload = db.commit_workload(mod)
    db.commit_tuning_record(ms.TuningRecord(sch.trace, workload, secs, "llvm"))
    return sch


def test_json_database_writes_readable_lines_and_reloads(tmp_path):
    mod = minitvm.IRModule({"main": matmul_64})
    db = ms.database.JSONDatabase(work_dir=str(tmp_path))
    slow = _record(db, mod, 1, [2e-3, 2e-3])
    fast = _record(db, mod, 2, [1e-3])
    _record(db, mod, 5, None)  # a failed candidate is kept, never chosen (seeds 1, 2, 5: three splits)
    assert len(db) == 3
    workload_lines = open(tmp_path / "database_workload.json").read().splitlines()
    record_lines = open(tmp_path / "database_tuning_record.json").read().splitlines()
    assert len(workload_lines) == 1 and len(record_lines) == 3
    shash, text = json.loads(workload_lines[0])
    assert len(shash) == 16 and 'T.block("C")' in text
    index, (trace, secs, target, _) = json.loads(record_lines[1])
    assert index == 0 and secs == [1e-3] and target.startswith("llvm")
    assert any(inst[0] == "SamplePerfectTile" for inst in trace[0])

    again = ms.database.JSONDatabase(work_dir=str(tmp_path))
    assert len(again) == 3
    best = again.query_tuning_record(mod, "llvm", "main")
    assert best.run_secs == [1e-3]
    sch = ms.tir_integration.compile_tir(again, mod, "llvm")
    minitvm.ir.assert_structural_equal(sch.mod, fast.mod)
    top = again.get_top_k(again.commit_workload(mod), 5)
    assert [r.run_secs for r in top] == [[1e-3], [2e-3, 2e-3]]
    assert slow is not None


def test_the_same_trace_again_adds_its_times_to_one_record(tmp_path):
    """A schedule measured again (the tuner re-times its finalists) stays one record, in memory
    and when the file is read back; a failed measurement fails the record."""
    mod = minitvm.IRModule({"main": matmul_64})
    db = ms.database.JSONDatabase(work_dir=str(tmp_path))
    lucky = _record(db, mod, 1, [1e-3])  # split 32 x 2, timed once by luck
    steady = _record(db, mod, 2, [1.5e-3])  # split 64 x 1
    _record(db, mod, 3, [2e-3, 2.2e-3])  # seed 3 samples the same split as seed 1
    _record(db, mod, 2, [1.4e-3])
    flaky = _record(db, mod, 9, [5e-4])
    _record(db, mod, 9, None)
    for d in (db, ms.database.JSONDatabase(work_dir=str(tmp_path))):
        assert len(d) == 3
        assert [r.run_secs for r in d.get_all_tuning_records()] == [[1e-3, 2e-3, 2.2e-3], [1.5e-3, 1.4e-3], None]
        minitvm.ir.assert_structural_equal(ms.tir_integration.compile_tir(d, mod, "llvm").mod, steady.mod)
    assert len(open(tmp_path / "database_tuning_record.json").read().splitlines()) == 6
    assert lucky is not None and flaky is not None


def test_one_lucky_timing_does_not_rank_a_schedule_first(tmp_path):
    """The database ranks by the median of a record's timings: a schedule with one timing far
    below its other three (load that eased for a moment) ranks behind a steadily faster one,
    though its mean is lower."""
    mod = minitvm.IRModule({"main": matmul_64})
    db = ms.database.JSONDatabase(work_dir=str(tmp_path))
    _record(db, mod, 1, [0.5e-3, 2e-3, 2e-3, 2e-3])  # mean 1.625 ms, median 2 ms
    steady = _record(db, mod, 2, [1.8e-3, 1.7e-3, 1.9e-3, 1.8e-3])  # mean and median 1.8 ms
    for d in (db, ms.database.JSONDatabase(work_dir=str(tmp_path))):
        top = d.get_top_k(d.commit_workload(mod), 2)
        assert [r.median_secs for r in top] == [1.8e-3, 2e-3] and top[1].mean_secs < top[0].mean_secs
        minitvm.ir.assert_structural_equal(ms.tir_integration.compile_tir(d, mod, "llvm").mod, steady.mod)
    assert "1.8000 ms" in repr(top[0])


def test_database_reloads_in_a_fresh_process_and_builds(tmp_path):
    mod = minitvm.IRModule({"main": matmul_64})
    db = ms.database.JSONDatabase(work_dir=str(tmp_path))
    want = _record(db, mod, 5, [1e-3])
    code = (
        "import sys, numpy as np, minitvm\n"
        "from minitvm import meta_schedule as ms\n"
        f"sys.path.insert(0, {os.path.dirname(os.path.dirname(os.path.dirname(__file__)))!r})\n"
        "from tests.meta_schedule.workloads import matmul_64\n"
        f"db = ms.database.JSONDatabase(work_dir={str(tmp_path)!r})\n"
        "sch = ms.tir_integration.compile_tir(db, matmul_64, 'llvm')\n"
        "print(sch.mod.script())\n"
        "sch.trace.show()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.returncode == 0, out.stderr
    assert want.mod.script() in out.stdout
    assert "sample_perfect_tile" in out.stdout


def test_compile_tir_schedule_builds_and_computes_matmul(tmp_path):
    mod = minitvm.IRModule({"main": matmul_64})
    db = ms.database.MemoryDatabase()
    _record(db, mod, 7, [1e-3])
    sch = ms.tir_integration.compile_tir(db, mod, "llvm")
    lib = minitvm.build(sch.mod, target="llvm")
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((64, 64)).astype("float32"), rng.standard_normal((64, 64)).astype("float32")
    c = minitvm.nd.empty((64, 64), "float32")
    lib["main"](minitvm.nd.array(a), minitvm.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4, atol=1e-4)


def test_query_of_an_untuned_workload_is_none(tmp_path):
    db = ms.database.JSONDatabase(work_dir=str(tmp_path))
    assert ms.tir_integration.compile_tir(db, matmul_64, "llvm") is None
    assert db.query_tuning_record(minitvm.IRModule({"main": matmul_64}), "llvm", "main") is None


def test_query_takes_any_target_as_tvm_but_refuses_one_that_is_not(tmp_path):
    # TVM's QueryTuningRecord does not filter by target; a mistyped target is still an error
    mod = minitvm.IRModule({"main": matmul_64})
    db = ms.database.MemoryDatabase()
    _record(db, mod, 2, [1e-3])
    for target in ("llvm", minitvm.target.Target("llvm -mcpu=skylake-avx512")):
        assert db.query_tuning_record(mod, target, "main").run_secs == [1e-3]
    with pytest.raises(ValueError, match="unsupported target kind 'lvm'"):
        db.query_tuning_record(mod, "lvm", "main")
    with pytest.raises(TypeError, match="expected a str, dict or Target"):
        db.query_tuning_record(mod, 3, "main")


def test_database_scope_is_current_inside_with():
    db = ms.database.MemoryDatabase()
    assert ms.Database.current() is None
    with db:
        assert ms.Database.current() is db
    assert ms.Database.current() is None


def test_a_record_that_no_longer_replays_is_skipped_with_a_warning(tmp_path):
    import pytest

    mod = minitvm.IRModule({"main": matmul_64})
    db = ms.database.JSONDatabase(work_dir=str(tmp_path))
    _record(db, mod, 1, [1e-3])
    bad_trace = [[["GetBlock", [], ["no_such_block", "main"], ["b0"]]], []]
    with open(tmp_path / "database_tuning_record.json", "a") as f:
        f.write(json.dumps([0, [bad_trace, [5e-4], "llvm", None]]) + "\n")
    with pytest.warns(UserWarning, match="does not replay"):
        again = ms.database.JSONDatabase(work_dir=str(tmp_path))
    assert len(again) == 1 and again.query_tuning_record(mod, "llvm", "main").run_secs == [1e-3]
