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
from ...ir import replace
from ..buffer import BufferRegion
from ..expr import Add, BufferLoad, FloorDiv, FloorMod, IntImm, IterVar, Mul, PrimExpr, Range, Var, const
from ..functor import StmtExprMutator, post_order_visit, substitute
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
        return tuple(self.ana.simplify(_fold_div_mod(i)) for i in indices)

    def visit_buffer_load_(self, n: BufferLoad) -> PrimExpr:
        return BufferLoad(n.buffer, self._simplify(self.visit(n.indices)))

    def visit_buffer_store_(self, n: BufferStore) -> Stmt:
        return BufferStore(n.buffer, self.visit(n.value), self._simplify(self.visit(n.indices)))

    def visit_buffer_region_(self, n: BufferRegion) -> BufferRegion:
        return BufferRegion(n.buffer, tuple(Range(self.ana.simplify(r.min), self.ana.simplify(r.extent))
                                            for r in n.region))


def _fold_div_mod(e: PrimExpr) -> PrimExpr:
    """``x // c * c + x % c`` -> ``x``, also for a symbolic ``c`` (what inverting a fusion with a
    symbolic extent leaves behind; the arith simplifier folds only constant divisors)."""
    from ...ir.structural import structural_equal

    class _Fold(StmtExprMutator):
        def visit_add_(self, n: Add) -> PrimExpr:
            a, b = self.visit(n.a), self.visit(n.b)
            for x, y in ((a, b), (b, a)):
                if (isinstance(x, Mul) and isinstance(x.a, FloorDiv) and isinstance(y, FloorMod)
                        and structural_equal(x.a.a, y.a) and structural_equal(x.a.b, x.b)
                        and structural_equal(x.b, y.b)):
                    return y.a
            return n if a is n.a and b is n.b else Add(a, b)

    return _Fold().visit(e)


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


def _terms(e: PrimExpr, iters: dict[int, Var]) -> list[tuple[Var | None, PrimExpr]] | None:
    """``e`` as a sum of ``coefficient * iterator`` (iterator None: a term free of iterators);
    coefficients may be symbolic.  None when ``e`` is not of that form."""
    if isinstance(e, Var) and id(e) in iters:
        return [(e, const(1, e.dtype))]
    if not _uses_any(e, iters):
        return [(None, e)]
    if isinstance(e, Add):
        a, b = _terms(e.a, iters), _terms(e.b, iters)
        return None if a is None or b is None else a + b
    if isinstance(e, Mul):
        for x, c in ((e.a, e.b), (e.b, e.a)):
            if not _uses_any(c, iters):
                inner = _terms(x, iters)
                return None if inner is None else [(t, k * c) for t, k in inner]
    return None


def _uses_any(e: PrimExpr, iters: dict[int, Var]) -> bool:
    found: list = []
    post_order_visit(e, lambda x: found.append(x) if isinstance(x, Var) and id(x) in iters else None)
    return bool(found)


def _group(expr: PrimExpr, extents: dict[int, PrimExpr], iters: dict[int, Var],
           block: Block) -> list[tuple[Var, PrimExpr]]:
    """``expr`` as [(old iterator, coefficient)] in mixed radix, outermost first (iterators of
    extent 1 last); refuses anything that is not a fusion of the block's iterators."""
    terms = _terms(expr, iters)
    not_affine = (f"transform_block_layout of block {block.name_hint}: {expr} is not a fusion of the "
                  "block's iterators, so the index map is not a bijective affine map")
    if terms is None or any(t is None and not _is_zero(c) for t, c in terms):
        raise ScheduleError(not_affine)
    terms = [(t, c) for t, c in terms if t is not None]
    ana = Analyzer()
    live = [(t, c) for t, c in terms if not _is_one(extents[id(t)])]
    unit = [(t, c) for t, c in terms if _is_one(extents[id(t)])]
    ordered: list[tuple[Var, PrimExpr]] = []
    expected: PrimExpr = const(1, expr.dtype)
    while live:  # innermost first: coefficient 1, then the product of the extents inside
        k = next((k for k, (_, c) in enumerate(live) if ana.can_prove_equal(c, expected)), None)
        if k is None:
            raise ScheduleError(f"transform_block_layout of block {block.name_hint}: {expr} does not map the "
                                "block's iterators one to one (the index map is not bijective)")
        t, c = live.pop(k)
        ordered.insert(0, (t, c))
        expected = c * extents[id(t)] if not isinstance(c, IntImm) or not isinstance(extents[id(t)], IntImm) \
            else const(c.value * extents[id(t)].value, expr.dtype)
    return ordered + unit


def _is_zero(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 0


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
    old_vars = [iv.var for iv in block.iter_vars]
    extents = {id(iv.var): iv.dom.extent for iv in block.iter_vars}
    types = {id(iv.var): iv.iter_type for iv in block.iter_vars}
    outputs = apply_index_map(index_map, old_vars, f"transform_block_layout of block {name}")
    iters = {id(v): v for v in old_vars}
    groups = [_group(e, extents, iters, block) for e in outputs]
    used = [id(t) for g in groups for t, _ in g]
    if len(set(used)) != len(used) or any(id(v) not in used and not _is_one(extents[id(v)]) for v in old_vars):
        raise ScheduleError(f"transform_block_layout of block {name}: the index map must use every "
                            "iterator exactly once (it is not bijective)")

    new_iters, inverse, ranges = [], {}, {}
    for k, (expr, group) in enumerate(zip(outputs, groups)):
        dtype = expr.dtype
        live = [(t, c) for t, c in group if not _is_one(extents[id(t)])]
        if live:  # the outermost coefficient times its extent
            c0, e0 = live[0][1], extents[id(live[0][0])]
            extent = (const(c0.value * e0.value, dtype) if isinstance(c0, IntImm) and isinstance(e0, IntImm)
                      else e0 if _is_one(c0) else c0 * e0)
        else:
            extent = const(1, dtype)
        var = Var(f"v{k}", dtype)
        kinds = {types[id(t)] for t, _ in live}
        if _is_one(extent) or not kinds:
            kind = "spatial"
        elif len(kinds) == 1:
            kind = kinds.pop()
        else:
            raise ScheduleError(f"transform_block_layout of block {name}: new iterator {expr} mixes "
                                "spatial and reduction iterators")
        new_iters.append(IterVar(Range(const(0, dtype), extent), var, kind))
        ranges[var] = extent
        for t, _ in group:
            if _is_one(extents[id(t)]) and (live or len(group) > 1):
                inverse[t] = const(0, t.dtype)
        if not live and len(group) == 1:
            inverse[group[0][0]] = var
        # as TVM writes the inverse of a fusion: x_j = v % c_{j-1} // c_j
        for j, (t, c) in enumerate(live):
            value: PrimExpr = var if j == 0 else var % live[j - 1][1]
            if not _is_one(c):
                value = value // c
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
