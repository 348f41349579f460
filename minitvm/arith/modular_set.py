"""Which residues an integer expression can take (TVM's ``Analyzer.modular_set``): every value
of the expression is ``coeff * k + base`` for some integer ``k``.

``coeff == 0`` means the expression is the constant ``base``; ``(1, 0)`` says nothing.  What
is used: constants, variables bound to expressions, ``floormod(v, c) == b`` (or ``truncmod``)
facts from ``Analyzer.constraint_scope``, sums, products, divisions and remainders by
constants, shifts, min / max / select (the residues both sides share), casts and lets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from ..tir.expr import (
    EQ,
    Add,
    And,
    Call,
    Cast,
    Div,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    PrimExpr,
    Select,
    Sub,
    Var,
)

if TYPE_CHECKING:
    from .analyzer import Analyzer


@dataclass(frozen=True)
class ModularSet:
    """``{coeff * k + base}``; ``base`` is reduced into ``[0, coeff)`` when ``coeff`` is not 0."""

    coeff: int
    base: int

    def __post_init__(self) -> None:
        coeff = abs(self.coeff)
        object.__setattr__(self, "coeff", coeff)
        if coeff:
            object.__setattr__(self, "base", self.base % coeff)


EVERYTHING = ModularSet(1, 0)


def _union(a: ModularSet, b: ModularSet) -> ModularSet:
    """The residues common to both sides: a set holding every value of either."""
    return ModularSet(math.gcd(a.coeff, b.coeff, a.base - b.base), a.base)


def intersect(a: ModularSet, b: ModularSet) -> ModularSet:
    """Values in both sets (Chinese remainder); a contradiction keeps ``a``."""
    if a.coeff == 0 or b.coeff == 0:
        return a if a.coeff == 0 else b
    g = math.gcd(a.coeff, b.coeff)
    if (b.base - a.base) % g:
        return a
    step = b.coeff // g
    k = ((b.base - a.base) // g * pow(a.coeff // g, -1, step)) % step if step > 1 else 0
    return ModularSet(a.coeff * step, a.base + a.coeff * k)


class ModularSetAnalyzer:
    """The residues of expressions under an Analyzer's bindings, bounds and constraints."""

    def __init__(self, analyzer: "Analyzer") -> None:
        self.analyzer = analyzer
        self.var_info: dict[Var, ModularSet] = {}

    def enter_constraint(self, condition: PrimExpr) -> Callable[[], None]:
        """Learn ``floormod(v, c) == b`` facts (also inside ``and``); returns the undo."""
        saved = dict(self.var_info)
        for var, fact in _modular_facts(condition):
            self.var_info[var] = intersect(self.var_info.get(var, EVERYTHING), fact)
        return lambda: (self.var_info.clear(), self.var_info.update(saved))

    def __call__(self, expr: PrimExpr) -> ModularSet:
        if isinstance(expr, IntImm):
            return ModularSet(0, expr.value)
        if isinstance(expr, Var):
            bound = self.analyzer._values.get(expr)
            known = self.var_info.get(expr, EVERYTHING)
            return intersect(self(bound), known) if bound is not None else known
        if isinstance(expr, Cast):
            return self(expr.value)
        if isinstance(expr, Let):  # the body sees the variable with its value's residues
            saved = self.var_info.get(expr.var)
            self.var_info[expr.var] = self(expr.value)
            try:
                return self(expr.body)
            finally:
                self.var_info.pop(expr.var)
                if saved is not None:
                    self.var_info[expr.var] = saved
        if isinstance(expr, (Add, Sub)):
            a, b = self(expr.a), self(expr.b)
            sign = 1 if isinstance(expr, Add) else -1
            return ModularSet(math.gcd(a.coeff, b.coeff), a.base + sign * b.base)
        if isinstance(expr, Mul):
            a, b = self(expr.a), self(expr.b)
            return ModularSet(math.gcd(a.coeff * b.coeff, a.coeff * b.base, b.coeff * a.base), a.base * b.base)
        if isinstance(expr, (Min, Max)):
            return _union(self(expr.a), self(expr.b))
        if isinstance(expr, Select):
            return _union(self(expr.true_value), self(expr.false_value))
        return self._by_constant(expr)

    def _by_constant(self, expr: PrimExpr) -> ModularSet:
        """Divisions, remainders and right shifts by a positive constant; else nothing known."""
        if isinstance(expr, Call) and expr.op == "tir.shift_right" and isinstance(expr.args[1], IntImm):
            return self._div(expr.args[0], 1 << expr.args[1].value, round_down=True)
        if isinstance(expr, Call) and expr.op == "tir.bitwise_and" and isinstance(expr.args[1], IntImm) \
                and expr.args[1].value > 0 and (expr.args[1].value + 1) & expr.args[1].value == 0:
            return self._mod(expr.args[0], expr.args[1].value + 1, round_down=True)  # x & (2^p - 1)
        if not isinstance(expr, (Div, FloorDiv, Mod, FloorMod)) or not isinstance(expr.b, IntImm) \
                or expr.b.value == 0 or not isinstance(expr.a.dtype, str) or "int" not in expr.a.dtype:
            return EVERYTHING
        round_down = isinstance(expr, (FloorDiv, FloorMod))
        if isinstance(expr, (Div, FloorDiv)):
            return self._div(expr.a, expr.b.value, round_down)
        return self._mod(expr.a, expr.b.value, round_down)

    def _mod(self, lhs: PrimExpr, val: int, round_down: bool) -> ModularSet:
        a = self(lhs)
        coeff = math.gcd(a.coeff, val)
        if a.base % coeff == 0 or (a.base > 0 and (round_down or self._non_negative(lhs))):
            return ModularSet(coeff, a.base % coeff)
        return EVERYTHING

    def _div(self, lhs: PrimExpr, val: int, round_down: bool) -> ModularSet:
        a = self(lhs)
        if a.coeff % val == 0:
            if a.base == 0:
                return ModularSet(a.coeff // val, 0)
            # only a division known to round down keeps the residue
            if a.base > 0 and val > 0 and (round_down or self._non_negative(lhs)):
                return ModularSet(a.coeff // val, a.base // val)
        return EVERYTHING

    def _non_negative(self, expr: PrimExpr) -> bool:
        return self.analyzer.const_int_bound(expr).min_value >= 0


def _modular_facts(condition: Any) -> list[tuple[Var, ModularSet]]:
    if isinstance(condition, And):
        return _modular_facts(condition.a) + _modular_facts(condition.b)
    if not isinstance(condition, EQ):
        return []
    for lhs, rhs in ((condition.a, condition.b), (condition.b, condition.a)):
        if isinstance(lhs, (Mod, FloorMod)) and isinstance(lhs.a, Var) and isinstance(lhs.b, IntImm) \
                and isinstance(rhs, IntImm) and lhs.b.value > 0:
            return [(lhs.a, ModularSet(lhs.b.value, rhs.value))]
    return []
