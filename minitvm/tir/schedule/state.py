"""What TVM calls the schedule state, as far as a reader of a schedule needs it.

TVM keeps, next to the module, a tree of *statement references* (srefs): one per loop and
block, each pointing at its statement and at the sref of the enclosing loop or block; a
primitive rewrites the module in place where it can and keeps the srefs current.  minitvm's
schedule rebuilds an immutable tree instead and finds loops by their variable and blocks by
their name, so here an sref is made when asked for: :class:`StmtSRef` gives the statement it
points at now and its parent, and two srefs are the same when they point at the same
statement of the same schedule.

:class:`ScheduleState` is ``sch.state``: the module, ``get_sref`` and ``get_block_scope`` (the
read-after-write, write-after-write and write-after-read dependencies among a scope's blocks).  TVM's in-place
``replace`` with its copy-on-write rules is not mirrored: a minitvm primitive never mutates a
tree another reference may hold.
"""

from __future__ import annotations

import enum
from typing import Any

from ...ir.module import IRModule
from ..function import PrimFunc
from ..stmt import Block, BlockRealize, For
from .tree import walk_stmts

__all__ = ["ScheduleDebugMask", "ScheduleState", "StmtSRef", "BlockScope", "Dependency", "DepKind"]


class ScheduleDebugMask(enum.IntFlag):
    """The checks ``Schedule(debug_mask=...)`` turns on (TVM's bits; "all" is -1)."""

    VERIFY_SREF_TREE = 1
    VERIFY_CACHED_FLAGS = 2


class StmtSRef:
    """A reference to one loop or block of a schedule's module: ``stmt`` and ``parent``."""

    def __init__(self, stmt: For | Block, parent: "StmtSRef | None", owner: Any):
        self.stmt, self.parent, self._owner = stmt, parent, owner

    def same_as(self, other: Any) -> bool:
        return isinstance(other, StmtSRef) and other.stmt is self.stmt and other._owner is self._owner

    def __repr__(self) -> str:
        what = self.stmt.name_hint if isinstance(self.stmt, Block) else self.stmt.loop_var.name
        return f"StmtSRef({type(self.stmt).__name__} {what})"


class ScheduleState:
    """A schedule's module with srefs made on demand (``sch.state``); ``ScheduleState(mod)`` makes
    one over a module or PrimFunc of its own."""

    def __init__(self, mod: IRModule | PrimFunc | Any, debug_mask: Any = "none"):
        if isinstance(mod, PrimFunc):
            mod = IRModule({"main": mod})
        self._source = mod
        self.debug_mask = debug_mask

    @property
    def mod(self) -> IRModule:
        source = self._source
        return source if isinstance(source, IRModule) else source.mod  # a Schedule: its module now

    def _owner(self) -> Any:
        return self._source

    def get_sref(self, stmt: Any) -> StmtSRef | None:
        """The sref of ``stmt`` (a For or Block of the module; a BlockRealize means its block),
        None when the module does not hold it."""
        target = stmt.block if isinstance(stmt, BlockRealize) else stmt
        for func in self.mod.functions.values():
            if not isinstance(func, PrimFunc):
                continue
            for s, path in walk_stmts(func.body):
                if s is target and isinstance(s, (For, Block)):
                    return self._sref(s, path)
        return None

    def get_block_scope(self, block: StmtSRef) -> "BlockScope":
        """The dependencies among the blocks directly inside ``block`` (see :class:`BlockScope`)."""
        children = []
        for s, path in walk_stmts(block.stmt.body):
            if isinstance(s, BlockRealize) and not any(isinstance(p, BlockRealize) for p in path):
                children.append(self.get_sref(s.block))
        return BlockScope(children)

    def _sref(self, stmt: For | Block, path: tuple) -> StmtSRef:
        parent = None
        for s in path:
            if isinstance(s, (For, Block)):
                parent = StmtSRef(s, parent, self._owner())
        return StmtSRef(stmt, parent, self._owner())


class DepKind(enum.IntEnum):
    """How one block depends on an earlier one in the same scope (TVM's numbering)."""

    RAW = 0  # it reads what the earlier one wrote
    WAW = 1  # it overwrites what the earlier one wrote
    WAR = 2  # it overwrites what the earlier one read
    OPAQUE = 3


class Dependency:
    """``dst`` depends on ``src`` (both srefs of blocks in one scope) in the way ``kind`` says."""

    def __init__(self, src: StmtSRef, dst: StmtSRef, kind: DepKind):
        self.src, self.dst, self.kind = src, dst, kind

    def __repr__(self) -> str:
        return f"Dependency({self.src!r} -> {self.dst!r}, {self.kind.name})"


class BlockScope:
    """The dependencies among the blocks directly inside one block (its *scope*), in program
    order, as TVM's BlockScope finds them from each block's declared reads and writes."""

    def __init__(self, children: list[StmtSRef]):
        self.deps: list[Dependency] = []
        readers: dict[int, list[StmtSRef]] = {}
        writers: dict[int, list[StmtSRef]] = {}
        for child in children:
            block = child.stmt
            for r in block.reads:
                readers.setdefault(id(r.buffer), []).append(child)
            for w in block.writes:
                writers.setdefault(id(w.buffer), []).append(child)
            for regions, table, kind in ((block.reads, writers, DepKind.RAW), (block.writes, writers, DepKind.WAW),
                                         (block.writes, readers, DepKind.WAR)):
                for region in regions:
                    for src in table.get(id(region.buffer), []):
                        if src.stmt is not block:
                            self.deps.append(Dependency(src, child, kind))

    def get_deps_by_src(self, block: StmtSRef) -> list[Dependency]:
        return [d for d in self.deps if d.src.same_as(block)]

    def get_deps_by_dst(self, block: StmtSRef) -> list[Dependency]:
        return [d for d in self.deps if d.dst.same_as(block)]
