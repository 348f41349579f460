"""GEMV on the CPU: minitvm's matrix-vector schedules (dot products along k, vectorized)."""

from __future__ import annotations

from ....target import Target
from ....tir import PrimFunc, Schedule
from ....tir.transform.default_schedule import schedule_matmul_like, schedule_matmul_nt
from ..gpu.gemv import is_gemv
from ..gpu.rows import reduction_with_epilogue
from .base import CPUScheduleRule, first_fitting

__all__ = ["GEMV"]


class GEMV(CPUScheduleRule):
    """A matrix-vector product (with at most one injective epilogue) on ``llvm``: minitvm's
    batch-1 dense schedule, else its matmul tiling."""

    def apply(self, func: PrimFunc, target: Target, tunable: bool) -> Schedule | None:
        if not isinstance(func, PrimFunc) or not self.is_target_available(target):
            return None
        probe = Schedule(func)
        found = reduction_with_epilogue(probe)
        if found is None or len(found[0].iters) not in (2, 3) or is_gemv(probe, found[0]) is None:
            return None
        return first_fitting(func, target, [schedule_matmul_nt, schedule_matmul_like])
