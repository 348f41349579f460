"""GEMV: a matrix times a vector (a decode step's linear layers), rows over thread blocks."""

from __future__ import annotations

from ....ir.structural import structural_equal
from ....target import Target
from ....tir import PrimFunc, Schedule, ScheduleError
from ....tir.analysis import vars_used
from ....tir.expr import Add, BufferLoad, IntImm
from ....tir.stmt import BufferStore
from ..analysis import SBlockInfo
from .base import GPUScheduleRule
from .rows import reduction_with_epilogue, schedule_rows

__all__ = ["GEMV", "is_gemv"]


def _unit(iv: object) -> bool:
    return isinstance(iv.dom.extent, IntImm) and iv.dom.extent.value == 1


def _iter_vars_in(block: object, region: object) -> set:
    """The block's iterators (those of extent 1 aside, as a batch-1 row is no axis) that ``region`` uses."""
    ivs = {id(iv.var) for iv in block.iter_vars if not _unit(iv)}
    found: set = set()
    for rng in region:
        found |= vars_used(rng.min) & ivs
    return found


def _is_sum_update(block: object) -> bool:
    """The block's body is ``X[...] = X[...] + y``."""
    store = block.body
    if not isinstance(store, BufferStore) or not isinstance(store.value, Add):
        return False
    return structural_equal(store.value.a, BufferLoad(store.buffer, store.indices), map_free_vars=True)


def is_gemv(sch: Schedule, info: SBlockInfo) -> list | None:
    """The vector operands when ``info`` is a GEMV -- a sum over products in which some operand
    (the vector) uses fewer of the block's iterators than the matrix does -- else None."""
    block = sch.get(info.block_rv)
    if not (info.is_reduction() and len(block.reads) >= 2 and len(block.writes) == 1 and _is_sum_update(block)
            and _iter_vars_in(block, block.writes[0].region)):
        return None
    n = sum(not _unit(iv) for iv in block.iter_vars)
    vectors = [r.buffer for r in block.reads if 0 < len(_iter_vars_in(block, r.region)) < n]
    return vectors if 0 < len(vectors) < len(block.reads) else None


class GEMV(GPUScheduleRule):
    """``y[s] = sum_r W[s, r] * x[r]`` (with batch iterators, any loop order, and an injective
    epilogue): a few rows per thread block, 32 threads per row reducing slices into shared
    partials, one thread per row adding them (TVM binds the reduction to threads instead)."""

    rows_per_block = 4
    threads_per_row = 32

    def apply(self, func: PrimFunc, target: Target, tunable: bool) -> Schedule | None:
        if not isinstance(func, PrimFunc) or not self.is_target_available(target):
            return None
        sch = Schedule(func)
        found = reduction_with_epilogue(sch)
        if found is None or len(found[0].iters) not in (2, 3) or is_gemv(sch, found[0]) is None:
            return None
        try:
            return schedule_rows(sch, *found, self.rows_per_block, self.threads_per_row)
        except ScheduleError:  # a form the steps refuse (an epilogue writing a parameter it reads, ...)
            return None
