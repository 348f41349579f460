"""A reduction of rows on a GPU without cross-thread reduction: threads reduce slices of a row
into shared partial sums (``rfactor``), then one thread per row adds the partials up.

TVM's GEMV and Reduction rules bind the reduction loop itself to threads and let the compiler
lower it to an allreduce; minitvm has no such lowering (a reduction bound to threadIdx is refused
at build), so the same work is written with ``rfactor``: the parallel part is the same, the final
combine of ``TR`` partials per row runs in one thread.
"""

from __future__ import annotations

from ....tir import Schedule, ScheduleError
from ..analysis import SBlockInfo, loops_by_kind, normalize_prim_func
from ..base import fuse, try_inline_contiguous_spatial
from .base import one_thread, outputs_in

__all__ = ["schedule_rows", "reduction_with_epilogue", "largest_divisor", "product"]


def reduction_with_epilogue(sch: Schedule) -> tuple[SBlockInfo, SBlockInfo | None] | None:
    """The function's one reduction block and the injective block after it (or None), once the
    spatial blocks around them are inlined; None when the function is not of that shape."""
    infos = try_inline_contiguous_spatial(sch, normalize_prim_func(sch))
    if infos is None or len(infos) not in (1, 2) or not infos[0].is_reduction():
        return None
    if len(infos) == 2 and not infos[1].is_injective():
        return None
    return infos[0], (infos[1] if len(infos) == 2 else None)


def largest_divisor(extent: object, cap: int, what: str) -> int:
    """The largest divisor of a constant ``extent`` that is at most ``cap``: rfactor keeps only
    splits without a guard on the reduction, so thread counts divide what they split."""
    if cap == 1:
        return 1  # one row per thread block: any number of rows, symbolic too
    if not isinstance(extent, int):
        raise ScheduleError(f"{what} has a symbolic extent {extent}; the rules need constant rows and reductions here")
    return max(d for d in range(1, min(cap, extent) + 1) if extent % d == 0)


def product(extents: object) -> object:
    """The product of constant extents, or the first symbolic one."""
    out = 1
    for e in extents:
        if not isinstance(e, int):
            return e
        out *= e
    return out


def schedule_rows(sch: Schedule, info: SBlockInfo, epilogue: SBlockInfo | None, rows_per_block: int,
                  threads_per_row: int) -> Schedule:
    """Schedule the reduction block ``info`` (iterators S...R... in any loop order) as thread
    blocks of ``rows_per_block`` rows, ``threads_per_row`` threads reducing each row; an
    injective ``epilogue`` follows in the same thread block, its input kept in shared memory."""
    block = info.block_rv
    s_loops = [it.loop_rv for it in info.iters if it.kind == "S"]
    r_loops = [it.loop_rv for it in info.iters if it.kind == "R"]
    tr = largest_divisor(product(it.dom for it in info.iters if it.kind == "R"), threads_per_row, "the reduction")
    ts = largest_divisor(product(it.dom for it in info.iters if it.kind == "S"), rows_per_block, "the rows")
    if not s_loops:
        s_loops = [sch.add_unit_loop(block)]
    sch.reorder(*s_loops, *r_loops)
    s = fuse(sch, *s_loops)
    r = fuse(sch, *r_loops)
    # (no row loop for one row per block: compute_at would keep a unit loop's variable out of scope)
    row = sch.split(s, factors=[None, ts])[1] if ts > 1 else None
    _, lane = sch.split(r, factors=[None, tr])
    # each thread (threadIdx.y: its row, threadIdx.x: its lane) reduces a slice of the row into a
    # partial result in shared memory
    rf = sch.rfactor(lane, 0)
    rf_loops = sch.get_loops(rf)
    bx_rf, r_rf, lane_rf = rf_loops[0], rf_loops[-2], rf_loops[-1]
    sch.reorder(lane_rf, r_rf)
    sch.bind(bx_rf, "blockIdx.x")
    if row is not None:
        sch.bind(rf_loops[1], "threadIdx.y")
    sch.bind(lane_rf, "threadIdx.x")
    outputs_in(sch, rf, "shared")
    sch.reverse_compute_at(block, bx_rf, preserve_unit_loops=True)
    if epilogue is not None:
        # placed before any split of the rows: compute_at regions ignore a split's guard
        outputs_in(sch, block, "shared")
        sch.reverse_compute_at(epilogue.block_rv, bx_rf, preserve_unit_loops=True)
        _, t_y, t_x = sch.split(fuse(sch, *sch.get_loops(epilogue.block_rv)[1:]), factors=[None, ts, tr])
        if row is not None:
            sch.bind(t_y, "threadIdx.y")
        sch.bind(t_x, "threadIdx.x")
    # lane 0 of each row adds the row's partials up
    rows, partials = loops_by_kind(sch, block, skip=1)
    sch.reorder(*rows, *partials)
    if row is not None:
        sch.bind(fuse(sch, *rows), "threadIdx.y")
    one_thread(sch, block, partials[0], tr)
    return sch
