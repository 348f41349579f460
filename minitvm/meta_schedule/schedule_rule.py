"""The built-in search space for CPUs: a few schedule rules, each a small function of schedule
primitives whose random choices are sampling instructions in the trace (TVM's ``ms.schedule_rule``).

``PostOrderApply`` (see ``space_generator``) runs them on every block of a function:

* :func:`auto_inline` -- inline elementwise producers into their consumers (no choice; padding
  only in a function without reductions, as TVM's CPU rule);
* :func:`multi_level_tiling` -- the "SSRSRS" tiling of a block with data reuse (matmul, conv):
  every spatial loop split in 4 levels, every reduction loop in 2, sizes sampled with
  ``sample_perfect_tile``, reordered S0 S1 R0 S2 R1 S3 (the innermost S3 becomes the vector
  lanes, S2 x S3 the register tile, S1/R0 the cache tile), with a sampled choice whether to
  pack the operand read along the vector tile into panels (``postproc.rewrite_packed_read``);
* :func:`random_compute_location` -- place a producer left standing (one that cannot be
  inlined) at a sampled loop of its consumer (``sample_compute_location``);
* :func:`parallel_vectorize_unroll` -- sample how far to unroll and whether to use threads, and
  write those choices as annotations on the root block; the postprocessor
  (``postproc.rewrite_parallel_vectorize_unroll``) turns them into loop kinds.

Each rule takes ``(sch, block)`` and schedules in place; one that does not apply leaves the
schedule as it was (a primitive whose conditions fail raises ``ScheduleError`` and changes nothing).
"""

from __future__ import annotations

from typing import Any, Callable

from ..tir.analysis import uses_var
from ..tir.expr import Call, IntImm, Select
from ..tir.functor import post_order_visit
from ..tir.schedule import BlockRV, Schedule, ScheduleError
from ..tir.stmt import BlockRealize
from ..tir.stmt_functor import block_realizes

__all__ = ["ScheduleRule", "AutoInline", "MultiLevelTiling", "RandomComputeLocation", "ParallelizeVectorizeUnroll",
           "auto_inline", "multi_level_tiling", "random_compute_location", "parallel_vectorize_unroll",
           "default_rules", "block_info", "packable_read", "UNROLL_CANDIDATES", "PACK_READ"]

#: the "SSRSRS" structure of CPU multi-level tiling: one letter a level
CPU_TILING_STRUCTURE = "SSRSRS"
#: largest innermost tile sampled (TVM's max_innermost_factor for llvm)
MAX_INNERMOST_FACTOR = 64
#: how far unrolling may go (TVM also tries 512; here code generation in Python makes it too slow)
UNROLL_CANDIDATES = (0, 16, 64)
#: the block annotation holding the sampled decision to pack a read operand into panels
PACK_READ = "meta_schedule.pack_read"


# -- reading blocks ---------------------------------------------------------------------------


def block_info(sch: Schedule, block: BlockRV) -> dict[str, Any]:
    """What the rules need to know of ``block``: its iteration kinds, the kind of each loop
    above it ("S", "R" or "O" for mixed/none), reads and writes, and whether it has padding."""
    realize, _ = sch._block(block)
    blk = realize.block
    loops = sch.get_loops(block)
    kinds = []
    for lp in loops:
        var = sch.get(lp).loop_var
        used = {iv.iter_type for iv, value in zip(blk.iter_vars, realize.iter_values) if _uses(value, var)}
        kinds.append("S" if used == {"spatial"} else "R" if used == {"reduce"} else "O")
    has_select = []
    post_order_visit(blk.body, lambda n: has_select.append(n) if isinstance(n, Select) or
                     (isinstance(n, Call) and n.op == "tir.if_then_else") else None)
    return {"block": blk, "loops": loops, "loop_kinds": kinds,
            "is_reduction": any(iv.iter_type == "reduce" for iv in blk.iter_vars),
            "is_spatial": all(iv.iter_type == "spatial" for iv in blk.iter_vars),
            "has_padding": bool(has_select)}


def _uses(expr: Any, var: Any) -> bool:
    return uses_var(expr, var)


def _has_data_reuse(blk: Any) -> bool:
    """A read indexed by fewer spatial iterators than the block has: the same element is read
    by many iterations, which tiling turns into cache (and register) reuse."""
    spatial = [iv.var for iv in blk.iter_vars if iv.iter_type == "spatial"]
    for region in blk.reads:
        used = [v for v in spatial if any(_uses(r.min, v) for r in region.region)]
        if len(used) < len(spatial):
            return True
    return False


def _blocks_under(loop: Any) -> int:
    count = [0]
    post_order_visit(loop.body, lambda n: count.__setitem__(0, count[0] + 1) if isinstance(n, BlockRealize) else None)
    return count[0]


def _has_reduction(sch: Schedule) -> bool:
    return any(iv.iter_type == "reduce" for r, _ in block_realizes(sch._func().body) for iv in r.block.iter_vars)


def _is_output(sch: Schedule, block: BlockRV) -> bool:
    func = sch._func(block.func_name)
    written = {id(w.buffer) for w in sch.get(block).writes}
    return any(id(buf) in written for buf in func.buffer_map.values())


# -- the rules ------------------------------------------------------------------------------


def auto_inline(sch: Schedule, block: BlockRV) -> bool:
    """Inline a spatial, non-output block into its consumers (TVM's AutoInline); returns whether
    it inlined.  As TVM's CPU rule (``disallow_if_then_else``), padding (a block with an
    if-then-else) is inlined only in a function without reductions: before a conv it stays a
    block, which ``random_compute_location`` places (a sampled loop, the root, or inlined)."""
    info = block_info(sch, block)
    if not info["is_spatial"] or _is_output(sch, block):
        return False
    if info["has_padding"] and _has_reduction(sch):
        return False
    try:
        sch.compute_inline(block)
        return True
    except ScheduleError:
        return False


def multi_level_tiling(sch: Schedule, block: BlockRV, structure: str = CPU_TILING_STRUCTURE,
                       max_innermost_factor: int = MAX_INNERMOST_FACTOR) -> bool:
    """Tile a reduction block with data reuse as ``structure`` (default "SSRSRS"): sampled tile
    sizes for each level, loops reordered level by level.  Returns whether it tiled.

    The accumulator is a ``local`` write cache written back after the last spatial level
    before the first reduction level (TVM's write-cache level 2; level 1 is the same nest with
    the S1 tiles sampled to 1, so sampling the level adds no schedule): it holds exactly the
    S2 x S3 register tile.

    When the block reads a 2-D operand along its innermost spatial iterator and one reduction
    iterator (``B[k, j]`` of a matmul, ``W[j, k]`` of a dense), a sampled decision
    ``sample_categorical([0, 1])`` (annotation ``meta_schedule.pack_read``) says whether to pack
    it into panels as wide as the register tile, ``B_packed[j // w, k, j % w]``; the postprocessor
    ``rewrite_packed_read`` does it (``cache_read`` + ``transform_layout``) once the tile sizes are
    final, since mutation changes ``w``.  TVM's ``RewriteLayout`` postproc instead transforms a
    ``layout_free_buffers`` weight ahead of time, outside the kernel; minitvm packs inside the
    kernel on every call (a K x N copy, repaid over the M rows), so it needs no constant weights.
    """
    info = block_info(sch, block)
    if not info["is_reduction"] or "O" in info["loop_kinds"] or not _has_data_reuse(info["block"]):
        return False
    n_s, n_r = structure.count("S"), structure.count("R")
    levels: list[list] = [[] for _ in structure]
    s_levels = [i for i, c in enumerate(structure) if c == "S"]
    r_levels = [i for i, c in enumerate(structure) if c == "R"]
    for lp, kind in zip(info["loops"], info["loop_kinds"]):
        extent = sch.get(lp).extent
        if not isinstance(extent, IntImm):
            return False
        n, where = (n_s, s_levels) if kind == "S" else (n_r, r_levels)
        factors = sch.sample_perfect_tile(lp, n=n, max_innermost_factor=max_innermost_factor)
        for level, part in zip(where, sch.split(lp, factors=factors)):
            levels[level].append(part)
    sch.reorder(*[lp for level in levels for lp in level])
    sch.annotate(block, "meta_schedule.tiling_structure", structure)
    if packable_read(sch.get(block)) is not None:
        sch.annotate(block, PACK_READ, sch.sample_categorical([0, 1], [0.5, 0.5]))
    # accumulate in a local tile (registers / L1) written back after the reduction: TVM's
    # write cache, here at the last spatial level before the first reduction level; as in TVM
    # also for a block that is not the output (a conv whose epilogue reads its result)
    first_r = structure.index("R")
    if first_r > 0:
        local = sch.cache_write(block, 0, "local")
        sch.reverse_compute_at(local, levels[first_r - 1][-1])
    return True


def packable_read(blk: Any) -> tuple[int, Any, Any] | None:
    """``(read index, spatial var, reduction var)`` of the 2-D operand ``blk`` reads at
    ``[k, j]`` or ``[j, k]``, ``j`` its innermost spatial iterator and ``k`` a reduction one
    (a matmul's or dense's right operand); None when there is none (conv, batch matmul)."""
    spatial = [iv.var for iv in blk.iter_vars if iv.iter_type == "spatial"]
    reduce = {id(iv.var) for iv in blk.iter_vars if iv.iter_type == "reduce"}
    if not spatial:
        return None
    inner = spatial[-1]
    written = {id(w.buffer) for w in blk.writes}
    for index, region in enumerate(blk.reads):
        dims = region.region
        if id(region.buffer) in written or len(dims) != 2 or len(region.buffer.shape) != 2:
            continue
        if any(not isinstance(d.extent, IntImm) or d.extent.value != 1 for d in dims):
            continue
        a, b = dims[0].min, dims[1].min
        if a is inner and id(b) in reduce:
            return index, a, b
        if b is inner and id(a) in reduce:
            return index, b, a
    return None


def random_compute_location(sch: Schedule, block: BlockRV) -> bool:
    """Compute a non-output spatial block at a sampled loop of its consumer (or leave it at the
    root, or inline it): TVM's RandomComputeLocation.  Returns whether it sampled.  As in TVM,
    only a block with a loop nest of its own: not one already placed inside another block's
    loops (a write cache's write-back, which multi-level tiling put where it belongs)."""
    info = block_info(sch, block)
    if not info["is_spatial"] or _is_output(sch, block) or not sch.get_consumers(block):
        return False
    if not info["loops"] or _blocks_under(sch.get(info["loops"][0])) > 1:
        return False
    loop = sch.sample_compute_location(block)
    sch.compute_at(block, loop)
    return True


def parallel_vectorize_unroll(sch: Schedule, root: BlockRV, num_cores: int = 1,
                              unroll_candidates: tuple[int, ...] = UNROLL_CANDIDATES) -> None:
    """Sample the unroll depth (and, with several cores, whether to use threads) and annotate the
    root block; ``postproc.rewrite_parallel_vectorize_unroll`` applies them to every loop nest."""
    n = len(unroll_candidates)
    step = sch.sample_categorical(list(unroll_candidates), [1.0 / n] * n)
    sch.annotate(root, "meta_schedule.unroll_explicit", step)
    sch.annotate(root, "meta_schedule.vectorize", 64)
    if num_cores > 1:
        jobs = sch.sample_categorical([0, 16 * num_cores], [0.5, 0.5])
        sch.annotate(root, "meta_schedule.parallel", jobs)


# -- TVM-style rule objects (what ``ms.space_generator.PostOrderApply(sch_rules=...)`` takes) ---


class ScheduleRule:
    """A rule applied to each block (``apply(sch, block)``); TVM's ``ms.schedule_rule.ScheduleRule``."""

    def __init__(self, fn: Callable[..., Any], name: str, on_root: bool = False) -> None:
        self.fn, self.name, self.on_root = fn, name, on_root

    def apply(self, sch: Schedule, block: BlockRV, **kwargs: Any) -> Any:
        return self.fn(sch, block, **kwargs)

    def __repr__(self) -> str:
        return f"ScheduleRule({self.name})"


def AutoInline() -> ScheduleRule:  # noqa: N802 - TVM's class name
    return ScheduleRule(auto_inline, "AutoInline")


def MultiLevelTiling(structure: str = CPU_TILING_STRUCTURE,  # noqa: N802
                     max_innermost_factor: int = MAX_INNERMOST_FACTOR) -> ScheduleRule:
    if set(structure) - {"S", "R"}:
        raise ValueError(f"MultiLevelTiling(structure={structure!r}): only S and R levels on CPU")
    return ScheduleRule(lambda sch, b: multi_level_tiling(sch, b, structure, max_innermost_factor),
                        f"MultiLevelTiling({structure})")


def RandomComputeLocation() -> ScheduleRule:  # noqa: N802
    return ScheduleRule(random_compute_location, "RandomComputeLocation")


def ParallelizeVectorizeUnroll(unroll_max_steps: tuple[int, ...] = UNROLL_CANDIDATES) -> ScheduleRule:  # noqa: N802
    return ScheduleRule(lambda sch, b, num_cores=1: parallel_vectorize_unroll(sch, b, num_cores, unroll_max_steps),
                        "ParallelizeVectorizeUnroll", on_root=True)


def default_rules() -> list[ScheduleRule]:
    """The CPU rules in the order PostOrderApply runs them."""
    return [AutoInline(), MultiLevelTiling(), RandomComputeLocation(), ParallelizeVectorizeUnroll()]
