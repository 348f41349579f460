"""``tvm.s_tir`` (TVM 0.27): schedulable TensorIR -- the schedule, its passes, the tuner.

TVM 0.27 moved these out of ``tvm.tir``; minitvm keeps one implementation and answers to both
paths (:mod:`minitvm.eras`): ``s_tir.Schedule is tir.Schedule``, ``s_tir.meta_schedule is
minitvm.meta_schedule``, ``s_tir.transform is tir.transform``; ``s_tir.dlight`` (default schedules
by rule) lives here and ``minitvm.dlight`` is its older name.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..tir import Schedule, ScheduleError, TensorIntrin, Trace
from ..tir.schedule import LoopRV, SBlockRV

__all__ = ["Schedule", "ScheduleError", "Trace", "SBlockRV", "LoopRV", "TensorIntrin",
           "schedule", "transform", "tensor_intrin", "analysis", "meta_schedule", "dlight"]

_SUBMODULES = ("schedule", "transform", "tensor_intrin", "analysis", "meta_schedule", "dlight")


def __getattr__(name: str) -> Any:
    # submodules load on first use (meta_schedule imports the whole compiler)
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'minitvm.s_tir' has no attribute {name!r}")
