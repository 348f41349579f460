"""Reductions over axes: sum, mean, max, min, prod, variance, std (``axis=None``: every
axis), and the running sum and product cumsum, cumprod (``axis=None``: of the flattened
tensor)."""

from __future__ import annotations

from typing import Any, Sequence

from ..expr import Call, Expr
from ..struct_info import StructInfo, TensorStructInfo
from ._utils import normalize_axes, product
from .registry import OpPattern, check_num_args, make_call, register, tensor_arg

__all__ = ["sum", "mean", "max", "min", "prod", "variance", "std", "cumsum", "cumprod", "reduction_sinfo"]


def reduction_sinfo(call: Call, op: str) -> StructInfo:
    """The input's shape without the reduced axes (kept as 1 with ``keepdims``)."""
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "x")
    axis, keepdims = call.attrs["axis"], call.attrs["keepdims"]
    if x.ndim == -1:
        return TensorStructInfo(None, x.dtype, None, -1)
    axes = normalize_axes(op, axis, x.ndim)
    vals = x.shape_values
    if vals is None:
        return TensorStructInfo(None, x.dtype, None, x.ndim if keepdims else x.ndim - len(axes))
    out = [1 if k in axes else d for k, d in enumerate(vals) if keepdims or k not in axes]
    return TensorStructInfo(out, x.dtype)


def _axes(axis: int | Sequence[int] | None) -> tuple | None:
    if axis is None:
        return None
    return (int(axis),) if isinstance(axis, int) else tuple(int(a) for a in axis)


for _name in ("sum", "mean", "max", "min", "prod", "variance", "std"):
    def _make(op: str):
        def infer(call: Call, ctx: Any) -> StructInfo:
            return reduction_sinfo(call, op)
        infer.__doc__ = f"The {op[6:]} over the given axes."
        return infer
    register(f"relax.{_name}", pattern=OpPattern.COMM_REDUCE, num_inputs=1)(_make(f"relax.{_name}"))


def sum(x: Expr, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Call:  # noqa: A001
    """The sum over ``axis`` (None: all axes)."""
    return make_call("relax.sum", x, attrs={"axis": _axes(axis), "keepdims": bool(keepdims)})


def mean(x: Expr, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Call:
    """The average over ``axis`` (None: all axes)."""
    return make_call("relax.mean", x, attrs={"axis": _axes(axis), "keepdims": bool(keepdims)})


def max(x: Expr, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Call:  # noqa: A001
    """The maximum over ``axis`` (None: all axes)."""
    return make_call("relax.max", x, attrs={"axis": _axes(axis), "keepdims": bool(keepdims)})


def min(x: Expr, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Call:  # noqa: A001
    """The minimum over ``axis`` (None: all axes)."""
    return make_call("relax.min", x, attrs={"axis": _axes(axis), "keepdims": bool(keepdims)})


def prod(x: Expr, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Call:
    """The product over ``axis`` (None: all axes)."""
    return make_call("relax.prod", x, attrs={"axis": _axes(axis), "keepdims": bool(keepdims)})


def variance(x: Expr, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Call:
    """The (biased, numpy's default) variance over ``axis`` (None: all axes)."""
    return make_call("relax.variance", x, attrs={"axis": _axes(axis), "keepdims": bool(keepdims)})


def std(x: Expr, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Call:
    """The (biased) standard deviation over ``axis`` (None: all axes)."""
    return make_call("relax.std", x, attrs={"axis": _axes(axis), "keepdims": bool(keepdims)})


def _scan_sinfo(call: Call, op: str) -> StructInfo:
    """The input's shape (flattened when ``axis`` is None) in ``dtype`` (default: the input's)."""
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "data")
    dtype = call.attrs["dtype"] or x.dtype
    axis = call.attrs["axis"]
    if x.ndim != -1 and axis is not None:
        normalize_axes(op, [axis], x.ndim)
    if axis is None:
        if x.shape_values is None:
            return TensorStructInfo(None, dtype, None, 1)
        return TensorStructInfo([product(x.shape_values)], dtype)
    if x.shape_values is None:
        return TensorStructInfo(None, dtype, None, x.ndim)
    return TensorStructInfo(list(x.shape_values), dtype)


for _name in ("cumsum", "cumprod"):
    def _make_scan(op: str):
        def infer(call: Call, ctx: Any) -> StructInfo:
            return _scan_sinfo(call, op)
        infer.__doc__ = f"The running {op[9:]} along an axis."
        return infer
    register(f"relax.{_name}", pattern=OpPattern.OPAQUE, num_inputs=1)(_make_scan(f"relax.{_name}"))


def cumsum(data: Expr, axis: int | None = None, dtype: str | None = None, exclusive: bool = False) -> Call:
    """The running sum along ``axis`` (None: of the flattened tensor), numpy.cumsum."""
    return make_call("relax.cumsum", data, attrs={"axis": None if axis is None else int(axis), "dtype": dtype,
                                                  "exclusive": bool(exclusive)})


def cumprod(data: Expr, axis: int | None = None, dtype: str | None = None, exclusive: bool = False) -> Call:
    """The running product along ``axis`` (None: of the flattened tensor), numpy.cumprod."""
    return make_call("relax.cumprod", data, attrs={"axis": None if axis is None else int(axis), "dtype": dtype,
                                                   "exclusive": bool(exclusive)})
