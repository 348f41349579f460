"""Helpers the rules share: thread counts for a target, loop extents, inlining what can be inlined."""

from __future__ import annotations

from typing import Callable

from ....ir import dtype as _dt
from ....target import Target
from ....tir import Schedule, ScheduleError
from ....tir.expr import IntImm, PrimExpr
from ....tir.schedule import BlockRV, LoopRV
from ..analysis import SBlockInfo

__all__ = ["fuse", "get_bytes", "get_extent", "auto_vectorize", "max_threads_per_block", "suggest_threads_per_block",
           "try_inline", "try_inline_contiguous_spatial"]


def fuse(sch: Schedule, *loops: LoopRV) -> LoopRV:
    """``sch.fuse(*loops)``, and a single loop as it is (minitvm's fuse wants two or more)."""
    return loops[0] if len(loops) == 1 else sch.fuse(*loops)


def get_bytes(dtype: str) -> int:
    return _dt.bits(str(dtype)) // 8


def get_extent(sch: Schedule, loop: LoopRV) -> int | PrimExpr:
    extent = sch.get(loop).extent
    return int(extent.value) if isinstance(extent, IntImm) else extent


def auto_vectorize(sch: Schedule, loop: LoopRV, max_vec: int) -> None:
    """Vectorize ``loop`` (its innermost ``max_vec`` iterations when it is longer)."""
    extent = get_extent(sch, loop)
    if not isinstance(extent, int):
        return
    inner = loop if extent <= max_vec else sch.split(loop, factors=[None, max_vec])[-1]
    sch.vectorize(inner)


def max_threads_per_block(target: Target) -> int:
    """Threads per block the rules may use: the target's ``max_threads_per_block`` or
    ``max_num_threads``, else 1024 on CUDA (emulated or not) and 256 elsewhere, as TVM."""
    for name in ("max_threads_per_block", "max_num_threads"):
        value = target.attrs.get(name)
        if value is not None:
            return int(value)
    return 1024 if target.kind.name in ("cuda", "cuda-emulated") else 256


def suggest_threads_per_block(target: Target, loops: list, max_threads_for_dynamic_loop: int = 32) -> list[int]:
    """Power-of-two thread counts for ``loops`` (For nodes) whose product fits the target's budget."""
    threads = 1024 if target.kind.name in ("cuda", "cuda-emulated") else 64
    results: list[int | None] = []
    dynamic: list[int] = []
    for i, loop in enumerate(loops):
        if isinstance(loop.extent, IntImm):
            extent = 1
            while extent * 2 <= min(int(loop.extent.value), threads):
                extent *= 2
            threads //= extent
            results.append(extent)
        else:
            results.append(None)
            dynamic.append(i)
    for i in dynamic:
        extent = 1
        while extent * 2 <= min(max_threads_for_dynamic_loop, threads):
            extent *= 2
        threads //= extent
        results[i] = extent
    if dynamic:
        results[dynamic[0]] *= threads
    return results  # type: ignore[return-value]


def try_inline(sch: Schedule, blocks: list[SBlockInfo]) -> list[SBlockInfo]:
    """Inline every block that can be (into its consumers, else into its producer); the rest remain."""

    def first_that(primitive: Callable[[BlockRV], object]) -> int | None:
        for i, info in enumerate(blocks):
            try:
                primitive(info.block_rv)
            except ScheduleError:  # this block cannot be inlined that way: try the next
                continue
            return i
        return None

    while True:
        i = first_that(sch.compute_inline)
        if i is None:
            i = first_that(sch.reverse_compute_inline)
        if i is None:
            return blocks
        blocks.pop(i)


def try_inline_contiguous_spatial(sch: Schedule, block_infos: list[SBlockInfo] | None) -> list[SBlockInfo] | None:
    """Inline runs of consecutive spatial blocks (reductions stay): exp between a max and a sum, say."""
    if block_infos is None:
        return None
    results: list[SBlockInfo] = []
    spatial: list[SBlockInfo] = []
    for info in block_infos:
        if info.is_injective():
            spatial.append(info)
            continue
        if spatial:
            results.extend(try_inline(sch, spatial))
            spatial = []
        results.append(info)
    if spatial:
        results.extend(try_inline(sch, spatial))
    return results
