"""Buffer-annotating primitives: set_scope and storage_align.

Both act on a buffer a block *writes* and that some block allocates (``T.alloc_buffer``):
a function parameter's memory belongs to the caller, so its scope and strides are fixed.
``set_scope`` rewrites the buffer (and views of it made by ``T.match_buffer``) with a new
storage scope; ``storage_align`` only records ``[buffer_index, axis, factor, offset]`` in the
block's ``buffer_dim_align`` annotation, which lowering turns into padded strides.
"""

from __future__ import annotations

from typing import Any

from ...ir import dtype as _dt
from ...ir import replace
from ..buffer import Buffer, BufferRegion
from ..expr import BufferLoad, Cast
from ..functor import StmtExprMutator
from ..stmt import Block, BufferStore, MatchBufferRegion, Stmt
from .error import ScheduleError
from .tree import replace_stmt, walk_stmts

__all__ = ["BufferReplacer", "access_buffer", "write_buffer", "allocation_site", "set_scope", "storage_align",
           "DIM_ALIGN_KEY", "valid_storage_scope"]

DIM_ALIGN_KEY = "buffer_dim_align"

# storage ranks TVM knows (a rank may carry a ".tag", e.g. "shared.dyn", "global.texture")
_SCOPE_RANKS = ("global", "shared", "warp", "local")
_SCOPE_PREFIXES = ("wmma.", "metal.", "m.")


class BufferReplacer(StmtExprMutator):
    """Every use of a buffer in ``mapping`` (by identity) becomes its replacement: loads,
    stores, access regions, allocations and match_buffer sources.  ``on_match`` may give a
    ``T.match_buffer`` view of a replaced buffer a replacement too (set_scope uses it)."""

    def __init__(self, mapping: dict[int, Buffer], on_match: Any = None):
        self.mapping, self.on_match = dict(mapping), on_match

    def _new(self, b: Buffer) -> Buffer:
        return self.mapping.get(id(b), b)

    def visit_buffer_load_(self, n: BufferLoad) -> Any:
        indices = self.visit(n.indices)
        buffer = self._new(n.buffer)
        return n if buffer is n.buffer and indices is n.indices else BufferLoad(buffer, indices)

    def visit_buffer_store_(self, n: BufferStore) -> Stmt:
        value, indices = self.visit(n.value), self.visit(n.indices)
        buffer = self._new(n.buffer)
        if buffer is n.buffer and value is n.value and indices is n.indices:
            return n
        return BufferStore(buffer, value, indices)

    def visit_buffer_region_(self, n: BufferRegion) -> BufferRegion:
        region = self.visit(n.region)
        buffer = self._new(n.buffer)
        return n if buffer is n.buffer and region is n.region else BufferRegion(buffer, region)

    def visit_match_buffer_region_(self, n: MatchBufferRegion) -> MatchBufferRegion:
        source = self.visit(n.source)
        view = n.buffer
        if source.buffer is not n.source.buffer and self.on_match is not None:
            view = self.on_match(n.buffer, source.buffer)
            self.mapping[id(n.buffer)] = view
        return n if source is n.source and view is n.buffer else MatchBufferRegion(view, source)

    def visit_block_(self, n: Block) -> Stmt:
        allocs = tuple(self._new(b) for b in n.alloc_buffers)
        match_buffers = self.visit(n.match_buffers)  # before the body: views may be replaced too
        if match_buffers is not n.match_buffers:
            n = replace(n, match_buffers=match_buffers)  # visited again below, now unchanged
        new = self.visit_children(n)
        if any(a is not b for a, b in zip(allocs, n.alloc_buffers)):
            new = replace(new, alloc_buffers=allocs)
        return new


def access_buffer(block: Block, kind: str, index: int | str | Buffer, primitive: str) -> tuple[int, Buffer]:
    """The ``index``-th buffer ``block`` reads (``kind="read"``) or writes, or the one of that
    name (or that Buffer), with its index among the block's reads or writes."""
    buffers = [r.buffer for r in (block.reads if kind == "read" else block.writes)]
    if isinstance(index, (str, Buffer)):
        hits = [k for k, b in enumerate(buffers) if b is index or b.name == index]
        if not hits:
            name = index if isinstance(index, str) else index.name
            raise ScheduleError(f"{primitive}: block {block.name_hint} {kind}s no buffer named {name!r} "
                                f"(it {kind}s {[b.name for b in buffers]})")
        index = hits[0]
    index = int(index)
    if not 0 <= index < len(buffers):
        raise ScheduleError(f"{primitive}: block {block.name_hint} {kind}s {len(buffers)} buffer(s); "
                            f"{kind} index {index} is out of range")
    return index, buffers[index]


def write_buffer(block: Block, index: int | str | Buffer, primitive: str) -> tuple[int, Buffer]:
    """A buffer ``block`` writes (set_scope and storage_align act on written buffers only)."""
    if isinstance(index, tuple):
        kind, index = index
        if kind != "write":
            raise ScheduleError(f"{primitive} works on a buffer block {block.name_hint} writes, "
                                f"not a {kind!r} buffer")
    return access_buffer(block, "write", index, primitive)


def allocation_site(root: Stmt, buffer: Buffer, block: Block, primitive: str) -> Block:
    """The block whose ``T.alloc_buffer`` declares ``buffer``; a parameter is refused."""
    for s, _ in walk_stmts(root):
        if isinstance(s, Block) and any(b is buffer for b in s.alloc_buffers):
            return s
    raise ScheduleError(f"{primitive}: buffer {buffer.name} written by block {block.name_hint} is not "
                        "allocated by a block (it is a function parameter or a match_buffer view), "
                        "so its memory layout belongs to the caller")


def valid_storage_scope(scope: str) -> bool:
    if any(scope.startswith(p) and len(scope) > len(p) for p in _SCOPE_PREFIXES):
        return True
    rank, _, tag = scope.partition(".")
    return rank in _SCOPE_RANKS and (tag != "" or "." not in scope)


def set_scope(root: Stmt, block: Block, index: int | str | Buffer, scope: str) -> tuple[Stmt, int]:
    """``root`` with the written buffer stored in ``scope``; returns the write index too."""
    index, buffer = write_buffer(block, index, "set_scope")
    if buffer.scope == scope:
        return root, index
    if not valid_storage_scope(scope):
        raise ScheduleError(f"set_scope: {scope!r} is not a storage scope (expected global, shared, "
                            "shared.dyn, local, warp, wmma.* ...)")
    site = allocation_site(root, buffer, block, "set_scope")
    new = replace(buffer, scope=scope)

    def view_in_scope(view: Buffer, source: Buffer) -> Buffer:
        return replace(view, scope=source.scope)

    mutator = BufferReplacer({id(buffer): new}, on_match=view_in_scope)

    return replace_stmt(root, site, mutator.visit(site)), index


def _valid_align_annotation(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(
        isinstance(t, (list, tuple)) and len(t) == 4 and all(isinstance(x, int) for x in t) for t in value)


def storage_align(root: Stmt, block: Block, index: int, axis: int, factor: int, offset: int) -> Block:
    """``block`` with ``[index, axis, factor, offset]`` in its ``buffer_dim_align`` annotation
    (replacing an earlier entry for the same buffer and axis)."""
    index, buffer = write_buffer(block, index, "storage_align")
    if factor <= 0:
        raise ScheduleError(f"storage_align on block {block.name_hint}: factor must be a positive "
                            f"number, got {factor}")
    ndim = buffer.ndim
    if not -ndim <= axis < ndim:
        raise ScheduleError(f"storage_align: buffer {buffer.name} (written by block {block.name_hint}) "
                            f"has {ndim} dimension(s), so axis must be in [{-ndim}, {ndim}); got {axis}")
    axis %= ndim
    allocation_site(root, buffer, block, "storage_align")
    entries = block.annotations.get(DIM_ALIGN_KEY, [])
    if not _valid_align_annotation(entries):
        raise ScheduleError(f"storage_align: block {block.name_hint} has a {DIM_ALIGN_KEY!r} annotation "
                            f"{entries!r}; expected a list of [buffer_index, axis, factor, offset]")
    entry = [index, axis, int(factor), int(offset)]
    entries = [list(t) for t in entries]
    for k, t in enumerate(entries):
        if t[0] == index and t[1] == axis:
            entries[k] = entry
            break
    else:
        entries.append(entry)
    return replace(block, annotations={**block.annotations, DIM_ALIGN_KEY: entries})


class _DTypeReplacer(BufferReplacer):
    """BufferReplacer that also converts values: stores cast to the new type, loads back."""

    def __init__(self, mapping: dict[int, Buffer], old_dtype: str, new_dtype: str):
        super().__init__(mapping, on_match=lambda view, source: replace(view, dtype=source.dtype))
        self.old_dtype, self.new_dtype = old_dtype, new_dtype

    def visit_buffer_load_(self, n: BufferLoad) -> Any:
        new = super().visit_buffer_load_(n)
        return Cast(self.old_dtype, new) if id(n.buffer) in self.mapping else new

    def visit_buffer_store_(self, n: BufferStore) -> Stmt:
        new = super().visit_buffer_store_(n)
        if id(n.buffer) in self.mapping:
            return BufferStore(new.buffer, Cast(self.new_dtype, new.value), new.indices)
        return new


def unsafe_set_dtype(root: Stmt, block: Block, buffer_index: int, dtype: str) -> Stmt:
    """``root`` with the ``buffer_index``-th buffer ``block`` writes stored as ``dtype``; every
    store casts into it and every load casts back (TVM's unchecked conversion)."""
    dtype = _dt.check(dtype)
    _, buffer = write_buffer(block, buffer_index, "unsafe_set_dtype")
    if buffer.dtype == dtype:
        return root
    site = allocation_site(root, buffer, block, "unsafe_set_dtype")
    new = replace(buffer, dtype=dtype)
    new_site = _DTypeReplacer({id(buffer): new}, buffer.dtype, dtype).visit(site)
    return replace_stmt(root, site, new_site)
