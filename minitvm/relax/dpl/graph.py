"""Matching a :class:`PatternContext` in a dataflow block: several patterns, their use constraints.

The patterns a context's constraints name form a graph; its *roots* are those no other named
pattern contains (usually the last call of the chain).  Each root is matched against a binding
of the block -- looking through the block's earlier bindings, as ``rewrite_call`` does -- and
a sub-pattern named by two roots must match the same expression in both.  A match then maps
each named pattern to the variable bound to what it matched (or to the expression itself when
it is not bound in the block: a parameter, a constant), and holds when every constraint between
two matched patterns does: ``p.used_by(q, i)`` -- ``q``'s value reads ``p``'s variable (as
argument ``i``); ``p.only_used_by(q)`` -- and no other binding nor the block's outputs read it.

A region (``is_region(src, sink, ...)``) is found once ``src`` and ``sink`` are: the bindings
reachable from ``src`` from which ``sink`` is reachable.  Such a set is convex by construction
(a path that leaves it and comes back runs from ``src`` to ``sink`` too, so it was taken in),
which is why a binding between that fails ``path`` refuses the match instead of being left out.
A region's constraints hold for all its variables at once: ``region.only_used_by(q)`` -- each is
read only inside the region or by ``q``.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator

from ..analysis.struct_info_analysis import can_prove_shape_equal
from ..expr import DataflowVar, Var, struct_info_of
from ..expr_functor import ExprVisitor
from ..struct_info import TensorStructInfo
from .pattern import (
    AndPattern,
    AttrPattern,
    CallPattern,
    DataTypePattern,
    DFPattern,
    FunctionPattern,
    NotPattern,
    OrPattern,
    PatternContext,
    PredicatePattern,
    RegionPattern,
    ShapePattern,
    StructInfoPattern,
    TupleGetItemPattern,
    TuplePattern,
    UnorderedTuplePattern,
    _Matcher,
)

__all__ = ["graph_matches", "is_convex"]


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
    if isinstance(p, FunctionPattern):
        return [*(p.params or ()), p.body]
    if isinstance(p, (AttrPattern, DataTypePattern, ShapePattern, StructInfoPattern, PredicatePattern)):
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
    """The patterns matched against bindings of their own: neither inside another such pattern,
    nor a region (found from its ends), nor a region's per-binding ``path``/``contains``/``inputs``."""
    named = [p for p in ctx.patterns() if not isinstance(p, RegionPattern)]
    inside = set().union(*(_contained(p) for p in named)) if named else set()
    for part in (q for r in ctx.regions for q in r.parts()):
        inside |= {part} | _contained(part)
    return [p for p in named if p not in inside]


class _Uses(ExprVisitor):
    """How many times each variable is read in an expression, and the reads in order."""

    def __init__(self) -> None:
        self.count: dict[Var, int] = {}
        self.order: list[Var] = []

    def visit_var_(self, op: Var) -> None:
        self.count[op] = self.count.get(op, 0) + 1
        self.order.append(op)

    def visit_dataflow_var_(self, op: Var) -> None:
        self.visit_var_(op)


def _read_order(expr: Any) -> list[Var]:
    counter = _Uses()
    counter.visit_expr(expr)
    return counter.order


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
        self.users: dict[Var, list[Var]] = {}  # variable -> the bindings of the block that read it
        for var, counts in self.uses_in.items():
            for v in counts:
                self.users.setdefault(v, []).append(var)
        self._reach: dict[tuple[Var, bool], set[Var]] = {}
        # variables read but bound outside the block (parameters, earlier blocks), in order
        self.free = [v for v in self.users if v not in self.value and v not in var2val]

    def var_for(self, expr: Any) -> Any:
        """The variable bound to ``expr`` in this block, else ``expr`` itself."""
        return self.var_of_value.get(id(expr), expr)

    def reach(self, var: Var, forward: bool) -> set[Var]:
        """The bindings reachable from ``var`` along uses (``forward``: its readers, theirs ...;
        else the bindings it reads, theirs ...), ``var`` not included."""
        key = (var, forward)
        if key not in self._reach:
            step = self.users.get if forward else (lambda v: [u for u in self.uses_in.get(v, ()) if u in self.value])
            seen: set[Var] = set()
            stack = list(step(var) or ())
            while stack:
                v = stack.pop()
                if v not in seen:
                    seen.add(v)
                    stack.extend(step(v) or ())
            self._reach[key] = seen
        return self._reach[key]

    def holds(self, producers: tuple, consumers: tuple, index: int, only: bool) -> bool:
        """``used_by`` / ``only_used_by`` between two sides, each one variable or a region's."""
        if not all(c in self.value for c in consumers):
            return False
        if index >= 0 and len(producers) == 1 and len(consumers) == 1:
            # the index counts the variables the consumer reads, in order (through the tuple of
            # a call_dps_packed's arguments too): my_add(lv0, lv0) reads lv0 as 0 and as 1
            reads = _read_order(self.value[consumers[0]])
            used = index < len(reads) and reads[index] is producers[0]
        else:
            used = any(self.uses_in[c].get(p, 0) for c in consumers for p in producers)
        if not only or not used:
            return used
        # a variable the block binds that is not a DataflowVar is an output: read after the
        # block (a parameter is read only where the block reads it)
        inside = set(consumers) | set(producers)
        return all((isinstance(p, DataflowVar) or p not in self.value)
                   and all(u in inside for u in self.users.get(p, ())) for p in producers)


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
        for region in ctx.regions:
            found = _region(blk, region, match.get(region.src), match.get(region.sink))
            if found is None:
                return
            match[region] = found
        if all(_constraint_holds(blk, match, c) for c in ctx.constraints) and \
                all(_same_shapes(memo, c.patterns) for c in ctx.same_shapes):
            yield {p: match[p] for p in ctx.patterns() if p in match}
        return
    root = roots[len(chosen)]
    candidates = blk.bindings
    for region in ctx.regions:  # a region's sink is sought downstream of its src only, and the other way
        for end, other, forward in ((region.sink, region.src, True), (region.src, region.sink, False)):
            if end is root and other in chosen:
                near = blk.reach(chosen[other], forward)
                candidates = [b for b in candidates if b.var in near]
    for b in candidates:
        if b.var in chosen.values():
            continue
        matcher = _Matcher(blk.var2val)
        matcher.memo.update(memo)
        if matcher.visit(root, b.value):
            yield from _search(ctx, blk, roots, dict(matcher.memo), {**chosen, root: b.var})
    # a root may also be a variable the block reads but does not bind (a parameter: is_var("x"))
    for var in blk.free:
        if var in chosen.values():
            continue
        matcher = _Matcher(blk.var2val)
        matcher.memo.update(memo)
        if matcher.visit(root, var):
            yield from _search(ctx, blk, roots, dict(matcher.memo), {**chosen, root: var})


def _region(blk: _Block, region: RegionPattern, src: Any, sink: Any) -> tuple[Var, ...] | None:
    """The variables of ``region`` between the bindings ``src`` and ``sink`` (see the module
    docstring), or None when it does not match there."""
    if src not in blk.value or sink not in blk.value or sink not in blk.reach(src, True):
        return None
    between = blk.reach(src, True) & blk.reach(sink, False)
    if region.max_len is not None and len(between) > region.max_len:
        return None

    def matches(pattern: DFPattern, var: Var) -> bool:  # an alias (a = b) is no match of its own, as in rewrite_call
        return not isinstance(blk.value[var], Var) and _Matcher(blk.var2val).match(pattern, blk.value[var])

    if not all(matches(region.path, v) for v in between):
        return None  # what matches is not convex: a path leaves it through this binding and comes back
    if region.contains is not None and not any(matches(region.contains, v) for v in between):
        return None
    inside = between | {src, sink}
    grown = region.inputs is not None
    while grown:  # producers whose every use is inside, until none is left
        grown = False
        for b in reversed(blk.bindings):  # readers before what they read: most join in one sweep
            v = b.var
            if v not in inside and isinstance(v, DataflowVar) and blk.users.get(v) \
                    and all(u in inside for u in blk.users[v]) and matches(region.inputs, v):
                inside.add(v)
                grown = True
    return tuple(b.var for b in blk.bindings if b.var in inside and b.var is not sink)


def _same_shapes(memo: dict, patterns: list[DFPattern]) -> bool:
    """The tensors these patterns matched have provably equal shapes (an unmatched one: no test)."""
    shapes = []
    for p in patterns:
        if p in memo:
            sinfo = struct_info_of(memo[p])
            if not isinstance(sinfo, TensorStructInfo) or sinfo.shape is None:
                return False
            shapes.append(sinfo.shape)
    return all(can_prove_shape_equal(shapes[0], other) for other in shapes[1:])


def _side(match: dict, pattern: DFPattern) -> tuple:
    value = match[pattern]
    return value if isinstance(pattern, RegionPattern) else (value,)


def _constraint_holds(blk: _Block, match: dict, constraint: tuple) -> bool:
    producer, consumer, index, only = constraint
    if producer not in match or consumer not in match:
        return True  # one side unmatched (an alternative not taken): nothing to check
    producers = _side(match, producer)
    if not all(isinstance(p, Var) and (p in blk.value or p in blk.users) for p in producers):
        return True  # an inline expression: the tree match placed it already
    return blk.holds(producers, _side(match, consumer), index, only)


def is_convex(block: Any, variables: Iterable[Any]) -> bool:
    """Whether no path of uses in the dataflow ``block`` leaves the bindings of ``variables`` and
    comes back into them: the condition for computing them together as one function (anything
    else among ``variables`` -- a parameter, a constant -- reads nothing, so it cannot close a path)."""
    blk = _Block(block, {})
    members = {v for v in variables if isinstance(v, Var) and v in blk.value}
    leaving = {u for v in members for u in blk.users.get(v, ()) if u not in members}
    return not any(blk.reach(u, True) & members for u in leaving)
