"""Tuning whole models (TVM's ``ms.relax_integration``): every kernel of a Relax module.

``extract_tasks`` forms the model's kernels the way ``minitvm.compile``'s default pipeline
does (``relax.pipeline.default_kernel_passes``: legalization and fusion) and keeps each distinct
PrimFunc once, weighted by how often the model calls it; ``tune_relax`` tunes them all within
one trial budget; ``compile_relax`` compiles the model with the database in scope, so tuned
kernels replace the default schedules (``relax.transform.MetaScheduleApplyDatabase``)::

    db = ms.relax_integration.tune_relax(mod, params, target, work_dir, max_trials_global=64)
    ex = ms.relax_integration.compile_relax(db, mod, target, params)
    # or: with target, db, PassContext(opt_level=3): ex = relax.build(mod, target)
"""

from __future__ import annotations

from typing import Any

from ..ir.module import GlobalVar, IRModule
from ..ir.structural import structural_equal
from ..relax import transform as relax_transform
from ..relax.expr import Call, Function
from ..relax.expr_functor import ExprVisitor
from ..relax.pipeline import default_kernel_passes
from ..relax.vm_build import build as relax_build
from ..target import Target
from ..tir import PrimFunc
from ..transform import PassContext, Sequential
from .database import Database
from .tune import TuneContext, tune_tasks

__all__ = ["ExtractedTask", "extract_tasks", "tune_relax", "compile_relax"]


class ExtractedTask:
    """One kernel to tune: ``mod`` (its workload), how many calls of the model run it (``weight``)."""

    def __init__(self, task_name: str, mod: IRModule, target: Target, dispatched: list[IRModule], weight: int) -> None:
        self.task_name, self.mod, self.target, self.dispatched, self.weight = task_name, mod, target, dispatched, weight

    def __repr__(self) -> str:
        return f"ExtractedTask({self.task_name!r}, weight={self.weight})"


def _bind(mod: IRModule, params: dict | None) -> IRModule:
    if not params:
        return mod
    return relax_transform.BindParams("main", params)(mod)


def _call_counts(mod: IRModule) -> dict[str, int]:
    """How many times the Relax functions call each PrimFunc (``call_tir``)."""
    counts: dict[str, int] = {}

    class _Count(ExprVisitor):
        def visit_call_(self, call: Call) -> None:
            for arg in call.args:
                if isinstance(arg, GlobalVar) and isinstance(mod[arg.name_hint], PrimFunc):
                    counts[arg.name_hint] = counts.get(arg.name_hint, 0) + 1
            super().visit_call_(call)

    for _, func in mod.items():
        if isinstance(func, Function):
            _Count().visit_expr(func)
    return counts


def extract_tasks(mod: IRModule, target: Target | str, params: dict | None = None, *,
                  module_equality: str = "structural") -> list[ExtractedTask]:
    """The distinct kernels of ``mod`` (after binding ``params`` and forming its kernels)."""
    if module_equality != "structural":
        raise NotImplementedError(f"module_equality={module_equality!r}: minitvm compares kernels structurally")
    target = target if isinstance(target, Target) else Target(target)
    with target:
        kernels = Sequential(default_kernel_passes())(_bind(mod, params))
    counts = _call_counts(kernels)
    tasks: list[ExtractedTask] = []
    for gv, func in kernels.items():
        if not isinstance(func, PrimFunc) or func.attrs.get("tir.is_scheduled"):
            continue
        workload = IRModule({"main": func.with_attr("global_symbol", "main")})
        same = next((t for t in tasks if structural_equal(t.mod, workload)), None)
        if same is not None:
            same.weight += counts.get(gv.name_hint, 1)
            same.dispatched.append(workload)
            continue
        tasks.append(ExtractedTask(gv.name_hint, workload, target, [workload], counts.get(gv.name_hint, 1)))
    return tasks


def tune_relax(mod: IRModule, params: dict | None, target: Target | str, work_dir: str, max_trials_global: int, *,
               max_trials_per_task: int | None = None, num_trials_per_iter: int = 64, builder: Any = "local",
               runner: Any = "local", database: Any = "json", cost_model: Any = "xgb",
               measure_callbacks: Any = "default", task_scheduler: str = "gradient", space: Any = "post-order-apply",
               strategy: Any = "evolutionary", seed: int | None = None, module_equality: str = "structural",
               executor: Any = None, progress: bool = True,
               retime_best: int = 3) -> Database:
    """Tune every kernel of ``mod`` (weighted by its calls) within ``max_trials_global`` trials."""
    target = target if isinstance(target, Target) else Target(target)
    tasks = extract_tasks(mod, target, params, module_equality=module_equality)
    contexts = [TuneContext(t.mod, target=target, space_generator=space, search_strategy=strategy,
                            task_name=t.task_name, rand_state=None if seed is None else seed + k)
                for k, t in enumerate(tasks)]
    return tune_tasks(tasks=contexts, task_weights=[float(t.weight) for t in tasks], work_dir=work_dir,
                      max_trials_global=max_trials_global, max_trials_per_task=max_trials_per_task,
                      num_trials_per_iter=num_trials_per_iter, builder=builder, runner=runner, database=database,
                      cost_model=cost_model, measure_callbacks=measure_callbacks, task_scheduler=task_scheduler,
                      module_equality=module_equality, seed=seed, executor=executor, progress=progress,
                      retime_best=retime_best)


def compile_relax(database: Database, mod: IRModule, target: Target | str, params: dict | None = None,
                  enable_warning: bool = False) -> Any:
    """Compile ``mod`` with its tuned kernels (``database`` in scope; untuned kernels get the
    default schedules); returns the VM executable."""
    target = target if isinstance(target, Target) else Target(target)
    with target, database, PassContext(opt_level=3):
        kernels = Sequential(default_kernel_passes())(_bind(mod, params))
        kernels = relax_transform.MetaScheduleApplyDatabase(enable_warning=enable_warning)(kernels)
        return relax_build(kernels, target)
