"""Element-wise unary operators, casts and constant-filled tensors (``topi.exp(A)``)."""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

from .. import te
from ..ir import dtype as _dt
from ..tir import op as _op
from ..tir.expr import PrimExpr, const
from .utils import as_expr

__all__ = ["exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "negative", "abs",
           "floor", "ceil", "round", "trunc", "sin", "cos", "identity", "cast", "full", "full_like",
           "zeros", "ones", "clip", "logical_not"]


def _unary(fop: Callable[[PrimExpr], PrimExpr], name: str) -> Callable[[te.Tensor], te.Tensor]:
    # TVM's Python TOPI leaves these computes unnamed: their blocks are called "compute"
    def compute(x: te.Tensor) -> te.Tensor:
        return te.compute(x.shape, lambda *i: fop(x(*i)), name="compute")

    compute.__name__ = name
    compute.__doc__ = f"Element-wise ``{name}``."
    return compute


exp = _unary(_op.exp, "exp")
log = _unary(_op.log, "log")
sqrt = _unary(_op.sqrt, "sqrt")
rsqrt = _unary(_op.rsqrt, "rsqrt")
tanh = _unary(_op.tanh, "tanh")
sigmoid = _unary(_op.sigmoid, "sigmoid")
erf = _unary(_op.erf, "erf")
negative = _unary(_op.neg, "negative")
abs = _unary(_op.abs, "abs")  # noqa: A001 - TVM's name
def _integers_unchanged(fop: Callable[[PrimExpr], PrimExpr]) -> Callable[[PrimExpr], PrimExpr]:
    # rounding an integer gives it back (TVM's te.floor etc. return an integer operand as is)
    return lambda v: v if _dt.is_int(v.dtype) or _dt.is_uint(v.dtype) else fop(v)


floor = _unary(_integers_unchanged(_op.floor), "floor")
ceil = _unary(_integers_unchanged(_op.ceil), "ceil")
round = _unary(_integers_unchanged(_op.round), "round")  # noqa: A001
trunc = _unary(_integers_unchanged(_op.trunc), "trunc")
sin = _unary(_op.sin, "sin")
cos = _unary(_op.cos, "cos")
tan = _unary(_op.tan, "tan")
sinh = _unary(_op.sinh, "sinh")
cosh = _unary(_op.cosh, "cosh")
acos = _unary(_op.acos, "acos")
acosh = _unary(_op.acosh, "acosh")
asin = _unary(_op.asin, "asin")
asinh = _unary(_op.asinh, "asinh")
atan = _unary(_op.atan, "atan")
atanh = _unary(_op.atanh, "atanh")
square = _unary(lambda v: v * v, "square")
isnan = _unary(_op.isnan, "isnan")


def _sign(v: PrimExpr) -> PrimExpr:
    one, zero = const(1, v.dtype), const(0, v.dtype)
    if _dt.is_uint(v.dtype):
        return _op.Select(v > zero, one, zero)
    return _op.Select(v > zero, one, _op.Select(v < zero, const(-1, v.dtype), zero))


def _isinf(v: PrimExpr) -> PrimExpr:
    if not _dt.is_float(v.dtype):
        return const(False, "bool")
    return _op.equal(_op.fabs(v), const(math.inf, v.dtype))


def _isfinite(v: PrimExpr) -> PrimExpr:
    if not _dt.is_float(v.dtype):
        return const(True, "bool")
    return _op.logical_and(_op.logical_not(_op.isnan(v)), _op.logical_not(_isinf(v)))


sign = _unary(_sign, "sign")
isinf = _unary(_isinf, "isinf")
isfinite = _unary(_isfinite, "isfinite")
identity = _unary(lambda v: v, "identity")
logical_not = _unary(_op.logical_not, "logical_not")


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


bitwise_not = _unary(lambda v: _op.logical_not(v) if v.dtype == "bool" else _op.bitwise_not(v), "bitwise_not")
__all__ += ["bitwise_not"]
