"""LowBatchGEMV: a matrix product whose batch of rows is small (decode with a few sequences)."""

from __future__ import annotations

from ....target import Target
from ....tir import PrimFunc, Schedule, ScheduleError
from ....tir.expr import IntImm, Mul
from .base import GPUScheduleRule
from .gemv import _is_sum_update, _iter_vars_in
from .rows import reduction_with_epilogue, schedule_rows

__all__ = ["LowBatchGEMV"]


class LowBatchGEMV(GPUScheduleRule):
    """``Y[b, n] = sum_k X[b, k] * W[n, k]`` (any operand layout) where the batch ``b`` -- the
    output axis the weight does not index -- has at most ``bucket`` rows or a symbolic count: as
    GEMV, the ``b x n`` outputs are rows over thread blocks, 32 threads reducing each into shared
    partials.  (TVM pads the batch to ``bucket`` and keeps it in registers; here each output is a
    row, which reads the weight once per batch row.)  None for anything else, a plain GEMV (batch
    1) included: GEMV takes it."""

    rows_per_block = 4
    threads_per_row = 32

    def __init__(self, bucket: int = 4):
        self.bucket = int(bucket)

    def apply(self, func: PrimFunc, target: Target, tunable: bool) -> Schedule | None:
        if not isinstance(func, PrimFunc) or not self.is_target_available(target):
            return None
        sch = Schedule(func)
        found = reduction_with_epilogue(sch)
        if found is None or not self._is_low_batch(sch.get(found[0].block_rv)):
            return None
        try:
            return schedule_rows(sch, *found, self.rows_per_block, self.threads_per_row)
        except ScheduleError:  # a symbolic row count over 1 row per block, ...
            return None

    def _is_low_batch(self, block: object) -> bool:
        """Two operands multiplied and summed, each indexing one of the two output axes, one of
        which (the batch) is symbolic or of 2..bucket rows."""
        if not (_is_sum_update(block) and isinstance(block.body.value.b, Mul)):
            return False
        out = _iter_vars_in(block, block.writes[0].region)
        operands = [r for r in block.reads if r.buffer is not block.writes[0].buffer]
        if len(out) != 2 or len(operands) != 2:
            return False
        if sorted(len(_iter_vars_in(block, r.region) & out) for r in operands) != [1, 1]:
            return False
        extents = [iv.dom.extent for iv in block.iter_vars if id(iv.var) in out]
        return any(not isinstance(e, IntImm) or 1 < e.value <= self.bucket for e in extents)
