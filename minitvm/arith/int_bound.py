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
from ..tir.expr import Call, Cast, IntImm, Let, PrimExpr, SizeVar, Var
from ..tir.semantics import Interval, cast_bound, dtype_range, node_operands, row_of

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



class IntBoundAnalyzer:
    """Interval arithmetic over integer PrimExprs, with per-variable bounds."""

    def __init__(self) -> None:
        # id(var) -> (var, interval); the var is kept so its id stays unique
        self._var_bounds: dict[int, tuple[Var, Interval]] = {}
        self.version = 0  # changes with every bound set (what the analyzer's answers depend on)

    # -- variable bounds -------------------------------------------------------------
    def set_bound(self, var: Var, interval: Interval | None) -> Interval | None:
        """Set (or with None, forget) a variable's bound; returns the previous one."""
        previous = self._var_bounds.get(id(var))
        self.version += 1
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
        if e.dtype == "bool":
            return (0, 1)
        row = row_of(e)
        if row is not None and row.bound is not None:  # the operation's bound, from the semantics table
            operands = node_operands(e)
            return row.bound(e.dtype, *(self.bound(x) for x in operands))
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

    def _cast_bound(self, e: Cast) -> Interval:
        if _dt.is_float(e.value.dtype):
            return dtype_range(e.dtype)
        return cast_bound(e.value.dtype, e.dtype, self.bound(e.value))
