"""CPUScheduleRule: a rule for the ``llvm`` target only, and the way the CPU rules run minitvm's own."""

from __future__ import annotations

from typing import Callable

from ....ir.module import IRModule
from ....target import Target
from ....tir import PrimFunc, Schedule, ScheduleError
from ..base import ScheduleRule

__all__ = ["CPUScheduleRule", "first_fitting"]


class CPUScheduleRule(ScheduleRule):
    """A rule for CPU code (target kind ``llvm``): None for any other target, as TVM's."""

    def is_target_available(self, target: Target) -> bool:
        return super().is_target_available(target) and target.kind.name == "llvm"


def first_fitting(func: PrimFunc, target: Target, steps: list[Callable[[Schedule], bool]]) -> Schedule | None:
    """The schedule of the first of minitvm's default CPU rules (``tir.transform.default_schedule``)
    that fits ``func``, sized for ``target``'s vector unit; None when none does."""
    for step in steps:
        sch = Schedule(IRModule({"main": func}))
        try:
            with target:
                if step(sch):
                    return sch
        except ScheduleError:  # the rule does not fit this function: try the next
            continue
    return None
