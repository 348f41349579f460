"""Block-layout primitives: transform_block_layout and add_unit_loop.

``transform_block_layout(block, f)`` gives a block new iterators ``v = f(old iterators)``
and new loops over them.  The body keeps computing the same thing because every old
iterator is rewritten through the inverse of ``f``.  The maps inverted here are the ones
schedules use: each new iterator is a piece ``F // a % b`` of a *fusion*
``F = x0 * c0 + x1 * c1 + ... + xk`` of old iterators in mixed radix
(``c_{i} = c_{i+1} * extent_{i+1}``; coefficients may be symbolic), the pieces of one fusion
tile it exactly, and every old iterator is used once — permutations, fusions, splits.  The
inverse is ``F = sum(piece * a)`` and ``x_i = F % c_{i-1} // c_i``, as TVM writes it.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from ...arith import Analyzer
from ...ir import replace
from ...ir.structural import structural_equal
from ..buffer import BufferRegion
from ..expr import Add, BufferLoad, FloorDiv, FloorMod, IntImm, IterVar, Mul, PrimExpr, Range, Var, const, is_const_int
from ..functor import StmtExprMutator, post_order_visit, substitute
from ..index_map import IndexMap, substitute_indices
from ..stmt import Block, BlockRealize, BufferStore, For, ForKind, Stmt
from .error import ScheduleError
from .shared_analyses import recompute_access_regions
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
    return _FoldDivMod().visit(e)


class _FoldDivMod(StmtExprMutator):
    """:func:`_fold_div_mod`'s walk (a class made once: this runs for every index of a layout)."""

    def visit_add_(self, n: Add) -> PrimExpr:
        a, b = self.visit(n.a), self.visit(n.b)
        for x, y in ((a, b), (b, a)):
            if (isinstance(x, Mul) and isinstance(x.a, FloorDiv) and isinstance(y, FloorMod)
                    and structural_equal(x.a.a, y.a) and structural_equal(x.a.b, x.b)
                    and structural_equal(x.b, y.b)):
                return y.a
        return n if a is n.a and b is n.b else Add(a, b)


def apply_index_map(index_map: Any, args: list[PrimExpr], what: str) -> list[PrimExpr]:
    """``index_map(*args)`` as a list of expressions; a map of the wrong arity is refused."""
    if isinstance(index_map, IndexMap):
        if index_map.ndim != len(args):
            raise ScheduleError(f"{what}: the index map takes {index_map.ndim} indices but there are {len(args)}")
        return substitute_indices(index_map, args)
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
    if terms is None or any(t is None and not is_const_int(c, 0) for t, c in terms):
        raise ScheduleError(not_affine)
    terms = [(t, c) for t, c in terms if t is not None]
    ana = Analyzer()
    live = [(t, c) for t, c in terms if not is_const_int(extents[id(t)], 1)]
    unit = [(t, c) for t, c in terms if is_const_int(extents[id(t)], 1)]
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


def _piece(e: PrimExpr) -> tuple[PrimExpr, int, int | None]:
    """``F // a % b`` as (F, a, b); ``F // a`` as (F, a, None); ``F % b`` as (F, 1, b); else (e, 1, None)."""
    a, b = 1, None
    if isinstance(e, FloorMod) and isinstance(e.b, IntImm) and e.b.value > 0:
        e, b = e.a, e.b.value
    if isinstance(e, FloorDiv) and isinstance(e.b, IntImm) and e.b.value > 0:
        e, a = e.a, e.b.value
    return e, a, b


def _split_pieces(fused: PrimExpr, total: PrimExpr, members: list[tuple[int, int, int | None]], block: Block,
                  new_iters: list, ranges: dict, kind: str, outputs: list) -> PrimExpr:
    """New iterators for the pieces of ``fused`` (extent ``total``); returns ``fused`` in terms of
    them.  The pieces must tile ``fused`` exactly: innermost ``% b1``, then ``// b1 % b2`` ..."""
    dtype = fused.dtype
    if len(members) == 1 and members[0][1:] == (1, None):
        k = members[0][0]
        var = Var(f"v{k}", dtype)
        new_iters[k] = IterVar(Range(const(0, dtype), total), var, "spatial" if is_const_int(total, 1) else kind)
        ranges[var] = total
        return var
    bad = ScheduleError(f"transform_block_layout of block {block.name_hint}: the pieces "
                        f"{[str(outputs[k]) for k, _, _ in members]} do not split {fused} exactly once "
                        "(the index map is not bijective)")
    if not isinstance(total, IntImm):
        raise bad
    ordered = sorted(members, key=lambda m: m[1])
    value: PrimExpr | None = None
    stride = 1
    for n, (k, a, b) in enumerate(ordered):
        last = n == len(ordered) - 1
        extent = b if b is not None else (total.value // a if total.value % a == 0 else None)
        if a != stride or extent is None or (not last and b is None) or (last and a * extent != total.value):
            raise bad
        var = Var(f"v{k}", dtype)
        new_iters[k] = IterVar(Range(const(0, dtype), const(extent, dtype)), var,
                               "spatial" if extent == 1 else kind)
        ranges[var] = const(extent, dtype)
        term = var if a == 1 else var * const(a, dtype)
        value = term if value is None else term + value
        stride = a * extent
    return value




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
    # each new iterator is a piece ``F // a % b`` of a fusion F of old iterators (a=1, b=None: F)
    pieces = [_piece(e) for e in outputs]
    fusions: list[tuple[PrimExpr, list[tuple[Var, PrimExpr]], list[int]]] = []
    for k, (fused, _, _) in enumerate(pieces):
        same = next((f for f in fusions if structural_equal(f[0], fused)), None)
        if same is None:
            fusions.append((fused, _group(fused, extents, iters, block), [k]))
        else:
            same[2].append(k)
    used = [id(t) for _, g, _ in fusions for t, _ in g]
    if len(set(used)) != len(used) or any(id(v) not in used and not is_const_int(extents[id(v)], 1) for v in old_vars):
        raise ScheduleError(f"transform_block_layout of block {name}: the index map must use every "
                            "iterator exactly once (it is not bijective)")

    new_iters: list[Any] = [None] * len(outputs)
    inverse: dict[Var, PrimExpr] = {}
    ranges: dict[Var, PrimExpr] = {}
    for fused, group, members in fusions:
        dtype = fused.dtype
        live = [(t, c) for t, c in group if not is_const_int(extents[id(t)], 1)]
        if live:  # the outermost coefficient times its extent
            c0, e0 = live[0][1], extents[id(live[0][0])]
            total = (const(c0.value * e0.value, dtype) if isinstance(c0, IntImm) and isinstance(e0, IntImm)
                     else e0 if is_const_int(c0, 1) else c0 * e0)
        else:
            total = const(1, dtype)
        kinds = {types[id(t)] for t, _ in live}
        if len(kinds) > 1:
            raise ScheduleError(f"transform_block_layout of block {name}: new iterator {outputs[members[0]]} "
                                "mixes spatial and reduction iterators")
        kind = kinds.pop() if kinds else "spatial"
        value = _split_pieces(fused, total, [(k, pieces[k][1], pieces[k][2]) for k in members], block,
                              new_iters, ranges, kind, outputs)
        for t, _ in group:
            if is_const_int(extents[id(t)], 1) and (live or len(group) > 1):
                inverse[t] = const(0, t.dtype)
        if not live and len(group) == 1:
            inverse[group[0][0]] = value
        # as TVM writes the inverse of a fusion: x_j = f % c_{j-1} // c_j
        for j, (t, c) in enumerate(live):
            x: PrimExpr = value if j == 0 else value % live[j - 1][1]
            if not is_const_int(c, 1):
                x = x // c
            inverse[t] = x
    for v in old_vars:
        inverse.setdefault(v, const(0, v.dtype))

    new_block = substitute(replace(block, iter_vars=()), inverse)
    new_block = SimplifyAccesses(ranges).visit(replace(new_block, iter_vars=tuple(new_iters)))
    new_block = recompute_access_regions(new_block)
    loop_vars = [Var(f"ax{k}", it.var.dtype) for k, it in enumerate(new_iters)]
    body: Stmt = BlockRealize(tuple(loop_vars), realize.predicate, new_block)
    for lv, it in reversed(list(zip(loop_vars, new_iters))):
        body = For(lv, const(0, lv.dtype), it.dom.extent, ForKind.SERIAL, body)
    return replace_stmt(root, loops[0] if loops else realize, body)
