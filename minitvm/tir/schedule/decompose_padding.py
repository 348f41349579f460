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

from dataclasses import dataclass
from typing import Any

from ...arith import Analyzer
from ...ir import replace
from ...ir.structural import structural_equal
from ..analysis import uses_var
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
from ..functor import post_order_visit, substitute
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
    found: list = []
    post_order_visit(value, lambda n: found.append(n) if isinstance(n, Var) else None)
    return any(uses_var(e, v) for v in found)


@dataclass
class _Padding:
    """The padding pattern of a block: ``store`` of ``if_then_else(in_bound, in_value, pad_value)``."""

    store: BufferStore
    in_value: PrimExpr
    pad_value: PrimExpr
    in_bound: PrimExpr  # the in-bound predicate, in loop variables (with the block's predicate)
    regions: list[Range]  # each iterator's in-bound region


def decompose_padding(root: Stmt, realize: BlockRealize, loop: For) -> tuple[Stmt, str]:
    """``root`` with ``realize``'s padding block decomposed at ``loop``; returns the new tree and
    the name of the constant-filling block.  Steps: check the block and find its loops, match
    the padding pattern, build the constant-filling nest and the in-bound nest, and put the
    first right before the loop."""
    what = f"cannot decompose_padding of block {realize.block.name_hint}"
    loops, copied, rebuilt_top = _loops_to_rebuild(root, realize, loop, what)
    ana = Analyzer()
    for lp in loops:
        ana.bind(lp.loop_var, Range(lp.min, lp.extent))
    pad = _match_padding(realize, ana, f"{what}: the block must match the padding pattern: ")
    # a unit loop that is not copied contributes its start (TVM's simplifier knows its range)
    unit = {lp.loop_var: lp.min for lp in loops if is_const_int(lp.extent, 1)}
    const_nest = _const_fill_nest(realize, pad, copied, unit, ana)
    rebuilt = loops[: next(k for k, lp in enumerate(loops) if lp is rebuilt_top) + 1]
    in_nest, in_realize = _in_bound_nest(realize, pad, loops, rebuilt, unit)
    out = replace_stmt(root, rebuilt_top, in_nest)
    anchor = in_nest if rebuilt_top is loop else next(s for s in ancestors(out, in_realize) if isinstance(s, For)
                                                      and s.loop_var is loop.loop_var)
    parent = ancestors(out, anchor)[-1]
    if isinstance(parent, SeqStmt):  # spliced into the sequence, as TVM flattens it
        k = next(k for k, x in enumerate(parent.seq) if x is anchor)
        out = replace_stmt(out, parent, SeqStmt(parent.seq[:k] + (const_nest, anchor) + parent.seq[k + 1:]))
    else:
        out = replace_stmt(out, anchor, SeqStmt((const_nest, anchor)))
    return out, f"{realize.block.name_hint}_pad_const"


def _loops_to_rebuild(root: Stmt, realize: BlockRealize, loop: For, what: str) -> tuple[list[For], list[For], For]:
    """The block is complete and ``loop`` is around it.  Returns the loops of its scope
    around it (innermost first, as TVM walks them), those the constant fill copies (up to
    ``loop``) and the highest loop the in-bound copy rebuilds (single-child loops only)."""
    path = ancestors(root, realize)
    scope = next((s for s in reversed(path) if isinstance(s, Block)), None)
    why = complete_block_problem(realize, scope) if scope is not None else "it is the root block"
    if why is not None:
        raise ScheduleError(f"{what}: it is not a complete block ({why})")
    loops_outer_first = [s for s in path[path.index(scope) + 1:] if isinstance(s, For)]
    if not any(lp is loop for lp in loops_outer_first):
        raise ScheduleError(f"{what}: loop {loop.loop_var.name} is not an ancestor of the block")
    loops = list(reversed(loops_outer_first))
    copied = loops[: next(k for k, lp in enumerate(loops) if lp is loop) + 1]
    rebuilt_top = None
    for lp in copied:
        if lp is loop:
            rebuilt_top = lp
            break
        if not isinstance(lp.body, (For, BlockRealize)):
            break  # a loop holding more than one statement is not rebuilt
        rebuilt_top = lp
    return loops, copied, rebuilt_top


def _match_padding(realize: BlockRealize, ana: Analyzer, pattern: str) -> _Padding:
    """A single store of ``if_then_else(pred, in-bound value, constant)`` whose predicate is
    not trivial and bounds each iterator on its own; each iterator's in-bound region comes
    from those bounds, within its binding's range."""
    block = realize.block
    store = block.body
    if not isinstance(store, BufferStore):
        raise ScheduleError(pattern + "its body must be a single BufferStore to the written buffer")
    value = store.value
    if not _is_if_then_else(value):
        raise ScheduleError(pattern + "the stored value must be T.if_then_else(padding predicate, value, pad)")
    cond, in_value, pad_value = value.args
    if not isinstance(pad_value, (IntImm, FloatImm)):
        raise ScheduleError(pattern + "the pad value must be a constant")
    pred_terms = _conjuncts(substitute(cond, {iv.var: v for iv, v in zip(block.iter_vars, realize.iter_values)}))
    conjuncts = pred_terms + _conjuncts(realize.predicate)
    in_bound = None
    for c in conjuncts:
        in_bound = c if in_bound is None else And(in_bound, c)
    if in_bound is None or ana.can_prove(in_bound):
        raise ScheduleError(pattern + "the in-bound predicate is trivial (it holds everywhere)")
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
    if not all(used[: len(pred_terms)]):
        raise ScheduleError(pattern + "the block iterators are not independent with respect to the "
                            "padding condition")
    return _Padding(store, in_value, pad_value, in_bound, regions)


def _const_fill_nest(realize: BlockRealize, pad: _Padding, copied: list[For], unit: dict, ana: Analyzer) -> Stmt:
    """``<name>_pad_const``: the block writing the pad value everywhere, in a copy of the
    loops up to the given one."""
    block = realize.block
    const_vars = {iv.var: Var(iv.var.name, iv.var.dtype) for iv in block.iter_vars}
    const_loops = {lp.loop_var: Var(lp.loop_var.name, lp.loop_var.dtype) for lp in copied}
    repl = {**const_vars, **const_loops}
    outer_units = {v: m for v, m in unit.items() if v not in repl}

    def rewrite(e: Any) -> Any:
        e = substitute(e, {**outer_units, **repl})
        return ana.simplify(e) if isinstance(e, PrimExpr) else e

    write = block.writes[0]
    const_block = Block(
        name_hint=f"{block.name_hint}_pad_const",
        iter_vars=tuple(replace(iv, var=const_vars[iv.var], iter_type="spatial") for iv in block.iter_vars),
        reads=(),
        writes=(BufferRegion(write.buffer, tuple(Range(rewrite(r.min), rewrite(r.extent)) for r in write.region)),),
        body=BufferStore(pad.store.buffer, pad.pad_value, tuple(rewrite(i) for i in pad.store.indices)),
    )
    nest: Stmt = BlockRealize(tuple(rewrite(v) for v in realize.iter_values), rewrite(realize.predicate),
                              const_block)
    for lp in copied:
        nest = For(const_loops[lp.loop_var], lp.min, lp.extent, ForKind.SERIAL, nest)
    return nest


def _in_bound_nest(realize: BlockRealize, pad: _Padding, loops: list[For], rebuilt: list[For],
                   unit: dict) -> tuple[Stmt, BlockRealize]:
    """The original block over the in-bound region only: iterator domains start at 0 (the
    region's start added back in the body); a loop binding an iterator directly shrinks to
    the region, any other binding is shifted and guarded by the in-bound predicate."""
    block = realize.block
    loop_ranges = {id(lp.loop_var): (lp.min, lp.extent) for lp in rebuilt}
    repl = {}
    new_iters, new_values = [], []
    ana = Analyzer()
    for lp in loops:
        ana.bind(lp.loop_var, Range(lp.min, lp.extent))
    for iv, value_k, region in zip(block.iter_vars, realize.iter_values, pad.regions):
        new_var = Var(iv.var.name, iv.var.dtype)
        new_iters.append(replace(iv, var=new_var, dom=Range(const(0, new_var.dtype), region.extent),
                                 iter_type="spatial"))
        repl[iv.var] = new_var + region.min if not is_const_int(region.min, 0) else new_var
        if isinstance(value_k, Var) and id(value_k) in loop_ranges:
            loop_ranges[id(value_k)] = (const(0, value_k.dtype), region.extent)
            new_values.append(value_k)
            if not is_const_int(region.min, 0):
                repl[value_k] = value_k + region.min
            ana.bind(value_k, Range(const(0, value_k.dtype), region.extent), allow_override=True)
        else:
            outer_units = {v: m for v, m in unit.items() if id(v) not in loop_ranges}
            new_values.append(ana.simplify(substitute(value_k, outer_units) - region.min))

    def rewrite(e: Any) -> Any:
        return ana.simplify(substitute(e, repl))

    def shifted(r: BufferRegion) -> BufferRegion:
        return BufferRegion(r.buffer, tuple(Range(rewrite(x.min), rewrite(x.extent)) for x in r.region))

    store = pad.store
    in_block = replace(block, iter_vars=tuple(new_iters), reads=tuple(shifted(r) for r in block.reads),
                       writes=tuple(shifted(w) for w in block.writes),
                       body=BufferStore(store.buffer, rewrite(pad.in_value), tuple(rewrite(i) for i in store.indices)))
    in_realize = BlockRealize(tuple(new_values), rewrite(pad.in_bound), in_block)
    nest: Stmt = in_realize
    for lp in rebuilt:
        lo, ext = loop_ranges[id(lp.loop_var)]
        nest = replace(lp, min=lo, extent=ext, body=nest)
    return nest, in_realize
