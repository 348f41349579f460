"""RMSNorm: ``y = x / sqrt(mean(x * x) + eps) * w``, scheduled as GeneralReduction does."""

from __future__ import annotations

from ....ir.structural import structural_equal
from ....target import Target
from ....tir import PrimFunc, Schedule
from ....tir.expr import Add, Mul
from ....tir.stmt import BufferStore
from ..analysis import normalize_prim_func
from .general_reduction import GeneralReduction

__all__ = ["RMSNorm"]


def _sums_squares(block: object) -> bool:
    """``acc = acc + x * x`` (maybe of a cast x): the reduction of an RMS norm."""
    store = block.body
    if not isinstance(store, BufferStore) or not isinstance(store.value, Add):
        return False
    term = store.value.b
    return isinstance(term, Mul) and structural_equal(term.a, term.b, map_free_vars=True)


class RMSNorm(GeneralReduction):
    """Only a function whose one reduction is a sum of squares followed by its elementwise
    normalization (TVM's rule for RMS norm); the schedule is GeneralReduction's (one row per
    thread block, the sum in shared memory), so a layer norm or softmax is left to that rule."""

    def apply(self, func: PrimFunc, target: Target, tunable: bool) -> Schedule | None:
        if not isinstance(func, PrimFunc) or not self.is_target_available(target):
            return None
        probe = Schedule(func)
        infos = normalize_prim_func(probe)
        reductions = [] if infos is None else [i for i in infos if i.is_reduction()]
        if len(reductions) != 1 or not _sums_squares(probe.get(reductions[0].block_rv)):
            return None
        return super().apply(func, target, tunable)
