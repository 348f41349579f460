"""Block-layout primitives: transform_block_layout and add_unit_loop.

``transform_block_layout(block, f)`` gives a block new iterators ``v = f(old iterators)``
and new loops over them.  The body keeps computing the same thing because every old
iterator is rewritten through the inverse of ``f``.  The maps inverted here are the ones
schedules use: each new iterator is a *fusion* ``x0 * c0 + x1 * c1 + ... + xk`` of some old
iterators in mixed radix (``c_{i} = c_{i+1} * extent_{i+1}``), every old iterator used by
exactly one new one — permutations, fusions, and fusions of permuted iterators.  Its
inverse is ``x_i = v // c_i % extent_i``.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from ...arith import Analyzer
from ...arith.linear import LinearSum
from ...ir import replace
from ..buffer import BufferRegion
from ..expr import BufferLoad, IntImm, IterVar, PrimExpr, Range, Var, const
from ..functor import StmtExprMutator, substitute
from ..stmt import Block, BlockRealize, BufferStore, For, ForKind, Stmt
from .compute import _refresh_regions
from .error import ScheduleError
from .tree import loops_above, replace_stmt

__all__ = ["add_unit_loop", "transform_block_layout", "SimplifyAccesses", "apply_index_map", "check_trivial_nest"]


def add_unit_loop(root: Stmt, node: Stmt) -> tuple[Stmt, Var]:
    """``root`` with ``for u in range(1)`` wrapped around ``node`` (a loop or a block realize)."""
    var = Var("u", "int32")
    return replace_stmt(root, node, For(var, const(0, "int32"), const(1, "int32"), ForKind.SERIAL, node)), var


class SimplifyAccesses(StmtExprMutator):
    """Simplify every buffer index knowing the ranges of the block iterators."""

    def __init__(self, ranges: dict[Var, PrimExpr]):
        self.ana = Analyzer()
        for v, extent in ranges.items():
            self.ana.bind(v, Range(const(0, extent.dtype), extent))

    def _simplify(self, indices: tuple) -> tuple:
        return tuple(self.ana.simplify(i) for i in indices)

    def visit_buffer_load_(self, n: BufferLoad) -> PrimExpr:
        return BufferLoad(n.buffer, self._simplify(self.visit(n.indices)))

    def visit_buffer_store_(self, n: BufferStore) -> Stmt:
        return BufferStore(n.buffer, self.visit(n.value), self._simplify(self.visit(n.indices)))

    def visit_buffer_region_(self, n: BufferRegion) -> BufferRegion:
        return BufferRegion(n.buffer, tuple(Range(self.ana.simplify(r.min), self.ana.simplify(r.extent))
                                            for r in n.region))


def apply_index_map(index_map: Any, args: list[PrimExpr], what: str) -> list[PrimExpr]:
    """``index_map(*args)`` as a list of expressions; a map of the wrong arity is refused."""
    fn: Callable[..., Any] = getattr(index_map, "func", index_map)
    try:
        n_params = len(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        n_params = len(args)
    if n_params != len(args):
        raise ScheduleError(f"{what}: the index map takes {n_params} indices but there are {len(args)}")
    out = fn(*args)
    out = list(out) if isinstance(out, (tuple, list)) else [out]
    return [const(e, args[0].dtype if args else "int32") if isinstance(e, int) else e for e in out]


def _group(expr: PrimExpr, extents: dict[int, PrimExpr], block: Block) -> list[tuple[Var, int]]:
    """``expr`` as [(old iterator, coefficient)], outermost first; refuses anything that is not
    a mixed-radix fusion of old iterators."""
    lin = LinearSum.from_expr(expr)
    terms = [(t, c) for t, c in lin.terms if c != 0]
    if lin.constant != 0 or any(not isinstance(t, Var) or id(t) not in extents or c < 0 for t, c in terms):
        raise ScheduleError(f"transform_block_layout of block {block.name_hint}: {expr} is not a "
                            "fusion of the block's iterators, so the index map is not a bijective affine map")
    terms.sort(key=lambda tc: -tc[1])
    live = [(t, c) for t, c in terms if not _is_one(extents[id(t)])]
    expected = 1
    for t, c in reversed(live):
        ext = extents[id(t)]
        if c != expected or not isinstance(ext, IntImm):
            raise ScheduleError(f"transform_block_layout of block {block.name_hint}: {expr} does not map "
                                "the block's iterators one-to-one (the index map is not bijective)")
        expected *= ext.value
    return terms


def _is_one(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 1


def check_trivial_nest(realize: BlockRealize, path: tuple, primitive: str) -> list[For]:
    """The loops above ``realize`` (outer first) when they start at 0, each holds only the next
    one (the innermost only the block) and bind the block's iterators one to one."""
    block = realize.block
    name = block.name_hint
    loops = loops_above(path)
    for k, lp in enumerate(loops):
        if not (isinstance(lp.min, IntImm) and lp.min.value == 0):
            raise ScheduleError(f"{primitive} of block {name}: loop {lp.loop_var.name} does not start at 0")
        inner = loops[k + 1] if k + 1 < len(loops) else realize
        if lp.body is not inner:
            raise ScheduleError(f"{primitive} of block {name}: loop {lp.loop_var.name} holds more than "
                                "this block; the loops above it must hold only the block")
    trivial = len(loops) == len(block.iter_vars) and all(
        v is lp.loop_var for v, lp in zip(realize.iter_values, loops))
    if not trivial:
        raise ScheduleError(f"{primitive} of block {name}: its iterators are not bound to the loops "
                            "above it one to one (the binding is not trivial)")
    return loops


def transform_block_layout(root: Stmt, realize: BlockRealize, path: tuple, index_map: Any) -> Stmt:
    block = realize.block
    name = block.name_hint
    loops = check_trivial_nest(realize, path, "transform_block_layout")
    if any(not isinstance(lp.extent, IntImm) for lp in loops):
        raise ScheduleError(f"transform_block_layout of block {name}: needs constant loop extents")
    old_vars = [iv.var for iv in block.iter_vars]
    extents = {id(iv.var): iv.dom.extent for iv in block.iter_vars}
    types = {id(iv.var): iv.iter_type for iv in block.iter_vars}
    outputs = apply_index_map(index_map, old_vars, f"transform_block_layout of block {name}")
    groups = [_group(e, extents, block) for e in outputs]
    used = [id(t) for g in groups for t, _ in g]
    if len(set(used)) != len(used) or any(id(v) not in used and not _is_one(extents[id(v)]) for v in old_vars):
        raise ScheduleError(f"transform_block_layout of block {name}: the index map must use every "
                            "iterator exactly once (it is not bijective)")

    new_iters, inverse, ranges = [], {}, {}
    for k, (expr, group) in enumerate(zip(outputs, groups)):
        dtype = expr.dtype
        extent = const(1, dtype)
        for t, c in group:
            extent = extent + const(c, dtype) * (extents[id(t)] - 1)
        extent = Analyzer().simplify(extent)
        var = Var(f"v{k}", dtype)
        kinds = {types[id(t)] for t, _ in group if not _is_one(extents[id(t)])}
        if _is_one(extent) or not kinds:
            kind = "spatial"
        elif len(kinds) == 1:
            kind = kinds.pop()
        else:
            raise ScheduleError(f"transform_block_layout of block {name}: new iterator {expr} mixes "
                                "spatial and reduction iterators")
        new_iters.append(IterVar(Range(const(0, dtype), extent), var, kind))
        ranges[var] = extent
        live = [(t, c) for t, c in group if not _is_one(extents[id(t)])]
        for t, _ in group:
            if _is_one(extents[id(t)]) and (live or len(group) > 1):
                inverse[t] = const(0, t.dtype)
        if not live and len(group) == 1:
            inverse[group[0][0]] = var
        for j, (t, c) in enumerate(live):
            value = var if c == 1 else var // const(c, dtype)
            if j > 0:
                value = value % extents[id(t)]
            inverse[t] = value
    for v in old_vars:
        inverse.setdefault(v, const(0, v.dtype))

    new_block = substitute(replace(block, iter_vars=()), inverse)
    new_block = SimplifyAccesses(ranges).visit(replace(new_block, iter_vars=tuple(new_iters)))
    new_block = _refresh_regions(new_block)
    loop_vars = [Var(f"ax{k}", it.var.dtype) for k, it in enumerate(new_iters)]
    body: Stmt = BlockRealize(tuple(loop_vars), realize.predicate, new_block)
    for lv, it in reversed(list(zip(loop_vars, new_iters))):
        body = For(lv, const(0, lv.dtype), it.dom.extent, ForKind.SERIAL, body)
    return replace_stmt(root, loops[0] if loops else realize, body)
