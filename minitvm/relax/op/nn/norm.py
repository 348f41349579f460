"""Normalization: ``relax.nn.batch_norm``, ``layer_norm``, ``rms_norm`` and
``group_norm``."""

from __future__ import annotations

from typing import Any, Sequence

from ...expr import Call, Expr
from ...struct_info import (
    StructInfo,
    StructInfoError,
    StructInfoTypeError,
    TensorStructInfo,
    TupleStructInfo,
    shape_text,
    struct_info_text,
)
from .._utils import _ANALYZER, const_dim, normalize_axes, normalize_axis, same_dtype
from ..registry import OpPattern, check_num_args, make_call, register, tensor_arg

__all__ = ["batch_norm", "layer_norm", "rms_norm", "group_norm"]


def _check_param(op: str, name: str, p: TensorStructInfo, want: list, data: TensorStructInfo) -> None:
    vals = p.shape_values
    if vals is None:
        return
    if len(vals) != len(want) or any(const_dim(a) is not None and const_dim(b) is not None
                                      and const_dim(a) != const_dim(b) for a, b in zip(vals, want)):
        raise StructInfoError(f"{op}: {name} has shape {shape_text(vals)} but data of shape "
                              f"{shape_text(data.shape_values)} needs {shape_text(want)}")


def norm_check(call: Call, op: str, names: Sequence[str], axes: Sequence[int]) -> tuple[list, bool]:
    """TVM's check of a normalization's operands: float data, every parameter of the data's
    dtype with one dimension per axis, sizes that cannot be unequal to the data's along the
    axes.  Returns the operands' struct infos and whether some size is not provably equal
    (then the result's shape is left unknown, as TVM's)."""
    check_num_args(call, op, len(names))
    xs = [tensor_arg(call, k, op, n) for k, n in enumerate(names)]
    x = xs[0]
    axes_nn = normalize_axes(op, axes, x.ndim) if x.ndim != -1 else []
    if not x.is_unknown_dtype and not x.dtype.startswith(("float", "bfloat")):
        raise StructInfoTypeError(f"{op} requires float data, got dtype {x.dtype}")
    for name, p in zip(names[1:], xs[1:]):
        if p.dtype != x.dtype:
            raise StructInfoTypeError(f"{op}: {name} has dtype {p.dtype}, not the data's {x.dtype}")
        if p.ndim != len(axes):
            raise StructInfoError(f"{op}: {name} must have one dimension per axis ({len(axes)}), got "
                                  f"{struct_info_text(p)}")
    lengths = [p.shape_values for p in xs[1:] if p.shape_values is not None]
    if x.shape_values is not None:
        want = [x.shape_values[a] for a in axes_nn]
        for name, p in zip(names[1:], xs[1:]):
            got = p.shape_values
            if got is not None and any(_ANALYZER.can_prove(a != b) for a, b in zip(want, got)):
                raise StructInfoError(f"{op}: {name} has shape {shape_text(got)} but data of shape "
                                      f"{shape_text(x.shape_values)} needs {shape_text(want)}")
        lengths = [want] + lengths
    unknown = any(not _ANALYZER.can_prove_equal(a, b) for got in lengths[1:] for a, b in zip(lengths[0], got))
    return xs, unknown


@register("relax.nn.layer_norm", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=3)
def _infer_layer_norm(call: Call, ctx: Any) -> StructInfo:
    """Normalizes over ``axes``; gamma and beta have those axes' shape.  The data's struct info."""
    (x, *_), unknown = norm_check(call, "relax.nn.layer_norm", ("data", "gamma", "beta"), call.attrs["axes"])
    return TensorStructInfo(None, x.dtype, x.vdevice, x.ndim) if unknown else x


def layer_norm(data: Expr, gamma: Expr, beta: Expr, axes: int | Sequence[int] = -1,
               epsilon: float = 1e-5, center: bool = True, scale: bool = True) -> Call:
    """``(x - mean) / sqrt(var + epsilon) * gamma + beta`` over ``axes``."""
    axes = (int(axes),) if isinstance(axes, int) else tuple(int(a) for a in axes)
    return make_call("relax.nn.layer_norm", data, gamma, beta,
                     attrs={"axes": axes, "epsilon": float(epsilon), "center": center, "scale": scale})


@register("relax.nn.batch_norm", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=5)
def _infer_batch_norm(call: Call, ctx: Any) -> StructInfo:
    """A tuple (output, moving_mean, moving_var), as in TVM; the output has the data's
    struct info, each statistic is ``(C,)`` for C the length of ``axis``."""
    names = ("data", "gamma", "beta", "moving_mean", "moving_var")
    xs, unknown = norm_check(call, "relax.nn.batch_norm", names, [call.attrs["axis"]])
    x = xs[0]
    if unknown:
        return TupleStructInfo([TensorStructInfo(None, x.dtype, x.vdevice, x.ndim),
                                TensorStructInfo(None, x.dtype, x.vdevice, 1),
                                TensorStructInfo(None, x.dtype, x.vdevice, 1)])
    return TupleStructInfo([x, xs[3], xs[4]])


def batch_norm(data: Expr, gamma: Expr, beta: Expr, moving_mean: Expr, moving_var: Expr,
               axis: int = 1, epsilon: float = 1e-5, center: bool = True, scale: bool = True,
               momentum: float = 0.1, training: bool = True) -> Call:
    """Batch norm; returns the tuple ``(output, mean, var)`` as TVM does (take ``[0]`` for
    the output).  ``training`` (TVM's default) normalizes with the batch's statistics and
    returns the moving ones updated by ``momentum``; ``training=False`` uses the moving
    statistics and returns them unchanged."""
    return make_call("relax.nn.batch_norm", data, gamma, beta, moving_mean, moving_var,
                     attrs={"axis": int(axis), "epsilon": float(epsilon), "center": center, "scale": scale,
                            "momentum": float(momentum), "training": bool(training)})


@register("relax.nn.rms_norm", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=2)
def _infer_rms_norm(call: Call, ctx: Any) -> StructInfo:
    """``x / sqrt(mean(x^2) + eps) * weight`` over ``axes``; weight has those axes' shape."""
    op = "relax.nn.rms_norm"
    check_num_args(call, op, 2)
    x = tensor_arg(call, 0, op, "data")
    weight = tensor_arg(call, 1, op, "weight")
    same_dtype(op, [x, weight])
    if x.shape_values is not None:
        axes = normalize_axes(op, call.attrs["axes"], x.ndim)
        want = [x.shape_values[a] for a in axes]
        got = weight.shape_values
        if got is not None and (len(got) != len(want) or any(
                const_dim(a) is not None and const_dim(b) is not None and const_dim(a) != const_dim(b)
                for a, b in zip(got, want))):
            raise StructInfoError(f"{op}: weight has shape {shape_text(got)} but normalizing axes {axes} "
                                  f"of the data needs {shape_text(want)}")
    return x


def rms_norm(data: Expr, weight: Expr, axes: int | Sequence[int] = -1, epsilon: float = 1e-5) -> Call:
    """Root-mean-square normalization over ``axes``, scaled by ``weight``."""
    axes = (int(axes),) if isinstance(axes, int) else tuple(int(a) for a in axes)
    return make_call("relax.nn.rms_norm", data, weight, attrs={"axes": axes, "epsilon": float(epsilon)})


@register("relax.nn.group_norm", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=3)
def _infer_group_norm(call: Call, ctx: Any) -> StructInfo:
    """Each group of channels normalized over itself and ``axes``; gamma and beta hold one
    value per channel.  The data's struct info."""
    op = "relax.nn.group_norm"
    check_num_args(call, op, 3)
    x = tensor_arg(call, 0, op, "data")
    gamma, beta = tensor_arg(call, 1, op, "gamma"), tensor_arg(call, 2, op, "beta")
    same_dtype(op, [x, gamma, beta])
    a = call.attrs
    if x.ndim == -1:
        return x
    channel_axis = normalize_axis(op, a["channel_axis"], x.ndim)
    axes = normalize_axes(op, a["axes"], x.ndim)
    if channel_axis in axes:
        raise StructInfoError(f"{op}: axes {list(a['axes'])} must not contain the channel axis {channel_axis}")
    c = const_dim(x.shape_values[channel_axis]) if x.shape_values is not None else None
    if c is not None and c % a["num_groups"]:
        raise StructInfoError(f"{op}: {c} channels do not divide into {a['num_groups']} groups")
    for name, p in (("gamma", gamma), ("beta", beta)):
        size = const_dim(p.shape_values[0]) if p.shape_values is not None and p.ndim == 1 else None
        if p.ndim not in (-1, 1) or (c is not None and size is not None and size != c):
            raise StructInfoError(f"{op}: {name} must hold one value per channel ({c}), got {struct_info_text(p)}")
    return x


def group_norm(data: Expr, gamma: Expr, beta: Expr, num_groups: int, channel_axis: int,
               axes: int | Sequence[int], epsilon: float = 1e-5, center: bool = True, scale: bool = True) -> Call:
    """Group normalization: channels in ``num_groups`` groups, each normalized over itself
    and ``axes``, then ``* gamma + beta`` per channel."""
    axes = (int(axes),) if isinstance(axes, int) else tuple(int(v) for v in axes)
    return make_call("relax.nn.group_norm", data, gamma, beta, attrs={
        "num_groups": int(num_groups), "channel_axis": int(channel_axis), "axes": axes,
        "epsilon": float(epsilon), "center": bool(center), "scale": bool(scale)})
