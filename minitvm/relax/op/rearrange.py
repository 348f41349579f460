"""Operators that rearrange a tensor's elements: ``repeat``, ``tile``, ``flip``, and the
reductions back to a broadcast source, ``collapse_sum_like`` / ``collapse_sum_to``."""

from __future__ import annotations

from typing import Any, Sequence

from ...tir.expr import IntImm, PrimExpr
from ..expr import Call, Expr
from ..struct_info import StructInfo, StructInfoError, TensorStructInfo, struct_info_text
from ._utils import as_shape_expr, const_dim, normalize_axis, product, shape_arg, simplify
from .registry import OpPattern, check_num_args, make_call, register, tensor_arg

__all__ = ["repeat", "tile", "flip", "collapse_sum_like", "collapse_sum_to"]


def _times(d: PrimExpr, r: int, first: bool) -> PrimExpr:
    """``d`` repeated ``r`` times (constants folded; TVM writes repeat as r * d, tile as d * r)."""
    if r == 1:
        return d
    if isinstance(d, IntImm):
        return IntImm("int64", d.value * r)
    return IntImm("int64", r) * d if first else d * IntImm("int64", r)


@register("relax.repeat", pattern=OpPattern.INJECTIVE, num_inputs=1)
def _infer_repeat(call: Call, ctx: Any) -> StructInfo:
    """Each element repeated along ``axis`` (None: of the flattened tensor)."""
    op = "relax.repeat"
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "data")
    repeats, axis = call.attrs["repeats"], call.attrs["axis"]
    if repeats < 1:
        raise StructInfoError(f"{op}: repeats must be positive, got {repeats}")
    if x.ndim == -1:
        return TensorStructInfo(None, x.dtype, None, 1 if axis is None else -1)
    vals = x.shape_values
    if axis is None:
        if vals is None:
            return TensorStructInfo(None, x.dtype, None, 1)
        return TensorStructInfo([simplify(product(vals) * repeats)], x.dtype)
    axis = normalize_axis(op, axis, x.ndim)
    if vals is None:
        return TensorStructInfo(None, x.dtype, None, x.ndim)
    out = list(vals)
    out[axis] = _times(vals[axis], repeats, True)
    return TensorStructInfo(out, x.dtype)


def repeat(data: Expr, repeats: int, axis: int | None = None) -> Call:
    """Each element of ``data`` repeated ``repeats`` times along ``axis`` (numpy.repeat)."""
    return make_call("relax.repeat", data, attrs={"repeats": int(repeats),
                                                  "axis": None if axis is None else int(axis)})


@register("relax.tile", pattern=OpPattern.INJECTIVE, num_inputs=1)
def _infer_tile(call: Call, ctx: Any) -> StructInfo:
    """The tensor repeated ``repeats[k]`` times along each dimension (numpy.tile)."""
    op = "relax.tile"
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "data")
    reps = list(call.attrs["repeats"])
    if any(r < 1 for r in reps):
        raise StructInfoError(f"{op}: repeats must be positive, got {reps}")
    if x.ndim == -1:
        return TensorStructInfo(None, x.dtype, None, -1)
    ndim = max(x.ndim, len(reps))
    if x.shape_values is None:
        return TensorStructInfo(None, x.dtype, None, ndim)
    dims = [IntImm("int64", 1)] * (ndim - x.ndim) + list(x.shape_values)
    reps = [1] * (ndim - len(reps)) + reps
    return TensorStructInfo([_times(d, r, False) for d, r in zip(dims, reps)], x.dtype)


def tile(data: Expr, repeats: int | Sequence[int]) -> Call:
    """``data`` repeated along each dimension (numpy.tile)."""
    reps = (int(repeats),) if isinstance(repeats, int) else tuple(int(r) for r in repeats)
    return make_call("relax.tile", data, attrs={"repeats": reps})


@register("relax.flip", pattern=OpPattern.INJECTIVE, num_inputs=1)
def _infer_flip(call: Call, ctx: Any) -> StructInfo:
    """The tensor with ``axis`` reversed: the same struct info."""
    op = "relax.flip"
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "data")
    if x.ndim != -1:
        normalize_axis(op, call.attrs["axis"], x.ndim)
    return x


def flip(data: Expr, axis: int) -> Call:
    """``data`` with the order of ``axis`` reversed (numpy.flip)."""
    return make_call("relax.flip", data, attrs={"axis": int(axis)})


def _collapse_target(op: str, x: TensorStructInfo, target: tuple | None) -> None:
    """``target`` must be a shape ``x`` broadcasts from (numpy rules, checked where known)."""
    if x.shape_values is None or target is None:
        return
    vals = x.shape_values
    if len(target) > len(vals):
        raise StructInfoError(f"{op}: cannot collapse {struct_info_text(x)} to the larger rank shape {list(target)}")
    for k in range(1, len(target) + 1):
        t, d = const_dim(target[-k]), const_dim(vals[-k])
        if t is not None and d is not None and t not in (1, d):
            raise StructInfoError(f"{op}: {struct_info_text(x)} does not broadcast from shape {list(target)}")


@register("relax.collapse_sum_like", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=2)
def _infer_collapse_sum_like(call: Call, ctx: Any) -> StructInfo:
    """``data`` summed down to the shape of ``collapse_target`` (which it broadcasts from)."""
    op = "relax.collapse_sum_like"
    check_num_args(call, op, 2)
    x = tensor_arg(call, 0, op, "data")
    like = tensor_arg(call, 1, op, "collapse_target")
    _collapse_target(op, x, like.shape_values)
    if like.shape_values is None:
        return TensorStructInfo(None, x.dtype, None, like.ndim)
    return TensorStructInfo(list(like.shape_values), x.dtype)


def collapse_sum_like(data: Expr, collapse_target: Expr) -> Call:
    """``data`` summed over the axes that broadcasting ``collapse_target`` to it added."""
    return make_call("relax.collapse_sum_like", data, collapse_target)


@register("relax.collapse_sum_to", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=2)
def _infer_collapse_sum_to(call: Call, ctx: Any) -> StructInfo:
    """``data`` summed down to ``shape`` (which it broadcasts from)."""
    op = "relax.collapse_sum_to"
    check_num_args(call, op, 2)
    x = tensor_arg(call, 0, op, "data")
    target = shape_arg(call, 1, op)
    _collapse_target(op, x, target)
    if target is None:
        return TensorStructInfo(None, x.dtype, None, -1)
    return TensorStructInfo(list(target), x.dtype)


def collapse_sum_to(data: Expr, shape: Any) -> Call:
    """``data`` summed over the axes that broadcasting ``shape`` to it added."""
    return make_call("relax.collapse_sum_to", data, as_shape_expr(shape, "relax.collapse_sum_to"))
