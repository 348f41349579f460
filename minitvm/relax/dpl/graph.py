"""Matching a :class:`PatternContext` in a dataflow block: several patterns, their use constraints.

The patterns a context's constraints name form a graph; its *roots* are those no other named
pattern contains (usually the last call of the chain).  Each root is matched against a binding
of the block -- looking through the block's earlier bindings, as ``rewrite_call`` does -- and
a sub-pattern named by two roots must match the same expression in both.  A match then maps
each named pattern to the variable bound to what it matched (or to the expression itself when
it is not bound in the block: a parameter, a constant), and holds when every constraint between
two matched patterns does: ``p.used_by(q, i)`` -- ``q``'s value reads ``p``'s variable (as
argument ``i``); ``p.only_used_by(q)`` -- and no other binding nor the block's outputs read it.
"""

from __future__ import annotations

from typing import Any, Iterator

from ..expr import Call, DataflowVar, Var
from ..expr_functor import ExprVisitor
from .pattern import (
    AndPattern,
    AttrPattern,
    CallPattern,
    DataTypePattern,
    DFPattern,
    NotPattern,
    OrPattern,
    PatternContext,
    ShapePattern,
    StructInfoPattern,
    TupleGetItemPattern,
    TuplePattern,
    UnorderedTuplePattern,
    _Matcher,
)

__all__ = ["graph_matches"]


def _children(p: DFPattern) -> list[DFPattern]:
    if isinstance(p, CallPattern):
        return [p.op, *(p.args or ())]
    if isinstance(p, (TuplePattern, UnorderedTuplePattern)):
        return list(p.fields)
    if isinstance(p, TupleGetItemPattern):
        return [p.tuple]
    if isinstance(p, (OrPattern, AndPattern)):
        return [p.left, p.right]
    if isinstance(p, NotPattern):
        return [p.reject]
    if isinstance(p, (AttrPattern, DataTypePattern, ShapePattern, StructInfoPattern)):
        return [p.pattern]
    return []


def _contained(p: DFPattern) -> set[DFPattern]:
    """Every pattern strictly inside ``p``."""
    out: set[DFPattern] = set()
    stack = _children(p)
    while stack:
        q = stack.pop()
        if q not in out:
            out.add(q)
            stack.extend(_children(q))
    return out


def _roots(ctx: PatternContext) -> list[DFPattern]:
    named = ctx.patterns()
    inside = set().union(*(_contained(p) for p in named)) if named else set()
    return [p for p in named if p not in inside]


class _Uses(ExprVisitor):
    """How many times each variable is read in an expression."""

    def __init__(self) -> None:
        self.count: dict[Var, int] = {}

    def visit_var_(self, op: Var) -> None:
        self.count[op] = self.count.get(op, 0) + 1

    def visit_dataflow_var_(self, op: Var) -> None:
        self.visit_var_(op)


def _uses(expr: Any) -> dict[Var, int]:
    counter = _Uses()
    counter.visit_expr(expr)
    return counter.count


class _Block:
    """A dataflow block's bindings, seen from the matcher: values, uses, who binds what."""

    def __init__(self, block: Any, var2val: dict[Var, Any]) -> None:
        self.bindings = list(block.bindings)
        self.value = {b.var: b.value for b in self.bindings}
        self.var2val = {**var2val, **self.value}
        self.var_of_value = {id(v): var for var, v in self.value.items()}
        self.uses_in = {b.var: _uses(b.value) for b in self.bindings}
        self.total: dict[Var, int] = {}
        for counts in self.uses_in.values():
            for v, n in counts.items():
                self.total[v] = self.total.get(v, 0) + n

    def var_for(self, expr: Any) -> Any:
        """The variable bound to ``expr`` in this block, else ``expr`` itself."""
        return self.var_of_value.get(id(expr), expr)

    def holds(self, producer: Var, consumer: Any, index: int, only: bool) -> bool:
        if consumer not in self.value:
            return False
        value = self.value[consumer]
        if index >= 0:
            used = isinstance(value, Call) and index < len(value.args) and value.args[index] is producer
        else:
            used = self.uses_in[consumer].get(producer, 0) > 0
        if not only:
            return used
        # a variable that is not a DataflowVar is an output: read after the block
        return used and isinstance(producer, DataflowVar) and \
            self.total.get(producer, 0) == self.uses_in[consumer].get(producer, 0)


def graph_matches(ctx: PatternContext, block: Any, var2val: dict[Var, Any]) -> Iterator[dict[DFPattern, Any]]:
    """Every match of ``ctx`` in the dataflow ``block`` (pattern -> variable), in binding order."""
    roots = _roots(ctx)
    if not roots:
        raise ValueError("PatternContext without patterns: make a call pattern or add a constraint inside it")
    blk = _Block(block, var2val)
    yield from _search(ctx, blk, roots, {}, {})


def _search(ctx: PatternContext, blk: _Block, roots: list[DFPattern], memo: dict, chosen: dict) -> Iterator[dict]:
    if len(chosen) == len(roots):
        match = {p: chosen.get(p) or blk.var_for(e) for p, e in memo.items()}
        if all(_constraint_holds(blk, match, c) for c in ctx.constraints):
            yield {p: match[p] for p in ctx.patterns() if p in match}
        return
    root = roots[len(chosen)]
    for b in blk.bindings:
        if b.var in chosen.values():
            continue
        matcher = _Matcher(blk.var2val)
        matcher.memo.update(memo)
        if matcher.visit(root, b.value):
            yield from _search(ctx, blk, roots, dict(matcher.memo), {**chosen, root: b.var})


def _constraint_holds(blk: _Block, match: dict, constraint: tuple) -> bool:
    producer, consumer, index, only = constraint
    if producer not in match or consumer not in match:
        return True  # one side unmatched (an alternative not taken): nothing to check
    p_var = match[producer]
    if not isinstance(p_var, Var) or p_var not in blk.value:
        return True  # a parameter or an inline expression: the tree match placed it already
    return blk.holds(p_var, match[consumer], index, only)
