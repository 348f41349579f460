"""Reindexing primitives: reindex, reindex_cache_read and reindex_cache_write.

All three put a copy stage between a block and one buffer it accesses, where the copy is
indexed by the *block's iterators* rather than by the buffer's own indices:

* ``reindex(block, ("read", i))``: ``A_reindex[vi, vj] = A[vj, vi]`` before the block, which
  then reads ``A_reindex[vi, vj]`` — the buffer's layout now follows the loop nest (the
  first step of tensorizing a matmul whose operand is transposed, or of a conv2d's im2col).
  The new buffer has one dimension per block iterator that appears in the access.
* ``reindex_cache_read/write(block, i, scope, index_map)``: the same with a storage scope
  and a layout of one's choosing, ``cache[index_map(block iterators)]``; the access must be a
  single point, and the index map must use exactly the iterators the access uses.

As TVM, ``reindex`` places its stage at the top level of the block's scope (right before or
after the loop nest holding the block), while the cache variants place it where
``cache_read``/``cache_write`` would: in the innermost sequence that holds both the producer
and the consumer, copying only the loops below that point that the copy needs.
"""

from __future__ import annotations

from typing import Any

from ...arith import Analyzer
from ...ir import replace
from ...ir.structural import structural_equal
from ..buffer import Buffer, BufferRegion, decl_buffer
from ..expr import BufferLoad, IntImm, IterVar, PrimExpr, Range, Var, const
from ..functor import StmtExprMutator, post_order_visit, substitute
from ..stmt import Block, BlockRealize, BufferStore, For, ForKind, SeqStmt, Stmt
from .block_annotate import access_buffer, valid_storage_scope
from .error import ScheduleError
from .layout import apply_index_map
from .shared_analyses import domain_guard, index_bounds
from .tree import block_realizes, child_stmts, replace_stmt, unique_block_name

__all__ = ["reindex", "reindex_cache"]


class _Redirect(StmtExprMutator):
    """Accesses of ``old`` become accesses of ``new`` at ``indices``; regions become that point."""

    def __init__(self, old: Buffer, new: Buffer, indices: tuple):
        self.old, self.new, self.indices = old, new, indices

    def visit_buffer_load_(self, n: BufferLoad) -> PrimExpr:
        if n.buffer is self.old:
            return BufferLoad(self.new, self.indices)
        return self.visit_children(n)

    def visit_buffer_store_(self, n: BufferStore) -> Stmt:
        value = self.visit(n.value)
        if n.buffer is self.old:
            return BufferStore(self.new, value, self.indices)
        return n if value is n.value else BufferStore(n.buffer, value, self.visit(n.indices))

    def visit_buffer_region_(self, n: BufferRegion) -> BufferRegion:
        if n.buffer is not self.old:
            return n
        return BufferRegion(self.new, tuple(Range(i, const(1, i.dtype)) for i in self.indices))


def _uses(e: Any) -> set[int]:
    found: set[int] = set()
    post_order_visit(e, lambda x: found.add(id(x)) if isinstance(x, Var) else None)
    return found


def _index_of(path: tuple, node: Any) -> int:
    """Position of ``node`` in ``path`` by identity (-1 when absent)."""
    return next((k for k, s in enumerate(path) if s is node), -1)


def _scope(path: tuple, block: Block, primitive: str) -> Block:
    scopes = [s for s in path if isinstance(s, Block)]
    if not scopes:
        raise ScheduleError(f"{primitive}: block {block.name_hint} is the root block")
    return scopes[-1]


def _stage(name: str, block: Block, covered: list[int], values: list[PrimExpr],
           loops: list[tuple[Var, PrimExpr, PrimExpr]], src: Buffer, src_idx: tuple, dst: Buffer,
           dst_idx: tuple, predicate: PrimExpr | None = None) -> Stmt:
    """The copy ``dst[dst_idx] = src[src_idx]`` as a block over the ``covered`` iterators of
    ``block`` (renamed, spatial), bound to ``values``, inside ``loops`` (var, min, extent),
    guarded by ``predicate`` (none: always runs)."""
    iters, rename = [], {}
    for k in covered:
        iv = block.iter_vars[k]
        var = Var(iv.var.name, iv.var.dtype)
        rename[iv.var] = var
        iters.append(IterVar(iv.dom, var, "spatial"))
    src_idx = tuple(substitute(i, rename) for i in src_idx)
    dst_idx = tuple(substitute(i, rename) for i in dst_idx)

    def point(b: Buffer, idx: tuple) -> BufferRegion:
        return BufferRegion(b, tuple(Range(i, const(1, i.dtype)) for i in idx))

    stage = Block(name_hint=name, iter_vars=tuple(iters), reads=(point(src, src_idx),),
                  writes=(point(dst, dst_idx),), body=BufferStore(dst, BufferLoad(src, src_idx), dst_idx))
    out: Stmt = BlockRealize(tuple(values), const(True, "bool") if predicate is None else predicate, stage)
    for var, lo, extent in reversed(loops):
        out = For(var, lo, extent, ForKind.SERIAL, out)
    return out


def _insert(root: Stmt, scope: Block, parent: Stmt, pos: int, stage: Stmt, alloc: Buffer,
            old_block: Block, new_block: Block) -> Stmt:
    """``stage`` at position ``pos`` of ``parent`` (a sequence, or the scope's body), the
    target block replaced, and ``alloc`` allocated in ``scope``."""
    body = scope.body
    if not isinstance(parent, SeqStmt):  # the scope itself: its body, one statement or a sequence
        parent = body if isinstance(body, SeqStmt) else SeqStmt((body,))
        body = parent
    items = list(parent.seq)
    items.insert(pos, stage)
    body = replace_stmt(body, parent, SeqStmt(tuple(items)))
    body = replace_stmt(body, old_block, new_block)
    return replace_stmt(root, scope, replace(scope, body=body, alloc_buffers=scope.alloc_buffers + (alloc,)))


def _top_level(scope: Block, path: tuple, realize: BlockRealize, after: bool,
               primitive: str) -> tuple[Stmt, int]:
    """Where ``reindex`` puts its stage: next to the scope-level statement holding the block,
    which must be a chain of loops each holding only the next."""
    inner = list(path[_index_of(path, scope) + 1:]) + [realize]
    parent: Stmt = scope
    if inner and isinstance(inner[0], SeqStmt):
        parent = inner.pop(0)
    top = inner[0]
    for outer, nxt in zip(inner, inner[1:]):
        if not (isinstance(outer, For) and outer.body is nxt):
            raise ScheduleError(f"{primitive}: block {realize.block.name_hint} must sit under a chain of "
                                "loops that hold nothing else (the loops above it hold other statements)")
    pos = next(k for k, s in enumerate(parent.seq) if s is top) if isinstance(parent, SeqStmt) else 0
    return parent, pos + (1 if after else 0)


def reindex(root: Stmt, realize: BlockRealize, path: tuple, kind: str, index: Any) -> tuple[Stmt, str, int]:
    """``reindex``: returns the new root, the stage block's name and the buffer's index."""
    block = realize.block
    what = "reindex"
    index, buffer = access_buffer(block, kind, index, what)
    scope = _scope(path, block, what)
    accesses: list[tuple] = []

    def collect(x: Any) -> None:
        if isinstance(x, Block) and x is not block:
            raise ScheduleError(f"{what}: block {block.name_hint} is not a leaf block (it holds block "
                                f"{x.name_hint})")
        if isinstance(x, (BufferLoad, BufferStore)) and x.buffer is buffer:
            accesses.append(x.indices)

    post_order_visit(block, collect)
    if not accesses:
        raise ScheduleError(f"{what}: block {block.name_hint} does not load or store {buffer.name}")

    if any(not structural_equal(a, accesses[0]) for a in accesses[1:]):
        raise ScheduleError(f"{what}: block {block.name_hint} accesses {buffer.name} at more than one "
                            "index pattern; reindex needs a single one")
    ana = Analyzer()
    for iv in block.iter_vars:
        ana.bind(iv.var, iv.dom)
    indices = tuple(ana.simplify(i) for i in accesses[0])
    used = set().union(*(_uses(i) for i in indices)) if indices else set()
    covered = [k for k, iv in enumerate(block.iter_vars) if id(iv.var) in used]
    shape = tuple(ana.simplify(block.iter_vars[k].dom.min + block.iter_vars[k].dom.extent) for k in covered)
    new = decl_buffer(shape, buffer.dtype, f"{buffer.name}_reindex", scope=buffer.scope)
    iter_idx = tuple(block.iter_vars[k].var for k in covered)
    new_block = _Redirect(buffer, new, iter_idx).visit(block)
    name = unique_block_name(root, new.name)
    # the stage's own loops run over the covered iterators' domains
    loops = [(Var(f"ax{n}", block.iter_vars[k].var.dtype), block.iter_vars[k].dom.min,
              block.iter_vars[k].dom.extent) for n, k in enumerate(covered)]
    values = [v for v, _, _ in loops]
    if kind == "read":
        stage = _stage(name, block, covered, values, loops, buffer, indices, new, iter_idx)
    else:
        stage = _stage(name, block, covered, values, loops, new, iter_idx, buffer, indices)
    parent, pos = _top_level(scope, path, realize, kind == "write", what)
    return _insert(root, scope, parent, pos, stage, new, block, new_block), name, index


def _cache_location(scope: Block, writer: Block | None, related: set[int], read: bool) -> tuple[Stmt, int]:
    """(sequence or scope, position) where a cache stage goes, as TVM's cache_read/write do:
    in the innermost sequence holding the writer and, after it, a related block (the reader
    for a read cache, a consumer for a write cache) — right before that statement."""
    found: list[tuple[Stmt, int]] = []

    def has(stmt: Stmt, ids: set[int]) -> bool:
        return any(id(r.block) in ids for r, _ in block_realizes(stmt))

    def visit(stmt: Stmt) -> None:
        if found:
            return
        if isinstance(stmt, SeqStmt):
            seen_writer = False
            for k, s in enumerate(stmt.seq):
                visit(s)
                if found:
                    return
                seen_writer = seen_writer or (writer is not None and has(s, {id(writer)}))
                if has(s, related):
                    if seen_writer:
                        found.append((stmt, k))
                    return
            return
        for c in _children(stmt):
            visit(c)

    if writer is None or not related:
        if read:
            return scope, 0
        n = len(scope.body.seq) if isinstance(scope.body, SeqStmt) else 1
        return (scope.body if isinstance(scope.body, SeqStmt) else scope), n
    visit(scope.body)
    if found:
        return found[0]
    return scope, 0 if read else (len(scope.body.seq) if isinstance(scope.body, SeqStmt) else 1)


def _children(stmt: Stmt) -> list[Stmt]:
    return child_stmts(stmt)


def reindex_cache(root: Stmt, realize: BlockRealize, path: tuple, index: int, scope_name: str,
                  index_map: Any, read: bool) -> tuple[Stmt, str]:
    """``reindex_cache_read`` (``read``) or ``reindex_cache_write``."""
    block = realize.block
    what = "reindex_cache_read" if read else "reindex_cache_write"
    if not valid_storage_scope(scope_name):
        raise ScheduleError(f"{what}: {scope_name!r} is not a storage scope")
    index, buffer = access_buffer(block, "read" if read else "write", index, what)
    scope = _scope(path, block, what)
    region = (block.reads if read else block.writes)[index]
    if any(not (isinstance(r.extent, IntImm) and r.extent.value == 1) for r in region.region):
        raise ScheduleError(f"{what}: block {block.name_hint} {'reads' if read else 'writes'} a region of "
                            f"{buffer.name}, not a single point; the cache stage needs a point access")
    old_idx = tuple(r.min for r in region.region)
    iter_vars = [iv.var for iv in block.iter_vars]
    new_idx = tuple(apply_index_map(index_map, iter_vars, f"{what} of block {block.name_hint}"))
    in_old = set().union(*(_uses(i) for i in old_idx)) if old_idx else set()
    in_new = set().union(*(_uses(i) for i in new_idx)) if new_idx else set()
    for v in iter_vars:
        if (id(v) in in_old) != (id(v) in in_new):
            where, other = ("the access", "the index map") if id(v) in in_old else ("the index map", "the access")
            raise ScheduleError(f"{what} of block {block.name_hint}: iterator {v.name} appears in {where} "
                                f"of {buffer.name} but not in {other}")
    dom = {id(iv.var): (iv.dom.min, iv.dom.min + iv.dom.extent - 1) for iv in block.iter_vars}
    ana = Analyzer()
    shape = []
    for e in new_idx:
        b = index_bounds(e, dom)
        extent = None if b is None else ana.simplify(b[1] + 1)
        if extent is None or _uses(extent) & set(dom):  # symbolic extents are fine, iterators not
            raise ScheduleError(f"{what} of block {block.name_hint}: cannot bound cache index {e}")
        shape.append(extent)
    cache = decl_buffer(tuple(shape), buffer.dtype, f"{buffer.name}_{scope_name}", scope=scope_name)
    covered = [k for k, v in enumerate(iter_vars) if id(v) in in_old]

    # where the stage goes, and the loops below that point the copy needs
    writers = [r.block for r, _ in block_realizes(scope.body)
               if r.block is not scope and any(w.buffer is buffer for w in r.block.writes)]
    if read:
        writer = writers[0] if len(writers) == 1 else None
        if len(writers) > 1:
            raise ScheduleError(f"{what}: {buffer.name} has {len(writers)} writers in the scope")
        related = {id(block)}
    else:
        writer = block
        related = {id(r.block) for r, _ in block_realizes(scope.body)
                   if r.block is not block and r.block is not scope
                   and any(x.buffer is buffer for x in r.block.reads)}
    parent, pos = _cache_location(scope, writer, related, read)
    bound_vars = set().union(*(_uses(realize.iter_values[k]) for k in covered)) if covered else set()
    at = _index_of(path, parent)
    below = path[(at if at >= 0 else _index_of(path, scope)) + 1:]
    copied = [s for s in below if isinstance(s, For) and id(s.loop_var) in bound_vars]
    fresh = {lp.loop_var: Var(lp.loop_var.name, lp.loop_var.dtype) for lp in copied}
    loops = [(fresh[lp.loop_var], lp.min, lp.extent) for lp in copied]
    values = [substitute(realize.iter_values[k], fresh) for k in covered]
    # the copied loops of a non-dividing split run past the iterators' domains: the stage
    # needs the guard the block's split gave it (see domain_guard)
    above = path[:(at if at >= 0 else _index_of(path, scope)) + 1]
    around = [s for s in above if isinstance(s, For)] + [For(v, lo, ext, ForKind.SERIAL, None) for v, lo, ext in loops]
    guard = domain_guard(values, [block.iter_vars[k].dom for k in covered], around)

    name = unique_block_name(root, cache.name)
    if read:
        stage = _stage(name, block, covered, values, loops, buffer, old_idx, cache, new_idx, guard)
    else:
        stage = _stage(name, block, covered, values, loops, cache, new_idx, buffer, old_idx, guard)
    new_block = _Redirect(buffer, cache, new_idx).visit(block)
    return _insert(root, scope, parent, pos, stage, cache, block, new_block), name
