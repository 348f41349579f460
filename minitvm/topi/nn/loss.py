"""Losses: the negative log-likelihood (``topi.nn.nll_loss``)."""

from __future__ import annotations

from typing import Any

from ... import te
from ...tir import op as _op
from ...tir.expr import const
from ..broadcast import divide
from ..reduction import sum as _sum

__all__ = ["nll_loss"]


def nll_loss(predictions: te.Tensor, targets: te.Tensor, weights: te.Tensor, reduction: str = "mean",
             ignore_index: int = -100) -> te.Tensor:
    """``-predictions[n, t, ...] * weights[t]`` for each target ``t`` (0 where ``t`` is
    ``ignore_index``), then summed ("sum"), averaged by the summed weights ("mean") or kept
    ("none").  Predictions are (N, C, d1, ...) with targets (N, d1, ...), or (C,) with a 0-d
    target."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"topi.nn.nll_loss: reduction must be mean, sum or none, got {reduction!r}")
    zero = const(0, predictions.dtype)

    def kept(c: Any) -> Any:
        return _op.not_equal(c, const(ignore_index, c.dtype))

    def loss(*idx: Any) -> Any:
        c = targets(*idx)
        pred_idx = (c,) if predictions.ndim == 1 else (idx[0], c, *idx[1:])
        return _op.Select(kept(c), _op.mul(_op.sub(zero, predictions[pred_idx]), weights[c]), zero)

    def weight(*idx: Any) -> Any:
        c = targets(*idx)
        return _op.Select(kept(c), weights[c], zero)

    per_target = te.compute(targets.shape, loss, name="nll_loss")
    if predictions.ndim == 1:  # one target: nothing to reduce
        if reduction == "mean":
            return divide(per_target, te.compute(targets.shape, weight, name="nll_loss"))
        return per_target
    if reduction == "none":
        return per_target
    total = _sum(per_target, None, False)
    if reduction == "sum":
        return total
    return divide(total, _sum(te.compute(targets.shape, weight, name="nll_loss"), None, False))
