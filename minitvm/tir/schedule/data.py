"""Data-movement helpers and transform_layout (cache_read / cache_write are in :mod:`.cache`)."""

from __future__ import annotations

import math
from typing import Any, Callable

from ...ir import replace
from ..buffer import Buffer, BufferRegion, decl_buffer
from ..expr import BufferLoad, FloatImm, IntImm, IterVar, PrimExpr, Range, Var, const
from ..functor import StmtExprMutator, post_order_visit, substitute
from ..index_map import IndexMap, substitute_indices
from ..stmt import Block, BlockRealize, BufferStore, For, ForKind, Stmt
from .error import ScheduleError
from .loops import simplify
from .shared_analyses import index_bounds, recompute_access_regions
from .tree import replace_stmt, walk_stmts

__all__ = ["transform_layout", "copy_block", "BufferSwap", "check_storage_scope"]


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
    body: Stmt = BlockRealize(tuple(loop_vars), const(True, "bool"), recompute_access_regions(block))
    for v, s in reversed(list(zip(loop_vars, src.shape))):
        body = For(v, const(0, s.dtype), s, ForKind.SERIAL, body)
    return body


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


def _pad_value_of(buffer: Buffer, pad_value: Any, new_indices: list[Var]) -> PrimExpr:
    """``pad_value`` as an expression of the buffer's dtype (a constant, an expression, or a
    function of the transformed indices); TVM refuses a value of another type."""
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
        b = index_bounds(e, dom)
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
        return tuple(simplify(substitute(e, dict(zip(params, idx)))) for e in mapped)

    body = BufferSwap(buffer, new, remap).visit(func.body)
    for s, _ in list(walk_stmts(body)):
        if isinstance(s, Block) and (any(b is buffer for b in s.alloc_buffers)):
            body = replace_stmt(body, s, replace(s, alloc_buffers=tuple(new if b is buffer else b
                                                                        for b in s.alloc_buffers)))
    for s, _ in list(walk_stmts(body)):
        if isinstance(s, Block) and s.name_hint != "root" and any(
                r.buffer is new for r in s.reads + s.writes):
            body = replace_stmt(body, s, recompute_access_regions(s))
    buffer_map = {p: (new if b is buffer else b) for p, b in func.buffer_map.items()}
    return replace(func, buffer_map=buffer_map, body=body)
