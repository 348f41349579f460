"""Losses: ``relax.nn.cross_entropy_with_logits`` and ``nll_loss``."""

from __future__ import annotations

from typing import Any

from ...expr import Call, Expr, ShapeExpr, struct_info_of
from ...struct_info import StructInfoError, StructInfoTypeError, TensorStructInfo, shape_text, struct_info_text
from .._utils import _ANALYZER, const_dim, same_dtype
from ..binary import _out_vdevice
from ..registry import OpPattern, check_num_args, make_call, register, tensor_arg

__all__ = ["cross_entropy_with_logits", "nll_loss"]


@register("relax.nn.cross_entropy_with_logits", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=2)
def _infer_cross_entropy_with_logits(call: Call, ctx: Any) -> TensorStructInfo:
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


def _nll_operands(call: Call, op: str) -> tuple:
    if len(call.args) not in (2, 3):
        raise StructInfoError(f"{op} takes predictions, targets and optionally weights, got {len(call.args)} arguments")
    sinfos = [struct_info_of(a) for a in call.args]
    for name, si in zip(("predictions", "targets", "weights"), sinfos):
        if not isinstance(si, TensorStructInfo):  # as TVM: a TypeError
            raise StructInfoTypeError(f"{op} expects a tensor for {name}, got {struct_info_text(si)}")
    pred, targets = sinfos[:2]
    weights = sinfos[2] if len(sinfos) == 3 else None
    if not targets.is_unknown_dtype and not targets.dtype.startswith(("int", "uint")):
        raise StructInfoTypeError(f"{op}: targets must be integer class indices, got {struct_info_text(targets)}")
    if pred.ndim == 0:
        raise StructInfoError(f"{op}: predictions need at least one dimension, got {struct_info_text(pred)}")
    k_pred = -1 if pred.ndim == -1 else max(pred.ndim - 2, 0)
    k_tgt = -1 if targets.ndim == -1 else max(targets.ndim - 1, 0)
    if -1 not in (k_pred, k_tgt) and k_pred != k_tgt:
        raise StructInfoError(f"{op}: predictions {struct_info_text(pred)} need targets of "
                              f"{0 if pred.ndim == 1 else pred.ndim - 1} dimensions, got {struct_info_text(targets)}")
    if weights is not None and weights.ndim not in (-1, 1):
        raise StructInfoError(f"{op}: weights must be 1-d (one per class), got {struct_info_text(weights)}")
    return pred, targets, weights


@register("relax.nn.nll_loss", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=3)
def _infer_nll_loss(call: Call, ctx: Any) -> TensorStructInfo:
    """The negative log-likelihood of ``targets`` under ``predictions`` (N, C, d1...) or (C,):
    a scalar with ``reduction`` "mean"/"sum", shape (N, d1...) with "none" (TVM's rule: sizes
    provably unequal are errors, the dtype and vdevice those of predictions and weights)."""
    op = "relax.nn.nll_loss"
    pred, targets, weights = _nll_operands(call, op)
    dtype = pred.dtype if weights is None else _binary_dtype(op, pred, weights)
    vdevice = pred.vdevice if weights is None else _out_vdevice(op, pred, weights)
    ps, ts = pred.shape_values, targets.shape_values
    n = c = None
    out: list = []
    if ps is not None:
        c = ps[0] if len(ps) == 1 else ps[1]
        if len(ps) > 1:
            n, out = ps[0], [ps[0], *ps[2:]]
    if ts is not None and len(ts) == 0 and n is not None:
        raise StructInfoError(f"{op}: predictions {shape_text(ps)} are (N, C, ...) but targets are a scalar")
    if ts:
        if n is not None and _ANALYZER.can_prove(n != ts[0]):
            raise StructInfoError(f"{op}: predictions {shape_text(ps)} and targets {shape_text(ts)} have "
                                  "different batch sizes")
        if n is None and c is not None:
            raise StructInfoError(f"{op}: predictions {shape_text(ps)} are (C,) but targets {shape_text(ts)} "
                                  "are not a scalar")
        if ps is not None and any(_ANALYZER.can_prove(a != b) for a, b in zip(out[1:], ts[1:])):
            raise StructInfoError(f"{op}: predictions {shape_text(ps)} and targets {shape_text(ts)} differ "
                                  "in their trailing dimensions")
    ws = weights.shape_values if weights is not None else None
    if ws is not None and c is not None and _ANALYZER.can_prove(c != ws[0]):
        raise StructInfoError(f"{op}: weights {shape_text(ws)} do not hold one value per class of "
                              f"predictions {shape_text(ps)}")
    if call.attrs["reduction"] != "none":
        return TensorStructInfo([], dtype, vdevice)
    if isinstance(pred.shape, ShapeExpr):  # as TVM: a shape variable's known values are not copied out
        return TensorStructInfo(out, dtype, vdevice)
    return TensorStructInfo(None, dtype, vdevice, -1 if pred.ndim == -1 else pred.ndim - 1)


def _binary_dtype(op: str, a: TensorStructInfo, b: TensorStructInfo) -> str:
    if a.is_unknown_dtype or b.is_unknown_dtype:
        return "void"
    if a.dtype != b.dtype:
        raise StructInfoTypeError(f"{op}: predictions and weights have different dtypes {a.dtype} and {b.dtype}")
    return a.dtype


def nll_loss(predictions: Expr, targets: Expr, weights: Expr | None = None, reduction: str = "mean",
             ignore_index: int = -100) -> Call:
    """Negative log-likelihood loss (``torch.nn.functional.nll_loss``)."""
    if reduction not in _REDUCTIONS:  # a TVMError (and a ValueError), as TVM's check
        raise StructInfoError(f"relax.nn.nll_loss: reduction must be one of {', '.join(_REDUCTIONS)}, "
                              f"got {reduction!r}")
    args = [predictions, targets] + ([] if weights is None else [weights])
    return make_call("relax.nn.nll_loss", *args, attrs={"reduction": reduction, "ignore_index": int(ignore_index)})
