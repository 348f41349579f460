"""The rule-based expression simplifier behind :meth:`Analyzer.simplify`.

Children are simplified first, then one rule per node kind applies:

* ``+ - *`` on integers: collect like terms in :class:`~minitvm.arith.linear.LinearSum`
  form (``(i * 128 + j) * 1 + 0`` -> ``i * 128 + j``);
* ``floordiv``/``floormod`` by a positive constant: peel off the multiples of the divisor,
  using variable bounds to drop what is provably in range
  (``floordiv(i0 * 4 + i1, 4)`` -> ``i0`` when ``0 <= i1 < 4``);
* ``min``/``max``/comparisons: decide them when bounds prove the order;
* ``Select``/``if_then_else``/``and``/``or``/``not``: fold constant conditions.

Floating-point expressions are only constant-folded: reassociating float math would change
results, and the interpreter must agree with compiled code bit for bit.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..ir import dtype as _dt
from ..tir import op as _op
from ..tir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BinaryOp,
    Call,
    Cast,
    CmpOp,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Select,
    StringImm,
    Sub,
    Var,
)
from ..tir.functor import StmtExprMutator, substitute
from .linear import LinearSum, same_expr

if TYPE_CHECKING:
    from .analyzer import Analyzer

__all__ = ["Rewriter"]

#: expressions without operands: the simplifier returns them as they are
_ATOMS = (Var, IntImm, FloatImm, StringImm)
#: node classes of exactly two operand fields, ``a`` and ``b``
_TWO_OPERANDS = (BinaryOp, CmpOp)

_CMP_BUILDERS = {LT: _op.less, LE: _op.less_equal, GT: _op.greater, GE: _op.greater_equal,
                 EQ: _op.equal, NE: _op.not_equal}
# not (a < b)  ==  a >= b, and so on
_NEGATED = {LT: GE, LE: GT, GT: LE, GE: LT, EQ: NE, NE: EQ}


def _is_int(e: PrimExpr) -> bool:
    return _dt.is_int(e.dtype)


def _const_value(e: PrimExpr) -> int | None:
    return e.value if isinstance(e, IntImm) else None


class Rewriter(StmtExprMutator):
    """Simplifies one expression bottom-up; the analyzer supplies variable bounds."""

    def __init__(self, analyzer: "Analyzer"):
        self.analyzer = analyzer

    def visit(self, n):
        if isinstance(n, _ATOMS):  # nothing to simplify (the generic walk would give n back)
            return n
        new = super().visit(n)
        # an unchanged expression keeps its identity, so callers can tell nothing happened
        if new is not n and isinstance(n, PrimExpr) and same_expr(new, n):
            return n
        return new

    def visit_children(self, n):
        if isinstance(n, _TWO_OPERANDS):  # the generic field walk, for the commonest nodes
            a, b = self.visit(n.a), self.visit(n.b)
            return n if a is n.a and b is n.b else type(n)(a=a, b=b)
        return super().visit_children(n)

    def bound(self, e: PrimExpr) -> tuple[int, int]:
        return self.analyzer.interval(e)

    def linear(self, e: PrimExpr) -> PrimExpr:
        form = LinearSum.from_expr(e)
        form.fold_div_mod_pairs()
        return e if form.builds(e) else form.to_expr()  # (e: the same expression, not rebuilt)

    # -- + - * --------------------------------------------------------------------------
    def _arith(self, n: BinaryOp, build) -> PrimExpr:
        n = self.visit_children(n)
        if not _is_int(n):
            return build(n.a, n.b)  # constant folding and x*1, x+0 only
        return self.linear(n)

    def visit_add_(self, n: Add) -> PrimExpr:
        return self._arith(n, _op.add)

    def visit_sub_(self, n: Sub) -> PrimExpr:
        return self._arith(n, _op.sub)

    def visit_mul_(self, n: Mul) -> PrimExpr:
        return self._arith(n, _op.mul)

    # -- division -------------------------------------------------------------------------
    def visit_floor_div_(self, n: FloorDiv) -> PrimExpr:
        n = self.visit_children(n)
        divisor = _const_value(n.b)
        if not _is_int(n) or divisor is None or divisor <= 0:
            return _op.floordiv(n.a, n.b)
        return self._floordiv_by_const(n.a, divisor)

    def visit_floor_mod_(self, n: FloorMod) -> PrimExpr:
        n = self.visit_children(n)
        divisor = _const_value(n.b)
        if not _is_int(n) or divisor is None or divisor <= 0:
            return _op.floormod(n.a, n.b)
        return self._floormod_by_const(n.a, divisor)

    def visit_div_(self, n: Div) -> PrimExpr:
        n = self.visit_children(n)
        divisor = _const_value(n.b)
        # truncating and floor division agree when nothing is negative
        if _is_int(n) and divisor is not None and divisor > 0 and self.bound(n.a)[0] >= 0:
            return self._floordiv_by_const(n.a, divisor)
        return _op.truncdiv(n.a, n.b)

    def visit_mod_(self, n: Mod) -> PrimExpr:
        n = self.visit_children(n)
        divisor = _const_value(n.b)
        if _is_int(n) and divisor is not None and divisor > 0 and self.bound(n.a)[0] >= 0:
            return self._floormod_by_const(n.a, divisor)
        return _op.truncmod(n.a, n.b)

    def _divisor_candidates(self, form: LinearSum, divisor: int) -> list[int]:
        """Divisors ``g`` of ``divisor`` worth trying for ``x == g * scaled + residue``:
        the divisor itself, then its common factors with the coefficients, largest first."""
        factors = {divisor} | {math.gcd(divisor, abs(c)) for _, c in form.terms}
        return sorted((g for g in factors if g > 1), reverse=True)

    def _exact_split(self, form: LinearSum, divisor: int):
        """Find ``g | divisor`` with ``x == g * scaled + residue`` and ``0 <= residue < g``."""
        for g in self._divisor_candidates(form, divisor):
            scaled, residue = form.split_by(g)
            lo, hi = self.bound(residue.to_expr())
            if 0 <= lo and hi < g:
                return g, scaled, residue
        return None

    def _floordiv_by_const(self, x: PrimExpr, divisor: int) -> PrimExpr:
        dtype = x.dtype
        if divisor == 1:
            return x
        lo, hi = self.bound(x)
        if lo // divisor == hi // divisor:  # the whole range falls in one quotient
            return IntImm(dtype, lo // divisor)
        form = LinearSum.from_expr(x)
        split = self._exact_split(form, divisor)
        if split is not None:
            # floordiv(g*s + r, g*d) == floordiv(s, d) when 0 <= r < g
            g, scaled, _ = split
            return self._floordiv_by_const(scaled.to_expr(), divisor // g)
        scaled, residue = form.split_by(divisor)
        if scaled.terms or (scaled.constant and not residue.constant and residue.terms):
            # floordiv(d*s + r, d) == s + floordiv(r, d), whatever r is (TVM peels a constant
            # only when the divisor divides it: floordiv(x - 2, 2) -> floordiv(x, 2) - 1)
            rest = self._floordiv_by_const(residue.to_expr(), divisor)
            return self.linear(Add(scaled.to_expr(), rest))
        return FloorDiv(x, IntImm(dtype, divisor))

    def _floormod_by_const(self, x: PrimExpr, divisor: int) -> PrimExpr:
        dtype = x.dtype
        if divisor == 1:
            return IntImm(dtype, 0)
        lo, hi = self.bound(x)
        if lo // divisor == hi // divisor:  # one period: a shift of x
            return self.linear(Sub(x, IntImm(dtype, (lo // divisor) * divisor)))
        form = LinearSum.from_expr(x)
        split = self._exact_split(form, divisor)
        if split is not None:
            # floormod(g*s + r, g*d) == g * floormod(s, d) + r when 0 <= r < g
            g, scaled, residue = split
            inner = self._floormod_by_const(scaled.to_expr(), divisor // g)
            return self.linear(Add(Mul(inner, IntImm(dtype, g)), residue.to_expr()))
        scaled, residue = form.split_by(divisor)
        if scaled.terms:
            return self._floormod_by_const(residue.to_expr(), divisor)
        return FloorMod(x, IntImm(dtype, divisor))

    # -- min / max ----------------------------------------------------------------------
    def _difference_bound(self, a: PrimExpr, b: PrimExpr) -> tuple[int, int]:
        form = LinearSum.from_expr(Sub(a, b))
        form.fold_div_mod_pairs()
        form.fold_div_self_pairs()  # bounds only: x // c * c - x is -(x % c), in (-c, 0]
        return self.bound(form.to_expr())

    def visit_min_(self, n: Min) -> PrimExpr:
        n = self.visit_children(n)
        if same_expr(n.a, n.b) or _absorbs(n.a, n.b, Max):
            return n.a
        if _absorbs(n.b, n.a, Max):
            return n.b
        if _is_int(n):
            lo, hi = self._difference_bound(n.a, n.b)
            if hi <= 0:
                return n.a
            if lo >= 0:
                return n.b
        return _op.min(n.a, n.b)

    def visit_max_(self, n: Max) -> PrimExpr:
        n = self.visit_children(n)
        if same_expr(n.a, n.b) or _absorbs(n.a, n.b, Min):
            return n.a
        if _absorbs(n.b, n.a, Min):
            return n.b
        if _is_int(n):
            lo, hi = self._difference_bound(n.a, n.b)
            if lo >= 0:
                return n.a
            if hi <= 0:
                return n.b
        return _op.max(n.a, n.b)

    # -- comparisons and logic -----------------------------------------------------------
    def _compare(self, n: CmpOp) -> PrimExpr:
        n = self.visit_children(n)
        if _is_int(n.a):
            lo, hi = self._difference_bound(n.a, n.b)
            verdict = {
                LT: (hi < 0, lo >= 0), LE: (hi <= 0, lo > 0),
                GT: (lo > 0, hi <= 0), GE: (lo >= 0, hi < 0),
                EQ: (lo == hi == 0, lo > 0 or hi < 0), NE: (lo > 0 or hi < 0, lo == hi == 0),
            }[type(n)]
            if verdict[0]:
                return IntImm("bool", 1)
            if verdict[1]:
                return IntImm("bool", 0)
        return _CMP_BUILDERS[type(n)](n.a, n.b)

    visit_lt_ = visit_le_ = visit_gt_ = visit_ge_ = visit_eq_ = visit_ne_ = _compare

    def visit_and_(self, n: And) -> PrimExpr:
        n = self.visit_children(n)
        if same_expr(n.a, n.b):
            return n.a
        return _op.logical_and(n.a, n.b)

    def visit_or_(self, n: Or) -> PrimExpr:
        n = self.visit_children(n)
        if same_expr(n.a, n.b):
            return n.a
        return _op.logical_or(n.a, n.b)

    def visit_not_(self, n: Not) -> PrimExpr:
        n = self.visit_children(n)
        inner = n.a
        if isinstance(inner, Not):
            return inner.a
        if type(inner) in _NEGATED:
            return self.visit(_NEGATED[type(inner)](inner.a, inner.b))
        return _op.logical_not(inner)

    # -- choices --------------------------------------------------------------------------
    def visit_select_(self, n: Select) -> PrimExpr:
        n = self.visit_children(n)
        if isinstance(n.condition, IntImm):
            return n.true_value if n.condition.value else n.false_value
        if same_expr(n.true_value, n.false_value):
            return n.true_value
        return n

    def visit_call_(self, n: Call) -> PrimExpr:
        n = self.visit_children(n)
        if n.op == "tir.if_then_else":
            cond, then_value, else_value = n.args
            if isinstance(cond, IntImm):
                return then_value if cond.value else else_value
            if same_expr(then_value, else_value):
                return then_value
        return n

    def visit_cast_(self, n: Cast) -> PrimExpr:
        n = self.visit_children(n)
        return _op.cast(n.value, n.dtype)

    def visit_let_(self, n: Let) -> PrimExpr:
        value = self.visit(n.value)
        if isinstance(value, (IntImm, Var)):
            # nothing is saved by naming a constant or a variable: inline it
            return self.visit(substitute(n.body, {n.var: value}))
        with self.analyzer.interval_scope(n.var, self.bound(value) if _is_int(value) else None):
            body = self.visit(n.body)
        if value is n.value and body is n.body:
            return n
        return Let(n.var, value, body)


def _absorbs(x: PrimExpr, other: PrimExpr, kind: type) -> bool:
    """Absorption: ``min(x, max(x, y))`` and ``max(x, min(x, y))`` are ``x`` (``other`` is the
    ``kind`` node holding ``x`` on either side), as TVM's rewrite rules say; the bounds that
    reverse_compute_at derives for a symbolic row count take this shape."""
    return isinstance(other, kind) and (same_expr(other.a, x) or same_expr(other.b, x))
