"""Legalization of the statistical reductions TVM composes from TOPI: variance and std
(the mean of the squared deviations from the kept-dims mean, as TVM computes it).

Both passes add up to a whole tensor's worth of values: in float32 a sum of millions of values
near 100 stops growing once its rounding step exceeds them (a 2x1024x8192 input in [100, 101]
gets a mean off by 7.7, a variance of 59 instead of 0.083).  So the sums run in float64, as
torch's CPU kernels accumulate float32 in double, and the result is rounded back once.
"""

from __future__ import annotations

from typing import Any

from .... import te, topi
from ....ir import dtype as _dt
from ...block_builder import BlockBuilder
from ...expr import Call, Expr
from .common import register_legalize


def _accumulate_dtype(dtype: str) -> str:
    """float64 for the narrower floats (see the module docstring); other dtypes unchanged."""
    return "float64" if _dt.is_float(dtype) and _dt.bits(dtype) < 64 else dtype


def _wide_variance(x: te.Tensor, axis: Any, keepdims: bool) -> te.Tensor:
    """Two passes in the accumulation dtype: the mean, then the mean of squared deviations."""
    acc = _accumulate_dtype(x.dtype)
    wide = x if acc == x.dtype else topi.cast(x, acc)
    deviation = topi.subtract(wide, topi.mean(wide, axis, True))
    return topi.mean(topi.multiply(deviation, deviation), axis, keepdims)


def _variance(x: te.Tensor, axis: Any, keepdims: bool) -> te.Tensor:
    var = _wide_variance(x, axis, keepdims)
    return var if var.dtype == x.dtype else topi.cast(var, x.dtype)


def _std(x: te.Tensor, axis: Any, keepdims: bool) -> te.Tensor:
    std = topi.sqrt(_wide_variance(x, axis, keepdims))
    return std if std.dtype == x.dtype else topi.cast(std, x.dtype)


@register_legalize("relax.variance")
def _legalize_variance(bb: BlockBuilder, call: Call) -> Expr:
    axis = call.attrs["axis"]
    return bb.call_te(_variance, call.args[0], None if axis is None else list(axis), call.attrs["keepdims"],
                      primfunc_name_hint="variance")


@register_legalize("relax.std")
def _legalize_std(bb: BlockBuilder, call: Call) -> Expr:
    axis = call.attrs["axis"]
    return bb.call_te(_std, call.args[0], None if axis is None else list(axis), call.attrs["keepdims"],
                      primfunc_name_hint="std")


def _scan(fn: Any, name: str) -> Any:
    def legalize(bb: BlockBuilder, call: Call) -> Expr:
        a = call.attrs
        return bb.call_te(fn, call.args[0], a["axis"], a["dtype"] or None, a["exclusive"], primfunc_name_hint=name)
    return legalize


register_legalize("relax.cumsum", _scan(topi.cumsum, "cumsum"))
register_legalize("relax.cumprod", _scan(topi.cumprod, "cumprod"))


def _median(x: te.Tensor, axis: list[int] | None, keepdims: bool) -> Any:
    """Sort along the axis (every element flattened when None) and take the lower middle
    value, ``(n - 1) // 2`` (torch's median), with its index along one axis (TVM's kernel)."""
    ndim = x.ndim
    if axis is None:
        count = 1
        for d in x.shape:
            count = count * d
        x, ax = topi.reshape(x, [count]), 0
    elif len(axis) == 1:
        ax = axis[0] % ndim
    else:
        raise NotImplementedError(f"relax.median: legalizing a median over several axes {axis} is not "
                                  "supported (one axis, or none for every element)")
    order = topi.argsort(x, axis=ax, is_ascend=True, dtype="int64")
    ordered = topi.gather(x, ax, order)
    at = list(x.shape)
    at[ax] = 1
    middle = topi.full(at, "int64", (x.shape[ax] - 1) // 2)
    value, index = topi.gather(ordered, ax, middle), topi.gather(order, ax, middle)
    if axis is None:
        return topi.reshape(value, [1] * ndim) if keepdims else topi.reshape(value, [])
    if not keepdims:
        value, index = topi.squeeze(value, [ax]), topi.squeeze(index, [ax])
    return value, index


@register_legalize("relax.median")
def _legalize_median(bb: BlockBuilder, call: Call) -> Expr:
    axis = call.attrs["axis"]
    return bb.call_te(_median, call.args[0], None if axis is None else list(axis), call.attrs["keepdims"],
                      primfunc_name_hint="median")
