"""The tuning database in scope: a low-floor hook that lets passes read MetaSchedule's results.

``minitvm.meta_schedule`` sits above Relax, yet Relax's zero pipeline must apply a tuning
database when one is in scope (TVM: ``with database:`` then ``MetaScheduleApplyDatabase``).
This module is the meeting point: a database's ``__enter__``/``__exit__`` push and pop it
here, and a pass reads :func:`current` -- neither side imports the other.  A database is any
object with ``query_ir_module(mod, target, workload_name)``; ``meta_schedule`` also registers
how to open one from a ``work_dir`` (:func:`register_work_dir_opener`) and how to tune a
function (:func:`register_tir_tuner`, what ``relax.transform.MetaScheduleTuneTIR`` calls, as
TVM's pass calls the global function ``tvm.s_tir.meta_schedule.tune_tir``).  Where neither is
registered yet, the loader the root package registers (:func:`register_loader`: it imports
``minitvm.meta_schedule``) is called first, so the passes work without the user importing the tuner.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from ..ir.deep import share_thread_local

__all__ = ["current", "enter", "exit", "open_work_dir", "register_work_dir_opener", "register_tir_tuner",
           "tune_tir", "register_loader"]

_local = share_thread_local(threading.local())
_opener: list[Callable[[str], Any]] = []
_tuner: list[Callable[..., Any]] = []
_loader: list[Callable[[], Any]] = []


def _stack() -> list:
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


def current() -> Any:
    """The innermost database entered with ``with database:`` (None outside any)."""
    stack = _stack()
    return stack[-1] if stack else None


def enter(database: Any) -> None:
    """Make ``database`` current (what ``Database.__enter__`` calls)."""
    _stack().append(database)


def exit(database: Any) -> None:  # noqa: A001 - the pair of enter
    """Leave ``database``'s scope (what ``Database.__exit__`` calls); scopes must nest."""
    stack = _stack()
    if not stack or stack[-1] is not database:
        raise RuntimeError("tuning database scopes must nest: exiting one that is not the innermost")
    stack.pop()


def register_work_dir_opener(fn: Callable[[str], Any]) -> None:
    """``fn(work_dir)`` opens the database kept in ``work_dir`` (meta_schedule registers JSONDatabase)."""
    _opener[:] = [fn]


def register_loader(load: Callable[[], Any]) -> None:
    """``load()`` registers the opener and the tuner (the root package's: it imports the tuner)."""
    _loader[:] = [load]


def _provided(slot: list) -> list:
    if not slot and _loader:
        _loader[0]()
    return slot


def register_tir_tuner(fn: Callable[..., Any]) -> None:
    """``fn(mod, target, work_dir, max_trials_global[, max_trials_per_task=])`` tunes the
    PrimFuncs of ``mod`` (one task each, one budget) into the database in ``work_dir``
    (meta_schedule registers its ``tune_tir``)."""
    _tuner[:] = [fn]


def tune_tir(mod: Any, target: Any, work_dir: str, max_trials_global: int,
             max_trials_per_task: int | None = None) -> Any:
    """Tune ``mod``'s PrimFuncs for ``target`` into the database in ``work_dir``."""
    if not _provided(_tuner):
        raise RuntimeError("no tuner is registered: import minitvm.meta_schedule first")
    # the per-task cap only when given: a tuner registered with four parameters still works
    extra = {} if max_trials_per_task is None else {"max_trials_per_task": max_trials_per_task}
    return _tuner[0](mod, target, work_dir, max_trials_global, **extra)


def open_work_dir(work_dir: str) -> Any:
    """The database kept in ``work_dir`` (``minitvm.meta_schedule`` provides it)."""
    if not _provided(_opener):
        raise RuntimeError(f"cannot open the tuning database in {work_dir!r}: import minitvm.meta_schedule "
                           "first (it provides the JSON database)")
    return _opener[0](work_dir)
