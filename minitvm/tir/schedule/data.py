"""Data-movement helpers and transform_layout (cache_read / cache_write are in :mod:`.cache`)."""

from __future__ import annotations

import math
from typing import Any, Callable

from ...ir import replace
from ..buffer import Buffer, BufferRegion, decl_buffer
from ..expr import EQ, GE, LE, Add, And, BufferLoad, FloatImm, IntImm, IterVar, Mul, Or, PrimExpr, Range, Var, const
from ..functor import StmtExprMutator, post_order_visit, substitute
from ..index_map import IndexMap, substitute_indices
from ..op import if_then_else
from ..stmt import Block, BlockRealize, BufferStore, For, ForKind, SeqStmt, Stmt
from .error import ScheduleError
from .layout import SimplifyAccesses
from .loops import simplify
from .shared_analyses import index_bounds, recompute_access_regions
from .tree import replace_stmt, unique_block_name, walk_stmts

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
    has padding: TVM refuses it unless a ``pad_value`` says what the padding holds (the writer
    stores it, :func:`_fold_padding_into_writer`, or a block after it, :func:`_add_padding_block`) or
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
    padded = pad_value is not None and _has_padding(buffer.shape, shape)
    if padded and not _writers_of(func.body, buffer):
        raise NotImplementedError(f"transform_layout(pad_value=...) of {buffer.name}, which no block writes: "
                                  "TVM records the padding's value as a T.assume, which minitvm lacks")
    new = decl_buffer(tuple(shape), buffer.dtype, buffer.name, scope=buffer.scope)

    def remap(idx: tuple) -> tuple:
        return tuple(simplify(substitute(e, dict(zip(params, idx)))) for e in mapped)

    folded = _fold_padding_into_writer(func.body, buffer, IndexMap(tuple(params), mapped), shape, pad_value) \
        if padded else None
    body = BufferSwap(buffer, new, remap).visit(func.body if folded is None else folded[0])
    if folded is not None:
        body = _simplify_block(body, folded[1])
    for s, _ in list(walk_stmts(body)):
        if isinstance(s, Block) and (any(b is buffer for b in s.alloc_buffers)):
            body = replace_stmt(body, s, replace(s, alloc_buffers=tuple(new if b is buffer else b
                                                                        for b in s.alloc_buffers)))
    for s, _ in list(walk_stmts(body)):
        if isinstance(s, Block) and s.name_hint != "root" and any(
                r.buffer is new for r in s.reads + s.writes):
            body = replace_stmt(body, s, recompute_access_regions(s))
    if padded and folded is None:
        body = _add_padding_block(body, buffer, new, IndexMap(tuple(params), mapped), pad_value)
    buffer_map = {p: (new if b is buffer else b) for p, b in func.buffer_map.items()}
    return replace(func, buffer_map=buffer_map, body=body)


def _writers_of(root: Stmt, buffer: Buffer) -> list[Block]:
    return [s for s, _ in walk_stmts(root) if isinstance(s, Block) and s.name_hint != "root"
            and any(w.buffer is buffer for w in s.writes)]


def _add_padding_block(body: Stmt, old: Buffer, new: Buffer, index_map: IndexMap, pad_value: Any) -> Stmt:
    """``body`` with a block after the last one writing ``new`` that stores ``pad_value`` into its
    padding (the indices no element of ``old`` maps to): TVM's post-processing form of a padded
    layout, so every element of the new buffer holds a defined value."""
    writers = _writers_of(body, new)
    loop_vars = [Var(k, s.dtype) for k, s in zip("ijklmnopqr", new.shape)]
    block_vars = [Var(f"v{v.name}", v.dtype) for v in loop_vars]
    inverse, padding = index_map.non_surjective_inverse(list(old.shape))
    bounds = {v: ext for v, ext in zip(loop_vars, new.shape)}
    guard = _row_split_form(simplify(substitute(padding, dict(zip(inverse.initial_indices, loop_vars))), bounds),
                            bounds)
    value = BufferSwap(old, new).visit(_pad_value_of(old, pad_value, block_vars))  # (it may read the buffer)
    block = Block(unique_block_name(body, f"buffer_{old.name}_padding"),
                  iter_vars=tuple(IterVar(Range(const(0, s.dtype), s), v, "spatial")
                                  for v, s in zip(block_vars, new.shape)),
                  body=BufferStore(new, value, tuple(block_vars)))
    nest: Stmt = BlockRealize(tuple(loop_vars), guard, recompute_access_regions(block))
    for v, s in reversed(list(zip(loop_vars, new.shape))):
        nest = For(v, const(0, s.dtype), s, ForKind.SERIAL, nest)
    return _after_last_writer(body, writers[-1], nest)


def _after_last_writer(body: Stmt, writer: Block, stage: Stmt) -> Stmt:
    """``body`` with ``stage`` right after the statement of the writer's scope that holds it."""
    for s, path in walk_stmts(body):
        if s is writer:
            scope = next(p for p in reversed(path) if isinstance(p, Block))
            break
    top = scope.body
    items = list(top.seq) if isinstance(top, SeqStmt) else [top]
    at = next(k for k, x in enumerate(items) if any(y is writer for y, _ in walk_stmts(x)))
    items.insert(at + 1, stage)
    return replace_stmt(body, scope, replace(scope, body=SeqStmt(tuple(items))))


def _row_split_form(pred: PrimExpr, bounds: dict) -> PrimExpr:
    """``i * c + j >= n`` (``j < c``, ``i < rows``) as TVM's simplifier writes it: ``n // c <= i``
    when ``c`` divides ``n``, ``i == rows - 1 and n % c <= j`` when only the last row is partial."""
    if isinstance(pred, Or):
        return Or(_row_split_form(pred.a, bounds), _row_split_form(pred.b, bounds))
    if not (isinstance(pred, GE) and isinstance(pred.b, IntImm) and isinstance(pred.a, Add)):
        return pred
    mul, j = pred.a.a, pred.a.b
    if not (isinstance(mul, Mul) and isinstance(mul.a, Var) and isinstance(mul.b, IntImm) and isinstance(j, Var)):
        return pred
    i, c, n = mul.a, mul.b.value, pred.b.value
    rows, cols = bounds.get(i), bounds.get(j)
    if not (isinstance(rows, IntImm) and isinstance(cols, IntImm) and cols.value == c):
        return pred
    if n % c == 0:
        return LE(const(n // c, i.dtype), i)
    if n // c == rows.value - 1:
        return And(EQ(i, const(n // c, i.dtype)), LE(const(n % c, j.dtype), j))
    return pred


def _row_major_writer(root: Stmt, buffer: Buffer) -> tuple[BlockRealize, list[For]] | None:
    """The only block writing ``buffer`` when it stores ``buffer[v0, v1 ...]`` (its spatial
    iterators, over the whole shape) and nothing else, bound to perfectly nested loops in that
    order: TVM then folds the padding into it as ``T.if_then_else``.  None otherwise."""
    found = [(s, p) for s, p in walk_stmts(root) if isinstance(s, BlockRealize)
             and any(w.buffer is buffer for w in s.block.writes)]
    if len(found) != 1:
        return None
    realize, path = found[0]
    block = realize.block
    stores = [block.body] + ([block.init] if block.init is not None else [])
    if len(block.writes) != 1 or not all(isinstance(x, BufferStore) and x.buffer is buffer for x in stores):
        return None
    bind = {id(iv.var): (iv, v) for iv, v in zip(block.iter_vars, realize.iter_values)}
    loops = []
    for index, extent in zip(block.body.indices, buffer.shape):
        iv, value = bind.get(id(index), (None, None))
        if iv is None or iv.iter_type != "spatial" or not isinstance(value, Var) or \
                not structural_equal_int(iv.dom.extent, extent):
            return None
        loop = next((f for f in path if isinstance(f, For) and f.loop_var is value), None)
        if loop is None or not structural_equal_int(loop.extent, extent) or loop.kind != ForKind.SERIAL \
                or loop.annotations or (loops and loops[-1].body is not loop):
            return None
        loops.append(loop)
    if block.init is not None and list(block.init.indices) != list(block.body.indices):
        return None
    return realize, loops


def structural_equal_int(a: PrimExpr, b: PrimExpr) -> bool:
    return isinstance(a, IntImm) and isinstance(b, IntImm) and a.value == b.value


def _fold_padding_into_writer(root: Stmt, buffer: Buffer, index_map: IndexMap, shape: list,
                              pad_value: Any) -> tuple[Stmt, Block] | None:
    """TVM's replacement form: the writer's loops run over the new layout row-major and the
    block stores ``T.if_then_else(<padding>, pad_value, value)``; the old iterators become the
    inverse map of the new ones.  Returns the new tree (still on the old buffer, at the old
    indices) and the rewritten block, or None when the writer does not qualify."""
    found = _row_major_writer(root, buffer)
    if found is None:
        return None
    realize, loops = found
    block = realize.block
    inverse, padding = index_map.non_surjective_inverse(list(buffer.shape))
    loop_vars = [Var(f"{loops[0].loop_var.name}_{k}" if k else loops[0].loop_var.name, s.dtype)
                 for k, s in enumerate(shape)]
    new_vars = [Var(f"v{k}", s.dtype) for k, s in enumerate(shape)]
    olds = [next(iv for iv in block.iter_vars if iv.var is i) for i in block.body.indices]
    at_new = dict(zip(inverse.initial_indices, new_vars))
    bounds = {v: s for v, s in zip(new_vars, shape)}
    old_of = {iv.var: simplify(substitute(e, at_new), bounds) for iv, e in zip(olds, inverse.final_indices)}
    guard = _row_split_form(simplify(substitute(padding, at_new), bounds), bounds)
    pad = BufferSwap(buffer, buffer).visit(_pad_value_of(buffer, pad_value, new_vars))

    def guarded(store: BufferStore) -> BufferStore:
        return BufferStore(buffer, if_then_else(guard, pad, substitute(store.value, old_of)),
                           tuple(old_of[i] for i in store.indices))

    rest = [(iv, v) for iv, v in zip(block.iter_vars, realize.iter_values) if all(iv is not o for o in olds)]
    new_block = replace(block, iter_vars=tuple(IterVar(Range(const(0, s.dtype), s), v, "spatial")
                                                for v, s in zip(new_vars, shape)) + tuple(iv for iv, _ in rest),
                        body=guarded(block.body), init=None if block.init is None else guarded(block.init))
    inner: Stmt = replace_stmt(loops[-1].body, realize, BlockRealize(
        tuple(loop_vars) + tuple(v for _, v in rest), realize.predicate, new_block))
    for v, s in reversed(list(zip(loop_vars, shape))):
        inner = For(v, const(0, s.dtype), s, ForKind.SERIAL, inner)
    return replace_stmt(root, loops[0], inner), new_block


def _simplify_block(body: Stmt, block: Block) -> Stmt:
    """``body`` with the accesses of the block named like ``block`` simplified over its iterators."""
    for s, _ in walk_stmts(body):
        if isinstance(s, Block) and s.name_hint == block.name_hint:
            ranges = {iv.var: iv.dom.extent for iv in s.iter_vars}
            return replace_stmt(body, s, SimplifyAccesses(ranges).visit(s))
    return body
