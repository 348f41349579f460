"""Reductions over axes: sum, mean, max, min, prod, variance, std, median (``axis=None``: every
axis), and the running sum and product cumsum, cumprod (``axis=None``: of the flattened
tensor)."""

from __future__ import annotations

from typing import Any, Sequence

from ...tir.expr import IntImm
from ..expr import Call, Expr, ShapeExpr
from ..struct_info import StructInfo, TensorStructInfo, TupleStructInfo
from ._utils import normalize_axes, product
from .registry import OpPattern, check_num_args, make_call, register, tensor_arg

__all__ = ["sum", "mean", "max", "min", "prod", "variance", "std", "median", "cumsum", "cumprod", "reduction_sinfo"]


def _reduced(call: Call, op: str) -> tuple:
    """(input, output ndim, output dims or None): TVM's rule reads dims only from a literal
    shape (not a shape variable); no axis with keepdims gives all ones even then."""
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "x")
    axis, keepdims = call.attrs["axis"], call.attrs["keepdims"]
    axes = normalize_axes(op, axis, x.ndim) if x.ndim != -1 and axis is not None else []
    if keepdims:
        out_ndim = x.ndim
    elif axis is None:
        out_ndim = 0
    else:
        out_ndim = -1 if x.ndim == -1 else x.ndim - len(axes)
    if not isinstance(x.shape, ShapeExpr):
        if axis is None and keepdims and out_ndim != -1:
            return x, out_ndim, [IntImm("int64", 1)] * out_ndim
        return x, out_ndim, [] if out_ndim == 0 else None
    vals = x.shape_values
    out = [IntImm("int64", 1) if axis is None or k in axes else d for k, d in enumerate(vals)
           if keepdims or (axis is not None and k not in axes)]
    return x, out_ndim, out


def reduction_sinfo(call: Call, op: str) -> StructInfo:
    """The input's shape without the reduced axes (kept as 1 with ``keepdims``)."""
    x, ndim, out = _reduced(call, op)
    return TensorStructInfo(out, x.dtype, x.vdevice, ndim)


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
    """The input's shape (flattened when ``axis`` is None) in ``dtype`` (default: the input's),
    on the input's virtual device; as TVM's rule, a flattened input of unknown shape keeps
    the input's ndim."""
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "data")
    dtype = call.attrs["dtype"] or x.dtype
    axis = call.attrs["axis"]
    if x.ndim != -1 and axis is not None:
        normalize_axes(op, [axis], x.ndim)
    if axis is None:
        if not isinstance(x.shape, ShapeExpr):
            return TensorStructInfo(None, dtype, x.vdevice, x.ndim)
        return TensorStructInfo([product(x.shape_values)], dtype, x.vdevice)
    if x.shape is None:
        return TensorStructInfo(None, dtype, x.vdevice, x.ndim)
    return TensorStructInfo(x.shape, dtype, x.vdevice)


for _name in ("cumsum", "cumprod"):
    def _make_scan(op: str):
        def infer(call: Call, ctx: Any) -> StructInfo:
            return _scan_sinfo(call, op)
        infer.__doc__ = f"The running {op[9:]} along an axis."
        return infer
    register(f"relax.{_name}", pattern=OpPattern.OPAQUE, num_inputs=1)(_make_scan(f"relax.{_name}"))


@register("relax.median", pattern=OpPattern.OPAQUE, num_inputs=1)
def _infer_median(call: Call, ctx: Any) -> StructInfo:
    """The median over the axes: along one axis a tuple (values, int64 indices), as torch's;
    over every axis (or several) the values alone (TVM's rule)."""
    op = "relax.median"
    x, ndim, out = _reduced(call, op)
    axis = call.attrs["axis"]
    if out is None:
        return TupleStructInfo([TensorStructInfo(None, x.dtype, x.vdevice, ndim),
                                TensorStructInfo(None, "int64", x.vdevice, ndim)])
    if axis is None or len(axis) > 1 or not isinstance(x.shape, ShapeExpr):
        return TensorStructInfo(out, x.dtype, x.vdevice)
    return TupleStructInfo([TensorStructInfo(out, x.dtype, x.vdevice), TensorStructInfo(out, "int64", x.vdevice)])


def median(data: Expr, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Call:
    """The median over ``axis`` (None: of every element), the lower of the two middle values
    for an even count as torch's; along one axis also the index where it sits."""
    return make_call("relax.median", data, attrs={"axis": _axes(axis), "keepdims": bool(keepdims)})


def cumsum(data: Expr, axis: int | None = None, dtype: str | None = None, exclusive: bool = False) -> Call:
    """The running sum along ``axis`` (None: of the flattened tensor), numpy.cumsum."""
    return make_call("relax.cumsum", data, attrs={"axis": None if axis is None else int(axis), "dtype": dtype,
                                                  "exclusive": bool(exclusive)})


def cumprod(data: Expr, axis: int | None = None, dtype: str | None = None, exclusive: bool = False) -> Call:
    """The running product along ``axis`` (None: of the flattened tensor), numpy.cumprod."""
    return make_call("relax.cumprod", data, attrs={"axis": None if axis is None else int(axis), "dtype": dtype,
                                                   "exclusive": bool(exclusive)})
