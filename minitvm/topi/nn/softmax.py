"""softmax and log_softmax along one axis, numerically stable (the maximum is subtracted)."""

from __future__ import annotations

from typing import Any

from ... import te
from ...tir import op as _op
from ..utils import normalize_axes


def _parts(x: te.Tensor, axis: int, who: str) -> tuple:
    axis = normalize_axes(axis, x.ndim, who)[0]

    def with_reduce(idx: tuple, k: Any) -> tuple:
        return (*idx[:axis], k, *idx[axis:])

    def without_axis(idx: tuple) -> tuple:
        return tuple(v for n, v in enumerate(idx) if n != axis)

    reduced = [d for n, d in enumerate(x.shape) if n != axis]
    return axis, with_reduce, without_axis, reduced


def _max_elem(x: te.Tensor, axis: int, with_reduce: Any, reduced: list) -> te.Tensor:
    k = te.reduce_axis((0, x.shape[axis]), name="k")
    return te.compute(reduced, lambda *i: te.max(x[with_reduce(i, k)], axis=k), name="T_softmax_maxelem")


def softmax(x: te.Tensor, axis: int = -1) -> te.Tensor:
    """``exp(x - max) / sum(exp(x - max))`` along ``axis``: the maximum, the exponentials,
    their sum and the normalization are four computes (the reductions drop ``axis``)."""
    axis, with_reduce, without_axis, reduced = _parts(x, axis, "topi.nn.softmax")
    max_elem = _max_elem(x, axis, with_reduce, reduced)
    exp = te.compute(x.shape, lambda *i: _op.exp(x[i] - max_elem[without_axis(i)]), name="T_softmax_exp")
    k = te.reduce_axis((0, x.shape[axis]), name="k")
    expsum = te.compute(reduced, lambda *i: te.sum(exp[with_reduce(i, k)], axis=k), name="T_softmax_expsum")
    return te.compute(x.shape, lambda *i: exp[i] / expsum[without_axis(i)], name="T_softmax_norm",
                      attrs={"axis": axis})


def log_softmax(x: te.Tensor, axis: int = -1) -> te.Tensor:
    """``x - max - log(sum(exp(x - max)))`` along ``axis``."""
    axis, with_reduce, without_axis, reduced = _parts(x, axis, "topi.nn.log_softmax")
    max_elem = _max_elem(x, axis, with_reduce, reduced)
    k = te.reduce_axis((0, x.shape[axis]), name="k")
    expsum = te.compute(reduced, lambda *i: te.sum(_op.exp(x[with_reduce(i, k)] - max_elem[i]), axis=k),
                        name="compute")
    return te.compute(x.shape, lambda *i: x[i] - max_elem[without_axis(i)] - _op.log(expsum[without_axis(i)]),
                      name="compute", attrs={"axis": axis})


__all__: list[Any] = ["softmax", "log_softmax"]
