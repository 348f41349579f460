"""Dataflow patterns: small trees that describe the expressions a rewrite is looking for.

A pattern is built from leaves (``wildcard()``, ``is_const()``, ``is_var()``, ``is_op(name)``,
``is_expr(e)``) and combined: calling a pattern makes a call pattern
(``is_op("relax.add")(a, b)``), ``p | q`` matches either, ``p & q`` both, ``~p`` what ``p``
does not; ``p.has_dtype("float32")`` / ``p.has_shape([2, 3])`` / ``p.has_attr({...})`` add a
condition, ``p.such_that(fn)`` one written as a Python test.  ``p.match(expr, var2val)``
answers yes or no; ``p.extract_matched_expr(expr, var2val)`` says which expression each
sub-pattern matched.  ``is_region(src, sink, ...)`` matches a piece of a dataflow block of any
size -- the bindings on the paths from one binding to another -- inside a :class:`PatternContext`.

As in TVM: a sub-pattern used twice must match the *same* expression both times
(``x = wildcard(); is_op("relax.add")(x, x)`` matches ``a + a`` only); ``relax.add`` and
``relax.multiply`` also match with their two arguments swapped; and given ``var2val`` (a
variable -> the value bound to it, see :func:`minitvm.relax.analysis.get_var2val`) the matcher
looks through a variable to the value it is bound to, so a pattern spanning several bindings
of a dataflow block matches.  Patterns compare by identity: they are the keys of the dict a
match returns.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Iterator, Sequence

from ...arith.analyzer import Analyzer
from ...ir.module import GlobalVar
from ...ir.op import Op
from ...ir.structural import structural_equal
from ...tir.expr import IntImm, PrimExpr
from ..analysis.struct_info_analysis import BaseCheckResult, _CallRetDeriver, is_base_of, tir_vars_in_struct_info
from ..expr import (
    Call,
    Constant,
    DataflowVar,
    ExternFunc,
    Function,
    SeqExpr,
    ShapeExpr,
    Tuple,
    TupleGetItem,
    Var,
    struct_info_of,
)
from ..struct_info import StructInfo, TensorStructInfo

__all__ = [
    "DFPattern", "ExprPattern", "VarPattern", "DataflowVarPattern", "GlobalVarPattern", "ExternFuncPattern",
    "ConstantPattern", "CallPattern", "TuplePattern", "UnorderedTuplePattern", "TupleGetItemPattern", "OrPattern",
    "AndPattern", "NotPattern", "WildcardPattern", "StructInfoPattern", "DataTypePattern", "ShapePattern",
    "AttrPattern", "PredicatePattern", "RegionPattern", "PatternContext", "FunctionPattern", "PrimArrPattern",
    "SameShapeConstraint", "PatternSeq",
    "is_var", "is_dfv", "is_gv", "is_const", "is_expr", "is_op", "is_tuple", "is_tuple_get_item", "wildcard",
    "has_dtype", "has_attr", "is_call_tir", "reject", "is_region", "make_fused_bias_activation_pattern",
    "is_call_dps_packed", "is_call_packed", "is_shape",
]


class DFPattern:
    """Base of every pattern; see the module docstring for how to build and combine them."""

    def __call__(self, *args: Any, varg_default_wildcard: bool = False, add_constraint: bool = True) -> CallPattern:
        """The call of this pattern on ``args`` (patterns; a list or tuple of them is a tuple pattern)."""
        return CallPattern(self, args, varg_default_wildcard, add_constraint)

    def __or__(self, other: DFPattern) -> OrPattern:
        return OrPattern(self, other)

    def __and__(self, other: DFPattern) -> AndPattern:
        return AndPattern(self, other)

    def __invert__(self) -> NotPattern:
        return reject(self)

    def used_by(self, other: Any, index: int = -1) -> "PatternSeq":
        """In the current :class:`PatternContext`: the variable this matches is read by the
        binding ``other`` matches (its first pattern, for a sequence; as argument ``index``,
        or anywhere when -1). ``p ^ q``, as TVM spells it."""
        return PatternSeq([self]).used_by(other, index)

    def only_used_by(self, other: Any, index: int = -1) -> "PatternSeq":
        """:meth:`used_by`, and nothing else reads that variable (no second use, not an
        output of the block). ``p >> q``, as TVM spells it."""
        return PatternSeq([self]).only_used_by(other, index)

    __xor__ = used_by
    __rshift__ = only_used_by

    def dup(self) -> DFPattern:
        """The same pattern as new objects all through (a second, independent match of the
        same shape: no sub-pattern is shared with the original, as TVM's copy)."""
        out = copy.copy(self)
        for name, value in vars(self).items():
            if isinstance(value, DFPattern):
                setattr(out, name, value.dup())
            elif isinstance(value, (list, tuple)) and any(isinstance(v, DFPattern) for v in value):
                setattr(out, name, type(value)(v.dup() if isinstance(v, DFPattern) else v for v in value))
        return out

    def fork_to(self, *others: Any) -> None:
        """``self ^ other`` (used by) for each of ``others`` (patterns or sequences)."""
        for other in others:
            self.used_by(other)

    def same_shape_as(self, *others: DFPattern) -> "SameShapeConstraint":
        """In the current :class:`PatternContext`: what this matches and what ``others`` match
        have shapes provably equal (the same dimensions, or the same symbolic ones)."""
        return SameShapeConstraint(self, *others)

    def has_attr(self, attrs: dict[str, Any]) -> AttrPattern:
        """This pattern, where the call (or function) also carries these attribute values."""
        return AttrPattern(self, attrs)

    def such_that(self, predicate: Callable[[Any], Any]) -> PredicatePattern:
        """This pattern, where ``predicate(matched expression)`` is also true (a test no pattern
        spells: a size limit, a fact about the called kernel).  A minitvm addition: TVM puts
        such tests in a rewriter that declines or a fusion pattern's ``check``."""
        return PredicatePattern(self, predicate)

    def has_struct_info(self, struct_info: StructInfo) -> StructInfoPattern:
        return StructInfoPattern(self, struct_info)

    def has_dtype(self, dtype: str) -> DataTypePattern:
        """This pattern, where the matched tensor also has element type ``dtype``."""
        return has_dtype(dtype, self)

    def has_shape(self, shape: Sequence[Any]) -> ShapePattern:
        """This pattern, where the matched tensor also has this shape (ints or PrimExprs)."""
        if not isinstance(shape, (list, tuple, PrimExpr)):
            raise ValueError("has_shape takes a list or tuple as input.")
        return ShapePattern(self, shape)

    def match(self, expr: Any, var2val: dict[Var, Any] | None = None) -> bool:
        """Whether ``expr`` matches; with ``var2val`` a variable stands for the value bound to it."""
        return _Matcher(var2val).match(self, expr)

    def extract_matched_expr(self, expr: Any, var2val: dict[Var, Any] | None = None) -> dict[DFPattern, Any] | None:
        """Each sub-pattern -> the expression it matched, or None when ``expr`` does not match."""
        matcher = _Matcher(var2val)
        return dict(matcher.memo) if matcher.match(self, expr) else None

    # patterns are dict keys by identity (two wildcards are two different holes)
    __hash__ = object.__hash__

    def __eq__(self, other: object) -> bool:
        return self is other

    def __repr__(self) -> str:
        return self._text()

    def _text(self) -> str:  # pragma: no cover - every subclass has its own
        return type(self).__name__


def _as_pattern(value: Any, where: str) -> DFPattern:
    if isinstance(value, DFPattern):
        return value
    if isinstance(value, (list, tuple)):
        return TuplePattern([_as_pattern(v, where) for v in value])
    raise TypeError(f"{where}: expected a pattern (wildcard(), is_const(), is_op(...)(...) ...), got "
                    f"{type(value).__name__}: {value!r}")


class ExprPattern(DFPattern):
    """Matches an expression structurally equal to ``expr`` (``is_op`` makes one for an Op)."""

    def __init__(self, expr: Any):
        self.expr = expr

    def _text(self) -> str:
        if isinstance(self.expr, Op):
            return f'is_op("{self.expr.name}")'
        return f"is_expr({self.expr!r})"


class VarPattern(DFPattern):
    """Matches a variable; named ``name_hint`` unless that is empty."""

    def __init__(self, name_hint: str = ""):
        self.name_hint = name_hint

    @property
    def name(self) -> str:
        return self.name_hint

    def _text(self) -> str:
        return f'is_var("{self.name_hint}")' if self.name_hint else "is_var()"


class DataflowVarPattern(VarPattern):
    """Matches a dataflow variable (``lv`` inside a dataflow block)."""

    def _text(self) -> str:
        return f'is_dfv("{self.name_hint}")' if self.name_hint else "is_dfv()"


class GlobalVarPattern(DFPattern):
    """Matches a GlobalVar whose name contains ``name_hint`` (any when empty), as TVM does."""

    def __init__(self, name_hint: str = ""):
        self.name_hint = name_hint

    def _text(self) -> str:
        return f'is_gv("{self.name_hint}")' if self.name_hint else "is_gv()"


class ExternFuncPattern(DFPattern):
    """Matches an ``R.ExternFunc`` of this symbol (any when empty)."""

    def __init__(self, global_symbol: str = ""):
        self.global_symbol = global_symbol

    def _text(self) -> str:
        return f'ExternFuncPattern("{self.global_symbol}")'


class ConstantPattern(DFPattern):
    """Matches a ``relax.Constant`` (also through a variable bound to one)."""

    def _text(self) -> str:
        return "is_const()"


class WildcardPattern(DFPattern):
    """Matches anything."""

    def _text(self) -> str:
        return "wildcard()"


class FunctionPattern(DFPattern):
    """Matches a ``relax.Function`` whose parameters and body match (``params`` None: any)."""

    def __init__(self, params: Sequence[Any] | None, body: Any):
        self.params = None if params is None else [_as_pattern(q, "FunctionPattern param") for q in params]
        self.body = _as_pattern(body, "FunctionPattern body")

    def _text(self) -> str:
        return f"FunctionPattern({self.params!r}, {self.body!r})"


class PrimArrPattern(DFPattern):
    """Matches a shape (a ``ShapeExpr``, or the shape of a tensor struct info) with these
    dimensions (``is_shape``); ``has_shape`` is the test on a tensor instead."""

    def __init__(self, shape: Sequence[Any]):
        self.fields = [IntImm("int64", d) if isinstance(d, int) and not isinstance(d, bool) else d for d in shape]

    def __getitem__(self, index: int) -> Any:
        if index >= len(self.fields):
            raise IndexError("PrimArrPattern index out of range")
        return self.fields[index]

    def __len__(self) -> int:
        return len(self.fields)

    def _text(self) -> str:
        return f"is_shape({[int(d) if isinstance(d, IntImm) else d for d in self.fields]})"


class SameShapeConstraint:
    """The expressions some patterns match have provably equal shapes (kept by the current
    :class:`PatternContext`, checked when it matches a block)."""

    def __init__(self, *patterns: DFPattern):
        self.patterns = [_as_pattern(q, "same_shape_as") for q in patterns]
        PatternContext.current_or_raise("same_shape_as").same_shapes.append(self)


class CallPattern(DFPattern):
    """Matches ``op(args...)``: the callee and every argument match their patterns.

    With ``varg_default_wildcard`` a call with more arguments than patterns matches too (the
    rest are wildcards).  Made inside a :class:`PatternContext` (and ``add_constraint``), each
    argument pattern is also recorded as ``arg.used_by(call, i)``, as in TVM.
    """

    def __init__(self, op: DFPattern, args: Sequence[Any] | None, varg_default_wildcard: bool = False,
                 add_constraint: bool = True):
        self.op = _as_pattern(op, "CallPattern op")
        self.args = None if args is None else [_as_pattern(a, f"{self.op!r}(...) argument") for a in args]
        self.varg_default_wildcard = varg_default_wildcard
        self.add_constraint = add_constraint
        ctx = PatternContext.current()
        if add_constraint and ctx is not None:
            for i, arg in enumerate(self.args or ()):
                ctx.add_constraint(arg, self, i, only=False)

    def _text(self) -> str:
        args = ", ".join(repr(a) for a in self.args or ())
        return f"{self.op!r}({args}{', ...' if self.varg_default_wildcard else ''})"


class TuplePattern(DFPattern):
    """Matches a ``relax.Tuple`` of as many fields, each matching its pattern in order."""

    def __init__(self, fields: Sequence[Any]):
        self.fields = [_as_pattern(f, "tuple field") for f in fields]

    def __getitem__(self, index: int | None) -> TupleGetItemPattern:
        if index is not None and not -len(self.fields) <= index < len(self.fields):
            raise IndexError(f"TuplePattern has {len(self.fields)} fields, no index {index}")
        return TupleGetItemPattern(self, index)

    def __len__(self) -> int:
        return len(self.fields)

    def _text(self) -> str:
        return f"is_tuple([{', '.join(repr(f) for f in self.fields)}])"


class UnorderedTuplePattern(DFPattern):
    """Matches a tuple whose fields match the patterns in some order."""

    def __init__(self, fields: Sequence[Any]):
        self.fields = [_as_pattern(f, "tuple field") for f in fields]

    def __len__(self) -> int:
        return len(self.fields)

    def _text(self) -> str:
        return f"is_tuple([{', '.join(repr(f) for f in self.fields)}], unordered=True)"


class TupleGetItemPattern(DFPattern):
    """Matches ``tup[index]`` (any index when ``index`` is None)."""

    def __init__(self, tuple_value: DFPattern, index: int | None = None):
        self.tuple = _as_pattern(tuple_value, "is_tuple_get_item")
        self.index = -1 if index is None else index

    def _text(self) -> str:
        return f"is_tuple_get_item({self.tuple!r}{'' if self.index == -1 else f', {self.index}'})"


class OrPattern(DFPattern):
    def __init__(self, left: DFPattern, right: DFPattern):
        self.left, self.right = _as_pattern(left, "|"), _as_pattern(right, "|")

    def _text(self) -> str:
        return f"({self.left!r} | {self.right!r})"


class AndPattern(DFPattern):
    def __init__(self, left: DFPattern, right: DFPattern):
        self.left, self.right = _as_pattern(left, "&"), _as_pattern(right, "&")

    def _text(self) -> str:
        return f"({self.left!r} & {self.right!r})"


class NotPattern(DFPattern):
    def __init__(self, reject: DFPattern):
        self.reject = _as_pattern(reject, "~")

    def _text(self) -> str:
        return f"~{self.reject!r}"


class StructInfoPattern(DFPattern):
    """``pattern``, where the matched expression's struct info is also ``struct_info`` or more precise."""

    def __init__(self, pattern: DFPattern, struct_info: StructInfo):
        self.pattern, self.struct_info = pattern, struct_info

    def _text(self) -> str:
        return f"{self.pattern!r}.has_struct_info(...)"


class DataTypePattern(DFPattern):
    def __init__(self, pattern: DFPattern, dtype: str):
        self.pattern, self.dtype = pattern, str(dtype)

    def _text(self) -> str:
        return f'{self.pattern!r}.has_dtype("{self.dtype}")'


class ShapePattern(DFPattern):
    def __init__(self, pattern: DFPattern, shape: Sequence[Any]):
        self.pattern = pattern
        self.shape = list(shape) if isinstance(shape, (list, tuple)) else [shape]

    def _text(self) -> str:
        return f"{self.pattern!r}.has_shape({[int(d) if isinstance(d, IntImm) else d for d in self.shape]})"


class AttrPattern(DFPattern):
    def __init__(self, pattern: DFPattern, attrs: dict[str, Any]):
        if not isinstance(attrs, dict):
            raise TypeError(f"has_attr takes a dict of attribute values, got {attrs!r}")
        self.pattern, self.attrs = pattern, dict(attrs)

    def _text(self) -> str:
        return f"{self.pattern!r}.has_attr({self.attrs!r})"


class PredicatePattern(DFPattern):
    """``pattern``, where ``predicate(expr)`` is also true of the expression it matched."""

    def __init__(self, pattern: DFPattern, predicate: Callable[[Any], Any]):
        if not callable(predicate):
            raise TypeError(f"such_that takes a function expr -> bool, got {predicate!r}")
        self.pattern, self.predicate = _as_pattern(pattern, "such_that"), predicate

    def _text(self) -> str:
        return f"{self.pattern!r}.such_that({getattr(self.predicate, '__name__', '...')})"


class RegionPattern(DFPattern):
    """A piece of a dataflow block of any size: ``src`` and the bindings on its paths to ``sink``.

    The region is the binding ``src`` matched and every binding on a path from it to the one
    ``sink`` matched -- ``sink`` itself not, as ``range(a, b)`` leaves out ``b``: a chain of no,
    one or many bindings, or branches that join again.  Every binding between must match
    ``path``; one that does not refuses the whole match, since the rest would not be *convex*
    (a path leaves them through that binding and comes back: no one kernel can compute them).
    ``contains``: some binding between matches it; ``max_len``: at most this many between.
    ``inputs``: the region also takes each binding matching ``inputs`` whose every use is in
    the region or ``sink``, again and again -- producers nothing else reads.

    Use it in a :class:`PatternContext`: ``region.only_used_by(sink)`` says nothing but the
    region and ``sink`` reads its variables (none is an output of the block), so the region and
    ``sink`` can become one function.  Its match is the tuple of its variables, in binding
    order.  ``path``, ``contains`` and ``inputs`` are matched afresh at each binding; a binding
    that only renames a variable (``a = b``) matches none of them, as in ``rewrite_call``.  Relay's
    ``dominates(parent, path, child)`` is TVM's nearest pattern (it allows no input but
    constants and parameters from outside); Relax's dpl has none.
    """

    def __init__(self, src: DFPattern, sink: DFPattern, path: DFPattern | None = None,
                 contains: DFPattern | None = None, inputs: DFPattern | None = None, max_len: int | None = None):
        self.src, self.sink = _as_pattern(src, "is_region src"), _as_pattern(sink, "is_region sink")
        self.path = WildcardPattern() if path is None else _as_pattern(path, "is_region path")
        self.contains = None if contains is None else _as_pattern(contains, "is_region contains")
        self.inputs = None if inputs is None else _as_pattern(inputs, "is_region inputs")
        if max_len is not None and (not isinstance(max_len, int) or max_len < 0):
            raise ValueError(f"is_region: max_len must be a count of bindings (an int >= 0), got {max_len!r}")
        self.max_len = max_len
        PatternContext.current_or_raise("is_region").regions.append(self)

    def parts(self) -> list[DFPattern]:
        """The patterns matched at each binding of the region (not against a binding of their own)."""
        return [p for p in (self.path, self.contains, self.inputs) if p is not None]

    def _text(self) -> str:
        return f"is_region({self.src!r}, {self.sink!r}, path={self.path!r})"


class PatternSeq:
    """Patterns chained by use constraints (``a >> b ^ c``, TVM's ``PatternSeq``): each one's
    variable is (only) used by the next one's binding; ``patterns`` lists them in order."""

    def __init__(self, patterns: Sequence[DFPattern], only_use: bool = False) -> None:
        self.patterns = list(patterns)
        self.only = [only_use] * max(len(self.patterns) - 1, 0)  # the kind of each link

    def _link(self, other: Any, index: int, only: bool) -> "PatternSeq":
        tail = other.patterns if isinstance(other, PatternSeq) else [other]
        if not tail or not all(isinstance(p, DFPattern) for p in tail):
            raise TypeError(f"a use constraint links patterns, got {other!r}")
        name = "only_used_by" if only else "used_by"
        PatternContext.current_or_raise(name).add_constraint(self.patterns[-1], tail[0], index, only=only)
        out = PatternSeq([*self.patterns, *tail])
        out.only = [*self.only, only, *(other.only if isinstance(other, PatternSeq) else [])]
        return out

    def used_by(self, other: Any, index: int = -1) -> "PatternSeq":
        return self._link(other, index, False)

    def only_used_by(self, other: Any, index: int = -1) -> "PatternSeq":
        return self._link(other, index, True)

    __xor__ = used_by
    __rshift__ = only_used_by

    def dup(self) -> "PatternSeq":
        """A copy of the chain with new pattern objects and the same links (recorded in the
        current context): a second, independent match of it."""
        copies = [p.dup() for p in self.patterns]
        out = PatternSeq(copies[:1])
        for pattern, only in zip(copies[1:], self.only):
            out = out._link(pattern, -1, only)
        return out

    def __getitem__(self, i: int) -> DFPattern:
        return self.patterns[i]


class PatternContext:
    """Patterns over several bindings of a dataflow block at once, with use constraints (TVM's).

    Inside ``with PatternContext() as ctx:`` each call pattern made records that its arguments
    are used by it, and ``p.only_used_by(q)`` (``p >> q``) / ``p.used_by(q)`` (``p ^ q``) add
    constraints between the variables the patterns match.  :func:`rewrite_bindings` (or
    ``ctx.match_dfb(block)``) then finds bindings matching all of them together::

        with PatternContext() as ctx:
            mm = is_op("relax.matmul")(wildcard(), wildcard())
            out = is_op("relax.add")(mm, wildcard())
            mm.only_used_by(out)          # fuse only when nothing else reads the matmul
    """

    _stack: list[PatternContext] = []

    def __init__(self, incremental: bool = False):
        # incremental: start from the constraints of the context this one is opened in
        outer = PatternContext.current() if incremental else None
        self.constraints: list[tuple[DFPattern, DFPattern, int, bool]] = list(outer.constraints) if outer else []
        self.regions: list[RegionPattern] = list(outer.regions) if outer else []
        self.same_shapes: list[SameShapeConstraint] = list(outer.same_shapes) if outer else []

    def __enter__(self) -> PatternContext:
        PatternContext._stack.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        PatternContext._stack.remove(self)

    @staticmethod
    def current() -> PatternContext | None:
        return PatternContext._stack[-1] if PatternContext._stack else None

    @staticmethod
    def current_or_raise(what: str) -> PatternContext:
        ctx = PatternContext.current()
        if ctx is None:
            raise RuntimeError(f"{what} needs a PatternContext (`with PatternContext() as ctx:`): it relates "
                               "bindings of a dataflow block")
        return ctx

    def add_constraint(self, producer: DFPattern, consumer: DFPattern, index: int = -1, only: bool = False) -> None:
        """``producer``'s variable is read by ``consumer``'s binding (``only``: and nowhere else)."""
        self.constraints.append((_as_pattern(producer, "used_by"), _as_pattern(consumer, "used_by"), index, only))

    def patterns(self) -> list[DFPattern]:
        """Every pattern a region or a constraint names, in the order first named (a region's
        ``src`` before its ``sink``: matches then come in the order of their ``src``)."""
        seen: dict[DFPattern, None] = {}
        for region in self.regions:
            for p in (region.src, region.sink, region):
                seen.setdefault(p)
        for producer, consumer, _, _ in self.constraints:
            seen.setdefault(producer)
            seen.setdefault(consumer)
        for same in self.same_shapes:
            for q in same.patterns:
                seen.setdefault(q)
        return list(seen)

    def match_dfb(self, block: Any) -> dict[DFPattern, Any] | None:
        """The first match of this context in the dataflow ``block`` (pattern -> variable), or None."""
        return next(self.iter_match_dfb(block), None)

    def iter_match_dfb(self, block: Any) -> Iterator[dict[DFPattern, Any]]:
        """Every match of this context in the dataflow ``block``, in binding order (they may overlap)."""
        from .graph import graph_matches  # lazy: cycle -- graph.py builds on this module

        return graph_matches(self, block, {})


# ------------------------------------------------------------------------------ constructors


def is_var(name: str = "") -> VarPattern:
    """A variable (a function parameter, or a bound variable the matcher does not look through)."""
    return VarPattern(name)


def is_dfv(name: str = "") -> DataflowVarPattern:
    return DataflowVarPattern(name)


def is_gv(name: str = "") -> GlobalVarPattern:
    return GlobalVarPattern(name)


def is_const() -> ConstantPattern:
    """A constant tensor (``R.const`` or a bound parameter)."""
    return ConstantPattern()


def is_expr(expr: Any) -> ExprPattern:
    """An expression structurally equal to ``expr``."""
    return ExprPattern(expr)


def is_op(op_name: str) -> ExprPattern:
    """The operator named ``op_name``; call it to match a call: ``is_op("relax.add")(a, b)``."""
    return ExprPattern(Op.get(op_name))


def is_tuple(fields: Sequence[Any], unordered: bool = False) -> TuplePattern | UnorderedTuplePattern:
    if not isinstance(fields, (list, tuple)):
        raise TypeError(f"is_tuple takes a list of patterns, got {fields!r}")
    return UnorderedTuplePattern(fields) if unordered else TuplePattern(fields)


def is_tuple_get_item(tuple_value: DFPattern, index: int | None = None) -> TupleGetItemPattern:
    return TupleGetItemPattern(tuple_value, index)


def wildcard() -> WildcardPattern:
    """A hole that matches any expression."""
    return WildcardPattern()


def has_dtype(dtype: str, pattern: DFPattern | None = None) -> DataTypePattern:
    return DataTypePattern(wildcard() if pattern is None else pattern, dtype)


def has_attr(attrs: dict[str, Any], pattern: DFPattern | None = None) -> AttrPattern:
    return AttrPattern(wildcard() if pattern is None else pattern, attrs)


def reject(pattern: DFPattern) -> NotPattern:
    """Matches what ``pattern`` does not."""
    return NotPattern(pattern)


def is_region(src: DFPattern, sink: DFPattern, path: DFPattern | None = None, contains: DFPattern | None = None,
              inputs: DFPattern | None = None, max_len: int | None = None) -> RegionPattern:
    """``src`` and the bindings on its paths to ``sink``, each matching ``path`` (see
    :class:`RegionPattern`); made inside a :class:`PatternContext`."""
    return RegionPattern(src, sink, path, contains, inputs, max_len)


def is_call_tir(func_name: str, args: Any = None, tir_vars: DFPattern | None = None) -> CallPattern:
    """``R.call_tir(func_name, args, ...)``: the PrimFunc's name contains ``func_name``;
    ``args`` a list of patterns, a tuple pattern, or None for any arguments; ``tir_vars`` a
    pattern for the symbolic-variable argument (None: the call has none)."""
    args_pattern = _args_pattern(args, "is_call_tir")
    call_tir = is_op("relax.call_tir")
    if tir_vars is None:
        return call_tir(GlobalVarPattern(func_name), args_pattern)
    return call_tir(GlobalVarPattern(func_name), args_pattern, _as_pattern(tir_vars, "is_call_tir tir_vars"))


def is_call_dps_packed(func_name: str, args: Any = None) -> CallPattern:
    """``R.call_dps_packed(func_name, args, ...)``; ``args`` a list of patterns, a tuple
    pattern, or None for any arguments."""
    return is_op("relax.call_dps_packed")(ExternFuncPattern(func_name), _args_pattern(args, "is_call_dps_packed"),
                                          add_constraint=False)


def _args_pattern(args: Any, where: str) -> DFPattern:
    """The tuple-of-arguments pattern of a call_tir / call_dps_packed: any (None), a list of
    patterns, or a pattern."""
    if args is None:
        return wildcard()
    if isinstance(args, (list, tuple)):
        return TuplePattern(args)
    return _as_pattern(args, f"{where} args")


def is_call_packed(func_name: str, args: Sequence[Any] | None = None) -> CallPattern:
    """``R.call_packed(func_name, *args)``: a call of the ExternFunc, with these arguments (None: any)."""
    if args is None:
        return ExternFuncPattern(func_name)(varg_default_wildcard=True, add_constraint=False)
    return ExternFuncPattern(func_name)(*args)


def is_shape(shape: Sequence[Any]) -> PrimArrPattern:
    """Matches a shape with these dimensions (ints or PrimExprs)."""
    if not isinstance(shape, (list, tuple)):
        raise ValueError("is_shape takes a list or tuple as input.")
    return PrimArrPattern(shape)


def make_fused_bias_activation_pattern(op_name: str, with_bias: bool = False, activation: str | None = None,
                                       allow_reshape: bool = False) -> DFPattern:
    """``op_name(lhs, rhs)``, then ``+ bias`` (``with_bias``; ``allow_reshape``: a reshaped bias,
    as the PyTorch importer leaves it), then ``activation`` (an operator name such as
    ``"relax.nn.relu"``): the usual shape of what a BYOC backend offloads."""
    out: DFPattern = is_op(op_name)(wildcard(), wildcard())
    if with_bias:
        bias = wildcard()
        if allow_reshape:
            bias = is_op("relax.reshape")(bias, wildcard(), varg_default_wildcard=True)
            out = is_op("relax.add")(out, bias, varg_default_wildcard=True)
        else:
            out = is_op("relax.add")(out, bias)
    return is_op(activation)(out) if activation else out


# ------------------------------------------------------------------------------ the matcher


class _Matcher:
    """Matches a pattern against an expression, remembering what each sub-pattern matched."""

    def __init__(self, var2val: dict[Var, Any] | None):
        self.var2val = var2val or {}
        self.memo: dict[DFPattern, Any] = {}
        self.order: list[DFPattern] = []  # memo keys, newest last (to undo a failed branch)
        self.shape_vars: dict[int, Any] = {}  # symbolic variables bound by struct info patterns

    def match(self, pattern: DFPattern, expr: Any) -> bool:
        self.memo.clear()
        self.order.clear()
        self.shape_vars = {}
        return self.visit(pattern, expr)

    def sinfo_fits(self, want: StructInfo, got: StructInfo) -> bool:
        if not tir_vars_in_struct_info(want):
            return is_base_of(want, got)
        deriver = _CallRetDeriver()
        deriver.shape_vars = dict(self.shape_vars)
        if deriver.check(want, got) != BaseCheckResult.PASS:
            return False
        self.shape_vars = deriver.shape_vars
        return True

    def unwrap(self, expr: Any) -> Any:
        """Look through variables bound to values, and through SeqExprs without bindings."""
        while True:
            if isinstance(expr, Var) and expr in self.var2val:
                expr = self.var2val[expr]
            elif isinstance(expr, SeqExpr) and not expr.blocks:
                expr = expr.body
            else:
                return expr

    def undo(self, watermark: int) -> None:
        for p in self.order[watermark:]:
            self.memo.pop(p, None)
        del self.order[watermark:]

    def visit(self, pattern: DFPattern, expr0: Any) -> bool:
        if not isinstance(pattern, DFPattern):
            raise TypeError(f"not a pattern: {pattern!r}")
        expr = self.unwrap(expr0)
        if pattern in self.memo:  # a pattern used twice matches one expression
            return self.memo[pattern] is expr or _same_leaf(self.memo[pattern], expr)
        watermark = len(self.order)
        ok = self._dispatch(pattern, expr0, expr)
        if ok:
            self.memo[pattern] = expr
            self.order.append(pattern)
        else:
            self.undo(watermark)
        return ok

    def _dispatch(self, p: DFPattern, expr0: Any, expr: Any) -> bool:  # noqa: C901 - one case per pattern kind
        if isinstance(p, WildcardPattern):
            return True
        if isinstance(p, OrPattern):
            return self.visit(p.left, expr) or self.visit(p.right, expr)
        if isinstance(p, AndPattern):
            return self.visit(p.left, expr) and self.visit(p.right, expr)
        if isinstance(p, NotPattern):
            watermark = len(self.order)
            out = not self.visit(p.reject, expr)
            self.undo(watermark)
            return out
        if isinstance(p, ExprPattern):
            if isinstance(p.expr, Op):  # an operator is its name (asked of every call a pattern meets)
                return isinstance(expr, Op) and p.expr.name == expr.name
            return _same_leaf(p.expr, expr) or structural_equal(p.expr, expr)
        if isinstance(p, DataflowVarPattern):
            return isinstance(expr, DataflowVar) and p.name_hint in ("", expr.name_hint)
        if isinstance(p, VarPattern):
            return isinstance(expr, Var) and p.name_hint in ("", expr.name_hint)
        if isinstance(p, GlobalVarPattern):
            return isinstance(expr, GlobalVar) and p.name_hint in expr.name_hint
        if isinstance(p, ExternFuncPattern):
            return isinstance(expr, ExternFunc) and p.global_symbol in ("", expr.global_symbol)
        if isinstance(p, ConstantPattern):
            return isinstance(expr, Constant)
        if isinstance(p, CallPattern):
            return self.visit_call(p, expr)
        if isinstance(p, TuplePattern):
            return (isinstance(expr, Tuple) and len(expr.fields) == len(p.fields)
                    and all(self.visit(fp, f) for fp, f in zip(p.fields, expr.fields)))
        if isinstance(p, UnorderedTuplePattern):
            return isinstance(expr, Tuple) and len(expr.fields) == len(p.fields) \
                and self.visit_unordered(p.fields, list(expr.fields))
        if isinstance(p, TupleGetItemPattern):
            return (isinstance(expr, TupleGetItem) and (p.index == -1 or p.index == expr.index)
                    and self.visit(p.tuple, expr.tuple_value))
        if isinstance(p, DataTypePattern):
            sinfo = struct_info_of(expr0)
            return isinstance(sinfo, TensorStructInfo) and sinfo.dtype == p.dtype and self.visit(p.pattern, expr0)
        if isinstance(p, ShapePattern):
            return _shape_equal(struct_info_of(expr0), p.shape) and self.visit(p.pattern, expr0)
        if isinstance(p, StructInfoPattern):
            sinfo = struct_info_of(expr0)
            # TVM's test: the pattern's struct info is a base of the expression's (R.Tensor([2, 3])
            # takes any dtype); its symbolic variables are bound by the first match and must
            # agree in every later one (R.Tensor([m, n]) twice: two tensors of one shape)
            return sinfo is not None and self.sinfo_fits(p.struct_info, sinfo) and self.visit(p.pattern, expr0)
        if isinstance(p, AttrPattern):
            return self.visit(p.pattern, expr) and _attrs_match(expr, p.attrs)
        if isinstance(p, PredicatePattern):
            return self.visit(p.pattern, expr) and bool(p.predicate(expr))
        if isinstance(p, FunctionPattern):
            return self.visit_function(p, expr)
        if isinstance(p, PrimArrPattern):
            values = expr.values if isinstance(expr, ShapeExpr) else None
            return values is not None and len(values) == len(p.fields) and \
                all(_dim_equal(w, g) for w, g in zip(p.fields, values))
        if isinstance(p, RegionPattern):
            raise TypeError(f"{p!r} matches bindings of a dataflow block, not one expression: use it as a "
                            "pattern of its own in a PatternContext (rewrite_bindings, ctx.match_dfb)")
        raise TypeError(f"unknown pattern kind {type(p).__name__}")

    def visit_call(self, p: CallPattern, expr: Any) -> bool:
        if not isinstance(expr, Call):
            return False
        watermark = len(self.order)
        if not self.visit(p.op, expr.op):
            self.undo(watermark)
            return False
        args = list(expr.args)
        patterns = p.args
        if patterns is None:  # no argument patterns: any arguments
            return True
        if len(args) != len(patterns) and not (p.varg_default_wildcard and len(args) >= len(patterns)):
            return False
        orders = [args]
        if isinstance(expr.op, Op) and expr.op.name in ("relax.add", "relax.multiply") and len(args) == 2:
            orders.append(args[::-1])  # commutative: the swapped order matches too, as in TVM
        inner = len(self.order)
        for order in orders:
            if all(self.visit(pa, a) for pa, a in zip(patterns, order)):
                return True
            self.undo(inner)
        return False

    def visit_function(self, p: FunctionPattern, expr: Any) -> bool:
        if not isinstance(expr, Function):
            return False
        if p.params is not None and (len(p.params) != len(expr.params)
                                     or not all(self.visit(q, v) for q, v in zip(p.params, expr.params))):
            return False
        return self.visit(p.body, expr.body)

    def visit_unordered(self, patterns: list[DFPattern], fields: list[Any]) -> bool:
        if not patterns:
            return True
        first, rest = patterns[0], patterns[1:]
        for i, f in enumerate(fields):
            watermark = len(self.order)
            if self.visit(first, f) and self.visit_unordered(rest, fields[:i] + fields[i + 1:]):
                return True
            self.undo(watermark)
        return False


def _same_leaf(a: Any, b: Any) -> bool:
    """Identity, or the same operator / global function (one object each in TVM)."""
    if a is b:
        return True
    if isinstance(a, Op) and isinstance(b, Op):
        return a.name == b.name
    if isinstance(a, GlobalVar) and isinstance(b, GlobalVar):
        return a.name_hint == b.name_hint
    return False


def _dim_equal(want: Any, got: Any) -> bool:
    """Equal dimensions: the same number, or symbolic expressions the analyzer proves equal."""
    if isinstance(want, int) and not isinstance(want, bool):
        want = IntImm("int64", want)
    if isinstance(want, IntImm) and isinstance(got, IntImm):
        return want.value == got.value
    if not isinstance(want, PrimExpr) or not isinstance(got, PrimExpr):
        return False
    return structural_equal(want, got) or Analyzer().can_prove_equal(want, got)


def _shape_equal(sinfo: Any, shape: list[Any]) -> bool:
    if not isinstance(sinfo, TensorStructInfo) or not isinstance(sinfo.shape, ShapeExpr):
        return False
    values = list(sinfo.shape.values)
    return len(values) == len(shape) and all(_dim_equal(w, g) for w, g in zip(shape, values))


def _attr_equal(want: Any, got: Any) -> bool:
    if isinstance(want, (list, tuple)) and isinstance(got, (list, tuple)):
        return len(want) == len(got) and all(_attr_equal(w, g) for w, g in zip(want, got))
    if isinstance(got, IntImm):
        got = got.value
    if isinstance(want, IntImm):
        want = want.value
    if isinstance(want, (int, float, str, bool)) or want is None:
        return want == (str(got) if isinstance(want, str) and got is not None else got)
    return structural_equal(want, got)


def _attrs_match(expr: Any, attrs: dict[str, Any]) -> bool:
    """A call's attributes (or a function's) hold every ``attrs`` value."""
    if isinstance(expr, Call):
        have = expr.attrs or {}
    else:
        have = getattr(expr, "attrs", None) or {}
    return all(k in have and _attr_equal(v, have[k]) for k, v in attrs.items())
