"""More neural-network operators of ``relax.op.nn``: the parametric activations
(leakyrelu, prelu), RMS normalization and the losses (cross_entropy_with_logits,
nll_loss).  :mod:`minitvm.relax.op.nn` re-exports them."""

from __future__ import annotations

from typing import Any, Sequence

from ..expr import Call, Expr
from ..struct_info import StructInfo, StructInfoError, TensorStructInfo, shape_text, struct_info_text
from ._utils import const_dim, normalize_axes, normalize_axis, same_dtype
from .registry import OpPattern, check_num_args, make_call, register, tensor_arg
from .unary import unary_sinfo

__all__ = ["leakyrelu", "prelu", "rms_norm", "group_norm", "cross_entropy_with_logits", "nll_loss"]


# -- activations with a parameter ---------------------------------------------------------------

@register("relax.nn.leakyrelu", pattern=OpPattern.ELEMWISE, num_inputs=1)
def _infer_leakyrelu(call: Call, ctx: Any) -> StructInfo:
    """``x`` where positive, else ``alpha * x``."""
    return unary_sinfo(call, "relax.nn.leakyrelu", True)


def leakyrelu(data: Expr, alpha: float = 0.01) -> Call:
    """Element-wise ``x if x > 0 else alpha * x``."""
    return make_call("relax.nn.leakyrelu", data, attrs={"alpha": float(alpha)})


@register("relax.nn.prelu", pattern=OpPattern.BROADCAST, num_inputs=2)
def _infer_prelu(call: Call, ctx: Any) -> StructInfo:
    """``x`` where positive, else ``alpha[c] * x``; alpha is 1-d along ``axis``."""
    op = "relax.nn.prelu"
    check_num_args(call, op, 2)
    x = tensor_arg(call, 0, op, "data")
    alpha = tensor_arg(call, 1, op, "alpha")
    same_dtype(op, [x, alpha])
    if alpha.ndim not in (-1, 1):
        raise StructInfoError(f"{op}: alpha must be 1-d (one slope per channel), got {struct_info_text(alpha)}")
    if x.ndim != -1:
        axis = normalize_axis(op, call.attrs["axis"], x.ndim)
        if x.shape_values is not None and alpha.shape_values is not None:
            c, a = const_dim(x.shape_values[axis]), const_dim(alpha.shape_values[0])
            if c is not None and a is not None and a not in (1, c):
                raise StructInfoError(f"{op}: alpha has {a} slopes but axis {axis} of the data has {c} channels")
    return x


def prelu(data: Expr, alpha: Expr, axis: int = 1) -> Call:
    """Element-wise ``x if x > 0 else alpha[c] * x`` with ``c`` the index along ``axis``."""
    return make_call("relax.nn.prelu", data, alpha, attrs={"axis": int(axis)})


# -- RMS normalization ---------------------------------------------------------------------------

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


# -- losses ----------------------------------------------------------------------------------------

@register("relax.nn.cross_entropy_with_logits", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=2)
def _infer_cross_entropy_with_logits(call: Call, ctx: Any) -> StructInfo:
    """``-sum(predictions * labels)``, divided by the batch size when 2-d or more: a scalar."""
    op = "relax.nn.cross_entropy_with_logits"
    check_num_args(call, op, 2)
    pred = tensor_arg(call, 0, op, "predictions")
    labels = tensor_arg(call, 1, op, "labels")
    dtype = same_dtype(op, [pred, labels])
    if pred.ndim != -1 and labels.ndim != -1 and pred.ndim != labels.ndim:
        raise StructInfoError(f"{op}: predictions {struct_info_text(pred)} and labels "
                              f"{struct_info_text(labels)} must have the same shape")
    if pred.shape_values is not None and labels.shape_values is not None:
        for a, b in zip(pred.shape_values, labels.shape_values):
            if const_dim(a) is not None and const_dim(b) is not None and const_dim(a) != const_dim(b):
                raise StructInfoError(f"{op}: predictions {struct_info_text(pred)} and labels "
                                      f"{struct_info_text(labels)} must have the same shape")
    return TensorStructInfo([], dtype)


def cross_entropy_with_logits(predictions: Expr, labels: Expr) -> Call:
    """The cross entropy of ``labels`` under the log-probabilities ``predictions``."""
    return make_call("relax.nn.cross_entropy_with_logits", predictions, labels)


_REDUCTIONS = ("mean", "sum", "none")


@register("relax.nn.nll_loss", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=3)
def _infer_nll_loss(call: Call, ctx: Any) -> StructInfo:
    """The negative log-likelihood of ``targets`` under ``predictions`` (N, C, d1...) or (C,):
    a scalar with ``reduction`` "mean"/"sum", the targets' shape with "none"."""
    op = "relax.nn.nll_loss"
    if len(call.args) not in (2, 3):
        raise StructInfoError(f"{op} takes predictions, targets and optionally weights, got {len(call.args)} arguments")
    pred = tensor_arg(call, 0, op, "predictions")
    targets = tensor_arg(call, 1, op, "targets")
    if not targets.is_unknown_dtype and not targets.dtype.startswith(("int", "uint")):
        raise StructInfoError(f"{op}: targets must be integer class indices, got {struct_info_text(targets)}")
    if len(call.args) == 3:
        weights = tensor_arg(call, 2, op, "weights")
        same_dtype(op, [pred, weights])
        if weights.ndim not in (-1, 1):
            raise StructInfoError(f"{op}: weights must be 1-d (one per class), got {struct_info_text(weights)}")
    reduction = call.attrs["reduction"]
    if reduction not in _REDUCTIONS:
        raise StructInfoError(f"{op}: reduction must be one of {', '.join(_REDUCTIONS)}, got {reduction!r}")
    if pred.ndim != -1 and targets.ndim != -1:
        want = 0 if pred.ndim == 1 else pred.ndim - 1
        if targets.ndim != want:
            raise StructInfoError(f"{op}: predictions {struct_info_text(pred)} need targets of {want} "
                                  f"dimensions, got {struct_info_text(targets)}")
    if reduction != "none":
        return TensorStructInfo([], pred.dtype)
    if targets.shape_values is not None:
        return TensorStructInfo(list(targets.shape_values), pred.dtype)
    return TensorStructInfo(None, pred.dtype, None, targets.ndim)


def nll_loss(predictions: Expr, targets: Expr, weights: Expr | None = None, reduction: str = "mean",
             ignore_index: int = -100) -> Call:
    """Negative log-likelihood loss (``torch.nn.functional.nll_loss``)."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"relax.nn.nll_loss: reduction must be one of {', '.join(_REDUCTIONS)}, got {reduction!r}")
    args = [predictions, targets] + ([] if weights is None else [weights])
    return make_call("relax.nn.nll_loss", *args, attrs={"reduction": reduction, "ignore_index": int(ignore_index)})



