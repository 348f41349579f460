"""read_at and write_at: a copy of one buffer's tile, made at a chosen loop (TVM's ReadAt/WriteAt).

Where cache_read places its copy after the buffer's writer and lets ``compute_at`` move it,
read_at names the loop outright: the copy block goes into that loop's body, right before the
first statement that reads the buffer, and everything from there on reads the new buffer.
write_at is the mirror image: the copy goes right after the last statement that writes it,
and everything before it writes the new buffer.

* **How much** is copied: the union of the regions the blocks under the loop access, relaxed
  over the loops between those blocks and the loop, and over the thread loops above it whose
  threads all see one buffer of the new scope (every ``threadIdx`` for ``"shared"``).
* **The copy block**: its iterators are the loops above the copy (up to the enclosing block)
  that the region still depends on, ``v0, v1 ...`` in order of appearance; its body is a loop
  nest ``ax0, ax1 ...`` over the region, inside the block, and it is annotated
  ``{"auto_copy": True}`` (a later pass lowers such blocks to the target's copy instructions).
* **The new buffer** has the old one's shape, in the new scope, allocated in the enclosing block.
"""

from __future__ import annotations

from typing import Any

from ...ir import replace
from ..buffer import Buffer, BufferRegion, decl_buffer
from ..expr import BufferLoad, IterVar, Max, Min, PrimExpr, Range, Var, const
from ..functor import StmtExprMutator, post_order_visit, substitute
from ..stmt import Block, BlockRealize, BufferStore, For, ForKind, MatchBufferRegion, SeqStmt, Stmt
from .data import check_storage_scope
from .error import ScheduleError
from .region_cover import thread_loops_sharing
from .shared_analyses import range_bounds, simplify
from .tree import child_stmts, loops_above, replace_stmt, unique_block_name

__all__ = ["read_write_at"]


def _blocks_under(s: Stmt, loops: tuple = ()) -> list[tuple[BlockRealize, tuple]]:
    """The outermost blocks in ``s`` (not those nested in them), each with the loops between."""
    if isinstance(s, BlockRealize):
        return [(s, loops)]
    out = []
    inner = loops + (s,) if isinstance(s, For) else loops
    for c in child_stmts(s):
        out += _blocks_under(c, inner)
    return out


def _relaxed(realize: BlockRealize, regions: tuple, buffer: Buffer, loops: tuple,
             threads: dict) -> list[list[tuple[PrimExpr, PrimExpr]]]:
    """Each of ``regions``' accesses to ``buffer``, per dimension the inclusive bounds over the
    ``loops`` (and thread loops) it runs in."""
    bind = {iv.var: v for iv, v in zip(realize.block.iter_vars, realize.iter_values)}
    dom = dict(threads)
    dom.update({id(f.loop_var): (f.min, f.min + f.extent - 1) for f in loops})
    out = []
    for r in regions:
        if r.buffer is not buffer:
            continue
        dims = []
        for extent, rng in zip(buffer.shape, r.region):
            b = range_bounds(rng, dom, bind)
            dims.append((const(0, extent.dtype), extent - 1) if b is None else b)
        out.append(dims)
    return out


def _union(regions: list[list[tuple[PrimExpr, PrimExpr]]], bounds: dict) -> list[Range]:
    """The bounding box of the regions, as ``Range(min, extent)`` per dimension."""
    out = []
    for dim in zip(*regions):
        lo, hi = dim[0]
        for a, b in dim[1:]:
            lo, hi = Min(lo, a), Max(hi, b)
        lo = simplify(lo, bounds)
        out.append(Range(lo, simplify(hi + 1 - lo, bounds)))
    return out


class _Rename(StmtExprMutator):
    """Every access to ``old`` becomes one to ``new`` (same indices: the buffers share a shape)."""

    def __init__(self, old: Buffer, new: Buffer):
        self.old, self.new = old, new

    def visit_buffer_load_(self, n: BufferLoad) -> PrimExpr:
        n = self.visit_children(n)
        return BufferLoad(self.new, n.indices) if n.buffer is self.old else n

    def visit_buffer_store_(self, n: BufferStore) -> Stmt:
        n = self.visit_children(n)
        return BufferStore(self.new, n.value, n.indices) if n.buffer is self.old else n

    def visit_var_(self, n: Var) -> PrimExpr:
        return self.new.data if n is self.old.data else n

    def _regions(self, regions: tuple) -> tuple:
        return tuple(BufferRegion(self.new, r.region) if r.buffer is self.old else r for r in regions)

    def visit_block_(self, n: Block) -> Block:
        n = self.visit_children(n)
        matches = tuple(MatchBufferRegion(m.buffer, self._regions((m.source,))[0]) for m in n.match_buffers)
        return replace(n, reads=self._regions(n.reads), writes=self._regions(n.writes), match_buffers=matches)


def _copy_block(src: Buffer, dst: Buffer, name: str, domain: list[Range], outer: list[For]) -> BlockRealize:
    """The block copying ``domain`` of ``src`` into ``dst``: one iterator per loop of ``outer``
    the domain depends on, and the loops over the domain inside its body."""
    by_var = {f.loop_var: f for f in outer}
    bind: dict[Var, Var] = {}
    iter_vars, values = [], []

    def bind_var(x: Any) -> None:
        if isinstance(x, Var) and x in by_var and x not in bind:
            f = by_var[x]
            v = Var(f"v{len(iter_vars)}", x.dtype)
            bind[x] = v
            iter_vars.append(IterVar(Range(f.min, f.extent), v, "spatial"))
            values.append(x)

    for r in domain:  # (iterators numbered in order of appearance, as TVM numbers them)
        post_order_visit(r.min, bind_var)
        post_order_visit(r.extent, bind_var)
    domain = [Range(substitute(r.min, bind), substitute(r.extent, bind)) for r in domain]
    loop_vars = [Var(f"ax{k}", "int32") for k in range(len(domain))]
    indices = tuple(r.min + v for r, v in zip(domain, loop_vars))
    body: Stmt = BufferStore(dst, BufferLoad(src, indices), indices)
    for v, r in reversed(list(zip(loop_vars, domain))):
        body = For(v, const(0, "int32"), r.extent, ForKind.SERIAL, body)
    block = Block(name, tuple(iter_vars), (), (), (BufferRegion(src, tuple(domain)),),
                  (BufferRegion(dst, tuple(domain)),), None, body, {"auto_copy": True})
    return BlockRealize(tuple(values), const(True, "bool"), block)


def _positions(subtrees: list[Stmt], buffer: Buffer) -> tuple[list[int], list[int]]:
    """Which of ``subtrees`` hold a block that reads ``buffer``, and which one that writes it."""
    reads, writes = [], []
    for i, s in enumerate(subtrees):
        blocks = [r.block for r, _ in _blocks_under(s)]
        if any(x.buffer is buffer for b in blocks for x in b.reads):
            reads.append(i)
        if any(x.buffer is buffer for b in blocks for x in b.writes):
            writes.append(i)
    return reads, writes


def _span(is_read: bool, reads: list[int], writes: list[int], what: str) -> tuple[int, int, int]:
    """Where the copy goes and which subtrees switch buffers: ``(insert_at, start, end)``."""
    if is_read:
        if not reads:
            raise ScheduleError(f"cannot {what}: nothing under the loop reads the buffer")
        if writes and writes[-1] >= reads[0]:
            raise ScheduleError(f"cannot {what}: the buffer is written under the loop after it is first read")
        return reads[0], reads[0], None
    if not writes:
        raise ScheduleError(f"cannot {what}: nothing under the loop writes the buffer")
    if reads and reads[-1] > writes[-1]:
        raise ScheduleError(f"cannot {what}: the buffer is read under the loop after it is last written")
    return writes[-1] + 1, 0, writes[-1] + 1


def read_write_at(root: Stmt, loop: For, loop_path: tuple, realize: BlockRealize, index: int,
                  scope: str, is_read: bool) -> tuple[Stmt, str]:
    """``root`` with a ``scope`` copy of ``realize``'s ``index``-th read (``is_read``) or write
    buffer made inside ``loop``; returns the new root and the copy block's name."""
    kind = "read" if is_read else "write"
    block = realize.block
    regions = block.reads if is_read else block.writes
    if not 0 <= index < len(regions):
        raise ScheduleError(f"block {block.name_hint} {kind}s {len(regions)} buffer(s); "
                            f"{kind} buffer index {index} is out of range")
    src = regions[index].buffer
    what = f"{kind}_at {src.name} at loop {loop.loop_var.name}"
    check_storage_scope(scope, what)
    if not any(x is realize for x, _ in _blocks_under(loop.body)):
        raise ScheduleError(f"cannot {what}: block {block.name_hint} is not under the loop")
    subtrees = list(loop.body.seq) if isinstance(loop.body, SeqStmt) else [loop.body]
    insert_at, start, end = _span(is_read, *_positions(subtrees, src), what)
    threads = thread_loops_sharing(loop, loop_path + (loop,), scope)
    accessed = []
    for r, loops in _blocks_under(loop.body):
        accessed += _relaxed(r, r.block.reads if is_read else r.block.writes, src, loops, threads)
    outer = loops_above(loop_path + (loop,))
    domain = _union(accessed, {f.loop_var: f.extent for f in outer})
    dst = decl_buffer(src.shape, src.dtype, f"{src.name}_{scope}", scope=scope)
    name = unique_block_name(root, f"{src.name}_{scope}")
    copy = _copy_block(src, dst, name, domain, outer) if is_read else _copy_block(dst, src, name, domain, outer)
    rename = _Rename(src, dst)
    end = len(subtrees) if end is None else end
    subtrees[start:end] = [rename.visit(s) for s in subtrees[start:end]]
    subtrees.insert(insert_at, copy)
    scope_block = next(s for s in reversed(loop_path) if isinstance(s, Block))
    new_loop = replace(loop, body=SeqStmt(tuple(subtrees)))
    new_scope = replace_stmt(replace(scope_block, alloc_buffers=scope_block.alloc_buffers + (dst,)), loop, new_loop)
    return replace_stmt(root, scope_block, new_scope), name
