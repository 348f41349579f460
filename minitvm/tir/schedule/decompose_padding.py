"""decompose_padding: split a padding block into "fill with the pad value" and "copy the inside".

A padding block ``P[i] = T.if_then_else(lo <= i and i < hi, X[i - lo], 0)`` becomes, as in TVM:

* ``<name>_pad_const``: a copy of the loops from the block up to the given loop (inclusive)
  writing the constant everywhere, placed right before that loop;
* ``<name>``: the original block over the in-bound region only (its iterator domains start
  at 0 and the region's start is added back in its body); a loop that binds an iterator
  directly gets the region's extent, any other binding is shifted and guarded by the
  in-bound predicate.

The in-bound region of each iterator comes from the predicate's constant bounds on that
iterator's binding (TVM derives it with its iterator-map analysis); a predicate that holds
everywhere is refused ("trivial"), as is one whose terms mix iterators.
"""

from __future__ import annotations

from typing import Any

from ...arith import Analyzer
from ...ir import replace
from ...ir.structural import structural_equal
from ..buffer import BufferRegion
from ..expr import (
    GE,
    GT,
    LE,
    LT,
    And,
    Call,
    FloatImm,
    IntImm,
    PrimExpr,
    Range,
    Var,
    const,
    is_const_int,
)
from ..functor import substitute
from ..stmt import Block, BlockRealize, BufferStore, For, ForKind, SeqStmt, Stmt
from .checks import complete_block_problem
from .error import ScheduleError
from .tree import ancestors, replace_stmt

__all__ = ["decompose_padding"]


def _conjuncts(e: PrimExpr) -> list[PrimExpr]:
    if isinstance(e, And):
        return _conjuncts(e.a) + _conjuncts(e.b)
    if isinstance(e, Call) and getattr(e.op, "name", "") in ("tir.likely", "likely"):
        return _conjuncts(e.args[0])
    if isinstance(e, IntImm) and e.dtype == "bool" and e.value == 1:
        return []
    return [e]


def _is_if_then_else(e: Any) -> bool:
    return isinstance(e, Call) and getattr(e.op, "name", str(e.op)) in ("tir.if_then_else", "if_then_else")


def _bound_of(c: PrimExpr, value: PrimExpr, ana: Analyzer) -> tuple[str, PrimExpr] | None:
    """("lo", b) for ``b <= value``; ("hi", b) for ``value < b`` (exclusive), else None."""
    same = lambda x: structural_equal(ana.simplify(x), ana.simplify(value))  # noqa: E731
    if isinstance(c, (LE, LT, GE, GT)):
        a, b = c.a, c.b
        if isinstance(c, (GE, GT)):
            a, b = b, a  # now "a <= b" or "a < b"
        strict = isinstance(c, (LT, GT))
        if same(b) and not _uses(a, value):
            return "lo", (a + 1 if strict else a)
        if same(a) and not _uses(b, value):
            return "hi", (b if strict else b + 1)
    return None


def _uses(e: PrimExpr, value: PrimExpr) -> bool:
    from ..analysis import uses_var
    from ..functor import post_order_visit

    found: list = []
    post_order_visit(value, lambda n: found.append(n) if isinstance(n, Var) else None)
    return any(uses_var(e, v) for v in found)


def decompose_padding(root: Stmt, realize: BlockRealize, loop: For) -> tuple[Stmt, str]:
    """``root`` with ``realize``'s padding block decomposed at ``loop``; returns the new tree and
    the name of the constant-filling block."""
    block = realize.block
    name = block.name_hint
    what = f"cannot decompose_padding of block {name}"
    path = ancestors(root, realize)
    scope = next((s for s in reversed(path) if isinstance(s, Block)), None)
    why = complete_block_problem(realize, scope) if scope is not None else "it is the root block"
    if why is not None:
        raise ScheduleError(f"{what}: it is not a complete block ({why})")
    loops_outer_first = [s for s in path[path.index(scope) + 1:] if isinstance(s, For)]
    if not any(lp is loop for lp in loops_outer_first):
        raise ScheduleError(f"{what}: loop {loop.loop_var.name} is not an ancestor of the block")
    loops = list(reversed(loops_outer_first))  # innermost first, as TVM walks them
    ana = Analyzer()
    for lp in loops:
        ana.bind(lp.loop_var, Range(lp.min, lp.extent))
    # the loops to copy (up to the given one) and the highest single-child loop to rebuild
    in_bound_pos = None
    upto = loops[: next(k for k, lp in enumerate(loops) if lp is loop) + 1]
    found = False
    for lp in upto:
        if lp is loop:
            if not found:
                in_bound_pos = lp
            break
        if not isinstance(lp.body, (For, BlockRealize)):
            found = True  # a loop holding more than one statement is not rebuilt
            break
        in_bound_pos = lp
    # the padding pattern: a single store of if_then_else(pred, in-bound value, constant)
    store = block.body
    pattern = f"{what}: the block must match the padding pattern: "
    if not isinstance(store, BufferStore):
        raise ScheduleError(pattern + "its body must be a single BufferStore to the written buffer")
    value = store.value
    if not _is_if_then_else(value):
        raise ScheduleError(pattern + "the stored value must be T.if_then_else(padding predicate, value, pad)")
    cond, in_value, pad_value = value.args
    if not isinstance(pad_value, (IntImm, FloatImm)):
        raise ScheduleError(pattern + "the pad value must be a constant")
    bindings = {iv.var: v for iv, v in zip(block.iter_vars, realize.iter_values)}
    pred = substitute(cond, bindings)
    conjuncts = _conjuncts(pred) + _conjuncts(realize.predicate)
    in_bound_pred = None
    for c in conjuncts:
        in_bound_pred = c if in_bound_pred is None else And(in_bound_pred, c)
    if in_bound_pred is None or ana.can_prove(in_bound_pred):
        raise ScheduleError(pattern + "the in-bound predicate is trivial (it holds everywhere)")
    # each iterator's in-bound region: the predicate's bounds on its binding, within its range
    regions: list[Range] = []
    used = [False] * len(conjuncts)
    for value_k in realize.iter_values:
        lo_e, hi_e = ana.interval(value_k)
        lo: PrimExpr = const(lo_e, value_k.dtype)
        hi: PrimExpr = const(hi_e + 1, value_k.dtype)
        for k, c in enumerate(conjuncts):
            bound = _bound_of(c, value_k, ana)
            if bound is None:
                continue
            used[k] = True
            kind, b = bound
            b = ana.simplify(b)
            if kind == "lo":
                lo = b if ana.can_prove(b >= lo) else lo
            else:
                hi = b if ana.can_prove(b <= hi) else hi
        regions.append(Range(lo, ana.simplify(hi - lo)))
    if not all(used[: len(_conjuncts(pred))]):
        raise ScheduleError(pattern + "the block iterators are not independent with respect to the "
                            "padding condition")

    # the constant-filling copy
    const_vars = {iv.var: Var(iv.var.name, iv.var.dtype) for iv in block.iter_vars}
    const_loops = {lp.loop_var: Var(lp.loop_var.name, lp.loop_var.dtype) for lp in upto}
    repl = {**const_vars, **const_loops}

    # a unit loop that is not copied contributes its start (TVM's simplifier knows its range)
    unit = {lp.loop_var: lp.min for lp in loops if isinstance(lp.extent, IntImm) and lp.extent.value == 1}

    def rewrite(e: Any) -> Any:
        e = substitute(e, {**{v: m for v, m in unit.items() if v not in repl}, **repl})
        return ana.simplify(e) if isinstance(e, PrimExpr) else e

    write = block.writes[0]
    const_block = Block(
        name_hint=f"{name}_pad_const",
        iter_vars=tuple(replace(iv, var=const_vars[iv.var], iter_type="spatial") for iv in block.iter_vars),
        reads=(),
        writes=(BufferRegion(write.buffer, tuple(Range(rewrite(r.min), rewrite(r.extent)) for r in write.region)),),
        body=BufferStore(store.buffer, pad_value, tuple(rewrite(i) for i in store.indices)),
    )
    const_realize = BlockRealize(tuple(rewrite(v) for v in realize.iter_values), rewrite(realize.predicate),
                                 const_block)
    const_stmt: Stmt = const_realize
    for lp in upto:
        const_stmt = For(const_loops[lp.loop_var], lp.min, lp.extent, ForKind.SERIAL, const_stmt)

    # the in-bound copy
    rebuilt = loops[: next(k for k, lp in enumerate(loops) if lp is in_bound_pos) + 1]
    loop_ranges = {id(lp.loop_var): (lp.min, lp.extent) for lp in rebuilt}
    repl = {}
    new_iters, new_values = [], []
    ana2 = Analyzer()
    for lp in loops:
        ana2.bind(lp.loop_var, Range(lp.min, lp.extent))
    for iv, value_k, region in zip(block.iter_vars, realize.iter_values, regions):
        new_var = Var(iv.var.name, iv.var.dtype)
        new_iters.append(replace(iv, var=new_var, dom=Range(const(0, new_var.dtype), region.extent),
                                 iter_type="spatial"))
        repl[iv.var] = new_var + region.min if not is_const_int(region.min, 0) else new_var
        if isinstance(value_k, Var) and id(value_k) in loop_ranges:
            # a loop binding the iterator directly shrinks to the region instead of a guard
            loop_ranges[id(value_k)] = (const(0, value_k.dtype), region.extent)
            new_values.append(value_k)
            if not is_const_int(region.min, 0):
                repl[value_k] = value_k + region.min
            ana2.bind(value_k, Range(const(0, value_k.dtype), region.extent), allow_override=True)
        else:
            outer_units = {v: m for v, m in unit.items() if id(v) not in loop_ranges}
            new_values.append(ana2.simplify(substitute(value_k, outer_units) - region.min))

    def rewrite2(e: Any) -> Any:
        return ana2.simplify(substitute(e, repl))

    def region2(r: BufferRegion) -> BufferRegion:
        return BufferRegion(r.buffer, tuple(Range(rewrite2(x.min), rewrite2(x.extent)) for x in r.region))

    in_block = replace(block, iter_vars=tuple(new_iters), reads=tuple(region2(r) for r in block.reads),
                       writes=tuple(region2(w) for w in block.writes),
                       body=BufferStore(store.buffer, rewrite2(in_value), tuple(rewrite2(i) for i in store.indices)))
    new_pred = rewrite2(in_bound_pred)
    in_realize = BlockRealize(tuple(new_values), new_pred, in_block)
    in_stmt: Stmt = in_realize
    for lp in rebuilt:
        lo, ext = loop_ranges[id(lp.loop_var)]
        in_stmt = replace(lp, min=lo, extent=ext, body=in_stmt)

    out = replace_stmt(root, in_bound_pos, in_stmt)
    anchor = in_stmt if in_bound_pos is loop else next(s for s in ancestors(out, in_realize) if isinstance(s, For)
                                                          and s.loop_var is loop.loop_var)
    parent = ancestors(out, anchor)[-1]
    if isinstance(parent, SeqStmt):  # spliced into the sequence, as TVM flattens it
        k = next(k for k, x in enumerate(parent.seq) if x is anchor)
        out = replace_stmt(out, parent, SeqStmt(parent.seq[:k] + (const_stmt, anchor) + parent.seq[k + 1:]))
    else:
        out = replace_stmt(out, anchor, SeqStmt((const_stmt, anchor)))
    return out, const_block.name_hint
