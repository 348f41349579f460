"""Reduction: one reduction (sum, max, ...) of rows, maybe with an injective epilogue (mean, ...)."""

from __future__ import annotations

from ....target import Target
from ....tir import PrimFunc, Schedule, ScheduleError
from ..analysis import normalize_prim_func
from ..base import try_inline_contiguous_spatial
from .base import GPUScheduleRule
from .rows import schedule_rows

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
        infos = try_inline_contiguous_spatial(sch, normalize_prim_func(sch))
        if infos is None or len(infos) not in (1, 2):
            return None
        main, epilogue = infos[0], (infos[1] if len(infos) == 2 else None)
        kinds = main.dom_kind()
        if not main.is_reduction() or "S" not in kinds or kinds != "S" * kinds.count("S") + "R" * kinds.count("R"):
            return None
        if epilogue is not None and not epilogue.is_injective():
            return None
        try:
            return schedule_rows(sch, main, epilogue, 1, self.threads_per_row)
        except ScheduleError:  # rfactor refuses a combiner it does not know, ...
            return None
