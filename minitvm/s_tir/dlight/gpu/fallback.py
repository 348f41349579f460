"""Fallback: every GPU kernel gets a thread per output element (after inlining what inlines)."""

from __future__ import annotations

from ....target import Target
from ....tir import PrimFunc, Schedule, ScheduleError
from ....tir.functor import post_order_visit
from ....tir.schedule import LoopRV
from ....tir.stmt import AttrStmt, For, ForKind
from ..analysis import SBlockInfo, normalize_prim_func
from ..base import fuse, max_threads_per_block, try_inline
from .base import GPUScheduleRule, outputs_in

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


def _bind_block(sch: Schedule, info: SBlockInfo, threads: int) -> tuple[LoopRV, LoopRV | None]:
    """Fuse the block's spatial loops, split them by ``threads`` and bind (blockIdx.x, threadIdx.x);
    its reduction loops go inside.  The thread loop and the first reduction loop (or None)."""
    kinds: dict[str, list[LoopRV]] = {"S": [], "R": [], "O": []}
    for it in info.iters:  # the normal form feeds iterators from loops in any order
        kinds[it.kind].append(it.loop_rv)
    spatial = kinds["S"] or [sch.add_unit_loop(info.block_rv)]
    sch.reorder(*spatial, *kinds["R"], *kinds["O"])
    bx, tx = sch.split(fuse(sch, *spatial), factors=[None, threads])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    return tx, (kinds["R"][0] if kinds["R"] else None)


def _one_kernel(func: PrimFunc, threads: int) -> Schedule | None:
    """The function as one kernel: the last block bound as Fallback binds it, every earlier block
    computed by each thread for its own outputs, into registers.  minitvm's GPU targets run no
    host code between kernels, so an intermediate buffer between two kernels (TVM allocates it
    in global memory) cannot be built here; recomputing per thread can.  None if it does not fit."""
    sch = Schedule(func)
    infos = try_inline(sch, normalize_prim_func(sch) or [])
    if len(infos) < 2:
        return None
    try:
        tx, r_loop = _bind_block(sch, infos[-1], threads)
        for info in reversed(infos[:-1]):
            outputs_in(sch, info.block_rv, "local")
            sch.compute_at(info.block_rv, tx, preserve_unit_loops=True)
        if r_loop is not None:
            sch.decompose_reduction(infos[-1].block_rv, r_loop)
    except ScheduleError:  # an intermediate that is also an output, a consumer out of reach ...
        return None
    return sch


class Fallback(GPUScheduleRule):
    """Inline every block that can be, then for each remaining block fuse its spatial loops, split
    them into thread blocks of the target's maximum size and bind them (blockIdx.x, threadIdx.x);
    reduction loops stay inside each thread, with the reduction's init split off.  When blocks
    remain that feed one another, minitvm first tries to make them one kernel (:func:`_one_kernel`)."""

    def apply(self, func: PrimFunc, target: Target, tunable: bool) -> Schedule | None:
        if not isinstance(func, PrimFunc) or not self.is_target_available(target):
            return None
        threads = max_threads_per_block(target)
        sch = Schedule(func)
        infos = normalize_prim_func(sch)
        if infos is None:
            return None
        infos = try_inline(sch, infos)
        if len(infos) > 1:
            fused = _one_kernel(func, threads)
            if fused is not None:
                return fused
        reductions = []
        for info in infos:
            block = info.block_rv
            loops = sch.get_loops(block)
            if any(sch.get(lp).thread_binding is not None for lp in loops):
                continue
            if not loops and _launches_threads(sch.get(block).body):
                continue
            _, r_loop = _bind_block(sch, info, threads)
            if r_loop is not None:
                reductions.append((block, r_loop))
        for block, r_loop in reductions:
            sch.decompose_reduction(block, r_loop)
        return sch
