"""ms.tune_tir: the MLC course's call, the built-in space, strategies, refused parameters."""

import numpy as np
import pytest

import minitvm
from minitvm import meta_schedule as ms

from .workloads import matmul_64, split_j

TARGET = "llvm --num-cores=1"
FAST = ms.runner.EvaluatorConfig(number=1, repeat=1, min_repeat_ms=0)


def _tune(tmp_path, **kw):
    kw.setdefault("runner", ms.runner.LocalRunner(evaluator_config=FAST))
    return ms.tune_tir(mod=minitvm.IRModule({"main": matmul_64}), target=TARGET, work_dir=str(tmp_path),
                       progress=False, seed=0, **kw)


def _check_matmul(sch):
    lib = minitvm.build(sch.mod, target="llvm")
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((64, 64)).astype("float32"), rng.standard_normal((64, 64)).astype("float32")
    c = minitvm.nd.empty((64, 64), "float32")
    lib["main"](minitvm.nd.array(a), minitvm.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4, atol=1e-4)


def test_course_style_schedule_fn_tunes_every_distinct_candidate(tmp_path):
    # j = 64 splits with inner factor <= 16: five distinct programs; the search stops after them
    db = _tune(tmp_path, max_trials_global=16, num_trials_per_iter=16, space=ms.space_generator.ScheduleFn(split_j))
    records = db.get_all_tuning_records()
    inner = sorted(int(r.trace.decisions[next(i for i in r.trace.insts if i.kind.name == "SamplePerfectTile")][1])
                   for r in records)
    assert inner == [1, 2, 4, 8, 16]
    assert all(r.is_valid for r in records)
    sch = ms.tir_integration.compile_tir(db, matmul_64, TARGET)
    best = min(records, key=lambda r: r.median_secs)
    assert str(sch.trace) == str(best.trace)
    _check_matmul(sch)


def test_builtin_space_samples_tiles_and_keeps_the_default_schedule(tmp_path):
    db = _tune(tmp_path, max_trials_global=6, num_trials_per_iter=6)
    records = db.get_all_tuning_records()
    assert len(records) == 6 and all(r.is_valid for r in records)
    texts = [str(r.trace) for r in records]
    assert any("sample_perfect_tile" in t and "cache_write" in t for t in texts)  # multi-level tiling
    assert any("sample_perfect_tile" not in t for t in texts)  # the default schedule's design space
    _check_matmul(ms.tir_integration.compile_tir(db, matmul_64, TARGET))


def test_the_fastest_candidates_and_the_default_schedule_are_timed_again(tmp_path):
    db = _tune(tmp_path / "retimed", max_trials_global=8, num_trials_per_iter=8, retime_best=2)
    first = {str(r.trace): r.run_secs[0] for r in db.get_all_tuning_records()}
    # a finalist has its search timing and one per round of the duel
    retimed = {str(r.trace) for r in db.get_all_tuning_records() if len(r.run_secs) > 1}
    assert all(len(r.run_secs) in (1, 1 + ms.tune.RETIME_ROUNDS) for r in db.get_all_tuning_records())
    fastest_two = set(sorted(first, key=first.get)[:2])
    default = {t for t in first if "sample_perfect_tile" not in t}
    assert len(default) == 1 and fastest_two | default <= retimed
    best = db.query_tuning_record(minitvm.IRModule({"main": matmul_64}), TARGET)
    assert str(best.trace) in retimed  # the choice rests on the median of many timings
    single = _tune(tmp_path / "single", max_trials_global=8, num_trials_per_iter=8, retime_best=0)
    assert all(len(r.run_secs) == 1 for r in single.get_all_tuning_records())


@pytest.mark.parametrize("strategy", ["replay-trace", "replay-func"])
def test_replay_strategies(tmp_path, strategy):
    db = _tune(tmp_path, max_trials_global=4, num_trials_per_iter=2, strategy=strategy, cost_model="random")
    assert len(db) == 4 and all(r.is_valid for r in db.get_all_tuning_records())


def test_refused_parameters_name_themselves(tmp_path):
    with pytest.raises(NotImplementedError, match="special_space"):
        _tune(tmp_path, max_trials_global=1, special_space={"main": "post-order-apply"})
    with pytest.raises(NotImplementedError, match="measure_callbacks"):
        _tune(tmp_path, max_trials_global=1, measure_callbacks=[])
    with pytest.raises(NotImplementedError, match="enable_cpu_cache_flush"):
        ms.runner.LocalRunner(evaluator_config=ms.runner.EvaluatorConfig(enable_cpu_cache_flush=True))
