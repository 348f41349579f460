"""The tuning database in scope: a low-floor hook that lets passes read MetaSchedule's results.

``minitvm.meta_schedule`` sits above Relax, yet Relax's zero pipeline must apply a tuning
database when one is in scope (TVM: ``with database:`` then ``MetaScheduleApplyDatabase``).
This module is the meeting point: a database's ``__enter__``/``__exit__`` push and pop it
here, and a pass reads :func:`current` -- neither side imports the other.  A database is any
object with ``query_ir_module(mod, target, workload_name)``; ``meta_schedule`` also registers
how to open one from a ``work_dir`` (:func:`register_work_dir_opener`).
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from ..ir.deep import share_thread_local

__all__ = ["current", "enter", "exit", "open_work_dir", "register_work_dir_opener"]

_local = share_thread_local(threading.local())
_opener: list[Callable[[str], Any]] = []


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


def open_work_dir(work_dir: str) -> Any:
    """The database kept in ``work_dir`` (needs ``minitvm.meta_schedule`` imported)."""
    if not _opener:
        raise RuntimeError(f"cannot open the tuning database in {work_dir!r}: import minitvm.meta_schedule "
                           "first (it provides the JSON database)")
    return _opener[0](work_dir)
