"""Analyses over TIR: which buffer regions a block reads and writes."""

from __future__ import annotations

from typing import Any

from ..ir.structural import structural_equal
from .buffer import Buffer, BufferRegion
from .expr import Add, BufferLoad, IntImm, Mul, PrimExpr, Range, Sub, Var, const
from .functor import StmtExprVisitor
from .stmt import Block, BlockRealize, BufferStore, For

__all__ = ["get_block_read_write_region", "get_block_access_region"]


def _bounds(e: PrimExpr, dom: dict[int, tuple[PrimExpr, PrimExpr]]) -> tuple[PrimExpr, PrimExpr] | None:
    """Inclusive [lo, hi] of ``e`` when inner loop variables range over ``dom``; None if unknown."""
    if isinstance(e, Var):
        return dom.get(id(e), (e, e))
    if isinstance(e, IntImm):
        return e, e
    if isinstance(e, (Add, Sub)):
        a, b = _bounds(e.a, dom), _bounds(e.b, dom)
        if a is None or b is None:
            return None
        return (a[0] + b[0], a[1] + b[1]) if isinstance(e, Add) else (a[0] - b[1], a[1] - b[0])
    if isinstance(e, Mul):
        for x, c in ((e.a, e.b), (e.b, e.a)):
            if isinstance(c, IntImm) and c.value >= 0:
                r = _bounds(x, dom)
                return None if r is None else (r[0] * c, r[1] * c)
        return None
    if not _uses(e, dom):
        return e, e
    return None


def _uses(e: Any, dom: dict) -> bool:
    from .functor import post_order_visit

    found = []
    post_order_visit(e, lambda x: found.append(x) if isinstance(x, Var) and id(x) in dom else None)
    return bool(found)


def _region(buffer: Buffer, indices: tuple, dom: dict) -> tuple[Range, ...]:
    ranges = []
    for dim, idx in zip(buffer.shape, indices):
        b = _bounds(idx, dom) if dom else (idx, idx)
        if b is None:
            ranges.append(Range(const(0, dim.dtype), dim))
        elif b[0] is b[1]:
            ranges.append(Range(idx, const(1, idx.dtype)))
        else:
            lo, hi = b
            ranges.append(Range(lo, hi - lo + 1))
    return tuple(ranges)


class _Collector(StmtExprVisitor):
    def __init__(self) -> None:
        self.reads: list[tuple[Buffer, tuple]] = []
        self.writes: list[tuple[Buffer, tuple]] = []
        self.dom: dict[int, tuple[PrimExpr, PrimExpr]] = {}
        self.local: set[int] = set()

    def _add(self, into: list, buffer: Buffer, indices: tuple) -> None:
        if id(buffer) in self.local:
            return
        region = _region(buffer, indices, self.dom)
        for b, r in into:
            if b is buffer and structural_equal(r, region, map_free_vars=True) and _same(r, region):
                return
        into.append((buffer, region))

    def visit_buffer_load_(self, n: BufferLoad) -> None:
        self._add(self.reads, n.buffer, n.indices)
        self.visit(n.indices)

    def visit_buffer_store_(self, n: BufferStore) -> None:
        self._add(self.writes, n.buffer, n.indices)
        self.visit(n.value)
        self.visit(n.indices)

    def visit_for_(self, n: For) -> None:
        self.dom[id(n.loop_var)] = (n.min, n.min + n.extent - 1)
        self.visit(n.body)
        del self.dom[id(n.loop_var)]

    def visit_block_realize_(self, n: BlockRealize) -> None:
        # a nested block contributes its own signature
        self.visit(n.iter_values)
        block = n.block
        for kind, into in (("reads", self.reads), ("writes", self.writes)):
            for region in getattr(block, kind):
                indices = tuple(r.min for r in region.region)
                self._add(into, region.buffer, indices) if all(
                    isinstance(r.extent, IntImm) and r.extent.value == 1 for r in region.region
                ) else into.append((region.buffer, region.region))


def _same(a: tuple, b: tuple) -> bool:
    """Exact identity of variables too (not just renaming)."""
    from .functor import post_order_visit

    va, vb = [], []
    post_order_visit(a, lambda x: va.append(x) if isinstance(x, Var) else None)
    post_order_visit(b, lambda x: vb.append(x) if isinstance(x, Var) else None)
    return len(va) == len(vb) and all(x is y for x, y in zip(va, vb))


def _merge(accesses: list[tuple[Buffer, tuple]]) -> list[BufferRegion]:
    """One region per buffer: identical regions collapse, different ones widen to a hull."""
    merged: dict[int, tuple[Buffer, tuple]] = {}
    for buffer, region in accesses:
        prev = merged.get(id(buffer))
        if prev is None:
            merged[id(buffer)] = (buffer, region)
            continue
        hull = []
        for dim, r0, r1 in zip(buffer.shape, prev[1], region):
            same = structural_equal(r0, r1, map_free_vars=True) and _same((r0,), (r1,))
            hull.append(r0 if same else Range(const(0, dim.dtype), dim))
        merged[id(buffer)] = (buffer, tuple(hull))
    return [BufferRegion(b, r) for b, r in merged.values()]


def get_block_read_write_region(block: Block) -> tuple[list[BufferRegion], list[BufferRegion]]:
    """The (reads, writes) a block's body implies, as TVMScript infers ``T.reads/T.writes``.

    Buffers allocated inside the block are not part of its signature; in a block with
    ``T.init`` the read of the reduction output is implied and left out, as in TVM.
    """
    c = _Collector()
    c.local = {id(b) for b in block.alloc_buffers} | {id(m.buffer) for m in block.match_buffers}
    if block.init is not None:
        c.visit(block.init)
    c.visit(block.body)
    reads, writes = _merge(c.reads), _merge(c.writes)
    if block.init is not None:
        written = {id(w.buffer) for w in writes}
        reads = [r for r in reads if id(r.buffer) not in written]
    return reads, writes


get_block_access_region = get_block_read_write_region
