"""GeneralReduction: chains of row reductions and a final elementwise block (softmax, layer and RMS norm)."""

from __future__ import annotations

from ....target import Target
from ....tir import PrimFunc, Schedule, ScheduleError
from ....tir.analysis import vars_used
from ..analysis import SBlockInfo, loops_by_kind, normalize_prim_func
from ..base import fuse, try_inline_contiguous_spatial
from .base import GPUScheduleRule, one_thread, outputs_in
from .rows import largest_divisor, product

__all__ = ["GeneralReduction"]


def _row_loops_first(sch: Schedule, infos: list[SBlockInfo], num_rows: int) -> bool:
    """Reorder the last block's loops so those indexing the reduced buffers come first; False when
    they are not ``num_rows`` loops (the reductions are not over the trailing axes)."""
    reduced = {id(w.buffer) for info in infos[:-1] for w in sch.get(info.block_rv).writes}
    last = sch.get(infos[-1].block_rv)
    row_vars: set = set()
    for read in last.reads:
        if id(read.buffer) in reduced:
            for rng in read.region:
                row_vars |= vars_used(rng.min)
    rows = [it.loop_rv for it in infos[-1].iters if id(it.var) in row_vars]
    rest = [it.loop_rv for it in infos[-1].iters if id(it.var) not in row_vars]
    if len(rows) != num_rows or not rest:
        return False
    sch.reorder(*rows, *rest)
    return True


class GeneralReduction(GPUScheduleRule):
    """Reductions over the trailing axes of rows followed by an injective block over the same
    rows (what softmax, layer norm and RMS norm legalize to): one row per thread block; each
    reduction's result stays in shared memory, computed by the threads' shared partials and one
    thread combining them; the last block spreads the row over the threads."""

    threads = 64

    def apply(self, func: PrimFunc, target: Target, tunable: bool) -> Schedule | None:
        if not isinstance(func, PrimFunc) or not self.is_target_available(target):
            return None
        sch = Schedule(func)
        infos = try_inline_contiguous_spatial(sch, normalize_prim_func(sch))
        if not infos or len(infos) < 2:
            return None
        kinds = infos[0].dom_kind()
        num_rows = len(kinds) - len(kinds.lstrip("S"))
        num_r = len(kinds) - len(kinds.rstrip("R"))
        if (num_rows == 0 or num_r == 0 or num_rows + num_r != len(kinds)
                or any(i.dom_kind() != kinds for i in infos[1:-1])
                or not infos[-1].is_injective() or len(infos[-1].iters) != len(kinds)):
            return None
        try:
            if not _row_loops_first(sch, infos, num_rows):
                return None
            self._schedule(sch, infos, num_rows, num_r)
        except ScheduleError:  # a step refuses this function: another rule may fit it
            return None
        return sch

    def _schedule(self, sch: Schedule, infos: list[SBlockInfo], num_rows: int, num_r: int) -> None:
        r_extent = product(it.dom for it in infos[0].iters[-num_r:])
        t = largest_divisor(r_extent, self.threads, "the reduction")
        loops = sch.get_loops(infos[-1].block_rv)
        bx = fuse(sch, *loops[:num_rows])
        rest, tx = sch.split(fuse(sch, *loops[num_rows:]), factors=[None, t])
        sch.reorder(tx, rest)
        sch.bind(bx, "blockIdx.x")
        sch.bind(tx, "threadIdx.x")
        # each reduction becomes the threads' partials (rfactor needs it alone under its loops, so
        # before compute_at) and a combine of them by one thread; rfactor takes one store, so a
        # tuple reduction (layer norm's sum and sum of squares in one block) is done by one thread
        chain = []
        for info in infos[:-1]:
            rf = None
            if len(sch.get(info.block_rv).writes) == 1:
                r = fuse(sch, *sch.get_loops(info.block_rv)[-num_r:])
                _, lane = sch.split(r, factors=[None, t])
                rf = sch.rfactor(lane, 0)
            chain.append((rf, info.block_rv))
        for rf, block in reversed(chain):
            for b in (block, rf) if rf is not None else (block,):
                outputs_in(sch, b, "shared")
                sch.compute_at(b, bx, preserve_unit_loops=True)
        for rf, block in chain:
            if rf is not None:
                lanes, partial = loops_by_kind(sch, rf, skip=1)
                sch.reorder(*lanes, *partial)
                sch.bind(fuse(sch, *lanes), "threadIdx.x")
            one_thread(sch, block, sch.get_loops(block)[1], t)
