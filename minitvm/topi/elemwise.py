"""Element-wise unary operators, casts and constant-filled tensors (``topi.exp(A)``)."""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

from .. import te
from ..ir import dtype as _dt
from ..tir import op as _op
from ..tir.expr import PrimExpr, const
from ..tir.op_table import UNARY
from .utils import as_expr

__all__ = ["identity", "cast", "full", "full_like", "zeros", "ones", "clip"]


def _unary(fop: Callable[[PrimExpr], PrimExpr], name: str, doc: str) -> Callable[[te.Tensor], te.Tensor]:
    # TVM's Python TOPI leaves these computes unnamed: their blocks are called "compute"
    def compute(x: te.Tensor) -> te.Tensor:
        return te.compute(x.shape, lambda *i: fop(x(*i)), name="compute")

    compute.__name__ = compute.__qualname__ = name
    compute.__doc__ = f"{doc}\n\n``x`` is a ``te.Tensor``; the result is a ``te.Tensor`` of its shape."
    return compute


# every unary row of the operator table (minitvm.tir.op_table): topi.exp ... topi.bitwise_not
for _row in UNARY:
    globals()[_row.name] = _unary(_row.compute, _row.name, _row.doc)
__all__ += [row.name for row in UNARY]
identity = _unary(lambda v: v, "identity", "``x`` itself, copied element by element.")


def cast(x: te.Tensor, dtype: str) -> te.Tensor:
    """``x`` converted element-wise to ``dtype`` (to bool: ``x != 0``)."""
    dtype = _dt.check(dtype)
    if dtype == "bool":
        return te.compute(x.shape, lambda *i: _op.not_equal(x(*i), const(0, x.dtype)), name="compute")
    return te.compute(x.shape, lambda *i: _op.cast(x(*i), dtype), name="compute")


def clip(x: te.Tensor, a_min: Any, a_max: Any) -> te.Tensor:
    """``x`` limited to ``[a_min, a_max]`` element-wise; a bound of None leaves that side open
    (``torch.clamp(x, min=0)``).  Integer tensors take the bounds rounded toward the inside."""
    def bound(v: Any, rounding: Callable[[float], float]) -> PrimExpr | None:
        if v is None:
            return None
        if isinstance(v, float) and not _dt.is_float(x.dtype):
            v = int(rounding(v))
        return as_expr(v, x.dtype)

    lo, hi = bound(a_min, math.ceil), bound(a_max, math.floor)

    def f(*i: Any) -> PrimExpr:
        v = x(*i)
        v = v if lo is None else _op.max(v, lo)
        return v if hi is None else _op.min(v, hi)

    return te.compute(x.shape, f, name="compute")


def full(shape: Sequence[Any], dtype: str, fill_value: Any) -> te.Tensor:
    """A tensor of ``shape`` whose every element is ``fill_value`` (a number, PrimExpr
    or a 0-d tensor)."""
    dtype = _dt.check(dtype)
    if isinstance(fill_value, te.Tensor):
        return te.compute(list(shape), lambda *i: _op.cast(fill_value[()], dtype), name="T_full")
    if isinstance(fill_value, float) and not dtype.startswith(("float", "bfloat")):
        fill_value = bool(fill_value) if dtype == "bool" else int(fill_value)  # 3.5 -> 3, as a cast does
    value = as_expr(fill_value, dtype)
    return te.compute(list(shape), lambda *i: value, name="T_full")


def full_like(x: te.Tensor, fill_value: Any) -> te.Tensor:
    """A tensor like ``x`` filled with ``fill_value``."""
    return full(x.shape, x.dtype, fill_value)


def zeros(shape: Sequence[Any], dtype: str = "float32") -> te.Tensor:
    return full(shape, dtype, 0)


def ones(shape: Sequence[Any], dtype: str = "float32") -> te.Tensor:
    return full(shape, dtype, 1)
