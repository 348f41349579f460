"""Constant integer bounds: the smallest and largest value an integer expression can take.

Bounds are computed by interval arithmetic over the expression tree, starting from what is
known about each variable (a loop variable's range, or else the range of its dtype).
Internally bounds are exact Python ints, so no saturation logic is needed; the public
:class:`ConstIntBound` clamps them to ``[NEG_INF, POS_INF]`` as TVM reports them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import dtype as _dt
from ..tir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
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
    Not,
    Or,
    PrimExpr,
    Select,
    SizeVar,
    Sub,
    Var,
)

__all__ = ["ConstIntBound", "IntBoundAnalyzer", "dtype_range"]


@dataclass(frozen=True)
class ConstIntBound:
    """``min_value <= expr <= max_value``; the infinities mean "unbounded" (as in TVM)."""

    min_value: int
    max_value: int

    POS_INF: ClassVar[int] = 2**63 - 1
    NEG_INF: ClassVar[int] = -(2**63 - 1)

    @staticmethod
    def clamped(lo: int, hi: int) -> "ConstIntBound":
        return ConstIntBound(max(lo, ConstIntBound.NEG_INF), min(hi, ConstIntBound.POS_INF))


Interval = tuple[int, int]


def dtype_range(dtype: str) -> Interval:
    """All values a scalar of ``dtype`` can hold (floats: unbounded)."""
    dtype = str(dtype)
    if dtype == "bool":
        return (0, 1)
    if _dt.is_uint(dtype):
        return (0, (1 << _dt.bits(dtype)) - 1)
    if _dt.is_int(dtype):
        half = 1 << (_dt.bits(dtype) - 1)
        return (-half, half - 1)
    return (ConstIntBound.NEG_INF, ConstIntBound.POS_INF)


def _corners(op, a: Interval, b: Interval) -> Interval:
    values = [op(x, y) for x in a for y in b]
    return (min(values), max(values))


def _trunc_div(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y >= 0) else -q


class IntBoundAnalyzer:
    """Interval arithmetic over integer PrimExprs, with per-variable bounds."""

    def __init__(self) -> None:
        # id(var) -> (var, interval); the var is kept so its id stays unique
        self._var_bounds: dict[int, tuple[Var, Interval]] = {}

    # -- variable bounds -------------------------------------------------------------
    def set_bound(self, var: Var, interval: Interval | None) -> Interval | None:
        """Set (or with None, forget) a variable's bound; returns the previous one."""
        previous = self._var_bounds.get(id(var))
        if interval is None:
            self._var_bounds.pop(id(var), None)
        else:
            self._var_bounds[id(var)] = (var, interval)
        return None if previous is None else previous[1]

    def var_bound(self, var: Var) -> Interval:
        known = self._var_bounds.get(id(var))
        if known is not None:
            return known[1]
        lo, hi = dtype_range(var.dtype)
        return (0, hi) if isinstance(var, SizeVar) else (lo, hi)

    # -- the analysis ----------------------------------------------------------------
    def bound(self, e: PrimExpr) -> Interval:
        """Inclusive ``(lo, hi)`` of integer (or bool) expression ``e``."""
        if isinstance(e, IntImm):
            return (e.value, e.value)
        if isinstance(e, Var):
            return self.var_bound(e)
        if not (_dt.is_int(e.dtype) or _dt.is_bool(e.dtype)):
            return dtype_range(e.dtype)
        if isinstance(e, (EQ, NE, LT, LE, GT, GE, And, Or, Not)):
            return (0, 1)
        if isinstance(e, Add):
            (a0, a1), (b0, b1) = self.bound(e.a), self.bound(e.b)
            return (a0 + b0, a1 + b1)
        if isinstance(e, Sub):
            (a0, a1), (b0, b1) = self.bound(e.a), self.bound(e.b)
            return (a0 - b1, a1 - b0)
        if isinstance(e, Mul):
            return _corners(lambda x, y: x * y, self.bound(e.a), self.bound(e.b))
        if isinstance(e, (FloorDiv, Div)):
            return self._div_bound(e)
        if isinstance(e, FloorMod):
            return self._floormod_bound(self.bound(e.a), self.bound(e.b))
        if isinstance(e, Mod):
            return self._truncmod_bound(self.bound(e.a), self.bound(e.b))
        if isinstance(e, (Min, Max)):
            (a0, a1), (b0, b1) = self.bound(e.a), self.bound(e.b)
            return (min(a0, b0), min(a1, b1)) if isinstance(e, Min) else (max(a0, b0), max(a1, b1))
        if isinstance(e, Select):
            return self._union(self.bound(e.true_value), self.bound(e.false_value))
        if isinstance(e, Call) and e.op == "tir.if_then_else":
            return self._union(self.bound(e.args[1]), self.bound(e.args[2]))
        if isinstance(e, Cast):
            return self._cast_bound(e)
        if isinstance(e, Let):
            previous = self.set_bound(e.var, self.bound(e.value))
            try:
                return self.bound(e.body)
            finally:
                self.set_bound(e.var, previous)
        # loads, calls ...: anything the dtype allows
        return dtype_range(e.dtype)

    @staticmethod
    def _union(a: Interval, b: Interval) -> Interval:
        return (min(a[0], b[0]), max(a[1], b[1]))

    def _div_bound(self, e: PrimExpr) -> Interval:
        a, b = self.bound(e.a), self.bound(e.b)
        divide = (lambda x, y: x // y) if isinstance(e, FloorDiv) else _trunc_div
        if b[0] > 0 or b[1] < 0:
            return _corners(divide, a, b)
        # the divisor may be zero or change sign: |a / b| <= |a| for any nonzero integer b
        largest = max(abs(a[0]), abs(a[1]))
        return (-largest, largest)

    @staticmethod
    def _floormod_bound(a: Interval, b: Interval) -> Interval:
        if b[0] > 0:
            if b[0] == b[1]:
                c = b[0]
                # all of a inside one period [k*c, k*c + c): the result is a shifted copy of a
                if a[0] // c == a[1] // c:
                    shift = (a[0] // c) * c
                    return (a[0] - shift, a[1] - shift)
            return (0, b[1] - 1)
        largest = max(abs(b[0]), abs(b[1]))
        return (-(largest - 1), largest - 1) if largest > 0 else (0, 0)

    @staticmethod
    def _truncmod_bound(a: Interval, b: Interval) -> Interval:
        largest = max(abs(b[0]), abs(b[1])) - 1
        if largest < 0:
            return (0, 0)
        if a[0] >= 0:
            return (0, min(a[1], largest))
        if a[1] <= 0:
            return (max(a[0], -largest), 0)
        return (-largest, largest)

    def _cast_bound(self, e: Cast) -> Interval:
        target = dtype_range(e.dtype)
        source_dtype = e.value.dtype
        if _dt.is_int(source_dtype) or _dt.is_bool(source_dtype):
            lo, hi = self.bound(e.value)
            if target[0] <= lo and hi <= target[1]:
                return (lo, hi)
        return target
