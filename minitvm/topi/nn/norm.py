"""Normalization at inference: ``layer_norm`` over trailing axes, ``batch_norm`` with
the moving statistics."""

from __future__ import annotations

from typing import Any, Sequence

from ... import te
from ...tir import op as _op
from ...tir.expr import const
from ..reduction import sum as _sum
from ..utils import normalize_axes, prod


def layer_norm(data: te.Tensor, gamma: te.Tensor, beta: te.Tensor, axis: Any = -1,
               epsilon: float = 1e-5, center: bool = True, scale: bool = True) -> te.Tensor:
    """``(x - mean) / sqrt(var + eps) * gamma + beta`` with mean and (biased) variance over
    ``axis``; gamma and beta have the shape of those axes (``scale=False`` leaves out
    gamma, ``center=False`` beta)."""
    axes = normalize_axes(axis, data.ndim, "topi.nn.layer_norm")
    count = _op.cast(prod([data.shape[k] for k in axes]), data.dtype)
    total = _sum(data, axes, keepdims=True)

    def reduced(t: te.Tensor, idx: Sequence[Any]) -> Any:
        return t[tuple(0 if k in axes else i for k, i in enumerate(idx))]

    mean = te.compute(total.shape, lambda *i: total(*i) / count, name="T_layer_norm_mean")
    sq = te.compute(data.shape, lambda *i: (data(*i) - reduced(mean, i)) * (data(*i) - reduced(mean, i)),
                    name="T_layer_norm_sq")
    var_sum = _sum(sq, axes, keepdims=True)
    eps = const(epsilon, data.dtype)

    def fcompute(*i: Any) -> Any:
        g_idx = tuple(i[k] for k in axes)
        out = (data(*i) - reduced(mean, i)) * _op.rsqrt(reduced(var_sum, i) / count + eps)
        if scale:
            out = out * gamma[g_idx]
        if center:
            out = out + beta[g_idx]
        return out

    return te.compute(data.shape, fcompute, name="T_layer_norm")


def batch_norm(data: te.Tensor, gamma: te.Tensor, beta: te.Tensor, moving_mean: te.Tensor,
               moving_var: te.Tensor, axis: int = 1, epsilon: float = 1e-5,
               center: bool = True, scale: bool = True) -> list[te.Tensor]:
    """Inference batch norm along channel ``axis``: ``(x - mean) / sqrt(var + eps) * gamma
    + beta``.  Returns [output, moving_mean, moving_var] (the statistics unchanged)."""
    axis = normalize_axes(axis, data.ndim, "topi.nn.batch_norm")[0]
    eps = const(epsilon, data.dtype)

    def fcompute(*i: Any) -> Any:
        c = i[axis]
        out = (data(*i) - moving_mean[c]) * _op.rsqrt(moving_var[c] + eps)
        if scale:
            out = out * gamma[c]
        if center:
            out = out + beta[c]
        return out

    out = te.compute(data.shape, fcompute, name="T_batch_norm")
    mean = te.compute(moving_mean.shape, lambda c: moving_mean[c], name="T_batch_norm_mean")
    var = te.compute(moving_var.shape, lambda c: moving_var[c], name="T_batch_norm_var")
    return [out, mean, var]


__all__: Sequence[str] = ["layer_norm", "batch_norm"]
