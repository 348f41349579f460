"""Reduction: one reduction (sum, max, ...) of rows, maybe with an injective epilogue (mean, ...)."""

from __future__ import annotations

from ....target import Target
from ....tir import PrimFunc, Schedule, ScheduleError
from .base import GPUScheduleRule
from .rows import reduction_with_epilogue, schedule_rows

__all__ = ["Reduction"]


class Reduction(GPUScheduleRule):
    """A function of one reduction block (its iterators spatial then reduction, in kind) and at
    most one injective block after it: one row per thread block, up to 256 threads reducing it
    into shared partials that one thread adds up (TVM: the threads' allreduce)."""

    threads_per_row = 256

    def apply(self, func: PrimFunc, target: Target, tunable: bool) -> Schedule | None:
        if not isinstance(func, PrimFunc) or not self.is_target_available(target):
            return None
        sch = Schedule(func)
        found = reduction_with_epilogue(sch)
        if found is None:
            return None
        kinds = found[0].dom_kind()
        if "S" not in kinds or kinds != "S" * kinds.count("S") + "R" * kinds.count("R"):
            return None
        try:
            return schedule_rows(sch, *found, 1, self.threads_per_row)
        except ScheduleError:  # rfactor refuses a combiner it does not know, ...
            return None
