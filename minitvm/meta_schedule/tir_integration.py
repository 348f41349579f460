"""Tuning TIR functions (TVM's ``ms.tir_integration``): ``tune_tir`` and ``compile_tir``."""

from __future__ import annotations

from typing import Any

from ..ir.module import IRModule
from ..target import Target
from ..tir import PrimFunc
from ..tir.schedule import Schedule
from ..transform import tuning_database as _scope
from .database import Database, normalize_mod
from .tune import TuneContext, tune_tasks

__all__ = ["tune_tir", "compile_tir"]


def tune_tir(mod: IRModule | PrimFunc, target: str | Target, work_dir: str, max_trials_global: int, *,
             max_trials_per_task: int | None = None, num_trials_per_iter: int = 64, builder: Any = "local",
             runner: Any = "local", database: Any = "json", cost_model: Any = "xgb",
             measure_callbacks: Any = "default", task_scheduler: str = "gradient",
             space: Any = "post-order-apply", strategy: Any = "evolutionary",
             num_tuning_cores: Any = "physical", seed: int | None = None, module_equality: str = "structural",
             special_space: Any = None, post_optimization: bool = False, executor: Any = None,
             progress: bool = True, retime_best: int = 3) -> Database:
    """Tune every PrimFunc of ``mod`` for ``target`` with at most ``max_trials_global`` measured
    candidates; returns the database (records in ``work_dir`` with ``database="json"``).

    ``space``: a ``ScheduleFn``/function or "post-order-apply" (the built-in rules plus the
    default schedule); ``strategy``: "evolutionary", "replay-trace" or "replay-func";
    ``executor`` (minitvm's): a ``concurrent.futures.Executor`` the builder and runner use
    instead of their own process pools; ``progress``: the tqdm bar; ``retime_best`` (minitvm's):
    how many of the fastest candidates are timed again after the search (``tune_tasks``).
    """
    if special_space is not None:
        raise NotImplementedError("tune_tir(special_space=...): give one space for every function")
    target = target if isinstance(target, Target) else Target(target)
    if isinstance(mod, PrimFunc):
        named = [("main", mod)]
    else:
        named = [(gv.name_hint, f) for gv, f in mod.items() if isinstance(f, PrimFunc)]
    if not named:
        raise ValueError("tune_tir: the module has no PrimFunc to tune")
    tasks = []
    for k, (name, func) in enumerate(named):
        task_mod = normalize_mod(mod) if len(named) == 1 and isinstance(mod, IRModule) and name == "main" \
            else IRModule({"main": func.with_attr("global_symbol", "main")})
        tasks.append(TuneContext(task_mod, target=target, space_generator=space, search_strategy=strategy,
                                 task_name=name, rand_state=None if seed is None else seed + k))
    return tune_tasks(tasks=tasks, task_weights=[1.0] * len(tasks), work_dir=work_dir,
                      max_trials_global=max_trials_global, max_trials_per_task=max_trials_per_task,
                      num_trials_per_iter=num_trials_per_iter, builder=builder, runner=runner, database=database,
                      cost_model=cost_model, measure_callbacks=measure_callbacks, task_scheduler=task_scheduler,
                      module_equality=module_equality, post_optimization=post_optimization, seed=seed,
                      executor=executor, num_tuning_cores=num_tuning_cores, progress=progress,
                      retime_best=retime_best)


def compile_tir(database: Database, mod: IRModule | PrimFunc, target: str | Target) -> Schedule | None:
    """The best schedule of ``mod`` in ``database``: a ``tir.Schedule`` (``.trace``, ``.mod``), or
    None when ``mod`` was not tuned (or no candidate of it ran correctly)."""
    mod = normalize_mod(mod)
    target = target if isinstance(target, Target) else Target(target)
    return database.query_schedule(mod, target, workload_name="main")


# what relax.transform.MetaScheduleTuneTIR calls (TVM: the global function tvm.s_tir.meta_schedule.tune_tir)
_scope.register_tir_tuner(lambda mod, target, work_dir, max_trials_global, max_trials_per_task=None: tune_tir(
    mod, target, work_dir, max_trials_global, max_trials_per_task=max_trials_per_task, progress=False))
