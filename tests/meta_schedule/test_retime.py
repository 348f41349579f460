"""After the search, the finalists are timed against each other (tune._retime_best, with the
measurements faked): records timed once that beat the duel's winner join a new duel, and only
times from one duel are compared and recorded."""

from types import SimpleNamespace

import minitvm
from minitvm import meta_schedule as ms
from minitvm import tir
from minitvm.meta_schedule import tune

from .workloads import matmul_64


def _split_j(inner: int) -> tir.Schedule:
    sch = tir.Schedule(matmul_64)
    _, j, _ = sch.get_loops(sch.get_block("C"))
    sch.split(j, factors=sch.sample_perfect_tile(j, n=2, decision=[64 // inner, inner]))
    return sch


def _database(single: dict[str, float]) -> tuple:
    """A database of schedules measured once each (the search): ``name -> seconds``."""
    schedules = {"a": _split_j(2), "b": _split_j(4), "c": _split_j(8), "e": _split_j(16),
                 "default": tir.Schedule(matmul_64)}
    db = ms.database.MemoryDatabase()
    workload = db.commit_workload(minitvm.IRModule({"main": matmul_64}))
    for name, secs in single.items():
        db.commit_tuning_record(ms.database.TuningRecord(schedules[name].trace, workload, [secs], "llvm"))
    task = SimpleNamespace(workload=workload, ctx=SimpleNamespace(mod=minitvm.IRModule({"main": matmul_64}),
                                                                  target="llvm"))
    return db, task, {sch.mod.script(): name for name, sch in schedules.items()}


def test_records_timed_once_that_beat_the_winner_join_a_new_duel(monkeypatch):
    db, task, name_of = _database({"a": 1.0, "b": 2.0, "c": 3.0, "e": 4.0, "default": 5.0})
    # the first duel (a, b and the default) ran while the machine was slow: 6 s and more, so c and
    # e, timed once at 3 and 4 s, join; in the second duel everyone is timed anew, c wins
    duels = [{"a": 6.0, "b": 7.0, "default": 8.0}, {"a": 2.5, "b": 2.6, "default": 2.8, "c": 2.0, "e": 3.0}]
    seen = []

    def fake_measure(task, mods, builder, runner, rounds=0):
        names = [name_of[mod.script()] for mod in mods]
        seen.append(sorted(names))
        return [ms.runner.RunnerResult([duels[len(seen) - 1][n]] * rounds, None) for n in names]

    monkeypatch.setattr(tune, "_measure", fake_measure)
    tune._retime_best(task, db, None, None, best=2)
    assert seen == [["a", "b", "default"], ["a", "b", "c", "default", "e"]]
    chosen = db.query_schedule(minitvm.IRModule({"main": matmul_64}), "llvm")
    assert name_of[chosen.mod.script()] == "c"
    # only the last duel's times were added: one timing from the search, one a round
    assert sorted(len(r.run_secs) for r in db.get_all_tuning_records()) == [1 + tune.RETIME_ROUNDS] * 5
    assert sorted(r.median_secs for r in db.get_all_tuning_records()) == [2.0, 2.5, 2.6, 2.8, 3.0]


def test_a_duel_that_fails_as_a_whole_leaves_the_single_timings(monkeypatch):
    db, task, _ = _database({"a": 1.0, "b": 2.0})
    monkeypatch.setattr(tune, "_measure", lambda task, mods, *_args, **_kw:
                        [ms.runner.RunnerResult(None, "timeout: the candidate ran longer than 30 s") for _ in mods])
    tune._retime_best(task, db, None, None, best=2)
    assert sorted(r.run_secs for r in db.get_all_tuning_records()) == [[1.0], [2.0]]


class _FixedRunner(ms.runner.Runner):
    """A runner with only ``run`` (as a user's own): each call times every candidate once."""

    def __init__(self, secs):
        self.secs, self.calls = secs, 0

    def run(self, runner_inputs):
        self.calls += 1
        return [ms.runner.RunnerFuture(ms.runner.RunnerResult([s * self.calls], None)) for s in self.secs]


def test_a_runner_with_only_run_duels_round_by_round_and_refuses_a_sample_length():
    runner = _FixedRunner([1.0, 2.0])
    inputs = [None, None]
    results = runner.run_interleaved(inputs, rounds=3)
    assert [r.run_secs for r in results] == [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0]]
    # it cannot make a sample last sample_ms, so it says so rather than ignore it
    try:
        runner.run_interleaved(inputs, rounds=3, sample_ms=10.0)
    except NotImplementedError as err:
        assert "run_interleaved(sample_ms=10.0)" in str(err) and "LocalRunner" in str(err)
    else:
        raise AssertionError("sample_ms was accepted and ignored")


def test_the_retiming_asks_for_a_sample_length_only_from_runners_that_set_it():
    asked = []

    class Recording(_FixedRunner):
        def run_interleaved(self, runner_inputs, rounds, sample_ms=None):
            asked.append(sample_ms)
            return super().run_interleaved(runner_inputs, rounds, None)

    built = SimpleNamespace(build=lambda inputs: [SimpleNamespace(error_msg=None, artifact_path="") for _ in inputs])
    task = SimpleNamespace(reference=None, ctx=SimpleNamespace(target="llvm", search_strategy=SimpleNamespace(
        args_info=[])))
    mods = [minitvm.IRModule({"main": matmul_64})]
    runner = Recording([1.0])
    assert tune._measure(task, mods, built, runner, rounds=2)[0].run_secs == [1.0, 2.0]
    runner.sets_sample_length = True
    tune._measure(task, mods, built, runner, rounds=2)
    assert asked == [None, tune.RETIME_SAMPLE_MS]
