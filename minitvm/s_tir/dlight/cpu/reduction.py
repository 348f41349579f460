"""Reductions of rows on the CPU (softmax, layer and RMS norm): minitvm's row schedule."""

from __future__ import annotations

from ....target import Target
from ....tir import PrimFunc, Schedule
from ....tir.transform.default_schedule import schedule_reduction
from ..analysis import normalize_prim_func
from .base import CPUScheduleRule, first_fitting

__all__ = ["Reduction"]


class Reduction(CPUScheduleRule):
    """Blocks that all start with a row axis, some reducing, the last one injective: rows in
    parallel when there is enough work, the elementwise blocks vectorized (as TVM's cpu rule)."""

    def apply(self, func: PrimFunc, target: Target, tunable: bool) -> Schedule | None:
        if not isinstance(func, PrimFunc) or not self.is_target_available(target):
            return None
        infos = normalize_prim_func(Schedule(func))
        if infos is None or len(infos) < 2 or not infos[-1].is_injective():
            return None
        if all(i.is_injective() for i in infos) or any(not i.dom_kind().startswith("S") for i in infos):
            return None
        return first_fitting(func, target, [schedule_reduction])
