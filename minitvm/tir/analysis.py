"""Analyses over TIR: which buffer regions a block reads and writes; variables used but never
defined."""

from __future__ import annotations

from typing import Any

from ..arith import Analyzer
from ..ir.node import Node
from ..ir.structural import structural_equal
from ..support.identity_cache import IdentityCache
from .buffer import Buffer, BufferRegion
from .expr import Add, And, BufferLoad, FloorDiv, FloorMod, IntImm, IterVar, Let, Mul, PrimExpr, Range, Sub, Var, const
from .functor import StmtExprVisitor, post_order_visit, substitute, walked_fields
from .oob_checker import OOBChecker
from .stmt import AttrStmt, Block, BlockRealize, BufferStore, For, LetStmt

__all__ = ["get_block_read_write_region", "get_block_access_region", "uses_var", "vars_used", "conjuncts",
           "OOBChecker", "free_scalar_vars", "buffer_vars"]


def vars_used(node: Any) -> set[int]:
    """The ids of every variable that occurs in ``node`` (a new set: callers add to it)."""
    return set(_used(node))


def _used(node: Any) -> frozenset[int] | set[int]:
    """:func:`vars_used`, not to be changed (remembered for nodes)."""
    if isinstance(node, Var) and node.type_annotation is None:
        return {id(node)}
    if isinstance(node, Node):
        if not walked_fields(type(node)):  # a constant (a Var has its field, checked above)
            return frozenset()
        return _VARS_USED.get(node, _walk_vars)
    return _walk_vars(node)


def _walk_vars(node: Any) -> frozenset[int]:
    found: set[int] = set()
    post_order_visit(node, lambda x: found.add(id(x)) if isinstance(x, Var) else None)
    return frozenset(found)


#: the variables of the last expressions and statements asked about: the schedules and passes
#: ask about the same bindings, predicates and loop bodies again and again (MobileNetV2's compile
#: asks ~7500 times about ~1800 nodes); a node is immutable, so its answer stays right
_VARS_USED = IdentityCache(4096)


def uses_var(node: Any, var: Var) -> bool:
    """True when ``var`` occurs in ``node``."""
    return id(var) in _used(node)


def conjuncts(e: PrimExpr) -> list[PrimExpr]:
    """The terms of a conjunction ``a and b and ...`` (``[e]`` when ``e`` is no ``And``)."""
    return conjuncts(e.a) + conjuncts(e.b) if isinstance(e, And) else [e]


def _bounds(e: PrimExpr, dom: dict[int, tuple[PrimExpr, PrimExpr]]) -> tuple[PrimExpr, PrimExpr] | None:
    """``(lo, extent)`` of the values ``e`` takes while inner loop variables range over ``dom``
    (var id -> (min, extent)); None if unknown.

    Extents are built from the loop extents, so with constant loops they fold to constants
    (``vi * 4 + ii`` over ``ii < 4`` covers ``vi * 4`` and 4 more), and a sub-expression that
    uses no inner variable is returned as it is, so a point access keeps its own index.
    """
    if not _uses(e, dom):
        return e, const(1, e.dtype)
    if isinstance(e, Var):
        return dom[id(e)]
    if isinstance(e, (Add, Sub)):
        a, b = _bounds(e.a, dom), _bounds(e.b, dom)
        if a is None or b is None:
            return None
        extent = a[1] + b[1] - 1
        if isinstance(e, Add):
            return a[0] + b[0], extent
        return a[0] - (b[0] + b[1] - 1), extent
    if isinstance(e, Mul):
        for x, c in ((e.a, e.b), (e.b, e.a)):
            if isinstance(c, IntImm) and c.value >= 0:
                r = _bounds(x, dom)
                if r is None:
                    return None
                return (r[0] * c, (r[1] - 1) * c + 1) if c.value else (const(0, e.dtype), const(1, e.dtype))
        return None
    if isinstance(e, FloorDiv) and isinstance(e.b, IntImm) and e.b.value > 0:
        r = _bounds(e.a, dom)
        if r is None or not isinstance(r[1], IntImm):
            return None

        lo = r[0] // e.b
        hi = (r[0] + r[1] - 1) // e.b
        span = Analyzer().simplify(hi - lo + 1)  # (x*32 + 31)//32 - x//... folds to a constant
        # symbolic lo: the quotient range spans at most ceil((extent - 1) / c) + 1 values
        return (lo, span) if isinstance(span, IntImm) else (lo, const((r[1].value - 1) // e.b.value + 2,
                                                                       e.dtype))
    if isinstance(e, FloorMod) and isinstance(e.b, IntImm) and e.b.value > 0:
        return const(0, e.dtype), e.b
    return None


def _uses(e: Any, dom: dict) -> bool:
    found = []
    post_order_visit(e, lambda x: found.append(x) if isinstance(x, Var) and id(x) in dom else None)
    return bool(found)


def _region(buffer: Buffer, indices: tuple, dom: dict) -> tuple[Range, ...]:
    ranges = []
    for dim, idx in zip(buffer.shape, indices):
        b = _bounds(idx, dom) if dom else (idx, const(1, idx.dtype))
        if b is None:
            ranges.append(Range(const(0, dim.dtype), dim))
            continue
        lo, extent = b
        if all(isinstance(x, IntImm) for x in (lo, extent, dim)) and lo.value >= 0 \
                and lo.value + extent.value > dim.value:
            extent = const(dim.value - lo.value, extent.dtype)  # e.g. a split whose tail is guarded
        ranges.append(Range(lo, extent))
    return tuple(ranges)


class _Collector(StmtExprVisitor):
    def __init__(self, data_vars: dict[int, Buffer] | None = None) -> None:
        self.reads: list[tuple[Buffer, tuple]] = []
        self.writes: list[tuple[Buffer, tuple]] = []
        # a buffer's data pointer used directly (T.call_extern(.., A.data)) or through
        # T.tvm_access_ptr: the whole buffer is accessed, as TVM's detector assumes
        self.data_vars: dict[int, Buffer] = dict(data_vars or {})
        self.opaque: list[tuple[Buffer, tuple]] = []
        self.dom: dict[int, tuple[PrimExpr, PrimExpr]] = {}  # loop var id -> (min, extent)
        self.lets: dict[Var, PrimExpr] = {}  # let-bound vars do not exist at the block signature
        self.local: set[int] = set()
        self.matched: dict[int, BufferRegion] = {}  # match_buffer id -> the region it views

    def _add(self, into: list, buffer: Buffer, indices: tuple) -> None:
        if id(buffer) in self.local:
            return
        if id(buffer) in self.matched:  # an access through a view touches the region it views
            source = self.matched[id(buffer)]
            self._add_region(into, source.buffer, source.region)
            return
        if self.lets:
            indices = substitute(indices, self.lets)
        self._add_region(into, buffer, _region(buffer, indices, self.dom))

    def _add_region(self, into: list, buffer: Buffer, region: tuple) -> None:
        for b, r in into:
            if b is buffer and structural_equal(r, region, map_free_vars=True) and _same(r, region):
                return
        into.append((buffer, region))

    def visit_buffer_load_(self, n: BufferLoad) -> None:
        self._add(self.reads, n.buffer, n.indices)
        self.visit(n.indices)

    def _whole(self, into: list, buffer: Buffer) -> None:
        if id(buffer) not in self.local:
            self._add_region(into, buffer, tuple(Range(const(0, d.dtype), d) for d in buffer.shape))

    def visit_var_(self, n: Var) -> None:
        buffer = self.data_vars.get(id(n))
        if buffer is not None:
            self._whole(self.opaque, buffer)

    def visit_call_(self, n: Any) -> None:
        if n.op == "tir.tvm_access_ptr" and len(n.args) == 5 and isinstance(n.args[1], Var) \
                and isinstance(n.args[4], IntImm):
            buffer = self.data_vars.get(id(n.args[1]))
            if buffer is not None:
                mask = n.args[4].value
                self._whole(self.opaque if mask & 3 == 3 else self.reads if mask & 1 else
                            self.writes if mask & 2 else [], buffer)
                return
        self.visit(n.args)

    def visit_buffer_store_(self, n: BufferStore) -> None:
        self._add(self.writes, n.buffer, n.indices)
        self.visit(n.value)
        self.visit(n.indices)

    def visit_let_stmt_(self, n: LetStmt) -> None:
        self.visit(n.value)
        self.lets[n.var] = substitute(n.value, self.lets) if self.lets else n.value
        self.visit(n.body)
        del self.lets[n.var]

    def visit_for_(self, n: For) -> None:
        self.visit((n.min, n.extent))
        self.dom[id(n.loop_var)] = (n.min, n.extent)
        self.visit(n.body)
        del self.dom[id(n.loop_var)]

    def visit_block_realize_(self, n: BlockRealize) -> None:
        # a nested block contributes its signature, rewritten in the outer block's variables
        self.visit(n.iter_values)
        self.visit(n.predicate)
        block = n.block
        binding = {iv.var: value for iv, value in zip(block.iter_vars, n.iter_values)}
        binding.update(self.lets)
        for kind, into in (("reads", self.reads), ("writes", self.writes)):
            for region in getattr(block, kind):
                if id(region.buffer) in self.local:
                    continue
                if id(region.buffer) in self.matched:
                    source = self.matched[id(region.buffer)]
                    self._add_region(into, source.buffer, source.region)
                    continue
                ranges = []
                for dim, r in zip(region.buffer.shape, substitute(region.region, binding)):
                    b = _bounds(r.min, self.dom) if self.dom else (r.min, const(1, r.min.dtype))
                    if b is None:
                        ranges.append(Range(const(0, dim.dtype), dim))
                    elif isinstance(r.extent, IntImm) and r.extent.value == 1:
                        ranges.append(Range(b[0], b[1]))
                    else:
                        ranges.append(Range(b[0], b[1] + r.extent - 1))
                self._add_region(into, region.buffer, tuple(ranges))


def _same(a: tuple, b: tuple) -> bool:
    """Exact identity of variables too (not just renaming)."""

    va, vb = [], []
    post_order_visit(a, lambda x: va.append(x) if isinstance(x, Var) else None)
    post_order_visit(b, lambda x: vb.append(x) if isinstance(x, Var) else None)
    return len(va) == len(vb) and all(x is y for x, y in zip(va, vb))


def _shifted_hull(r0: Range, r1: Range) -> Range | None:
    """The hull of two ranges whose ends differ by constants (``A[vi]`` and ``A[vi + 2]`` give
    ``A[vi:vi + 3]``, as TVM's region union does), else None."""

    ana = Analyzer()
    d_lo = ana.simplify(r1.min - r0.min)
    d_hi = ana.simplify((r1.min + r1.extent) - (r0.min + r0.extent))
    if not (isinstance(d_lo, IntImm) and isinstance(d_hi, IntImm)):
        return None
    lo = r0.min if d_lo.value >= 0 else r1.min
    hi_extra = max(d_hi.value, 0)
    extent = ana.simplify(r0.min + r0.extent + hi_extra - lo)
    return Range(lo, extent)


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
            hull.append(r0 if same else _shifted_hull(r0, r1) or Range(const(0, dim.dtype), dim))
        merged[id(buffer)] = (buffer, tuple(hull))
    return [BufferRegion(b, r) for b, r in merged.values()]


def get_block_read_write_region(block: Block, buffers: Any = ()) -> tuple[list[BufferRegion], list[BufferRegion]]:
    """The (reads, writes) a block's body implies, as TVMScript infers ``T.reads/T.writes``.

    Buffers allocated inside the block are not part of its signature; in a block with
    ``T.init`` the read of the reduction output is implied and left out, as in TVM.
    A buffer used through its data pointer (``T.tvm_access_ptr`` with a read or write
    mask, or the bare ``A.data``, an opaque access read and written) counts as a whole;
    ``buffers`` names the buffers whose pointers may appear (besides those the block
    loads, stores or declares).
    """
    c = _Collector(_data_vars(block, buffers))
    c.local = {id(b) for b in block.alloc_buffers}
    c.matched = {id(m.buffer): m.source for m in block.match_buffers}
    if block.init is not None:
        c.visit(block.init)
    c.visit(block.body)
    opaque = _merge(c.opaque)
    opaque_ids = {id(r.buffer) for r in opaque}
    writes = [w for w in _merge(c.writes) if id(w.buffer) not in opaque_ids]
    excluded = set(opaque_ids)
    if block.init is not None:
        excluded |= {id(w.buffer) for w in writes}
    reads = [r for r in _merge(c.reads) if id(r.buffer) not in excluded]
    return reads + opaque, writes + opaque


def _data_vars(block: Block, buffers: Any) -> dict[int, Buffer]:
    """Data pointer id -> buffer, for the buffers a block can reach."""

    found: dict[int, Buffer] = {}
    for b in buffers:
        found.setdefault(id(b.data), b)
    for region in (*block.reads, *block.writes):
        found.setdefault(id(region.buffer.data), region.buffer)
    for b in block.alloc_buffers:
        found.setdefault(id(b.data), b)

    def visit(n: Any) -> None:
        if isinstance(n, (BufferLoad, BufferStore)):
            found.setdefault(id(n.buffer.data), n.buffer)
        elif isinstance(n, Block):
            for b in n.alloc_buffers:
                found.setdefault(id(b.data), b)

    post_order_visit((block.init, block.body), visit)
    return found


get_block_access_region = get_block_read_write_region


def free_scalar_vars(f: Any, known: Any = None, views_define: bool = False) -> list[Var]:
    """Non-handle variables the body of PrimFunc ``f`` reads that no parameter (or id in
    ``known``), buffer shape, loop, let, thread launch or block iterator defines (and, with
    ``views_define``, a block's ``T.match_buffer`` view, which binds its offset and strides): TVM's
    well-formedness rule that a variable is defined before use, and what the printer declares."""

    defined = {id(p) for p in f.params} if known is None else set(known)
    for b in f.buffer_map.values():
        defined |= {id(v) for v in buffer_vars(b)}
    used: list[Var] = []

    def visit(x: Any) -> None:
        if isinstance(x, For):
            defined.add(id(x.loop_var))
        elif isinstance(x, (LetStmt, Let)):
            defined.add(id(x.var))
        elif isinstance(x, AttrStmt) and isinstance(x.node, IterVar):
            defined.add(id(x.node.var))
        elif isinstance(x, Block):
            defined.update(id(iv.var) for iv in x.iter_vars)
            for buf in x.alloc_buffers:
                defined.update(id(v) for v in buffer_vars(buf))
            for m in x.match_buffers if views_define else ():
                defined.update(id(v) for v in buffer_vars(m.buffer))
        elif isinstance(x, Var):
            if x.dtype != "handle" and all(x is not u for u in used):
                used.append(x)
        else:  # any other node that binds variables (a T.comm_reducer's lambda parameters)
            for name in getattr(x, "_def_fields", ()):
                bound = getattr(x, name)
                defined.update(id(v) for v in (bound if isinstance(bound, tuple) else (bound,))
                               if isinstance(v, Var))

    post_order_visit(f.body, visit)
    return [v for v in used if id(v) not in defined]


def buffer_vars(b: Buffer) -> list[Var]:
    """Variables a buffer's shape, strides and offset use, in first-use order."""
    found: list[Var] = []

    def visit(x: Any) -> None:
        if isinstance(x, Var) and all(x is not y for y in found):
            found.append(x)

    post_order_visit((b.shape, b.strides, b.elem_offset), visit)
    return found
