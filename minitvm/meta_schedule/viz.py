"""Pictures of a tuning run (minitvm's; TVM prints tables): the best speed found after each
trial, the best schedule's loop nest, and how it differs from the default schedule.

* :func:`plot_tuning_curve` -- best GFLOP/s so far against trials (matplotlib), one line a task,
  failed trials marked;
* :func:`best_loop_nest` -- the best schedule's loop nest (``minitvm.viz.loop_nest``);
* :func:`diff_against_default` -- the best schedule's TIR against the one
  ``DefaultCPUSchedule`` gives (``minitvm.viz.diff``).
"""

from __future__ import annotations

import math
from typing import Any

from ..ir.module import IRModule
from ..tir import PrimFunc
from ..tir.transform.default_schedule import apply_default_schedule
from .database import Database, normalize_mod
from .tune import workload_flops

__all__ = ["tuning_curve", "plot_tuning_curve", "best_loop_nest", "diff_against_default"]


def tuning_curve(database: Database, mod: IRModule | PrimFunc | None = None) -> dict[str, list[float]]:
    """Per workload (by its task's name, or ``mod``'s only): the best GFLOP/s after
    each of its trials (0 until one succeeds), in the order the trials ran."""
    curves: dict[str, list[float]] = {}
    wanted = None if mod is None else database._find(normalize_mod(mod))
    for workload in database._workloads:
        if wanted is not None and workload is not wanted:
            continue
        flops = workload_flops(workload.mod)
        best, curve = math.inf, []
        for record in database.get_all_tuning_records():
            if record.workload is workload:
                if record.is_valid:
                    best = min(best, record.median_secs)
                curve.append(flops / best / 1e9 if best < math.inf else 0.0)
        name = _name_of(workload, len(curves))
        curves[name if name not in curves else f"{name} ({len(curves)})"] = curve
    return curves


def _name_of(workload: Any, k: int) -> str:
    """The task's name (``tune_relax``'s are the kernels' names), else the module's function's."""
    if workload.task_name:
        return workload.task_name
    names = [gv.name_hint for gv in workload.mod.get_global_vars()]
    return f"workload {k}" if names == ["main"] else names[0]


def plot_tuning_curve(database: Database, mod: IRModule | PrimFunc | None = None, ax: Any = None,
                      title: str = "tuning: best so far") -> Any:
    """Best GFLOP/s so far against trials; returns the matplotlib Axes."""
    import matplotlib.pyplot as plt  # optional: only pictures need it

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.2))
    for name, curve in tuning_curve(database, mod).items():
        ax.plot(range(1, len(curve) + 1), curve, marker=".", label=name)
    ax.set_xlabel("trials")
    ax.set_ylabel("best GFLOP/s so far")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if len(ax.get_lines()) > 1:
        ax.legend(fontsize="small")
    return ax


def _best(database: Database, mod: IRModule | PrimFunc, target: Any) -> IRModule:
    sch = database.query_schedule(normalize_mod(mod), target or "llvm", "main")
    if sch is None:
        raise ValueError("the database has no successful record of this workload")
    return sch.mod


def best_loop_nest(database: Database, mod: IRModule | PrimFunc, target: Any = None, title: str | None = None) -> Any:
    """The loop nest picture of the best schedule found for ``mod``."""
    from ..viz import loop_nest  # lazy: minitvm.viz loads when a picture is asked for, not with the tuner

    return loop_nest(_best(database, mod, target)["main"], title=title or "best schedule found")


def diff_against_default(database: Database, mod: IRModule | PrimFunc, target: Any = None) -> Any:
    """The default schedule's TIR against the tuned one's (only the changed lines)."""
    from ..viz import diff  # lazy: minitvm.viz loads when a picture is asked for, not with the tuner

    mod = normalize_mod(mod)
    default = apply_default_schedule(mod["main"])
    return diff(default, _best(database, mod, target)["main"], labels=("default schedule", "tuned"))
