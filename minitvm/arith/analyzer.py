"""Analyzer: what is known about integer variables, and what follows from it (TVM's
``tvm.arith.Analyzer``)."""

from __future__ import annotations

import contextlib
from typing import Iterator

from ..ir import dtype as _dt
from ..ir.deep import deep_on_overflow
from ..tir.expr import EQ, GE, GT, LE, LT, And, FloatImm, IntImm, PrimExpr, Range, Var, convert
from ..tir.functor import substitute
from .int_bound import ConstIntBound, IntBoundAnalyzer
from .modular_set import ModularSet, ModularSetAnalyzer
from .rewrite import Rewriter

__all__ = ["Analyzer"]


#: how many answers :meth:`Analyzer.simplify` remembers per analyzer
_SIMPLIFIED_SIZE = 4096


class Analyzer:
    """Simplify expressions and prove facts, given bounds of variables.

    >>> ana = Analyzer()
    >>> ana.bind(i1, Range(0, 4))
    >>> ana.simplify(tir.floordiv(i0 * 4 + i1, 4))   # -> i0
    """

    def __init__(self) -> None:
        self._bounds = IntBoundAnalyzer()
        self._rewriter = Rewriter(self)
        # var -> expression it equals (from ``bind(var, expr)``), substituted before simplifying
        self._values: dict[Var, PrimExpr] = {}
        self._modular = ModularSetAnalyzer(self)
        self._facts_learned = 0  # changes with every bind to an expression and constraint scope
        # id(expr) -> (expr, steps, state, result): the passes and schedules ask the same
        # expression (an end of a region, a binding) again and again while nothing is learned
        self._simplified: dict[int, tuple] = {}

    # -- what is known --------------------------------------------------------------------
    def bind(self, var: Var, value: Range | PrimExpr | int, allow_override: bool = False) -> None:
        """Declare ``var`` ranges over ``Range(min, extent)``, or equals an expression."""
        if isinstance(value, Range):
            lo_min, hi_min = self._bounds.bound(value.min)
            lo_ext, hi_ext = self._bounds.bound(value.extent)
            interval = (lo_min, hi_min + max(hi_ext, 1) - 1)
            self._set_bound(var, interval, allow_override)
            return
        value = convert(value)
        self._values[var] = value
        self._facts_learned += 1
        self._set_bound(var, self._bounds.bound(value), allow_override)

    def update(self, var: Var, info: ConstIntBound, allow_override: bool = False) -> None:
        """Declare ``info.min_value <= var <= info.max_value``."""
        self._set_bound(var, (info.min_value, info.max_value), allow_override)

    def _set_bound(self, var: Var, interval: tuple[int, int], allow_override: bool) -> None:
        known = self._bounds._var_bounds.get(id(var))
        if known is not None and not allow_override and known[1] != interval:
            # tighten rather than override: both facts hold
            interval = (max(interval[0], known[1][0]), min(interval[1], known[1][1]))
        self._bounds.set_bound(var, interval)

    @contextlib.contextmanager
    def interval_scope(self, var: Var, interval: tuple[int, int] | None) -> Iterator[None]:
        """Within the ``with`` body, ``var`` lies in ``interval`` (None: nothing known)."""
        previous = self._bounds.set_bound(var, interval)
        try:
            yield
        finally:
            self._bounds.set_bound(var, previous)

    @contextlib.contextmanager
    def bound_scope(self, var: Var, dom: Range) -> Iterator[None]:
        """``with analyzer.bound_scope(i, Range(0, n)):`` — a loop body's view of ``i``."""
        lo_min, hi_min = self._bounds.bound(dom.min)
        hi_ext = self._bounds.bound(dom.extent)[1]
        with self.interval_scope(var, (lo_min, hi_min + max(hi_ext, 1) - 1)):
            yield

    @contextlib.contextmanager
    def constraint_scope(self, condition: PrimExpr) -> Iterator[None]:
        """Within the ``with`` body, ``condition`` is known to hold.

        What is learned: bounds of single variables compared with something bounded
        (``i < n``, ``4 <= j``), also inside ``and``; other conditions teach nothing.
        """
        self._facts_learned += 1
        with contextlib.ExitStack() as scopes:
            scopes.callback(self._learned)
            for var, interval in self._facts(condition):
                known = self._bounds.var_bound(var)
                tightened = (max(known[0], interval[0]), min(known[1], interval[1]))
                scopes.enter_context(self.interval_scope(var, tightened))
            scopes.callback(self._modular.enter_constraint(condition))
            yield

    def _learned(self) -> None:
        self._facts_learned += 1

    def _state(self) -> tuple[int, int]:
        """What :meth:`simplify` depends on besides its argument, as a token that changes with it."""
        return self._bounds.version, self._facts_learned

    def _facts(self, condition: PrimExpr) -> list[tuple[Var, tuple[int, int]]]:
        if isinstance(condition, And):
            return self._facts(condition.a) + self._facts(condition.b)
        if not isinstance(condition, (LT, LE, GT, GE, EQ)) or not _dt.is_int(condition.a.dtype):
            return []
        # put the variable on the left: ``c < i`` is ``i > c``
        flipped = {LT: GT, LE: GE, GT: LT, GE: LE, EQ: EQ}
        kind, var, other = type(condition), condition.a, condition.b
        if not isinstance(var, Var):
            kind, var, other = flipped[kind], condition.b, condition.a
            if not isinstance(var, Var):
                return []
        lo, hi = self._bounds.bound(other)
        unbounded_lo, unbounded_hi = -(2**200), 2**200
        interval = {LT: (unbounded_lo, hi - 1), LE: (unbounded_lo, hi),
                    GT: (lo + 1, unbounded_hi), GE: (lo, unbounded_hi), EQ: (lo, hi)}[kind]
        return [(var, interval)]

    # -- queries ----------------------------------------------------------------------------
    @deep_on_overflow
    def interval(self, expr: PrimExpr | int) -> tuple[int, int]:
        """Exact inclusive ``(lo, hi)`` of an integer expression, as Python ints.

        Unlike :meth:`const_int_bound` nothing is clamped to the infinities, so code that
        must know whether a value fits its dtype can rely on it."""
        return self._bounds.bound(convert(expr))

    @deep_on_overflow
    def modular_set(self, expr: PrimExpr | int) -> ModularSet:
        """The residues ``expr`` can take: each value is ``coeff * k + base`` (TVM's modular set)."""
        return self._modular(convert(expr))

    @deep_on_overflow
    def const_int_bound(self, expr: PrimExpr | int) -> ConstIntBound:
        lo, hi = self._bounds.bound(convert(expr))
        return ConstIntBound.clamped(lo, hi)

    @deep_on_overflow
    def simplify(self, expr: PrimExpr | int, steps: int = 2) -> PrimExpr:
        """A simpler, equivalent expression (canonical sums, folded divisions ...)."""
        expr = convert(expr)
        state = self._state()
        known = self._simplified.get(id(expr))
        if known is not None and known[0] is expr and known[1] == steps and known[2] == state:
            return known[3]
        asked = expr
        if self._values:
            expr = substitute(expr, lambda v: self._values.get(v))
        for _ in range(max(steps, 1)):
            new = self._rewriter.visit(expr)
            if new is expr:
                break
            expr = new
        if len(self._simplified) >= _SIMPLIFIED_SIZE:  # (an analyzer of a module lives as long as the process)
            self._simplified.clear()
        self._simplified[id(asked)] = (asked, steps, state, expr)  # (holds ``asked``: its id stays its own)
        return expr

    rewrite_simplify = simplify
    canonical_simplify = simplify

    @deep_on_overflow
    def can_prove(self, cond: PrimExpr | bool) -> bool:
        """True only if ``cond`` holds for every value the variables can take."""
        result = self.simplify(convert(cond))
        return isinstance(result, IntImm) and bool(result.value)

    def can_prove_equal(self, a: PrimExpr | int, b: PrimExpr | int) -> bool:
        a, b = convert(a), convert(b)
        if a.same_as(b):  # (bool and handle variables included)
            return True
        if _dt.is_float(a.dtype) or _dt.is_float(b.dtype):
            sa, sb = self.simplify(a), self.simplify(b)
            if isinstance(sa, FloatImm) and isinstance(sb, FloatImm):  # TVM folds a - b == 0
                return sa.dtype == sb.dtype and sa.value == sb.value
            return sa.same_as(sb)
        return self.can_prove(a == b)

    def can_prove_greater_equal(self, expr: PrimExpr | int, lower_bound: int) -> bool:
        return self.const_int_bound(expr).min_value >= lower_bound

    def can_prove_less(self, expr: PrimExpr | int, upper_bound: int) -> bool:
        return self.const_int_bound(expr).max_value < upper_bound

    def __repr__(self) -> str:
        known = ", ".join(f"{v.name} in [{lo}, {hi}]" for v, (lo, hi) in self._bounds._var_bounds.values())
        return f"Analyzer({known})"
