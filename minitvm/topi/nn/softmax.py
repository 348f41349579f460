"""softmax and log_softmax along one axis, numerically stable (the maximum is subtracted)."""

from __future__ import annotations

from typing import Any

from ... import te
from ...tir import op as _op
from ..reduction import max as _max
from ..reduction import sum as _sum
from ..utils import normalize_axes


def _keep(axis: int):
    """Index a keepdims reduction result with the data's indices."""
    return lambda t, idx: t[tuple(0 if k == axis else i for k, i in enumerate(idx))]


def softmax(x: te.Tensor, axis: int = -1) -> te.Tensor:
    """``exp(x - max) / sum(exp(x - max))`` along ``axis``."""
    axis = normalize_axes(axis, x.ndim, "topi.nn.softmax")[0]
    at = _keep(axis)
    mx = _max(x, axis, keepdims=True)
    e = te.compute(x.shape, lambda *i: _op.exp(x(*i) - at(mx, i)), name="T_softmax_exp")
    s = _sum(e, axis, keepdims=True)
    return te.compute(x.shape, lambda *i: e(*i) / at(s, i), name="T_softmax_norm")


def log_softmax(x: te.Tensor, axis: int = -1) -> te.Tensor:
    """``x - max - log(sum(exp(x - max)))`` along ``axis``."""
    axis = normalize_axes(axis, x.ndim, "topi.nn.log_softmax")[0]
    at = _keep(axis)
    mx = _max(x, axis, keepdims=True)
    e = te.compute(x.shape, lambda *i: _op.exp(x(*i) - at(mx, i)), name="T_softmax_exp")
    s = _sum(e, axis, keepdims=True)
    return te.compute(x.shape, lambda *i: x(*i) - at(mx, i) - _op.log(at(s, i)), name="T_log_softmax")


__all__: list[Any] = ["softmax", "log_softmax"]
