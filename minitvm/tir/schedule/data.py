"""Data-movement primitives: cache_read, cache_write, transform_layout.

A cache stage is a new buffer plus a copy block.  The copy first covers the whole
buffer at the top of the scope; ``compute_at``/``reverse_compute_at`` then move it
under a tile loop, where it copies just the tile.
"""

from __future__ import annotations

from typing import Any, Callable

from ...ir import replace
from ..buffer import Buffer, BufferRegion, decl_buffer
from ..expr import BufferLoad, IntImm, IterVar, PrimExpr, Range, Var, const
from ..functor import StmtExprMutator
from ..index_map import IndexMap, substitute_indices
from ..stmt import Block, BlockRealize, BufferStore, For, ForKind, SeqStmt, Stmt, seq
from .compute import _path, _refresh_regions, relax
from .error import ScheduleError
from .loops import simplify
from .tree import replace_stmt, unique_block_name, walk_stmts

__all__ = ["cache_read", "cache_write", "transform_layout", "copy_block", "BufferSwap"]


class BufferSwap(StmtExprMutator):
    """Rewrite every access of ``old`` into ``new`` (indices mapped by ``index_map``)."""

    def __init__(self, old: Buffer, new: Buffer, index_map: Callable[[tuple], tuple] | None = None):
        self.old, self.new = old, new
        self.same_layout = index_map is None
        self.index_map = index_map or (lambda idx: idx)

    def visit_buffer_load_(self, n: BufferLoad) -> PrimExpr:
        indices = self.visit(n.indices)
        if n.buffer is self.old:
            return BufferLoad(self.new, tuple(self.index_map(indices)))
        return n if indices is n.indices else BufferLoad(n.buffer, indices)

    def visit_buffer_store_(self, n: BufferStore) -> Stmt:
        value, indices = self.visit(n.value), self.visit(n.indices)
        if n.buffer is self.old:
            return BufferStore(self.new, value, tuple(self.index_map(indices)))
        if value is n.value and indices is n.indices:
            return n
        return BufferStore(n.buffer, value, indices)

    def visit_buffer_region_(self, n: BufferRegion) -> BufferRegion:
        if n.buffer is not self.old:
            return n
        # regions in a new layout are recomputed from the block body afterwards
        return BufferRegion(self.new, n.region) if self.same_layout else BufferRegion.full_region(self.new)


def copy_block(name: str, src: Buffer, dst: Buffer) -> Stmt:
    """Loops over the whole buffer with a block doing ``dst[v] = src[v]``."""
    loop_vars = [Var(f"ax{i}", s.dtype) for i, s in enumerate(src.shape)]
    iter_vars = [Var(f"v{i}", s.dtype) for i, s in enumerate(src.shape)]
    store = BufferStore(dst, src[tuple(iter_vars)], tuple(iter_vars))
    block = Block(name_hint=name,
                  iter_vars=tuple(IterVar(Range(const(0, s.dtype), s), v, "spatial")
                                  for v, s in zip(iter_vars, src.shape)),
                  body=store)
    body: Stmt = BlockRealize(tuple(loop_vars), const(True, "bool"), _refresh_regions(block))
    for v, s in reversed(list(zip(loop_vars, src.shape))):
        body = For(v, const(0, s.dtype), s, ForKind.SERIAL, body)
    return body


def _scope_and_top(root: Stmt, realize: BlockRealize) -> tuple[Block, Stmt]:
    """The block's enclosing block, and the statement in that scope's body holding it."""
    path = _path(root, realize)
    i = max(k for k, s in enumerate(path) if isinstance(s, Block))
    scope = path[i]
    rest = path[i + 1:]
    top = rest[1] if rest and isinstance(rest[0], SeqStmt) and len(rest) > 1 else (rest[0] if rest else realize)
    if isinstance(top, SeqStmt):
        top = realize
    return scope, top


def _insert_next_to(root: Stmt, scope: Block, anchor: Stmt, new: Stmt, after: bool, alloc: Buffer) -> Stmt:
    body = scope.body
    items = list(body.seq) if isinstance(body, SeqStmt) else [body]
    i = next(k for k, s in enumerate(items) if s is anchor)
    items.insert(i + 1 if after else i, new)
    new_scope = replace(scope, body=seq(*items), alloc_buffers=scope.alloc_buffers + (alloc,))
    return replace_stmt(root, scope, new_scope)


def _check_alone(root: Stmt, realize: BlockRealize, buffer: Buffer, write: bool) -> None:
    """The copy sits before (after) the whole statement holding the block: no other block
    there may touch the buffer in between, and a cached output needs a single writer."""
    what = "cache_write" if write else "cache_read"
    _, top = _scope_and_top(root, realize)
    others = [r.block for r, _ in walk_stmts(top) if isinstance(r, BlockRealize) and r is not realize]
    if write:
        scope, _ = _scope_and_top(root, realize)
        others += [r.block for r, _ in walk_stmts(scope.body) if isinstance(r, BlockRealize)
                   and r is not realize and any(w.buffer is buffer for w in r.block.writes)]
    for other in others:
        touches = other.writes + (other.reads if write else ())
        if any(x.buffer is buffer for x in touches):
            raise ScheduleError(f"cannot {what} {buffer.name} of block {realize.block.name_hint}: block "
                                f"{other.name_hint} also {'accesses' if write else 'writes'} it, so the "
                                "copy would be out of date")


_SCOPE_RANKS = ("global", "shared", "warp", "local")


def check_storage_scope(scope: str, what: str) -> None:
    """A storage scope TVM knows: global / shared / warp / local (optionally ``.tag``ged),
    the wmma fragments or metal.simdgroup."""
    rank = scope.split(".")[0]
    if rank in _SCOPE_RANKS or scope in ("wmma.matrix_a", "wmma.matrix_b", "wmma.accumulator",
                                          "metal.simdgroup"):
        return
    raise ScheduleError(f"cannot {what}: {scope!r} is not a storage scope (use global, shared, local, "
                        "warp or one of those with a .tag)")


def _cache(root: Stmt, realize: BlockRealize, buffer: Buffer, scope_name: str, write: bool) -> tuple[Stmt, str]:
    what = "cache_write" if write else "cache_read"
    check_storage_scope(scope_name, f"{what} of block {realize.block.name_hint}")
    if not write:  # the copy must follow the one block that produces the buffer
        scope, _ = _scope_and_top(root, realize)
        from .checks import child_blocks

        writers = sorted({r.block.name_hint for r in child_blocks(scope)
                          if any(w.buffer is buffer for w in r.block.writes)})
        if len(writers) > 1:
            raise ScheduleError(f"cannot cache_read {buffer.name} of block {realize.block.name_hint}: "
                                f"{len(writers)} blocks write it ({', '.join(writers)}); a read cache needs "
                                "at most one producer")
    _check_alone(root, realize, buffer, write)
    block = realize.block
    cache = decl_buffer(buffer.shape, buffer.dtype, f"{buffer.name}_{scope_name}", scope=scope_name)
    swapped = BufferSwap(buffer, cache).visit(block)
    out = replace_stmt(root, block, swapped)
    realize = next(r for r, _ in walk_stmts(out) if isinstance(r, BlockRealize) and r.block is swapped)
    scope, top = _scope_and_top(out, realize)
    name = unique_block_name(out, cache.name)  # a second cache of the same buffer gets ``_1``
    copy = copy_block(name, cache, buffer) if write else copy_block(name, buffer, cache)
    return _insert_next_to(out, scope, top, copy, after=write, alloc=cache), name


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


def cache_read(root: Stmt, realize: BlockRealize, index: int | str, scope: str) -> tuple[Stmt, str]:
    buffer = _pick(realize.block.reads, index, "reads", realize.block)
    if any(w.buffer is buffer for w in realize.block.writes):
        # the block's writes would go to the cache and never reach the buffer
        raise ScheduleError(f"cannot cache_read {buffer.name} of block {realize.block.name_hint}: the block "
                            "also writes it (a reduction's accumulator); use cache_write for that buffer")
    return _cache(root, realize, buffer, scope, write=False)


def cache_write(root: Stmt, realize: BlockRealize, index: int | str, scope: str) -> tuple[Stmt, str]:
    buffer = _pick(realize.block.writes, index, "writes", realize.block)
    return _cache(root, realize, buffer, scope, write=True)


def _pad_value_of(buffer: Buffer, pad_value: Any, new_indices: list[Var]) -> PrimExpr:
    """``pad_value`` as an expression of the buffer's dtype (a constant, an expression, or a
    function of the transformed indices); TVM refuses a value of another type."""
    from ..expr import FloatImm

    what = f"cannot transform_layout of {buffer.name}"
    value = pad_value(*new_indices) if callable(pad_value) and not isinstance(pad_value, PrimExpr) else pad_value
    if isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0]
    is_int = buffer.dtype.startswith(("int", "uint"))
    if isinstance(value, bool) or not isinstance(value, (int, float, PrimExpr)):
        raise ScheduleError(f"{what}: pad_value {value!r} is not a number or expression")
    if isinstance(value, int):
        if not is_int:
            raise ScheduleError(f"{what}: pad_value {value} is an integer but {buffer.name} holds {buffer.dtype}")
        return const(value, buffer.dtype)
    if isinstance(value, float):
        if is_int:
            raise ScheduleError(f"{what}: pad_value {value} is a float but {buffer.name} holds {buffer.dtype}")
        return FloatImm(buffer.dtype, value)
    from ..functor import post_order_visit

    others: list = []
    post_order_visit(value, lambda x: others.append(x.buffer.name) if isinstance(x, BufferLoad)
                     and x.buffer is not buffer else None)
    if others:
        raise ScheduleError(f"{what}: pad_value may not read another buffer ({others[0]}); only constants, "
                            "the new indices and the buffer itself")
    if value.dtype != buffer.dtype:
        raise ScheduleError(f"{what}: pad_value {value} has dtype {value.dtype} but {buffer.name} holds "
                            f"{buffer.dtype}")
    return value


def _has_padding(old_shape: tuple, new_shape: list) -> bool:
    """True when the new layout has more elements than the old one (the map is not onto)."""
    import math

    if not all(isinstance(s, IntImm) for s in (*old_shape, *new_shape)):
        return False
    return math.prod(s.value for s in new_shape) > math.prod(s.value for s in old_shape)


def transform_layout(func: Any, buffer: Buffer, index_map: Callable[..., Any], pad_value: Any = None,
                     assume_injective_transform: bool = False) -> Any:
    """Store ``buffer`` in a new layout: element ``idx`` moves to ``index_map(*idx)``.

    A layout with more elements than the buffer (``i -> [i // 4, i % 4]`` of 14 elements)
    has padding: TVM refuses it unless a ``pad_value`` says what the padding holds or
    ``assume_injective_transform`` says it is never read.
    """
    params = [Var(f"i{k}", s.dtype) for k, s in enumerate(buffer.shape)]
    try:
        if isinstance(index_map, IndexMap):
            mapped = substitute_indices(index_map, params)
        else:
            mapped = index_map(*params)
    except (TypeError, ValueError) as e:
        raise ScheduleError(f"cannot transform_layout of {buffer.name}: the index map must take "
                            f"{len(params)} indices ({e})") from None
    mapped = tuple(mapped) if isinstance(mapped, (tuple, list)) else (mapped,)
    dom = {id(p): (const(0, s.dtype), s - 1) for p, s in zip(params, buffer.shape)}
    shape = []
    for e in mapped:
        b = relax(e, dom)
        extent = None if b is None else simplify(b[1] + 1)
        if not isinstance(extent, IntImm):
            raise ScheduleError(f"cannot transform_layout of {buffer.name}: cannot bound index {e}")
        shape.append(extent)
    if pad_value is not None:
        _pad_value_of(buffer, pad_value, [Var(f"i{k}", e.dtype) for k, e in enumerate(shape)])
    if _has_padding(buffer.shape, shape):
        if pad_value is None and not assume_injective_transform:
            raise ScheduleError(f"cannot transform_layout of {buffer.name}: the new layout "
                                f"{[int(x.value) for x in shape]} has padding (more elements than "
                                f"{[int(x.value) for x in buffer.shape]}); pass pad_value to fill it, or "
                                "assume_injective_transform=True if it is never read")
        if pad_value is not None:
            raise NotImplementedError("transform_layout(pad_value=...) of a layout with padding: minitvm "
                                      "does not write the padding; the layout without padding works")
    new = decl_buffer(tuple(shape), buffer.dtype, buffer.name, scope=buffer.scope)

    def remap(idx: tuple) -> tuple:
        from ..functor import substitute

        return tuple(simplify(substitute(e, dict(zip(params, idx)))) for e in mapped)

    body = BufferSwap(buffer, new, remap).visit(func.body)
    for s, _ in list(walk_stmts(body)):
        if isinstance(s, Block) and (any(b is buffer for b in s.alloc_buffers)):
            body = replace_stmt(body, s, replace(s, alloc_buffers=tuple(new if b is buffer else b
                                                                        for b in s.alloc_buffers)))
    for s, _ in list(walk_stmts(body)):
        if isinstance(s, Block) and s.name_hint != "root" and any(
                r.buffer is new for r in s.reads + s.writes):
            body = replace_stmt(body, s, _refresh_regions(s))
    buffer_map = {p: (new if b is buffer else b) for p, b in func.buffer_map.items()}
    return type(func)(func.params, buffer_map, body, func.ret_type, func.attrs)
