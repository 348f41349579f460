"""A candidate that crashes its worker, hangs or computes a wrong result is recorded as failed
and the search goes on (issue 16's measurement requirement)."""

import os

from minitvm import meta_schedule as ms
from minitvm import tir
from minitvm.script import tir as T

from .workloads import add_one_32


@T.prim_func
def writes_far_out_of_bounds(A: T.Buffer((32,), "float32"), B: T.Buffer((32,), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    for i in range(32):
        with T.block("B"):
            vi = T.axis.spatial(32, i)
            # a data-dependent index (so no check can refuse it at build time) gigabytes past B
            B[T.Cast("int32", A[vi] * T.float32(1e9)) + 1100000000] = A[vi]


@T.prim_func
def never_ends(A: T.Buffer((32,), "float32"), B: T.Buffer((32,), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    for i in range(32):
        with T.block("B"):
            vi = T.axis.spatial(32, i)
            B[vi] = A[vi] + T.float32(1)
    for t in range(T.int64(1) << T.int64(42)):  # hours of float adds: it must be stopped
        with T.block("spin"):
            vt = T.axis.opaque(T.int64(1) << T.int64(42), t)
            B[0] = B[0] + T.float32(1e-30) * T.Cast("float32", vt)


@T.prim_func
def adds_two(A: T.Buffer((32,), "float32"), B: T.Buffer((32,), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    for i in range(32):
        with T.block("B"):
            vi = T.axis.spatial(32, i)
            B[vi] = A[vi] + T.float32(2)


BAD = {1: writes_far_out_of_bounds, 2: never_ends, 3: adds_two}


def good_or_bad(sch: tir.Schedule):
    """A space of four programs: the workload (choice 0) and three broken kernels."""
    choice = sch.get(sch.sample_categorical([0, 1, 2, 3], [0.25] * 4))
    if choice == 0:
        return sch
    bad = tir.Schedule(BAD[choice])
    # a trace of its own: the database keeps one record per trace, and a fresh schedule's is empty
    bad.annotate(bad.get_block("B"), "broken_kernel", choice)
    return bad


def test_crash_hang_and_wrong_result_are_failed_records_and_the_search_finishes(tmp_path):
    runner = ms.runner.LocalRunner(timeout_sec=4, evaluator_config=ms.runner.EvaluatorConfig(1, 1, 0))
    db = ms.tune_tir(mod=add_one_32, target="llvm --num-cores=1", work_dir=str(tmp_path), max_trials_global=8,
                     num_trials_per_iter=8, space=ms.space_generator.ScheduleFn(good_or_bad),
                     strategy="replay-func", runner=runner, cost_model="random", progress=False, seed=0)
    records = db.get_all_tuning_records()
    log = {row["error"].split(":")[0] if row["error"] else "ok" for row in db.trial_log.rows}
    assert len(records) == 4  # every distinct program measured once, then the space is exhausted
    assert sum(r.is_valid for r in records) == 1
    errors = " | ".join(row["error"] or "" for row in db.trial_log.rows)
    assert "worker process died" in errors
    assert "timeout" in errors
    assert "wrong result" in errors
    assert "ok" in log
    sch = ms.tir_integration.compile_tir(db, add_one_32, "llvm")
    assert "A[vi] + T.float32(1" in sch.mod.script()


def test_builder_and_runner_report_each_failure_by_candidate(tmp_path):
    import minitvm
    from minitvm.meta_schedule import _worker
    from minitvm.meta_schedule.search_strategy import args_info_of

    mod = minitvm.IRModule({"main": add_one_32})
    ref = _worker.reference_outputs(mod.script(), "llvm", args_info_of(mod), 0, str(tmp_path / "ref.npz"))
    builder = ms.builder.LocalBuilder(max_workers=2, work_dir=str(tmp_path))
    inputs = [ms.builder.BuilderInput(minitvm.IRModule({"main": f}), "llvm") for f in (adds_two, add_one_32)]
    built = builder.build(inputs)
    assert all(b.error_msg is None for b in built)
    runner = ms.runner.LocalRunner(timeout_sec=30, evaluator_config=ms.runner.EvaluatorConfig(1, 1, 0))
    runner_inputs = [ms.runner.RunnerInput(b.artifact_path, "llvm", args_info_of(mod), ref) for b in built]
    wrong, good = [f.result() for f in runner.run(runner_inputs)]
    assert wrong.run_secs is None and "wrong result" in wrong.error_msg
    assert good.error_msg is None and good.run_secs[0] > 0
    # timed against each other (the finalists' re-timing): the wrong one is refused, each good
    # one (here the same program twice) has a time from every round
    wrong, good, again = runner.run_interleaved(runner_inputs + runner_inputs[1:], rounds=5, sample_ms=1)
    assert wrong.run_secs is None and "wrong result" in wrong.error_msg
    for res in (good, again):
        assert res.error_msg is None and len(res.run_secs) == 5 and min(res.run_secs) > 0


def test_a_script_that_tunes_without_a_main_guard_tunes(tmp_path):
    # how TVM users and the MLC course write it: tune_tir at the top level of a plain script.
    # The workers are fresh interpreters that never run the script, so it tunes once, here.
    import subprocess
    import sys

    runs = tmp_path / "runs.txt"
    script = tmp_path / "tune_unguarded.py"
    script.write_text(
        "import minitvm\n"
        "import numpy as np\n"
        "from minitvm import meta_schedule as ms\n"
        "from tests.meta_schedule.workloads import add_one_32\n"
        f"open({str(runs)!r}, 'a').write('ran\\n')\n"
        "mod = minitvm.IRModule({'main': add_one_32})\n"
        f"db = ms.tune_tir(mod, 'llvm --num-cores=1', {str(tmp_path / 'w')!r}, max_trials_global=2, progress=False)\n"
        "sch = ms.tir_integration.compile_tir(db, mod, 'llvm --num-cores=1')\n"
        "lib = minitvm.build(sch.mod, target='llvm')\n"
        "a = np.random.default_rng(0).standard_normal(32).astype('float32')\n"
        "b = np.empty_like(a)\n"
        "lib['main'](a, b)\n"
        "np.testing.assert_allclose(b, a + 1, rtol=1e-6)\n"
        "print('tuned', len(db.get_all_tuning_records()))\n")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=root)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split()[0] == "tuned" and int(proc.stdout.split()[1]) >= 1
    assert runs.read_text() == "ran\n"  # no worker ran the script


def test_a_fresh_runner_worker_runs_a_parallel_candidate(tmp_path):
    # a runner worker that never compiled anything (as after a crash or a timeout restarted it)
    # must still have the thread pool parallel loops call: it once segfaulted on every one
    import minitvm
    from minitvm.meta_schedule import _worker
    from minitvm.meta_schedule.search_strategy import args_info_of

    mod = minitvm.IRModule({"main": add_one_32})
    ref = _worker.reference_outputs(mod.script(), "llvm", args_info_of(mod), 0, str(tmp_path / "ref.npz"))
    sch = tir.Schedule(mod)
    sch.parallel(sch.get_loops(sch.get_block("B"))[0])
    artifact = _worker.build_candidate(sch.mod.script(), "llvm", str(tmp_path / "parallel.pkl"))
    runner = ms.runner.LocalRunner(timeout_sec=60, evaluator_config=ms.runner.EvaluatorConfig(1, 1, 0))
    [result] = [f.result() for f in runner.run([ms.runner.RunnerInput(artifact, "llvm", args_info_of(mod), ref)])]
    runner.executor.shutdown()
    assert result.error_msg is None and result.run_secs[0] > 0
