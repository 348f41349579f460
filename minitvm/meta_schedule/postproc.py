"""Postprocessors: deterministic steps run after a candidate's sampled schedule (TVM's
``ms.postproc``), recorded in the trace after ``sch.enter_postproc()``.

* :func:`rewrite_packed_read` -- where ``multi_level_tiling`` sampled ``meta_schedule.pack_read = 1``,
  copy the operand into panels as wide as the register tile (``cache_read`` + ``transform_layout``)
  and give the copy a panel-major loop nest (the next postprocessor makes it parallel and vector);
* :func:`rewrite_reduction_block` -- split each reduction's init from its update at the first
  reduction loop (``decompose_reduction``), so the inner loops carry no ``k == 0`` test;
* :func:`rewrite_parallel_vectorize_unroll` -- read the root block's annotations written by
  ``schedule_rule.parallel_vectorize_unroll`` and turn them into loop kinds: threads on the
  fused outer spatial loops, vector lanes on each innermost spatial loop, unrolling of the
  innermost loops up to the sampled number of steps.
"""

from __future__ import annotations

from typing import Any

from ..tir.analysis import uses_var
from ..tir.expr import IntImm
from ..tir.functor import post_order_visit
from ..tir.schedule import BlockRV, LoopRV, Schedule, ScheduleError
from ..tir.stmt import For
from ..tir.stmt_functor import block_realizes
from ..tir.transform.default_schedule import pack_into_panels
from .schedule_rule import PACK_READ, block_info, packable_read

__all__ = ["rewrite_packed_read", "rewrite_reduction_block", "rewrite_parallel_vectorize_unroll", "apply_postprocs",
           "leaf_blocks"]

#: the largest vector loop the postprocessor makes (longer innermost loops are split first)
VECTOR_LANES = 16


def leaf_blocks(sch: Schedule) -> list[BlockRV]:
    """Every block of the function but the root, in program order."""
    func = sch._func()
    return [sch.get_block(r.block.name_hint) for r, _ in block_realizes(func.body) if r.block.name_hint != "root"]


def _extent(sch: Schedule, loop: LoopRV) -> int | None:
    e = sch.get(loop).extent
    return e.value if isinstance(e, IntImm) else None


def _register_tile_width(sch: Schedule, block: BlockRV, var: Any) -> int:
    """The product of the extents of the loops binding ``var`` inside ``block``'s first
    reduction loop: how many consecutive ``var`` values one reduction step reads."""
    realize, _ = sch._block(block)
    value = next(v for iv, v in zip(realize.block.iter_vars, realize.iter_values) if iv.var is var)
    info = block_info(sch, block)
    width, inside = 1, False
    for lp, kind in zip(info["loops"], info["loop_kinds"]):
        inside = inside or kind != "S"
        if inside and uses_var(value, sch.get(lp).loop_var):
            width *= _extent(sch, lp) or 1
    return width


def rewrite_packed_read(sch: Schedule) -> None:
    """Apply each block's sampled ``meta_schedule.pack_read``: when it is 1, the operand
    ``packable_read`` finds (``B[k, j]`` or ``W[j, k]``) is copied into panels
    ``B_packed[j // w, k, j % w]`` with ``w`` the register tile's width (read from the loops, so
    a mutated tile size gets its own panels), and the copy's loops become ``(j0, k, j1)`` so it
    writes each panel in order.  Nothing happens when the panels would be B itself."""
    for block in leaf_blocks(sch):
        anns = sch.get(block).annotations
        if PACK_READ not in anns:
            continue
        pack = int(getattr(anns[PACK_READ], "value", anns[PACK_READ]))
        sch.unannotate(block, PACK_READ)
        found = packable_read(sch.get(block))
        if not pack or found is None:
            continue
        index, j_var, k_var = found
        region = sch.get(block).reads[index]
        j_first = region.region[0].min is j_var
        width = _register_tile_width(sch, block, j_var)
        extent = region.buffer.shape[0 if j_first else 1].value
        if width < 2 or extent % width or (width == extent and not j_first):
            continue
        packed = pack_into_panels(sch, block, index, width, j_first)
        outer, inner = sch.get_loops(packed)
        j_loop, k_loop = (outer, inner) if j_first else (inner, outer)
        j0, j1 = sch.split(j_loop, factors=[None, width])
        sch.reorder(j0, k_loop, j1)


def rewrite_reduction_block(sch: Schedule) -> None:
    """``decompose_reduction`` every reduction block (with an init) at its first reduction loop."""
    for block in leaf_blocks(sch):
        if sch.get(block).init is None:
            continue
        info = block_info(sch, block)
        first_r = next((lp for lp, k in zip(info["loops"], info["loop_kinds"]) if k != "S"), None)
        if first_r is None:
            continue
        try:
            sch.decompose_reduction(block, first_r)
        except ScheduleError:
            pass


def _root_annotation(sch: Schedule, key: str, default: int = 0) -> int:
    value = sch.get(sch.get_block("root")).annotations.get(key, default)
    return int(getattr(value, "value", value))


def _parallelize(sch: Schedule, max_jobs: int) -> None:
    """Fuse the leading spatial loops of each top-level nest (while their product stays within
    ``max_jobs``... or the first alone) and run the fused loop on threads."""
    done: set[int] = set()
    for block in leaf_blocks(sch):
        info = block_info(sch, block)
        loops = info["loops"]
        if not loops or id(sch.get(loops[0])) in done:
            continue
        prefix: list[LoopRV] = []
        product = 1
        for lp, kind in zip(loops, info["loop_kinds"]):
            extent = _extent(sch, lp)
            if kind != "S" or extent is None or (prefix and product * extent > max_jobs):
                break
            prefix.append(lp)
            product *= extent
        if not prefix or product < 2:
            continue
        try:
            fused = sch.fuse(*prefix) if len(prefix) > 1 else prefix[0]
            sch.parallel(fused)
            done.add(id(sch.get(fused)))
        except ScheduleError:
            pass


def _vectorize(sch: Schedule, max_extent: int) -> None:
    """Vector lanes on each block's innermost loop when it is spatial and not threaded."""
    for block in leaf_blocks(sch):
        info = block_info(sch, block)
        if not info["loops"] or info["loop_kinds"][-1] != "S":
            continue
        inner = info["loops"][-1]
        extent = _extent(sch, inner)
        if extent is None or extent < 2 or sch.get(inner).kind != "serial":
            continue
        try:
            if extent > max_extent:
                if extent % VECTOR_LANES:
                    continue
                inner = sch.split(inner, factors=[None, VECTOR_LANES])[1]
            sch.vectorize(inner)
        except ScheduleError:
            pass


def _unroll(sch: Schedule, max_step: int) -> None:
    """Unroll each block's innermost serial loops while the steps they hold multiply to
    <= max_step.  A vector loop is one step, as in TVM, whose UnrollLoop pass counts statements
    after VectorizeLoop has made each vector loop a single one."""
    if max_step <= 1:
        return
    for block in leaf_blocks(sch):
        loops = sch.get_loops(block)
        product = 1
        for lp in reversed(loops):
            node = sch.get(lp)
            if node.kind == "vectorized":
                continue
            extent = _extent(sch, lp)
            if node.kind != "serial" or extent is None or product * extent > max_step or _holds_rolled_loop(node):
                break
            product *= extent
            try:
                sch.unroll(lp)
            except ScheduleError:
                break


def _holds_rolled_loop(loop: Any) -> bool:
    """Whether a loop nested in ``loop`` stays a loop (another block's ``k`` loop under a loop
    this block shares): TVM's UnrollLoop unrolls no loop around a loop it keeps."""
    rolled: list[Any] = []
    post_order_visit(loop.body, lambda n: rolled.append(n) if isinstance(n, For) and n.kind in ("serial", "parallel")
                     else None)
    return bool(rolled)


def rewrite_parallel_vectorize_unroll(sch: Schedule) -> None:
    """Apply the root block's ``meta_schedule.parallel`` / ``vectorize`` / ``unroll_explicit``."""
    root = sch.get_block("root")
    anns = sch.get(root).annotations
    jobs = _root_annotation(sch, "meta_schedule.parallel")
    lanes = _root_annotation(sch, "meta_schedule.vectorize")
    step = _root_annotation(sch, "meta_schedule.unroll_explicit")
    for key in ("meta_schedule.parallel", "meta_schedule.vectorize", "meta_schedule.unroll_explicit"):
        if key in anns:
            sch.unannotate(root, key)
    for block in leaf_blocks(sch):
        if "meta_schedule.tiling_structure" in sch.get(block).annotations:
            sch.unannotate(block, "meta_schedule.tiling_structure")
    if jobs > 1:
        _parallelize(sch, jobs)
    if lanes > 1:
        _vectorize(sch, lanes)
    _unroll(sch, step)


def apply_postprocs(sch: Schedule, postprocs: Any = "default") -> Schedule:
    """Run the postprocessors on ``sch`` (after ``enter_postproc``); returns ``sch``."""
    sch.enter_postproc()
    for p in (_DEFAULT if postprocs == "default" else postprocs):
        p(sch)
    return sch


# TVM's order for CPUs: loop kinds first (vectorizing needs the reduction's init still in place)
# (the packed copy is made first, so it gets threads and vector lanes too)
_DEFAULT = (rewrite_packed_read, rewrite_parallel_vectorize_unroll, rewrite_reduction_block)
