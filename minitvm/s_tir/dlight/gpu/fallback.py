"""Fallback: every GPU kernel gets a thread per output element (after inlining what inlines)."""

from __future__ import annotations

from ....target import Target
from ....tir import PrimFunc, Schedule
from ....tir.functor import post_order_visit
from ....tir.stmt import AttrStmt, For, ForKind
from ..analysis import normalize_prim_func
from ..base import fuse, max_threads_per_block, try_inline
from .base import GPUScheduleRule

__all__ = ["Fallback"]


def _launches_threads(stmt: object) -> bool:
    """Whether ``stmt`` already launches GPU threads (a block managing its own launch)."""
    found: list = []

    def visit(n: object) -> None:
        if (isinstance(n, AttrStmt) and n.attr_key in ("thread_extent", "virtual_thread")) or (
                isinstance(n, For) and n.kind == ForKind.THREAD_BINDING):
            found.append(n)

    post_order_visit(stmt, visit)
    return bool(found)


class Fallback(GPUScheduleRule):
    """Inline every block that can be, then for each remaining block fuse its spatial loops, split
    them into thread blocks of the target's maximum size and bind them (blockIdx.x, threadIdx.x);
    reduction loops stay inside each thread, with the reduction's init split off."""

    def apply(self, func: PrimFunc, target: Target, tunable: bool) -> Schedule | None:
        if not isinstance(func, PrimFunc) or not self.is_target_available(target):
            return None
        threads = max_threads_per_block(target)
        sch = Schedule(func)
        infos = normalize_prim_func(sch)
        if infos is None:
            return None
        infos = try_inline(sch, infos)
        reductions = []
        for info in infos:
            block = info.block_rv
            loops = sch.get_loops(block)
            if any(sch.get(lp).thread_binding is not None for lp in loops):
                continue
            if not loops and _launches_threads(sch.get(block).body):
                continue
            # the normal form feeds iterators from loops in any order: pair each loop with its iterator
            kinds = {"S": [], "R": [], "O": []}
            for it in info.iters:
                kinds[it.kind].append(it.loop_rv)
            spatial = kinds["S"] or [sch.add_unit_loop(block)]
            sch.reorder(*spatial, *kinds["R"], *kinds["O"])
            bx, tx = sch.split(fuse(sch, *spatial), factors=[None, threads])
            sch.bind(bx, "blockIdx.x")
            sch.bind(tx, "threadIdx.x")
            if kinds["R"]:
                reductions.append((block, kinds["R"][0]))
        for block, r_loop in reductions:
            sch.decompose_reduction(block, r_loop)
        return sch
