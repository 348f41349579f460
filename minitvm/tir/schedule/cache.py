"""cache_read and cache_write, placed and sized as TVM places and sizes them.

A cache stage is a new buffer in the requested storage scope plus a copy block.

* **Where** the copy goes: right after the buffer's single writer and before the first
  block that reads (cache_read) or consumes (cache_write) it, in the innermost loop or
  block body holding both.  With no writer (a function input) a read cache goes first in
  the scope; a write cache with no consumer goes last.
* **How much** it copies: the region the writer writes, relaxed over the loops between the
  writer and that place (the whole buffer for a function input).
* **How big** the cache is: the buffer's own shape when the copy sits inside a loop; when
  it sits directly in the scope block, only the copied region (the accesses are shifted by
  the region's start).
* **Its guard**: under the loops of a non-dividing split the copied region runs past the
  buffer's end in the tail's padding iterations (TVM's copy, unguarded, then reads and writes
  out of bounds).  The copy block gets the split's kind of guard, ``T.where(index < extent)``
  on the index into the cached buffer, only where the loops do not already keep it in bounds.
"""

from __future__ import annotations

from typing import Any

from ...ir import replace
from ..buffer import Buffer, BufferRegion, decl_buffer
from ..expr import BufferLoad, IntImm, IterVar, PrimExpr, Range, Var, const
from ..functor import StmtExprMutator
from ..stmt import (
    AllocateConst,
    Block,
    BlockRealize,
    BufferStore,
    For,
    ForKind,
    MatchBufferRegion,
    SeqStmt,
    Stmt,
)
from .data import check_storage_scope
from .error import ScheduleError
from .loops import simplify
from .shared_analyses import domain_guard, range_bounds
from .tree import child_stmts, replace_stmt, unique_block_name, walk_stmts

__all__ = ["cache_read", "cache_write"]


# -- the scope and its blocks ----------------------------------------------------------------------


def _scope_of(root: Stmt, realize: BlockRealize) -> tuple[Block, tuple]:
    for s, path in walk_stmts(root):
        if s is realize:
            return next(p for p in reversed(path) if isinstance(p, Block)), path
    raise ScheduleError("internal: block not found in the function")


def _child_blocks(s: Stmt) -> list[BlockRealize]:
    """Blocks directly under ``s`` (not inside another block), in program order."""
    out: list[BlockRealize] = []

    def walk(x: Stmt) -> None:
        if isinstance(x, BlockRealize):
            out.append(x)
            return
        for c in child_stmts(x):
            walk(c)

    for c in child_stmts(s.block if isinstance(s, BlockRealize) else s):
        walk(c)
    return out


def _all_blocks_under(realize: BlockRealize) -> list[Block]:
    return [r.block for r, _ in walk_stmts(realize) if isinstance(r, BlockRealize)]


def _only_writer(scope: Block, buffer: Buffer, what: str) -> BlockRealize | None:
    writers = [r for r in _child_blocks(scope) if any(w.buffer is buffer for w in r.block.writes)]
    if len(writers) > 1:
        names = ", ".join(r.block.name_hint for r in writers)
        raise ScheduleError(f"cannot {what}: {buffer.name} must be written by a single block, but "
                            f"{len(writers)} blocks write it ({names})")
    return writers[0] if writers else None


def _raw_consumers(scope: Block, writer: BlockRealize, buffer: Buffer) -> list[Block]:
    """The scope's blocks after ``writer`` that read ``buffer`` (read-after-write)."""
    blocks = _child_blocks(scope)
    after = blocks[next(k for k, r in enumerate(blocks) if r is writer) + 1:]
    return [r.block for r in after if any(x.buffer is buffer for x in r.block.reads)]


# -- where the copy goes ------------------------------------------------------------------------


class _Location:
    """TVM's insertion point: after the writer, before the first related block, in the
    innermost loop or block body holding both; ``loc`` is that For/Block, ``pos`` the index."""

    def __init__(self, scope: Block, writer: Block, related: list[Block]):
        self.scope, self.writer = scope, writer
        self.related = {id(b) for b in related}
        self.seen_writer = False
        self.seen_related = False
        self.loc: Stmt | None = None
        self.pos = -1
        self.visit(scope)

    def visit(self, s: Any) -> None:
        if isinstance(s, SeqStmt):
            outer_seen = self.seen_writer
            self.seen_writer = False
            for i, x in enumerate(s.seq):
                if self.pos != -1:
                    break
                self.visit(x)
                if self.seen_writer and self.seen_related and self.pos == -1:
                    self.pos = i
                    break
                if self.seen_related:
                    break
            self.seen_writer = self.seen_writer or outer_seen
        elif isinstance(s, BlockRealize):
            self.visit(s.block)
        elif isinstance(s, Block):
            if s is self.scope:
                for c in child_stmts(s):
                    self.visit(c)
                if self.seen_related and self.loc is None:
                    self.loc = s
                    if not self.seen_writer and self.pos == -1:
                        self.pos = 0
            elif s is self.writer:
                self.seen_writer = True
            elif id(s) in self.related:
                self.seen_related = True
        elif isinstance(s, For):
            self.visit(s.body)
            if self.seen_writer and self.seen_related and self.loc is None and self.pos != -1:
                self.loc = s
        else:
            for c in child_stmts(s):
                self.visit(c)


def _at_end(scope: Block) -> tuple[Stmt, int]:
    body = scope.body
    while isinstance(body, AllocateConst):
        body = body.body
    return scope, len(body.seq) if isinstance(body, SeqStmt) else 1


def _insert(body: Stmt, pos: int, stage: Stmt) -> Stmt:
    """``stage`` at index ``pos`` of ``body``, inside the constants it declares (their data
    must exist where the stage runs)."""
    if isinstance(body, AllocateConst):
        return replace(body, body=_insert(body.body, pos, stage))
    items = list(body.seq) if isinstance(body, SeqStmt) else [body]
    items.insert(pos, stage)
    return SeqStmt(tuple(items))


# -- how much it copies ----------------------------------------------------------------------------


def _relaxed_region(writer: BlockRealize, buffer: Buffer, path: tuple, loc: Stmt) -> list[Range]:
    """The writer's region of ``buffer`` over every iteration of the loops between ``loc``
    (exclusive) and the writer."""
    region = next(w for w in writer.block.writes if w.buffer is buffer)
    binding = {iv.var: v for iv, v in zip(writer.block.iter_vars, writer.iter_values)}
    below = False
    dom: dict[int, tuple[PrimExpr, PrimExpr]] = {}
    bounds: dict[Var, PrimExpr] = {}
    for s in path:
        if s is loc:
            below = True
            continue
        if isinstance(s, For):
            if below:
                dom[id(s.loop_var)] = (s.min, s.min + s.extent - 1)
            elif isinstance(s.min, IntImm) and s.min.value == 0:
                bounds[s.loop_var] = s.extent
    out = []
    for dim, r in zip(buffer.shape, region.region):
        b = range_bounds(r, dom, binding)
        if b is None:
            out.append(Range(const(0, dim.dtype), dim))
            continue
        lo_e, hi_e = simplify(b[0], bounds), simplify(b[1], bounds)
        # a guarded tail (T.where(i * 8 + j < 120)) never writes past the buffer: clamp to it
        if isinstance(lo_e, IntImm) and lo_e.value < 0:
            lo_e = const(0, lo_e.dtype)
        if isinstance(hi_e, IntImm) and isinstance(dim, IntImm) and hi_e.value > dim.value - 1:
            hi_e = const(dim.value - 1, hi_e.dtype)
        out.append(Range(lo_e, simplify(hi_e - lo_e + 1, bounds)))
    return out


def _loops_above(path: tuple, loc: Stmt) -> list[For | IterVar]:
    """The loops around the copy placed in ``loc`` (``loc`` itself when it is a loop), and the
    iterators of the blocks it sits in (their domains bound what the copy's indices reach)."""
    out: list[For | IterVar] = []
    for s in path:
        if isinstance(s, For):
            out.append(s)
        elif isinstance(s, Block):
            out.extend(s.iter_vars)
        if s is loc:
            break
    return out


def _stage(region: list[Range], src: Buffer, dst: Buffer, original: Buffer, name: str,
           full: bool, outer: list[For | IterVar]) -> Stmt:
    """Loops over ``region`` with a block copying ``src`` into ``dst``; ``original`` is the
    cached buffer, indexed at ``region.min + v`` when the cache is compact.  ``outer``: the
    loops the stage sits in."""
    loop_vars = [Var(f"ax{k}", r.extent.dtype) for k, r in enumerate(region)]
    block_vars = [Var(f"v{k}", r.extent.dtype) for k, r in enumerate(region)]
    iter_vars, values, src_idx, dst_idx = [], [], [], []
    for k, (r, lv, bv) in enumerate(zip(region, loop_vars, block_vars)):
        if full:
            dim = original.shape[k]
            iter_vars.append(IterVar(Range(const(0, dim.dtype), dim), bv, "spatial"))
            values.append(r.min + lv)
            src_idx.append(bv)
            dst_idx.append(bv)
        else:
            iter_vars.append(IterVar(Range(const(0, r.extent.dtype), r.extent), bv, "spatial"))
            values.append(lv)
            shifted = r.min + bv
            src_idx.append(shifted if src is original else bv)
            dst_idx.append(shifted if dst is original else bv)
    point = (lambda idx: tuple(Range(i, const(1, i.dtype)) for i in idx))
    block = Block(name, tuple(iter_vars), (), (), (BufferRegion(src, point(src_idx)),),
                  (BufferRegion(dst, point(dst_idx)),), None,
                  BufferStore(dst, BufferLoad(src, tuple(src_idx)), tuple(dst_idx)), {})
    loops = [For(lv, const(0, r.extent.dtype), r.extent, ForKind.SERIAL, None)
             for lv, r in zip(loop_vars, region)]
    # A guard rather than a region clipped to the buffer: a clipped extent would be
    # ``min(j_1 * 2 + j_2 + 1, 5) - (j_1 * 2 + j_2)``, symbolic and possibly empty, where the
    # guard reads as the split's own ``T.where(j_1 * 2 + j_2 + ax1 < 5)``.
    guard = domain_guard([r.min + lv for r, lv in zip(region, loop_vars)],
                         [Range(const(0, d.dtype), d) for d in original.shape], [*outer, *loops])
    body: Stmt = BlockRealize(tuple(values), guard, block)
    for lp in reversed(loops):
        body = replace(lp, body=body)
    return body


def _cache_buffer(buffer: Buffer, scope_name: str, region: list[Range], full: bool) -> Buffer:
    shape = buffer.shape if full else tuple(r.extent for r in region)
    return decl_buffer(shape, buffer.dtype, f"{buffer.name}_{scope_name}", scope=scope_name)


# -- rewriting the accesses ------------------------------------------------------------------------


class _Swap(StmtExprMutator):
    """Rewrites accesses of ``old`` into ``new`` (shifted by ``offset`` for a compact cache) in
    the blocks ``redirect`` says, and inserts the stage at the chosen place."""

    def __init__(self, old: Buffer, new: Buffer, offset: list[Range] | None, scope: Block,
                 loc: Stmt, pos: int, stage: Stmt):
        self.old, self.new, self.offset = old, new, offset
        self.scope, self.loc, self.pos, self.stage = scope, loc, pos, stage
        self.active = False  # inside a block whose accesses are redirected

    def redirect(self, block: Block, inside: bool) -> bool | None:
        """True: rewrite this block; False: descend without rewriting; None: keep it as it is.
        ``inside``: the block is nested in one being rewritten."""
        raise NotImplementedError

    def _shift(self, index: PrimExpr, start: PrimExpr) -> PrimExpr:
        if isinstance(start, IntImm) and start.value == 0:
            return index  # (an int32 index of an int64 buffer stays as written)
        return simplify(index - start)

    def _indices(self, indices: tuple) -> tuple:
        if self.offset is None:
            return indices
        return tuple(self._shift(i, r.min) for i, r in zip(indices, self.offset))

    def _regions(self, regions: tuple) -> tuple:
        out = []
        for r in regions:
            if r.buffer is self.old:
                ranges = r.region if self.offset is None else tuple(
                    Range(self._shift(x.min, o.min), x.extent) for x, o in zip(r.region, self.offset))
                r = BufferRegion(self.new, tuple(ranges))
            out.append(r)
        return tuple(out)

    def visit_buffer_load_(self, n: BufferLoad) -> PrimExpr:
        n = self.visit_children(n)
        if self.active and n.buffer is self.old:
            return BufferLoad(self.new, self._indices(n.indices))
        return n

    def visit_buffer_store_(self, n: BufferStore) -> Stmt:
        n = self.visit_children(n)
        if self.active and n.buffer is self.old:
            return BufferStore(self.new, n.value, self._indices(n.indices))
        return n

    def visit_var_(self, n: Var) -> PrimExpr:
        return self.new.data if n is self.old.data and self.active else n

    def visit_for_(self, n: For) -> Stmt:
        new = self.visit_children(n)
        if n is self.loc:
            new = replace(new, body=_insert(new.body, self.pos, self.stage))
        return new

    def visit_block_(self, n: Block) -> Block:
        if n is self.scope:
            new = self.visit_children(n)
            if n is self.loc:
                new = replace(new, body=_insert(new.body, self.pos, self.stage))
            return replace(new, alloc_buffers=new.alloc_buffers + (self.new,))
        mode = self.redirect(n, self.active)
        if mode is None:
            return n
        saved, self.active = self.active, mode
        try:
            new = self.visit_children(n)
        finally:
            self.active = saved
        if mode:
            matches = tuple(MatchBufferRegion(m.buffer, self._regions((m.source,))[0]) for m in new.match_buffers)
            new = replace(new, reads=self._regions(new.reads), writes=self._regions(new.writes),
                          match_buffers=matches)
        return new


# -- the primitives -------------------------------------------------------------------------------


def _pick(regions: tuple, index: int | Buffer | str, what: str, block: Block) -> Buffer:
    buffers = [r.buffer for r in regions]
    if isinstance(index, int):
        if not 0 <= index < len(buffers):
            plural = "buffer" if len(buffers) == 1 else "buffers"
            raise ScheduleError(f"block {block.name_hint} {what[:-1]}s {len(buffers)} {plural}; "
                                f"buffer index {index} is out of range")
        return buffers[index]
    for b in buffers:
        if b is index or b.name == index:
            return b
    raise ScheduleError(f"block {block.name_hint} does not access a buffer named {index!r}")


def _consumer_set(consumers: list[BlockRealize]) -> list[Block]:
    """The given consumer blocks and every block inside them."""
    out: list[Block] = []
    for r in consumers:
        out.extend(_all_blocks_under(r))
    return out


def cache_read(root: Stmt, realize: BlockRealize, index: int | str, storage_scope: str,
               consumers: list[BlockRealize] = ()) -> tuple[Stmt, str]:
    """Copy a buffer ``realize``'s block reads into a ``storage_scope`` cache that its readers
    (or only ``consumers``) read instead."""
    block = realize.block
    buffer = _pick(block.reads, index, "reads", block)
    what = f"cache_read {buffer.name} of block {block.name_hint}"
    check_storage_scope(storage_scope, what)
    scope, spath = _scope_of(root, realize)
    chosen = _consumer_set(list(consumers))
    writer = _only_writer(scope, buffer, what)
    if writer is not None:
        related = chosen or _raw_consumers(scope, writer, buffer)
        if related:
            place = _Location(scope, writer.block, related)
            loc, pos = place.loc, place.pos
        else:
            loc, pos = _at_end(scope)
        if loc is None or pos < 0:
            raise ScheduleError(f"cannot {what}: no place after its writer {writer.block.name_hint} and "
                                "before its readers")
        _, wpath = _scope_of(root, writer)
        region = _relaxed_region(writer, buffer, wpath, loc)
        outer = _loops_above(wpath, loc)
    else:
        loc, pos = scope, 0
        given = [r for r in scope.reads if r.buffer is buffer]
        region = list(given[0].region) if given else [Range(const(0, d.dtype), d) for d in buffer.shape]
        outer = _loops_above(spath, scope)
    full = not isinstance(loc, Block)
    cache = _cache_buffer(buffer, storage_scope, region, full)
    name = unique_block_name(root, f"{buffer.name}_{storage_scope}")
    stage = _stage(region, buffer, cache, buffer, name, full, outer)
    chosen_ids = {id(b) for b in chosen}

    class Read(_Swap):
        def redirect(self, b: Block, inside: bool) -> bool | None:
            if any(w.buffer is buffer for w in b.writes):
                return None  # the writer keeps writing the buffer itself
            return not chosen_ids or id(b) in chosen_ids

    new_scope = Read(buffer, cache, None if full else region, scope, loc, pos, stage).visit(scope)
    return replace_stmt(root, scope, new_scope), name


def cache_write(root: Stmt, realize: BlockRealize, index: int | str, storage_scope: str,
                consumers: list[BlockRealize] = ()) -> tuple[Stmt, str]:
    """Let ``realize``'s block write a ``storage_scope`` cache, copied into the buffer
    before its consumers (those in ``consumers`` read the cache directly)."""
    block = realize.block
    buffer = _pick(block.writes, index, "writes", block)
    what = f"cache_write {buffer.name} of block {block.name_hint}"
    check_storage_scope(storage_scope, what)
    scope, path = _scope_of(root, realize)
    writer = _only_writer(scope, buffer, what)
    if writer is not realize:
        raise ScheduleError(f"cannot {what}: the block is not the writer of {buffer.name} in its scope")
    chosen = _consumer_set(list(consumers))
    chosen_ids = {id(b) for b in chosen}
    related = [b for b in _raw_consumers(scope, realize, buffer) if id(b) not in chosen_ids]
    if related:
        place = _Location(scope, block, related)
        loc, pos = place.loc, place.pos
    else:
        loc, pos = _at_end(scope)
    if loc is None or pos < 0:
        raise ScheduleError(f"cannot {what}: no place after the block and before its consumers")
    region = _relaxed_region(realize, buffer, path, loc)
    full = not isinstance(loc, Block)
    cache = _cache_buffer(buffer, storage_scope, region, full)
    name = unique_block_name(root, f"{buffer.name}_{storage_scope}")
    stage = _stage(region, cache, buffer, buffer, name, full, _loops_above(path, loc))

    class Write(_Swap):
        def redirect(self, b: Block, inside: bool) -> bool | None:
            if inside or b is block or id(b) in chosen_ids:
                return True
            return None  # other blocks keep reading and writing the buffer

    new_scope = Write(buffer, cache, None if full else region, scope, loc, pos, stage).visit(scope)
    return replace_stmt(root, scope, new_scope), name
