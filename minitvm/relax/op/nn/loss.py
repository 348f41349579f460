"""Losses: ``relax.nn.cross_entropy_with_logits`` and ``nll_loss``."""

from __future__ import annotations

from typing import Any

from ...expr import Call, Expr
from ...struct_info import StructInfo, StructInfoError, TensorStructInfo, struct_info_text
from .._utils import const_dim, same_dtype
from ..registry import OpPattern, check_num_args, make_call, register, tensor_arg

__all__ = ["cross_entropy_with_logits", "nll_loss"]


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
