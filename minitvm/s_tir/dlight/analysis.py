"""What the rules read off a function: its blocks, each block's iterators and the loop feeding each."""

from __future__ import annotations

from typing import Literal

from ...tir import Schedule, ScheduleError
from ...tir.analysis import vars_used
from ...tir.expr import IntImm, PrimExpr, Var
from ...tir.schedule import BlockRV, LoopRV

__all__ = ["IterInfo", "SBlockInfo", "normalize_prim_func", "get_root_block", "iter_kind", "loops_by_kind"]


def iter_kind(iter_type: str) -> str:
    """"S" for a data-parallel iterator, "R" for a reduction, "O" for anything else."""
    return {"spatial": "S", "reduce": "R"}.get(iter_type, "O")


class IterInfo:
    """One block iterator: its kind ("S", "R" or "O"), its variable, its extent and the loop feeding it."""

    def __init__(self, kind: Literal["S", "R", "O"], var: Var, dom: PrimExpr, loop_rv: LoopRV):
        self.kind = kind
        self.var = var
        self._dom = dom
        self.loop_rv = loop_rv

    @property
    def dom(self) -> int | PrimExpr:
        """The extent: an int when it is a constant."""
        return int(self._dom.value) if isinstance(self._dom, IntImm) else self._dom

    def __repr__(self) -> str:
        return f'Iter("{self.kind}", {self.dom})'


class SBlockInfo:
    """A block of the function with its iterators, as the rules see it."""

    def __init__(self, name: str, iters: list[IterInfo], block_rv: BlockRV, reduction_block: bool = False):
        self.name = name
        self.iters = iters
        self.block_rv = block_rv
        self._reduction_block = reduction_block

    def dom(self) -> list[int | PrimExpr]:
        return [i.dom for i in self.iters]

    def dom_kind(self) -> str:
        """The kinds of the iterators in order, e.g. "SSR"."""
        return "".join(i.kind for i in self.iters)

    def is_injective(self) -> bool:
        return all(k == "S" for k in self.dom_kind())

    def is_reduction(self) -> bool:
        return self._reduction_block

    def get_loops(self) -> list[LoopRV]:
        return [i.loop_rv for i in self.iters]

    def __repr__(self) -> str:
        return f'SBlockInfo("{self.name}", "{self.dom_kind()}", {self.dom()})'


def get_root_block(sch: Schedule) -> BlockRV:
    return sch.get_block("root")


def _block_info(sch: Schedule, block: BlockRV) -> SBlockInfo | None:
    """The block's iterators, each fed by its own loop (None when a binding is not one loop variable)."""
    realize, _ = sch._block(block)
    loops = sch.get_loops(block)
    by_var = {id(sch.get(lp).loop_var): lp for lp in loops}
    iters: list[IterInfo] = []
    used: set[int] = set()
    for iv, value in zip(realize.block.iter_vars, realize.iter_values):
        loop = by_var.get(id(value)) if isinstance(value, Var) else None
        if loop is None or id(value) in used:
            return None
        used.add(id(value))
        iters.append(IterInfo(iter_kind(iv.iter_type), iv.var, iv.dom.extent, loop))
    if len(used) != len(loops):  # a loop feeding no iterator: not the normal form the rules expect
        return None
    is_reduction = any(i.kind == "R" for i in iters)
    return SBlockInfo(realize.block.name_hint, iters, block, is_reduction)


def normalize_prim_func(sch: Schedule) -> list[SBlockInfo] | None:
    """The blocks under the root, in order, when every one is fed by loops one-to-one (each iterator
    bound to its own loop, no other loops, no nested blocks); else None, and rules decline."""
    try:
        blocks = sch.get_child_blocks(get_root_block(sch))
    except ScheduleError:
        return None
    infos = []
    for block in blocks:
        if sch.get_child_blocks(block):
            return None
        info = _block_info(sch, block)
        if info is None or "O" in info.dom_kind():
            return None
        infos.append(info)
    return infos or None


def loops_by_kind(sch: Schedule, block: BlockRV, skip: int = 0) -> tuple[list[LoopRV], list[LoopRV]]:
    """The block's loops (after the outer ``skip``) split into those feeding only spatial
    iterators and those feeding a reduction, each in loop order."""
    realize, _ = sch._block(block)
    reduce_vars: set[int] = set()
    for iv, value in zip(realize.block.iter_vars, realize.iter_values):
        if iv.iter_type != "spatial":
            reduce_vars |= vars_used(value)
    spatial, reduction = [], []
    for lp in sch.get_loops(block)[skip:]:
        (reduction if id(sch.get(lp).loop_var) in reduce_vars else spatial).append(lp)
    return spatial, reduction
