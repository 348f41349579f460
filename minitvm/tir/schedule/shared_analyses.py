"""Analyses several schedule primitives share (one home, public names).

- :func:`index_bounds`: the inclusive range an index expression covers while some loop
  variables run over their ranges (the interval arithmetic behind compute_at, cache_read,
  blockize, rolling_buffer, reindex and CompactBufferAllocation), and :func:`range_bounds`
  for every index of a range;
- :func:`recompute_access_regions`: a block's read/write regions recomputed from its body;
- :func:`is_padding_guard_only` and :func:`is_const_true`: what a block predicate says;
  :func:`domain_guard`: the predicate a new copy block needs to stay in its domains;
- :func:`simplify` with the loop ranges of :func:`loop_bounds`.

Statement-tree helpers (finding a statement's ancestors, removing a block with its empty
loops) live in :mod:`.tree`.
"""

from __future__ import annotations

from typing import Any, Callable

from ...arith import Analyzer
from ...ir import replace
from ...ir.structural import structural_equal
from ..analysis import conjuncts, get_block_read_write_region, vars_used
from ..expr import (
    LT,
    Add,
    And,
    Cast,
    FloorDiv,
    FloorMod,
    IntImm,
    IterVar,
    Max,
    Min,
    Mul,
    PrimExpr,
    Range,
    Sub,
    Var,
    const,
)
from ..functor import substitute
from ..stmt import Block, BlockRealize, For, Stmt
from .tree import walk_stmts

__all__ = ["index_bounds", "range_bounds", "int_index_bounds", "int_range_bounds",
           "recompute_access_regions", "is_padding_guard_only",
           "predicate_of_iterators", "is_const_true", "domain_guard", "simplify", "simplifier", "loop_bounds"]

#: variable id -> inclusive (lo, hi) it ranges over
VarRanges = dict[int, tuple[PrimExpr, PrimExpr]]


def index_bounds(e: PrimExpr, var_ranges: VarRanges) -> tuple[PrimExpr, PrimExpr] | None:
    """Inclusive bounds ``(lo, hi)`` of ``e`` while each variable in ``var_ranges`` (keyed by
    ``id``) runs over its range; None when the form is one interval arithmetic cannot bound
    (a product of two variables, a division by a non-constant ...)."""
    if isinstance(e, Var):
        return var_ranges.get(id(e), (e, e))
    if isinstance(e, IntImm):
        return e, e
    if isinstance(e, (Add, Sub)):
        a, b = index_bounds(e.a, var_ranges), index_bounds(e.b, var_ranges)
        if a is None or b is None:
            return None
        return (a[0] + b[0], a[1] + b[1]) if isinstance(e, Add) else (a[0] - b[1], a[1] - b[0])
    if isinstance(e, Mul):
        for x, c in ((e.a, e.b), (e.b, e.a)):
            if isinstance(c, IntImm):
                r = index_bounds(x, var_ranges)
                if r is None:
                    return None
                return (r[0] * c, r[1] * c) if c.value >= 0 else (r[1] * c, r[0] * c)
        return None
    if isinstance(e, FloorDiv) and isinstance(e.b, IntImm) and e.b.value > 0:
        r = index_bounds(e.a, var_ranges)
        return None if r is None else (r[0] // e.b, r[1] // e.b)
    if isinstance(e, FloorMod) and isinstance(e.b, IntImm) and e.b.value > 0:
        r = index_bounds(e.a, var_ranges)
        if r is None:
            return None
        if r[0] is r[1] or structural_equal(r[0], r[1]):
            return e, e
        return const(0, e.dtype), e.b - 1
    if isinstance(e, (Min, Max)):
        a, b = index_bounds(e.a, var_ranges), index_bounds(e.b, var_ranges)
        if a is None or b is None:
            return None
        f = type(e)
        return f(a[0], b[0]), f(a[1], b[1])
    if isinstance(e, Cast) and _widening_int_cast(e):
        r = index_bounds(e.value, var_ranges)
        return None if r is None else tuple(const(b.value, e.dtype) if isinstance(b, IntImm) else Cast(e.dtype, b)
                                            for b in r)
    if not vars_used(e) & set(var_ranges):
        return e, e  # an expression free of the ranging variables is one point
    return None


def _widening_int_cast(e: Cast) -> bool:
    """Whether ``e`` casts an integer to an integer type at least as wide (it keeps every value,
    so it keeps the order of bounds: a flat-pixel convolution's row ``int64(p // W)``)."""
    src, dst = e.value.dtype, e.dtype
    return src.startswith("int") and dst.startswith("int") and int(dst[3:] or 32) >= int(src[3:] or 32)


def range_bounds(rng: Range, var_ranges: VarRanges, bind: dict | None = None) -> tuple[PrimExpr, PrimExpr] | None:
    """Inclusive bounds ``(lo, hi)`` of every index ``rng`` covers while the variables in
    ``var_ranges`` run over theirs (after substituting ``bind``); None when unbounded."""
    first, last = rng.min, rng.min + rng.extent - 1
    if bind:
        first, last = substitute(first, bind), substitute(last, bind)
    lo, hi = index_bounds(first, var_ranges), index_bounds(last, var_ranges)
    return None if lo is None or hi is None else (lo[0], hi[1])


def int_index_bounds(e: PrimExpr, var_ranges: VarRanges, bind: dict[int, PrimExpr] | None = None
                     ) -> tuple[int, int] | None:
    """:func:`index_bounds` in Python ints, for the common case where every range is numbers:
    no expression is built.  ``bind`` maps variable ids to the expressions they stand for (as
    :func:`range_bounds` substitutes them).  None when an end is not a number or the form is one
    interval arithmetic cannot bound; the bounds may be wider than :func:`index_bounds`' (no
    symbolic cancelling), never narrower."""
    if isinstance(e, IntImm):
        return e.value, e.value
    if isinstance(e, Var):
        if bind is not None:
            value = bind.get(id(e))
            if value is not None:
                return int_index_bounds(value, var_ranges)  # (substitution is not recursive)
        r = var_ranges.get(id(e))
        if r is None or not (isinstance(r[0], IntImm) and isinstance(r[1], IntImm)):
            return None
        return r[0].value, r[1].value
    if isinstance(e, (Add, Sub)):
        a = int_index_bounds(e.a, var_ranges, bind)
        b = a and int_index_bounds(e.b, var_ranges, bind)
        if not b:
            return None
        return (a[0] + b[0], a[1] + b[1]) if isinstance(e, Add) else (a[0] - b[1], a[1] - b[0])
    if isinstance(e, Mul):
        for x, c in ((e.a, e.b), (e.b, e.a)):
            if isinstance(c, IntImm):
                r = int_index_bounds(x, var_ranges, bind)
                if r is None:
                    return None
                k = c.value
                return (r[0] * k, r[1] * k) if k >= 0 else (r[1] * k, r[0] * k)
        return None
    if isinstance(e, (FloorDiv, FloorMod)) and isinstance(e.b, IntImm) and e.b.value > 0:
        r = int_index_bounds(e.a, var_ranges, bind)
        if r is None:
            return None
        k = e.b.value
        if isinstance(e, FloorDiv):
            return r[0] // k, r[1] // k
        return (r[0] % k, r[0] % k) if r[0] == r[1] else (0, k - 1)
    if isinstance(e, (Min, Max)):
        a = int_index_bounds(e.a, var_ranges, bind)
        b = a and int_index_bounds(e.b, var_ranges, bind)
        if not b:
            return None
        pick = min if isinstance(e, Min) else max
        return pick(a[0], b[0]), pick(a[1], b[1])
    return None


def int_range_bounds(rng: Range, var_ranges: VarRanges, bind: dict[int, PrimExpr] | None = None
                     ) -> tuple[int, int] | None:
    """:func:`range_bounds` in Python ints (see :func:`int_index_bounds`); None when not numbers."""
    first = int_index_bounds(rng.min, var_ranges, bind)
    extent = first and int_index_bounds(rng.extent, var_ranges, bind)
    if not extent:
        return None
    return first[0], first[1] + extent[1] - 1


def recompute_access_regions(block: Block) -> Block:
    """``block`` with its reads and writes recomputed from its body (after a primitive
    rewrote the body, the declared regions would be stale)."""
    reads, writes = get_block_read_write_region(block)
    return replace(block, reads=tuple(reads), writes=tuple(writes))


def is_const_true(e: PrimExpr) -> bool:
    """True for the constant ``T.bool(True)`` (a block with no predicate carries it)."""
    return isinstance(e, IntImm) and e.dtype == "bool" and e.value == 1


def is_padding_guard_only(realize: BlockRealize) -> bool:
    """True when the predicate only says "binding < domain end" for some iterators (the guard
    a non-dividing split adds), so the block still covers its whole domain."""
    if is_const_true(realize.predicate):
        return True
    for c in conjuncts(realize.predicate):
        if not isinstance(c, LT):
            return False
        # (a split in three guards ``(i0 * 5 + i1) * 6 + i2``, the binding ``i0 * 30 + i1 * 6 + i2``)
        guarded, bound = simplify(c.a), simplify(c.b)  # once per conjunct, not per iterator
        if not any(structural_equal(guarded, simplify(v))
                   and structural_equal(bound, simplify(iv.dom.min + iv.dom.extent))
                   for iv, v in zip(realize.block.iter_vars, realize.iter_values)) \
                and not _guards_fused_index(realize, guarded, bound):
            return False
    return True


def predicate_of_iterators(realize: BlockRealize) -> PrimExpr | None:
    """The block's predicate said of its iterators instead of its loops, when each loop it uses
    is one iterator's whole binding; else None.  Such a guard travels with the block to new loops:
    rfactor's ``k_0 * 16 + k_1 < 197`` over a row of 197 in 16 partial results is ``vk_0 * 16 +
    vk_1 < 197`` wherever the block goes (it is not a split's padding: the partial results'
    iterators cover 13 x 16 = 208 positions)."""
    bound = [(v, iv.var) for iv, v in zip(realize.block.iter_vars, realize.iter_values) if isinstance(v, Var)]
    used = vars_used(realize.predicate)
    if not used or not used <= {id(v) for v, _ in bound}:
        return None
    return substitute(realize.predicate, dict(bound))


def _guards_fused_index(realize: BlockRealize, guarded: PrimExpr, bound: PrimExpr) -> bool:
    """Whether ``guarded < bound`` says "the fused index < the fused extent": the iterators fed by
    the guard's loops were fused, then split without dividing (``v0 = f // 7``, ``v1 = f % 7``,
    the guard ``f < 6 * 7`` with ``f = o * 64 + i``, however the bindings were simplified since)."""
    loops = vars_used(guarded)
    users = [iv for iv, v in zip(realize.block.iter_vars, realize.iter_values) if vars_used(v) & loops]
    if len(users) < 2 or not all(isinstance(iv.dom.min, IntImm) and iv.dom.min.value == 0 for iv in users):
        return False
    extent: PrimExpr = users[0].dom.extent
    for iv in users[1:]:
        extent = extent * iv.dom.extent
    diff = simplify(bound - extent)  # symbolic extents may be multiplied in another order
    return isinstance(diff, IntImm) and diff.value == 0


def domain_guard(values: list[PrimExpr], domains: list[Range], loops: list[For | IterVar]) -> PrimExpr:
    """The predicate of a copy block bound to ``values``: ``T.bool(True)`` when the ``loops``
    around it (all of them, its own included, and the iterators of the blocks it sits in) keep
    each value inside its range in ``domains``, else ``lo <= v`` / ``v < lo + extent`` for each
    value that may leave it.

    A cache stage placed under the tail of a non-dividing split runs for the tail's padding
    iterations too; its consumer is guarded by the split's ``T.where`` and the copy must be
    as well, or it touches the buffer past its end."""
    ranged = [(f.loop_var, f.min, f.extent) if isinstance(f, For) else (f.var, f.dom.min, f.dom.extent)
              for f in loops]
    ranges = {id(v): (lo, lo + extent - 1) for v, lo, extent in ranged}
    bounds = {v: extent for v, lo, extent in ranged if isinstance(lo, IntImm) and lo.value == 0}

    def proved(cond: PrimExpr) -> bool:
        cond = simplify(cond, bounds)
        return isinstance(cond, IntImm) and bool(cond.value)

    conds: list[PrimExpr] = []
    for v, dom in zip(values, domains):
        b = index_bounds(v, ranges)
        end = simplify(dom.min + dom.extent)
        if b is None or not proved(b[0] >= dom.min):
            conds.append(dom.min <= v)
        if b is None or not proved(b[1] < end):
            conds.append(v < end)
    guard = const(True, "bool")
    for c in conds:
        guard = c if is_const_true(guard) else And(guard, c)
    return guard


def simplify(e: Any, bounds: dict | None = None) -> Any:
    """Simplify with the arith analyzer, knowing each loop variable's range."""
    return simplifier(bounds)(e)


def simplifier(bounds: dict | None = None) -> Callable[[Any], Any]:
    """:func:`simplify` with ``bounds`` for many expressions: one analyzer told the ranges once."""
    ana = Analyzer()
    for var, extent in (bounds or {}).items():
        ana.bind(var, Range(const(0, extent.dtype), extent))
    return ana.simplify


def loop_bounds(root: Stmt) -> dict[Var, PrimExpr]:
    """Extent of every zero-based loop in ``root`` (for the simplifier)."""
    return {s.loop_var: s.extent for s, _ in walk_stmts(root)
            if isinstance(s, For) and isinstance(s.min, IntImm) and s.min.value == 0}
