"""Transpose: a block that writes its input with the indices permuted, through shared-memory tiles."""

from __future__ import annotations

from ....target import Target
from ....tir import PrimFunc, Schedule, ScheduleError
from ....tir.expr import BufferLoad
from ....tir.stmt import BufferStore
from ..analysis import normalize_prim_func
from ..base import fuse, try_inline_contiguous_spatial
from .base import GPUScheduleRule

__all__ = ["Transpose"]


def is_transpose(block: object) -> bool:
    """``B[i, j] = A[j, i]``: a copy whose load indexes the same variables in another order."""
    store = block.body
    if not isinstance(store, BufferStore) or not isinstance(store.value, BufferLoad):
        return False
    lhs, rhs = [str(i) for i in store.indices], [str(i) for i in store.value.indices]
    return lhs != rhs and sorted(lhs) == sorted(rhs)


class Transpose(GPUScheduleRule):
    """A function whose last block is a 2-D transpose (after inlining the elementwise blocks before
    it): tiles of ``len_ty x len_tx`` outputs per thread block, the tile's input read into shared
    memory by the same threads first, so both the reads and the writes of global memory go along
    rows (TVM's rule; it also folds a dequantizing prologue into the read, not done here)."""

    len_tx, len_ty = 16, 8

    def apply(self, func: PrimFunc, target: Target, tunable: bool) -> Schedule | None:
        if not isinstance(func, PrimFunc) or not self.is_target_available(target):
            return None
        sch = Schedule(func)
        infos = try_inline_contiguous_spatial(sch, normalize_prim_func(sch))
        if not infos or len(infos) != 1 or not is_transpose(sch.get(infos[0].block_rv)):
            return None
        block = infos[0].block_rv
        if len(sch.get_loops(block)) != 2:
            return None
        try:
            i, j = sch.get_loops(block)
            bi, ti = sch.split(i, factors=[None, self.len_ty])
            bj, tj = sch.split(j, factors=[None, self.len_tx])
            sch.reorder(bi, bj, ti, tj)
            sch.bind(bi, "blockIdx.y")
            sch.bind(bj, "blockIdx.x")
            sch.bind(ti, "threadIdx.y")
            sch.bind(tj, "threadIdx.x")
            tile = sch.cache_read(block, 0, "shared")
            sch.compute_at(tile, bj)
            _, ty, tx = sch.split(fuse(sch, *sch.get_loops(tile)[2:]), factors=[None, self.len_ty, self.len_tx])
            sch.bind(ty, "threadIdx.y")
            sch.bind(tx, "threadIdx.x")
        except ScheduleError:  # a tile a step refuses: another rule may fit
            return None
        return sch
