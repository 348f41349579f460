"""The tuning loop (TVM's ``ms.tune_tasks`` with its task scheduler), for one task or many.

A task is one PrimFunc (a workload).  Each round of a task: the search strategy proposes up to
``num_trials_per_iter`` candidates, the builder compiles them and the runner checks and times
them (both in worker processes), every result -- failed ones too -- becomes a record in the
database, and the cost model learns from the times.  Rounds go to tasks in turn ("round-robin")
or, after every task had one, to the task whose ``weight x best time`` is largest ("gradient":
the simplified idea of TVM's gradient scheduler: spend trials where they can save most).
"""

from __future__ import annotations

import math
import os
import statistics
import tempfile
import time
from typing import Any

import numpy as np

from ..ir.module import IRModule
from ..target import Target
from ..target.target import GPU_KINDS
from ..tir.schedule import Schedule
from . import builder as _builder
from . import cost_model as _cost_model
from . import runner as _runner
from . import search_strategy as _strategy
from . import space_generator as _space
from ._worker import reference_outputs
from .database import Database, JSONDatabase, MemoryDatabase, TuningRecord, normalize_mod
from .executor import LocalPool, run_jobs
from .feature_extractor import FEATURE_NAMES, extract_from_mod

__all__ = ["TuneContext", "tune_tasks", "workload_flops", "TrialLog", "RETIME_ROUNDS", "RETIME_SAMPLE_MS"]

#: rounds in which ``tune_tasks(retime_best=...)`` times the finalists against each other, and
#: the length of each timing (the mean of as many calls as fill it): short, so that the
#: finalists of a round run at the same machine speed, and many, so that the median is firm
RETIME_ROUNDS = 20
RETIME_SAMPLE_MS = 10.0
#: most candidates in one such duel (a duel grows while records timed once beat its winner)
RETIME_MAX_DUEL = 64


def workload_flops(mod: IRModule) -> float:
    """Floating-point operations of one call of ``mod["main"]`` (from its blocks' loop nests)."""
    f = extract_from_mod(mod)
    main = 2 ** f[FEATURE_NAMES.index("log2_flops")]
    other = 2 ** f[FEATURE_NAMES.index("log2_other_flops")] - 1
    return float(np.round(main + other))


class TuneContext:
    """One task: the workload, its target, search space and strategy (TVM's TuneContext)."""

    def __init__(self, mod: IRModule | None = None, *, target: Target | str | None = None,
                 space_generator: Any = "post-order-apply", search_strategy: Any = "evolutionary",
                 task_name: str = "main", rand_state: int | None = None, num_threads: Any = None,
                 logger: Any = None) -> None:
        if logger is not None:
            raise NotImplementedError("TuneContext(logger=...): minitvm reports progress with tqdm")
        if num_threads not in (None, "physical", "logical"):
            raise NotImplementedError("TuneContext(num_threads=...): minitvm generates candidates in one thread")
        self.mod = None if mod is None else normalize_mod(mod)
        self.target = Target(target) if isinstance(target, str) else target
        self.space_generator = _space.create(space_generator)
        self.search_strategy = _strategy.create(search_strategy)
        self.task_name, self.rand_state = task_name, rand_state


class TrialLog:
    """What happened in each trial of one tuning run (for plots): task, seconds, error, wall time."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def add(self, task: str, secs: float | None, error: str | None, flops: float, started: float) -> None:
        self.rows.append({"task": task, "secs": secs, "error": error, "flops": flops,
                          "wall": time.time() - started})

    def best_so_far(self, task: str | None = None) -> list[float]:
        """Best seconds after each trial (inf until the first success)."""
        best, out = math.inf, []
        for r in self.rows:
            if task is None or r["task"] == task:
                if r["secs"] is not None:
                    best = min(best, r["secs"])
                out.append(best)
        return out


def _database(database: Any, work_dir: str) -> Database:
    if isinstance(database, Database):
        return database
    if database == "json":
        return JSONDatabase(work_dir=work_dir)
    if database == "memory":
        return MemoryDatabase()
    raise NotImplementedError(f"database={database!r}: 'json', 'memory' or a Database")


class _Task:
    def __init__(self, ctx: TuneContext, weight: float, database: Database, cost_model: Any, seed: int | None) -> None:
        self.ctx, self.weight = ctx, weight
        self.workload = database.commit_workload(ctx.mod)
        self.workload.task_name = self.workload.task_name or ctx.task_name
        self.flops = workload_flops(ctx.mod)
        self.trials, self.best, self.done = 0, math.inf, False
        ctx.search_strategy.pre_tuning(ctx.mod, ctx.space_generator, ctx.target, seed, database, cost_model)
        self.reference: str | None = None


def _progress(total: int, enabled: bool) -> Any:
    if not enabled:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc="tuning", unit="trial", disable=None, leave=True)


def tune_tasks(*, tasks: list[TuneContext], task_weights: list[float], work_dir: str, max_trials_global: int,
               max_trials_per_task: int | None = None, num_trials_per_iter: int = 64, builder: Any = "local",
               runner: Any = "local", database: Any = "json", cost_model: Any = "xgb",
               measure_callbacks: Any = "default", task_scheduler: str = "gradient",
               module_equality: str = "structural", post_optimization: bool = False, seed: int | None = None,
               executor: Any = None, num_tuning_cores: Any = "physical", progress: bool = True,
               log: TrialLog | None = None, retime_best: int = 3) -> Database:
    """Tune ``tasks`` within ``max_trials_global`` measured candidates; returns the database.

    minitvm's own options: ``executor`` (a ``concurrent.futures.Executor`` for the builder and
    runner), ``progress`` (the tqdm bar), ``log`` (a :class:`TrialLog` to fill) and
    ``retime_best``: after the search, each task's fastest few candidates (and the default
    schedule's) are timed against each other in RETIME_ROUNDS rounds, so that the database's
    choice does not rest on one noisy timing; 0 keeps the single timings, as TVM."""
    _check_tune_options(measure_callbacks, task_scheduler, post_optimization, module_equality)
    _check_cpu_targets(tasks)
    if len(task_weights) != len(tasks):
        raise ValueError("tune_tasks: one weight per task")
    if max_trials_global < 0 or num_trials_per_iter < 1:
        raise ValueError("tune_tasks: max_trials_global >= 0 and num_trials_per_iter >= 1")
    work_dir = work_dir or tempfile.mkdtemp(prefix="minitvm_ms_")
    os.makedirs(work_dir, exist_ok=True)
    cores = (os.cpu_count() or 1) if num_tuning_cores in ("physical", "logical") else int(num_tuning_cores)
    owned: list[LocalPool] = []  # worker pools made here end with the tuning
    if builder == "local":
        builder = _builder.LocalBuilder(max_workers=cores, executor=executor, work_dir=work_dir)
        owned.append(builder.executor)
    builder = _builder.create(builder)
    if getattr(builder, "work_dir", "") is None:
        builder.work_dir = work_dir
    if runner == "local":
        runner = _runner.create(runner, executor=executor)
        owned.append(runner.executor)
    runner = _runner.create(runner)
    db = _database(database, work_dir)
    model = _cost_model.create(cost_model)
    max_per_task = max_trials_global if max_trials_per_task is None else max_trials_per_task
    log = log if log is not None else TrialLog()
    started = time.time()
    jobs = [_Task(ctx, w, db, model, ctx.rand_state if ctx.rand_state is not None else
                  None if seed is None else seed + k)
            for k, (ctx, w) in enumerate(zip(tasks, task_weights))]
    bar = _progress(max_trials_global, progress)
    ref_executor = getattr(runner, "executor", None)
    if ref_executor is None:
        ref_executor = LocalPool(1)
        owned.append(ref_executor)
    total = 0
    try:
        while total < max_trials_global:
            live = [t for t in jobs if not t.done and t.trials < max_per_task]
            if not live:
                break
            task = _next_task(live, task_scheduler)
            n = min(num_trials_per_iter, max_trials_global - total, max_per_task - task.trials)
            if task.reference is None:
                task.reference = _make_reference(task, ref_executor, work_dir, getattr(runner, "timeout_sec", 30))
            cands = task.ctx.search_strategy.generate_measure_candidates(n)
            if not cands:
                task.done = True
                continue
            results = _measure(task, [c.sch.mod for c in cands], builder, runner)
            _record(task, cands, results, db, log, bar, jobs, started)
            task.trials += len(cands)
            total += len(cands)
            task.ctx.search_strategy.notify_runner_results(cands, results)
            model.update(None, cands, results)
        if retime_best > 0:
            _retime_tasks(jobs, db, builder, runner, retime_best, bar)
    finally:
        if bar is not None:
            bar.close()
        for pool in owned:
            if isinstance(pool, LocalPool):
                pool.shutdown()
    db.trial_log = log
    return db


def _check_tune_options(measure_callbacks: Any, task_scheduler: str, post_optimization: bool,
                        module_equality: str) -> None:
    """TVM's tuning options minitvm does not have are refused by name, never ignored."""
    if measure_callbacks != "default":
        raise NotImplementedError("measure_callbacks=...: minitvm records every result in the database and "
                                  "updates the cost model (TVM's default callbacks)")
    if task_scheduler not in ("gradient", "round-robin"):
        raise NotImplementedError(f"task_scheduler={task_scheduler!r}: minitvm has 'gradient' and 'round-robin'")
    if post_optimization:
        raise NotImplementedError("post_optimization=True: minitvm has no post-tuning optimization")
    if module_equality != "structural":
        raise NotImplementedError(f"module_equality={module_equality!r}: minitvm compares workloads structurally")


def _check_cpu_targets(tasks: list[TuneContext]) -> None:
    """A GPU target is refused before any worker starts: the search space holds CPU schedules only,
    and an unbound kernel cannot run on a GPU (it would fail as "did not run", far from the cause)."""
    for ctx in tasks:
        kind = getattr(getattr(ctx.target, "kind", None), "name", None)
        if kind in GPU_KINDS:
            raise NotImplementedError(
                f"tuning {ctx.task_name} for target {str(ctx.target)!r}: minitvm's MetaSchedule searches CPU "
                "schedules only (TVM's GPU rules, which bind loops to blockIdx/threadIdx, are not built); "
                "schedule GPU kernels with s_tir.dlight.ApplyDefaultSchedule, or tune for 'llvm'")


def _record(task: _Task, cands: list, results: list, db: Database, log: TrialLog, bar: Any, jobs: list[_Task],
            started: float) -> None:
    """Each measured candidate into the database and the trial log; the progress bar moves on."""
    for cand, res in zip(cands, results):
        trace = cand.sch.trace.simplified(remove_postproc=False)
        db.commit_tuning_record(TuningRecord(trace, task.workload, res.run_secs, task.ctx.target, cand.args_info))
        secs = sum(res.run_secs) / len(res.run_secs) if res.run_secs else None
        if secs is not None:
            task.best = min(task.best, secs)
        log.add(task.ctx.task_name, secs, res.error_msg, task.flops, started)
        if bar is not None:
            best = sum(t.flops / t.best for t in jobs if t.best < math.inf) / 1e9
            bar.set_postfix_str(f"best {best:.2f} GFLOP/s" if len(jobs) == 1 else
                                f"{task.ctx.task_name}: {task.flops / task.best / 1e9:.2f} GFLOP/s")
            bar.update(1)


def _next_task(live: list[_Task], scheduler: str) -> _Task:
    untried = [t for t in live if t.trials == 0]
    if scheduler == "round-robin" or untried:
        return untried[0] if untried else min(live, key=lambda t: t.trials)
    return max(live, key=lambda t: t.weight * (t.best if t.best < math.inf else 1.0))


def _make_reference(task: _Task, executor: Any, work_dir: str, timeout: float) -> str | None:
    """Run the unscheduled workload once (in a worker) and keep its results for the checks."""
    path = os.path.join(work_dir, f"reference_{task.ctx.task_name}_{abs(task.workload.shash) % 10**12}.npz")
    args_info = task.ctx.search_strategy.args_info
    [(value, why)] = run_jobs(executor, reference_outputs,
                              [(task.ctx.mod.script(), str(task.ctx.target), args_info, 0, path)],
                              max(timeout, 120.0), parallel=False)
    if why is not None:
        raise RuntimeError(f"the unscheduled workload {task.ctx.task_name} did not run, so its candidates "
                           f"cannot be checked: {why}")
    return value


def _measure(task: _Task, mods: list[IRModule], builder: Any, runner: Any, rounds: int = 0
             ) -> list[_runner.RunnerResult]:
    """Build each module once and run it: once (the search), or against the others for
    ``rounds`` rounds (``runner.run_interleaved``, the re-timing of the finalists)."""
    built = builder.build([_builder.BuilderInput(mod, task.ctx.target) for mod in mods])
    inputs, where = [], []
    results: list[_runner.RunnerResult] = [None] * len(mods)  # type: ignore[list-item]
    for k, b in enumerate(built):
        if b.error_msg is not None:
            results[k] = _runner.RunnerResult(None, f"build failed: {b.error_msg}")
        else:
            inputs.append(_runner.RunnerInput(b.artifact_path, "llvm", task.ctx.search_strategy.args_info,
                                              task.reference, str(task.ctx.target)))
            where.append(k)
    sample_ms = RETIME_SAMPLE_MS if getattr(runner, "sets_sample_length", False) else None
    ran = runner.run_interleaved(inputs, rounds, sample_ms) if rounds else \
        [fut.result() for fut in runner.run(inputs)]
    for k, res in zip(where, ran):
        results[k] = res
    for b in built:
        if b.artifact_path and os.path.exists(b.artifact_path):
            os.remove(b.artifact_path)
    return results


def _retime_tasks(jobs: list[_Task], db: Database, builder: Any, runner: Any, best: int, bar: Any) -> None:
    """:func:`_retime_best` for every task; meanwhile the bar says so in its postfix, in place
    of the best so far (a longer bar wraps in the notebook)."""
    best_so_far = bar.postfix if bar is not None else None
    if bar is not None:
        bar.set_postfix_str("re-timing the fastest")
    for task in jobs:
        _retime_best(task, db, builder, runner, best)
    if bar is not None:
        bar.set_postfix_str(best_so_far or "")


def _retime_best(task: _Task, db: Database, builder: Any, runner: Any, best: int) -> None:
    """Time the task's ``best`` fastest candidates and the decision-free ones (the default
    schedule) against each other, RETIME_ROUNDS rounds, and add the times to their records.

    Each candidate was timed once, and the fastest of many single timings is mostly the one
    the noise favoured most (the winner's curse): among near-equal schedules it is often not
    the fastest, and can be slower than the default schedule.  Timed in rounds -- every
    finalist once a round, in one worker -- the finalists see the machine's changes of speed
    alike, and the database's choice rests on the median of their many timings.  (minitvm's;
    TVM keeps the single timings.)

    Should records timed once then be faster than the winner's median (they were timed when
    the machine was faster), the duel is run again with them in it, everyone timed anew: only
    times from one duel are compared, and only the last duel's are recorded."""
    ranked = db.get_top_k(task.workload, len(db))
    duel = ranked[:best] + [r for r in ranked[best:] if not any(inst.kind.decision for inst in r.trace.insts)]
    if len(duel) < 2:
        return
    while True:  # each pass adds a record to the duel, so this ends (mostly after one or two)
        mods = []
        for record in duel:
            sch = Schedule(task.ctx.mod)
            record.trace.apply_to_schedule(sch, remove_postproc=False)
            mods.append(sch.mod)
        results = _measure(task, mods, builder, runner, RETIME_ROUNDS)
        timed = [statistics.median(res.run_secs) for res in results if res.run_secs]
        if not timed:
            return  # the duel itself failed (a timeout of the whole): the single timings stand
        challengers = [r for r in ranked if r.median_secs < min(timed) and all(r is not d for d in duel)]
        if not challengers or len(duel) >= RETIME_MAX_DUEL:
            break
        duel += challengers[:RETIME_MAX_DUEL - len(duel)]
    for record, res in zip(duel, results):
        db.commit_tuning_record(TuningRecord(record.trace, task.workload, res.run_secs, task.ctx.target,
                                             record.args_info))
