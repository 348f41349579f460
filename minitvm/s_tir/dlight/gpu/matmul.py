"""Matmul: ``C[S, I, J] += A[S, I, K] * B[S, J, K]`` in any layout, tiled over thread blocks with
shared-memory tiles of A and B and a register tile per thread (TVM's default CUDA configuration)."""

from __future__ import annotations

from dataclasses import dataclass

from ....target import Target
from ....tir import PrimFunc, Schedule, ScheduleError
from ....tir.analysis import vars_used
from ....tir.expr import IntImm
from ....tir.schedule import BlockRV, LoopRV
from ..analysis import get_root_block, normalize_prim_func
from ..base import fuse
from .base import GPUScheduleRule

__all__ = ["Matmul", "iter_traits"]


def _axes(block: object, region: object) -> set:
    return set().union(*(vars_used(r.min) for r in region)) if region else set()


def iter_traits(block: object) -> list[str] | None:
    """Each iterator's role -- "S" (batch), "I", "J", "K" or "T" (extent 1) -- in a block of the
    form ``C[S, I, J] += A[S, I, K] * B[S, J, K]``, or None when it is not one (I, J and K are
    all needed: a matrix-vector product is left to GEMV)."""
    if len(block.reads) != 2 or len(block.writes) != 1:
        return None
    regions = [block.reads[0].region, block.reads[1].region, block.writes[0].region]
    # every index one iterator or a constant: a convolution's ``h + rh`` is not a matmul's operand
    iter_vars = {id(iv.var) for iv in block.iter_vars}
    if any(not (isinstance(r.extent, IntImm) and r.extent.value == 1) or not (
            isinstance(r.min, IntImm) or id(r.min) in iter_vars) for reg in regions for r in reg):
        return None
    a, b, c = (_axes(block, reg) for reg in regions)
    traits = []
    for iv in block.iter_vars:
        v = id(iv.var)
        if isinstance(iv.dom.extent, IntImm) and iv.dom.extent.value == 1:
            traits.append("T")
        elif iv.iter_type == "spatial":
            traits.append("S" if v in a and v in b and v in c else "I" if v in a and v in c
                          else "J" if v in b and v in c else "?")
        elif iv.iter_type == "reduce" and v in a and v in b and v not in c:
            traits.append("K")
        else:
            return None
    if "?" in traits or not {"I", "J", "K"} <= set(traits):
        return None
    return traits


class Matmul(GPUScheduleRule):
    """The matmul rule: producers inlined, the matmul's loops grouped into (batch, I, J, K) and
    padded to whole tiles, I and J tiled over ``blockIdx`` and ``threadIdx`` with a
    ``micro x micro`` tile per thread accumulated in registers, tiles of A and B fetched into
    shared memory by all threads of a block, the epilogue applied as results are written back."""

    @dataclass
    class Config:
        block_size_x: int = 8
        block_size_y: int = 16
        micro_size_x: int = 4
        micro_size_y: int = 4
        micro_size_k: int = 16
        vector_size: int = 2

    def get_configs(self, target: Target) -> "Matmul.Config":
        return Matmul.Config()

    def apply(self, func: PrimFunc, target: Target, tunable: bool) -> Schedule | None:
        if not isinstance(func, PrimFunc) or not self.is_target_available(target):
            return None
        sch = Schedule(func)
        infos = normalize_prim_func(sch)
        if infos is None:
            return None
        reductions = [i for i in infos if i.is_reduction()]
        if len(reductions) != 1 or not all(i.is_injective() for i in infos if i is not reductions[0]):
            return None
        main = reductions[0]
        if iter_traits(sch.get(main.block_rv)) is None:
            return None
        try:
            self._schedule(sch, main.block_rv, self.get_configs(target))
        except ScheduleError:  # e.g. an epilogue or prologue that will not inline: leave it to Fallback
            return None
        return sch

    def _group_loops(self, sch: Schedule, block: BlockRV) -> list[LoopRV]:
        """The block's loops reordered and fused into (batch, I, J, K) (a unit loop where none)."""
        traits = iter_traits(sch.get(block))
        loops = sch.get_loops(block)
        realize, _ = sch._block(block)
        by_var = {id(sch.get(lp).loop_var): lp for lp in loops}
        groups: dict[str, list[LoopRV]] = {k: [] for k in "SIJK"}
        for kind, value in zip(traits, realize.iter_values):
            groups["S" if kind == "T" else kind].append(by_var[id(value)])
        sch.reorder(*groups["S"], *groups["I"], *groups["J"], *groups["K"])
        fused = [fuse(sch, *groups[k]) if groups[k] else None for k in "SIJK"]
        if fused[0] is None:
            fused[0] = sch.add_unit_loop(fused[1])
        return fused

    def _schedule(self, sch: Schedule, block: BlockRV, cfg: "Matmul.Config") -> None:
        # prologues (a transpose, a dequantize ...) are computed where the tiles are fetched
        for other in sch.get_child_blocks(get_root_block(sch)):
            if other.name != block.name and sch.get_consumers(other):
                sch.compute_inline(other)
        batch, x, y, k = self._group_loops(sch, block)
        cfg = self._fit(cfg, *(sch.get(lp).extent for lp in (x, y, k)))
        bx, tx, xi = sch.split(x, factors=[None, cfg.block_size_x, cfg.micro_size_x])
        by, ty, yi = sch.split(y, factors=[None, cfg.block_size_y, cfg.micro_size_y])
        ko, ki = sch.split(k, factors=[None, cfg.micro_size_k])
        sch.reorder(by, bx, ty, tx, ko, ki, xi, yi)
        by = fuse(sch, batch, by)
        sch.bind(bx, "blockIdx.x")
        sch.bind(by, "blockIdx.y")
        sch.bind(ty, "threadIdx.y")
        sch.bind(tx, "threadIdx.x")
        # the thread's tile of C accumulates in registers, then goes out through the epilogue
        l2g = sch.cache_write(block, 0, "local")
        sch.reverse_compute_at(l2g, tx, preserve_unit_loops=True)
        while consumers := sch.get_consumers(l2g):  # a chain of epilogues (add, then relu) folds in one by one
            sch.reverse_compute_inline(consumers[0])
        for index in (0, 1):
            self._cooperative_fetch(sch, block, index, ko, cfg)
        sch.decompose_reduction(block, ko)

    @staticmethod
    def _fit(cfg: "Matmul.Config", x: object, y: object, k: object) -> "Matmul.Config":
        """``cfg`` with tiles that divide the extents: thread counts halved first, then the
        per-thread tile (TVM pads the matmul to whole tiles with pad_einsum instead)."""
        sizes = []
        for extent, threads, micro in ((x, cfg.block_size_x, cfg.micro_size_x),
                                       (y, cfg.block_size_y, cfg.micro_size_y)):
            if not isinstance(extent, IntImm):
                raise ScheduleError(f"Matmul: a symbolic extent {extent} (TVM pads it to whole tiles)")
            while extent.value % (threads * micro):
                threads, micro = (threads // 2, micro) if threads > 1 else (threads, micro // 2)
            sizes += [threads, micro]
        if not isinstance(k, IntImm):
            raise ScheduleError(f"Matmul: a symbolic reduction extent {k}")
        micro_k = max(d for d in range(1, cfg.micro_size_k + 1) if k.value % d == 0)
        return Matmul.Config(block_size_x=sizes[0], micro_size_x=sizes[1], block_size_y=sizes[2],
                             micro_size_y=sizes[3], micro_size_k=micro_k, vector_size=cfg.vector_size)

    @staticmethod
    def _cooperative_fetch(sch: Schedule, block: BlockRV, index: int, ko: LoopRV, cfg: "Matmul.Config") -> None:
        """Copy operand ``index``'s tile for this ``ko`` step into shared memory, spread over all threads."""
        shared = sch.cache_read(block, index, "shared")
        n = len(sch.get_loops(shared))
        sch.compute_at(shared, ko, preserve_unit_loops=True)
        loops = sch.get_loops(shared)[-n:]
        ty, tx, _, vec = sch.split(fuse(sch, *loops), factors=[cfg.block_size_y, cfg.block_size_x, None,
                                                              cfg.vector_size])
        sch.vectorize(vec)
        sch.bind(ty, "threadIdx.y")
        sch.bind(tx, "threadIdx.x")
