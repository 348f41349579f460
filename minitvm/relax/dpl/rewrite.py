"""``rewrite_call`` / ``rewrite_bindings``: replace every match of a pattern (of a
:class:`PatternContext`) in a function by what a rewriter returns.

As TVM does it: the bindings of each block are visited in order; a binding whose value matches
the pattern (looking through the block's earlier bindings that were not rewritten) is handed to
``rewriter(matched_value, matches)``; if that returns another expression, it becomes the new
value of the binding.  Afterwards the function is normalized (nested calls bound to new
variables) and tidied -- trivial ``a = b`` bindings folded, repeated values bound once,
unused bindings removed -- and the whole is repeated until nothing changes any more.
``rewrite_bindings`` does the same with a context's patterns over a dataflow block's bindings.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

from ...ir.op import Op
from ...ir.structural import structural_equal
from ..analysis import get_var2val, remove_all_unused
from ..analysis.purity import contains_impure_call
from ..expr import (
    Binding,
    BindingBlock,
    Call,
    DataflowBlock,
    Function,
    If,
    MatchCast,
    SeqExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
    has_scope,
    is_normalized,
)
from ..expr_functor import ExprMutator
from .graph import graph_matches
from .pattern import (
    AndPattern,
    AttrPattern,
    CallPattern,
    DataTypePattern,
    DFPattern,
    ExprPattern,
    OrPattern,
    PatternContext,
    PredicatePattern,
    ShapePattern,
    StructInfoPattern,
    _Matcher,
)

__all__ = ["rewrite_call", "rewrite_bindings", "get_var2val"]

Rewriter = Callable[[Any, "dict[DFPattern, Any]"], Any]

_MAX_ROUNDS = 100  # a rewriter that keeps changing its own output would loop for ever


def rewrite_call(pattern: DFPattern, rewriter: Rewriter, func: Function) -> Function:
    """``func`` with each value matching ``pattern`` replaced by ``rewriter(value, matches)``.

    ``matches`` maps each sub-pattern to the expression it matched (for a sub-pattern that
    matched a variable bound earlier in the block: the value bound to it).  Return the value
    itself (or None) to leave a match alone.  The result is the same object when nothing
    matched.
    """
    if not isinstance(pattern, DFPattern):
        raise TypeError(f"rewrite_call: pattern must be a DFPattern (is_op(...)(...), wildcard() ...), "
                        f"got {type(pattern).__name__}")
    if not callable(rewriter):
        raise TypeError(f"rewrite_call: rewriter must be a function (matched_expr, matches) -> Expr, got {rewriter!r}")
    if not isinstance(func, Function):
        raise TypeError(f"rewrite_call rewrites a relax.Function, got {type(func).__name__}; "
                        "for a module, rewrite each function: mod[name] = rewrite_call(pattern, rewriter, mod[name])")
    return _until_stable(lambda: _Rewrite(pattern, rewriter), func)


def rewrite_bindings(ctx: PatternContext, rewriter: Callable[[dict, dict], dict], func: Function) -> Function:
    """``func`` with the bindings of each match of ``ctx`` (see :class:`PatternContext`) rewritten.

    ``rewriter(matchings, bindings)`` gets each pattern of the context -> the variable bound to
    what it matched (a parameter or constant: itself; a region: the tuple of its variables) and
    the block's variable -> value map, and returns ``{variable: new value}`` for the bindings
    to replace (empty: leave this match alone).  Bindings nothing reads any more are removed.
    Only dataflow blocks are searched, as in TVM.
    """
    if not isinstance(ctx, PatternContext):
        raise TypeError(f"rewrite_bindings: ctx must be a PatternContext, got {type(ctx).__name__}")
    if not callable(rewriter):
        raise TypeError("rewrite_bindings: rewriter must be a function (matchings, bindings) -> dict, "
                        f"got {rewriter!r}")
    if not isinstance(func, Function):
        raise TypeError(f"rewrite_bindings rewrites a relax.Function, got {type(func).__name__}")
    return _until_stable(lambda: _RewriteBindings(ctx, rewriter), func)


def _until_stable(make_round: Callable[[], ExprMutator], func: Function) -> Function:
    current = func
    hashes: dict = {}  # the values' structural hashes, for every round's tidying
    for _ in range(_MAX_ROUNDS):
        step = make_round().visit_expr(current)
        if step is current:
            return current
        step = _tidy(step, hashes)
        if structural_equal(step, current):
            return current
        current = step
    return current


def _tidy(func: Function, hashes: dict) -> Function:
    """Fold trivial bindings, bind repeated values once and drop unused ones, until stable."""
    # lazy: cycle -- relax.transform's rewrites (FoldBatchnormToConv2D ...) are written with relax.dpl
    from ..transform.canonicalize_bindings import canonicalize_bindings
    from ..transform.eliminate_common_subexpr import eliminate_common_subexpr

    while True:
        new = canonicalize_bindings(func)
        new = eliminate_common_subexpr(new, hashes=hashes)
        new = remove_all_unused(new)
        if new is func or structural_equal(new, func):
            return new
        func = new


class _Rewrite(ExprMutator):
    """One round: rewrite the matching bindings of every block, then re-emit them normalized."""

    def __init__(self, pattern: Any, rewriter: Callable):
        super().__init__()
        self.pattern = pattern
        self.rewriter = rewriter
        #: the body of the function being rewritten when that is normalized (see visit_seq_expr_)
        self.normalized_body: Any = None

    def visit_function_(self, op: Function) -> Any:
        saved, self.normalized_body = self.normalized_body, op.body if is_normalized(op) else None
        try:
            return super().visit_function_(op)
        finally:
            self.normalized_body = saved

    def visit_seq_expr_(self, op: SeqExpr) -> Any:
        # inner functions and branches first; a normalized body without any is what the walk
        # would return, so it is not walked
        flat = op is self.normalized_body and not any(has_scope(b.value) for block in op.blocks
                                                      for b in block.bindings) and not has_scope(op.body)
        seq = op if flat else super().visit_seq_expr_(op)
        blocks = [self._rewrite_block(b) for b in seq.blocks]
        if all(a is b for a, b in zip(blocks, seq.blocks)):
            return seq
        # re-emit the rewritten values through the builder: nested calls get their own bindings
        # (the values of a normalized body are normalized already; only the new ones need it)
        kept = {id(b.value) for block in op.blocks for b in block.bindings} if flat else set()
        new_blocks = []
        for block in blocks:
            if isinstance(block, DataflowBlock):
                self.builder_.begin_dataflow_block()
            else:
                self.builder_.begin_binding_block()
            try:
                for b in block.bindings:
                    value = self._renormalize(b.value, id(b.value) in kept)
                    if isinstance(b, MatchCast):
                        self.builder_.emit_normalized(MatchCast(b.var, value, b.struct_info))
                    else:
                        var = self.with_struct_info(b.var, value.struct_info)
                        if var is not b.var:
                            self.set_var_remap(b.var, var)
                        self.builder_.emit_normalized(VarBinding(var, value))
            finally:
                new_blocks.append(self.builder_.end_block())
        return SeqExpr(tuple(b for b in new_blocks if b.bindings), self.visit_expr(seq.body))

    def _renormalize(self, value: Any, normalized: bool = False) -> Any:
        """``value`` with earlier new variables followed, then normalized in one pass, as TVM
        normalizes a rewriter's result: a nested call's operands are bound just before it
        (``add(matmul(x, f(A)), matmul(x, f(B)))`` binds f(A), the first matmul, f(B), ...).
        A ``normalized`` value that follows no new variable is returned as it is."""
        def remap(e: Any) -> Any:
            if isinstance(e, Var):
                return self.var_remap_.get(e, e)
            if isinstance(e, Call):
                args = [remap(a) for a in e.args]
                return e if all(a is b for a, b in zip(args, e.args)) else Call(e.op, args, e.attrs, e.sinfo_args)
            if isinstance(e, Tuple):
                fields = [remap(f) for f in e.fields]
                return e if all(a is b for a, b in zip(fields, e.fields)) else Tuple(fields)
            if isinstance(e, TupleGetItem):
                inner = remap(e.tuple_value)
                return e if inner is e.tuple_value else TupleGetItem(inner, e.index)
            return self.visit_expr(e)  # functions, branches, leaves: the mutator's own way
        remapped = remap(value)
        return remapped if normalized and remapped is value else self.builder_.normalize(remapped)

    def _rewrite_block(self, block: BindingBlock) -> BindingBlock:
        """The block with matching values replaced (a dataflow block as one piece; an ordinary
        block in pieces between impure calls and branches, which nothing may move across)."""
        lookup: dict[Var, Any] = {}
        changed = False
        bindings: list[Binding] = []
        in_dataflow = isinstance(block, DataflowBlock)
        for b in block.bindings:
            value = b.value
            if not in_dataflow and (isinstance(value, If) or contains_impure_call(value, unknown_is_impure=False)):
                lookup = {}  # a barrier: later matches do not look through earlier bindings
                bindings.append(b)
                continue
            # an alias (``gv = lv``) is no match of its own: the matcher would look through it to
            # ``lv``'s value, which its own binding has already offered to the rewriter
            new = None if isinstance(value, Var) else self._rewrite_value(value, lookup)
            if new is None:
                lookup[b.var] = value
                bindings.append(b)
            else:
                changed = True
                bindings.append(MatchCast(b.var, new, b.struct_info) if isinstance(b, MatchCast)
                                else VarBinding(b.var, new))
        if not changed:
            return block
        return type(block)(tuple(bindings))

    def _rewrite_value(self, value: Any, lookup: dict[Var, Any]) -> Any:
        """The rewriter's replacement for ``value``, or None. A top-level ``p | q`` tries its
        alternatives in order, and one whose rewriter declines (returns the value itself) lets
        the next try, as in TVM."""
        head = _Matcher(lookup).unwrap(value)
        head = head.op.name if isinstance(head, Call) and isinstance(head.op, Op) else None
        for alternative, ors, ops in _alternatives_with_ops(self.pattern):
            if ops is not None and head not in ops:
                continue  # a call of another operator (or no call): the matcher would say no
            matches = alternative.extract_matched_expr(value, lookup)
            if matches is None:
                continue
            for p in ors:  # the `|` patterns above the alternative matched the value too
                matches[p] = _Matcher(lookup).unwrap(value)
            new = self.rewriter(value, matches)
            if new is not None and new is not value:
                return new
        return None


def _alternatives_with_ops(pattern: DFPattern) -> list[tuple[DFPattern, tuple, frozenset[str] | None]]:
    """:func:`_alternatives`, each with the operators a call it matches can have (None: any
    expression may match), worked out once per pattern."""
    found = _ALTERNATIVES.get(pattern)
    if found is None:
        found = _ALTERNATIVES[pattern] = [(a, ors, _head_ops(a)) for a, ors in _alternatives(pattern)]
    return found


#: pattern -> its alternatives (patterns are compared by identity; a pass's patterns are module constants)
_ALTERNATIVES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _head_ops(p: DFPattern) -> frozenset[str] | None:
    """The operator names a call matching ``p`` must have, or None when ``p`` may match other
    expressions (a wildcard, a variable, a call of a callee that is no fixed operator)."""
    if isinstance(p, CallPattern):
        return frozenset([p.op.expr.name]) if isinstance(p.op, ExprPattern) and isinstance(p.op.expr, Op) else None
    if isinstance(p, OrPattern):
        left, right = _head_ops(p.left), _head_ops(p.right)
        return None if left is None or right is None else left | right
    if isinstance(p, AndPattern):
        left, right = _head_ops(p.left), _head_ops(p.right)
        return right if left is None else left if right is None else left & right
    if isinstance(p, (DataTypePattern, ShapePattern, StructInfoPattern, AttrPattern, PredicatePattern)):
        return _head_ops(p.pattern)
    return None


def _alternatives(pattern: DFPattern, ors: tuple = ()) -> list[tuple[DFPattern, tuple]]:
    """``a | (b | c)`` -> [(a, ors), (b, ors), (c, ors)], each with the OrPatterns above it."""
    if isinstance(pattern, OrPattern):
        inner = (*ors, pattern)
        return _alternatives(pattern.left, inner) + _alternatives(pattern.right, inner)
    return [(pattern, ors)]


class _RewriteBindings(_Rewrite):
    """One round of ``rewrite_bindings``: in each dataflow block, the matches of the context
    that touch no binding an earlier match of this round rewrote or used."""

    def _rewrite_block(self, block: BindingBlock) -> BindingBlock:
        if not isinstance(block, DataflowBlock):
            return block
        replaced: dict[Var, Any] = {}
        taken: set[Var] = set()
        bindings = {b.var: b.value for b in block.bindings}
        for match in graph_matches(self.pattern, block, {}):
            # a region's match is a tuple of variables
            found = [x for v in match.values() for x in (v if isinstance(v, tuple) else (v,))]
            matched = {v for v in found if isinstance(v, Var) and v in bindings}
            if matched & taken:
                continue
            new = self.rewriter(match, dict(bindings)) or {}
            new = {v: e for v, e in new.items() if e is not bindings.get(v)}
            if new:
                replaced.update(new)
                taken |= matched | set(new)
        if not replaced:
            return block
        return DataflowBlock(tuple(_rebound(b, replaced[b.var]) if b.var in replaced else b
                                   for b in block.bindings))


def _rebound(b: Binding, value: Any) -> Binding:
    return MatchCast(b.var, value, b.struct_info) if isinstance(b, MatchCast) else VarBinding(b.var, value)
