"""CompactBufferAllocation: allocate an intermediate buffer where it is used, at the size used.

After ``cache_write`` + ``reverse_compute_at`` a ``C_local`` buffer is declared at the top
of the function with the full output shape, yet each iteration of the tile loop touches
only one small tile of it.  This pass moves the allocation down to the innermost statement
that holds every block using the buffer, shrinks it to the region those blocks touch there,
and shifts the indices accordingly — so a tile accumulator becomes a small array the code
generator places on the stack, and LLVM keeps it in registers.

The allocation never moves inside a loop that drives a *reduction* of a block using the
buffer (writes into it): the partial results must survive from one iteration of such a loop
to the next.  A buffer the reduction only reads (a shared tile of A) may move inside.
On a GPU a ``shared`` buffer is one per thread block: its region is the union over the
threadIdx loops (wherever the allocation lands, it is one per block), a ``local`` one stays
per thread.
"""

from __future__ import annotations

from typing import Any

from ...arith import Analyzer
from ...ir.node import replace
from ...ir.structural import structural_equal
from ..analysis import uses_var
from ..buffer import Buffer, BufferRegion, decl_buffer
from ..expr import BufferLoad, IntImm, Max, Min, PrimExpr, Range, const
from ..function import PrimFunc
from ..functor import StmtExprMutator, post_order_visit
from ..schedule.region_cover import thread_loops_sharing
from ..schedule.shared_analyses import range_bounds
from ..stmt import Allocate, Block, BlockRealize, BufferStore, For, Stmt
from ..stmt_functor import child_stmts
from .function_pass import prim_func_pass
from .storage_align import apply_storage_align

__all__ = ["CompactBufferAllocation"]


def _chains(root: Stmt) -> list[tuple[BlockRealize, tuple]]:
    """Every block realize under ``root`` with the statements above it (outermost first)."""
    out: list[tuple[BlockRealize, tuple]] = []

    def walk(s: Any, path: tuple) -> None:
        if isinstance(s, BlockRealize):
            out.append((s, path))

        for c in child_stmts(s):
            walk(c, path + (s,))

    walk(root, ())
    return out


def _uses(block: Block, buffer: Buffer, accessed: dict[int, tuple[Block, set[int]]]) -> bool:
    """Whether ``block`` declares or accesses ``buffer``; ``accessed`` remembers, per block, the
    buffers its body loads or stores (one walk per block, not one per block and buffer)."""
    if any(r.buffer is buffer for r in block.reads + block.writes):
        return True
    known = accessed.get(id(block))
    if known is None:
        ids: set[int] = set()
        post_order_visit(block, lambda x: ids.add(id(x.buffer))
                         if isinstance(x, (BufferLoad, BufferStore)) else None)
        known = accessed[id(block)] = (block, ids)  # (holds the block: its id stays its own)
    return id(buffer) in known[1]


def _accessed_in(body: Stmt, buffer: Buffer) -> bool:
    """Whether anything in ``body`` (inside a block or not) loads or stores ``buffer`` or names its
    data pointer (an intrinsic's access pointer)."""
    found: list[bool] = []
    post_order_visit(body, lambda x: found.append(True)
                     if (isinstance(x, (BufferLoad, BufferStore)) and x.buffer is buffer) or x is buffer.data
                     else None)
    return bool(found)


def _placement(users: list[tuple[BlockRealize, tuple]], buffer: Buffer) -> Stmt | None:
    """The statement to wrap in the new allocation, or None to leave it where it is."""
    common = list(users[0][1])
    for _, path in users[1:]:
        n = 0
        while n < min(len(common), len(path)) and common[n] is path[n]:
            n += 1
        common = common[:n]
    # stop at the first nested block, and above any loop driving a user's reduction
    for n, s in enumerate(common):
        stop = isinstance(s, (Block, BlockRealize))
        if isinstance(s, For):  # (only a block writing the buffer accumulates into it)
            stop = any(iv.iter_type != "spatial" and uses_var(v, s.loop_var)
                       for r, _ in users if any(w.buffer is buffer for w in r.block.writes)
                       for iv, v in zip(r.block.iter_vars, r.iter_values))
        if stop:
            common = common[:n]
            break
    loops = [s for s in common if isinstance(s, For)]
    return loops[-1] if loops else None


def _region(users: list[tuple[BlockRealize, tuple]], buffer: Buffer, loop: For) -> list[tuple[PrimExpr, PrimExpr]]:
    """Per dimension [lo, hi] of what the users touch inside ``loop``'s body."""

    ana = Analyzer()
    hull: list[tuple[PrimExpr, PrimExpr]] | None = None
    for realize, path in users:
        inner = path[path.index(loop) + 1:]
        dom = {id(s.loop_var): (s.min, s.min + s.extent - 1) for s in inner if isinstance(s, For)}
        # a shared buffer holds what every thread of the block touches (TVM relaxes the
        # thread loops whose threads share the buffer's storage scope)
        dom.update(thread_loops_sharing(loop, path, buffer.scope))
        bind = {iv.var: v for iv, v in zip(realize.block.iter_vars, realize.iter_values)}
        for region in realize.block.reads + realize.block.writes:
            if region.buffer is not buffer:
                continue
            dims = []
            for k, r in enumerate(region.region):
                b = range_bounds(r, dom, bind)
                if b is None:
                    dims.append((const(0, buffer.shape[k].dtype), buffer.shape[k] - 1))
                else:
                    dims.append((ana.simplify(b[0]), ana.simplify(b[1])))
            if hull is None:
                hull = dims
            else:
                hull = [(a if structural_equal(a, c) else ana.simplify(Min(a, c)),
                         b if structural_equal(b, d) else ana.simplify(Max(b, d)))
                        for (a, b), (c, d) in zip(hull, dims)]
    return hull or []


class _Shift(StmtExprMutator):
    """Inside each planned loop, accesses of its buffers become accesses of their compacted
    buffers at ``index - lo``, and the loop's body is wrapped in their allocations (the first
    buffer innermost): every buffer of a block in one walk of its body."""

    def __init__(self, plan: dict[int, list[tuple[Buffer, Buffer, list[PrimExpr]]]]):
        self.plan = plan  # id(loop) -> (old, new, lows) of the buffers placed in it, in order
        self.active: dict[int, tuple[Buffer, list[PrimExpr], Analyzer]] = {}  # id(old) -> (new, lows, ana)

    def visit_for_(self, n: For) -> Stmt:
        placed = self.plan.get(id(n))
        if placed is None:
            return self.visit_children(n)
        for old, new, lows in placed:
            self.active[id(old)] = (new, lows, Analyzer())
        try:
            loop = self.visit_children(n)
        finally:
            for old, _, _ in placed:
                del self.active[id(old)]
        body = loop.body
        for _, new, _ in placed:
            body = Allocate(new, body)
        return replace(loop, body=body)

    def _shift(self, indices: tuple, to: tuple) -> tuple:
        _, lows, ana = to
        return tuple(ana.simplify(i - lo) for i, lo in zip(indices, lows))

    def visit_buffer_load_(self, n: BufferLoad) -> PrimExpr:
        indices = self.visit(n.indices)
        to = self.active.get(id(n.buffer))
        if to is not None:
            return BufferLoad(to[0], self._shift(indices, to))
        return n if indices is n.indices else BufferLoad(n.buffer, indices)

    def visit_buffer_store_(self, n: BufferStore) -> Stmt:
        value, indices = self.visit(n.value), self.visit(n.indices)
        to = self.active.get(id(n.buffer))
        if to is not None:
            return BufferStore(to[0], value, self._shift(indices, to), n.span)
        return n if value is n.value and indices is n.indices else BufferStore(n.buffer, value, indices, n.span)

    def visit_buffer_region_(self, n: BufferRegion) -> BufferRegion:
        to = self.active.get(id(n.buffer))
        if to is None:
            return n
        mins = self._shift(tuple(r.min for r in n.region), to)
        return BufferRegion(to[0], tuple(Range(m, r.extent) for m, r in zip(mins, n.region)))


def _compact_block(block: Block) -> Block:
    """``block`` with each buffer it allocates moved into the innermost loop of its body that
    holds every use, at the size used there.  Where a buffer goes and its size do not depend
    on where the others went, so all are planned on the body as it is, then moved at once."""
    kept: list[Buffer] = []
    plan: dict[int, list[tuple[Buffer, Buffer, list[PrimExpr]]]] = {}
    accessed: dict[int, tuple[Block, set[int]]] = {}
    chains = _chains(block.body) if block.alloc_buffers else []
    for buffer in block.alloc_buffers:
        users = [(r, p) for r, p in chains if _uses(r.block, buffer, accessed)]
        if not users and not _accessed_in(block.body, buffer):
            # never read nor written (a matmul's output once a peeled register tile wrote through
            # its cache): dropped, as TVM's allocation planning drops a buffer with no access
            continue
        loop = _placement(users, buffer) if users else None
        if loop is None:
            kept.append(buffer)
            continue
        hull = _region(users, buffer, loop)
        shape, lows = [], []
        for (lo, hi), full in zip(hull, buffer.shape):

            extent = Analyzer().simplify(hi - lo + 1)
            if isinstance(extent, IntImm) and isinstance(full, IntImm) and extent.value <= full.value:
                shape.append(extent)
                lows.append(lo)
            else:  # keep the whole dimension
                shape.append(full)
                lows.append(const(0, full.dtype))
        small = decl_buffer(tuple(shape), buffer.dtype, buffer.name, scope=buffer.scope)
        plan.setdefault(id(loop), []).append((buffer, small, lows))
    if len(kept) == len(block.alloc_buffers):
        return block
    if not plan:  # only dropped buffers
        return replace(block, alloc_buffers=tuple(kept))
    return replace(block, alloc_buffers=tuple(kept), body=_Shift(plan).visit(block.body))


class _CompactEveryBlock(StmtExprMutator):
    """Compact the allocations of every block, the innermost first: besides the root, a
    block that ``loop_partition`` made holds the caches scheduled inside its piece."""

    def visit_block_(self, n: Block) -> Block:
        return _compact_block(self.visit_children(n))


def compact(func: PrimFunc) -> PrimFunc:
    body = _CompactEveryBlock().visit(func.body)
    return func if body is func.body else func.with_body(body)


@prim_func_pass(opt_level=0, name="tir.CompactBufferAllocation")
class CompactBufferAllocation:
    """Move each intermediate buffer's allocation into the loop that uses it, at the used size."""

    def transform_function(self, func: PrimFunc, mod: Any, ctx: Any) -> PrimFunc:
        return apply_storage_align(compact(func))
