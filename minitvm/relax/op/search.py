"""Selection and search: ``where`` (element-wise choice) and ``argmax``/``argmin``."""

from __future__ import annotations

from typing import Any

from ..expr import Call, Expr
from ..struct_info import StructInfo, StructInfoError, TensorStructInfo, shape_text
from ._utils import normalize_axis, same_dtype
from .binary import broadcast_shapes
from .registry import OpPattern, check_num_args, make_call, register, tensor_arg

__all__ = ["where", "argmax", "argmin"]


@register("relax.where", pattern=OpPattern.BROADCAST, num_inputs=3)
def _infer_where(call: Call, ctx: Any) -> StructInfo:
    """Element-wise ``x1 if condition else x2``; the three shapes broadcast together."""
    op = "relax.where"
    check_num_args(call, op, 3)
    cond = tensor_arg(call, 0, op, "condition")
    x1, x2 = tensor_arg(call, 1, op, "x1"), tensor_arg(call, 2, op, "x2")
    if not cond.is_unknown_dtype and cond.dtype != "bool":
        raise StructInfoError(f"{op}: the condition must be a bool tensor, got dtype {cond.dtype}")
    dtype = same_dtype(op, [x1, x2])
    shapes = [cond.shape_values, x1.shape_values, x2.shape_values]
    if all(s is not None for s in shapes):
        try:
            out = broadcast_shapes(op, shapes[0], shapes[1])
            out = None if out is None else broadcast_shapes(op, out, shapes[2])
        except StructInfoError:
            raise StructInfoError(f"{op}: cannot broadcast shapes {shape_text(shapes[0])}, "
                                  f"{shape_text(shapes[1])} and {shape_text(shapes[2])}") from None
        if out is not None:
            return TensorStructInfo(list(out), dtype)
    ndims = [t.ndim for t in (cond, x1, x2)]
    return TensorStructInfo(None, dtype, None, -1 if -1 in ndims else max(ndims))


def where(condition: Expr, x1: Expr, x2: Expr) -> Call:
    """``x1`` where ``condition`` is true, else ``x2`` (numpy broadcasting)."""
    return make_call("relax.where", condition, x1, x2)


def _arg_sinfo(call: Call, op: str) -> StructInfo:
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "x")
    axis, keepdims = call.attrs["axis"], call.attrs["keepdims"]
    if x.ndim == -1:
        return TensorStructInfo(None, "int64", None, -1 if not keepdims or axis is not None else -1)
    if axis is None:
        return TensorStructInfo([1] * x.ndim if keepdims else [], "int64")
    axis = normalize_axis(op, axis, x.ndim)
    vals = x.shape_values
    if vals is None:
        return TensorStructInfo(None, "int64", None, x.ndim if keepdims else x.ndim - 1)
    out = [1 if k == axis else d for k, d in enumerate(vals) if keepdims or k != axis]
    return TensorStructInfo(out, "int64")


for _name in ("argmax", "argmin"):
    def _make(op: str):
        def infer(call: Call, ctx: Any) -> StructInfo:
            return _arg_sinfo(call, op)
        infer.__doc__ = f"The int64 indices of the {op[9:]} along an axis (None: the flattened tensor)."
        return infer
    register(f"relax.{_name}", pattern=OpPattern.COMM_REDUCE, num_inputs=1)(_make(f"relax.{_name}"))


def argmax(x: Expr, axis: int | None = None, keepdims: bool = False) -> Call:
    """The int64 index of the largest element along ``axis`` (first one on ties)."""
    return make_call("relax.argmax", x, attrs={"axis": axis, "keepdims": bool(keepdims)})


def argmin(x: Expr, axis: int | None = None, keepdims: bool = False) -> Call:
    """The int64 index of the smallest element along ``axis`` (first one on ties)."""
    return make_call("relax.argmin", x, attrs={"axis": axis, "keepdims": bool(keepdims)})
