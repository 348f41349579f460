"""Reductions over axes: ``topi.sum(A, axis=1, keepdims=True)``, max, min, prod, mean,
argmax, argmin.

Each builds one compute whose body is a ``te`` reducer over one ``te.reduce_axis`` per
reduced dimension (``mean`` adds a second, element-wise compute for the division).
"""

from __future__ import annotations

from typing import Any, Callable

from .. import te
from ..tir import op as _op
from ..tir.expr import PrimExpr, Select, const
from .utils import normalize_axes
from .utils import prod as _prod

__all__ = ["sum", "max", "min", "prod", "mean", "argmax", "argmin", "reduce_over"]


def reduce_over(data: te.Tensor, axis: Any, keepdims: bool, name: str,
                body: Callable[[list, list], PrimExpr]) -> te.Tensor:
    """The compute that reduces ``data`` over ``axis``.

    ``body(data_indices, reduce_axes)`` returns the reducer expression; data_indices mix
    the output's spatial indices and the reduce axes in ``data``'s dimension order.
    """
    axes = normalize_axes(axis, data.ndim, f"topi.{name}")
    out_shape = []
    for k, d in enumerate(data.shape):
        if k not in axes:
            out_shape.append(d)
        elif keepdims:
            out_shape.append(const(1, d.dtype))
    if not axes:  # over no axis at all (a 0-d tensor): every value is its own sum, max ..., as numpy
        return te.compute(out_shape, lambda *i: data(*i), name=f"T_{name}")

    def fcompute(*out_idx: Any) -> PrimExpr:
        raxes = [te.reduce_axis((0, data.shape[k]), f"k{k}") for k in axes]
        idx, pos, r = [], 0, 0
        for k in range(data.ndim):
            if k in axes:
                idx.append(raxes[r])
                r += 1
                pos += keepdims  # the kept dimension of size 1 is skipped
            else:
                idx.append(out_idx[pos])
                pos += 1
        return body([i.var if isinstance(i, te.IterVar) else i for i in idx], raxes)

    return te.compute(out_shape, fcompute, name=f"T_{name}")


def _simple(reducer: Any, name: str) -> Callable:
    def compute(data: te.Tensor, axis: Any = None, keepdims: bool = False) -> te.Tensor:
        return reduce_over(data, axis, keepdims, name, lambda idx, r: reducer(data[tuple(idx)], axis=r))

    compute.__name__ = name
    compute.__doc__ = f"The {name} of ``data`` over ``axis`` (None: all axes)."
    return compute


sum = _simple(te.sum, "sum")  # noqa: A001 - TVM's names
max = _simple(te.max, "max")  # noqa: A001
min = _simple(te.min, "min")  # noqa: A001
prod = _simple(te.comm_reducer(lambda x, y: _op.mul(x, y), lambda t: const(1, t), name="prod"), "prod")


def mean(data: te.Tensor, axis: Any = None, keepdims: bool = False) -> te.Tensor:
    """The average of ``data`` over ``axis``: a sum, then a division by the count."""
    axes = normalize_axes(axis, data.ndim, "topi.mean")
    total = sum(data, axes, keepdims)
    count = _op.cast(_prod([data.shape[k] for k in axes]), data.dtype)
    return te.compute(total.shape, lambda *i: total(*i) / count, name="T_mean")


def _arg_reducer(better: Callable[[PrimExpr, PrimExpr], PrimExpr], worst: Callable, name: str) -> Any:
    # an (index, value) pair; ties keep the earlier (lower) index, as numpy does
    def combine(x: tuple, y: tuple) -> tuple:
        keep = _op.logical_or(better(x[1], y[1]),
                              _op.logical_and(_op.equal(x[1], y[1]), _op.less(x[0], y[0])))
        return Select(keep, x[0], y[0]), Select(keep, x[1], y[1])

    return te.comm_reducer(combine, lambda ti, tv: (const(-1, ti), worst(tv)), name=name)


_argmax = _arg_reducer(_op.greater, _op.min_value, "argmax")
_argmin = _arg_reducer(_op.less, _op.max_value, "argmin")


def _arg(reducer: Any, name: str) -> Callable:
    def compute(data: te.Tensor, axis: int | None = None, keepdims: bool = False) -> te.Tensor:
        if axis is None:  # over the flattened tensor, as numpy
            from .transform import reshape
            flat = reshape(data, [_prod(data.shape)])
            return compute(flat, 0, keepdims) if not keepdims else \
                reshape(compute(flat, 0, False), [1] * data.ndim)

        def body(idx: list, r: list) -> PrimExpr:
            index = _op.cast(r[0].var, "int64")
            return reducer((index, data[tuple(idx)]), axis=r)

        # the compute has two outputs (index, value); the value is a scratch buffer
        return reduce_over(data, [axis], keepdims, name, body)[0]

    compute.__name__ = name
    compute.__doc__ = f"The int64 index of the {name[3:]} of ``data`` along ``axis`` (first on ties)."
    return compute


argmax = _arg(_argmax, "argmax")
argmin = _arg(_argmin, "argmin")
