"""Reductions over axes: ``topi.sum(A, axis=1, keepdims=True)``, max, min, prod, mean,
argmax, argmin.

Each builds one compute whose body is a ``te`` reducer over one ``te.reduce_axis`` per
reduced dimension (``mean`` adds a second, element-wise compute for the division).
"""

from __future__ import annotations

from typing import Any, Callable

from .. import te
from ..arith import Analyzer
from ..tir import op as _op
from ..tir.expr import IntImm, PrimExpr, Select, const
from .broadcast import divide
from .transform import reshape
from .utils import const_int, normalize_axes, ravel_index
from .utils import prod as _prod

__all__ = ["sum", "max", "min", "prod", "mean", "argmax", "argmin", "reduce_over", "collapse_sum", "cumsum", "cumprod"]


def reduce_over(data: te.Tensor, axis: Any, keepdims: bool, name: str,
                body: Callable[[list, list], PrimExpr], plain_name: bool = False) -> te.Tensor:
    """The compute that reduces ``data`` over ``axis``.

    ``body(data_indices, reduce_axes)`` returns the reducer expression; data_indices mix
    the output's spatial indices and the reduce axes in ``data``'s dimension order.
    """
    axes = normalize_axes(axis, data.ndim, "topi reduction")
    cname = name if plain_name else f"T_{name}"
    out_shape = []
    for k, d in enumerate(data.shape):
        if k not in axes:
            out_shape.append(d)
        elif keepdims:
            out_shape.append(const(1, d.dtype))
    if not axes:  # over no axis at all (a 0-d tensor): every value is its own sum, max ..., as numpy
        return te.compute(out_shape, lambda *i: data(*i), name=cname)

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

    return te.compute(out_shape, fcompute, name=cname)


def _simple(reducer: Any, name: str) -> Callable:
    def compute(data: te.Tensor, axis: Any = None, keepdims: bool = False) -> te.Tensor:
        # TVM names a reduction after its input: "A_red"
        return reduce_over(data, axis, keepdims, f"{data.op.name}_red",
                           lambda idx, r: reducer(data[tuple(idx)], axis=r), plain_name=True)

    compute.__name__ = name
    compute.__doc__ = f"The {name} of ``data`` over ``axis`` (None: all axes)."
    return compute


sum = _simple(te.sum, "sum")  # noqa: A001 - TVM's names
max = _simple(te.max, "max")  # noqa: A001
min = _simple(te.min, "min")  # noqa: A001
_product = te.comm_reducer(lambda x, y: _op.mul(x, y), lambda t: const(1, t), name="prod")
prod = _simple(_product, "prod")


def mean(data: te.Tensor, axis: Any = None, keepdims: bool = False) -> te.Tensor:
    """The average of ``data`` over ``axis``: a sum, then a division by the count."""
    axes = normalize_axes(axis, data.ndim, "topi.mean")
    total = sum(data, axes, keepdims)
    count = _prod([data.shape[k] for k in axes])
    if isinstance(count, IntImm):
        count = const(float(count.value), data.dtype)
    return divide(total, _op.cast(count, data.dtype))


def _arg_reducer(better: Callable[[PrimExpr, PrimExpr], PrimExpr], worst: Callable, name: str) -> Any:
    # an (index, value) pair; ties keep the earlier (lower) index, as numpy does
    def combine(x: tuple, y: tuple) -> tuple:
        keep = _op.logical_or(better(x[1], y[1]),
                              _op.logical_and(_op.equal(x[1], y[1]), _op.less(x[0], y[0])))
        return Select(keep, x[0], y[0]), Select(better(x[1], y[1]), x[1], y[1])

    return te.comm_reducer(combine, lambda ti, tv: (const(-1, ti), worst(tv)), name=name)


_argmax = _arg_reducer(_op.greater, _op.min_value, "argmax")
_argmin = _arg_reducer(_op.less, _op.max_value, "argmin")


def _flat_reduce_index(r: list, dims: list) -> PrimExpr:
    """The row-major position of the reduce axes ``r`` over the reduced dimensions ``dims``
    (simplified: constant strides fold to k0 * 60 + k1 * 20 + ...)."""
    return Analyzer().simplify(ravel_index([rv.var for rv in r], dims))


def _arg(reducer: Any, name: str) -> Callable:
    def compute(data: te.Tensor, axis: Any = None, keepdims: bool = False) -> te.Tensor:
        axes = normalize_axes(axis, data.ndim, f"topi.{name}")
        dims = [data.shape[k] for k in axes]

        def body(idx: list, r: list) -> PrimExpr:
            index = _op.cast(_flat_reduce_index(r, dims), "int64")
            return reducer((index, data[tuple(idx)]), axis=r)

        # a two-output reduction (index, value) "A_red_temp", then its index copied out as
        # "A_red": TVM's argmax/argmin kernels have both blocks
        temp = reduce_over(data, axes, keepdims, f"{data.op.name}_red_temp", body, plain_name=True)
        index = temp[0]
        return te.compute(index.shape, lambda *i: index(*i), name=f"{data.op.name}_red")

    compute.__name__ = name
    compute.__doc__ = (f"The int64 index of the {name[3:]} of ``data`` over ``axis`` (None: every axis, "
                       "as in the flattened tensor; the first on ties).")
    return compute

argmax = _arg(_argmax, "argmax")
argmin = _arg(_argmin, "argmin")


def collapse_sum(data: te.Tensor, target_shape: Any) -> te.Tensor:
    """``data`` summed down to ``target_shape``, a shape it broadcasts from: the leading
    extra dimensions are summed away, a target dimension of 1 over a larger one is summed
    and kept."""
    target = list(target_shape)
    offset = data.ndim - len(target)
    if offset < 0:
        raise ValueError(f"topi.collapse_sum: cannot collapse shape {list(data.shape)} to the "
                         f"larger rank shape {target}")
    summed = [k for k in range(data.ndim)
              if k < offset or (const_int(target[k - offset]) == 1 and const_int(data.shape[k]) != 1)]
    if not summed:
        return te.compute(target, lambda *i: data(*i), name=f"{data.op.name}_red")

    def fcompute(*out_idx: Any) -> PrimExpr:
        raxes = [te.reduce_axis((0, data.shape[k]), f"k{k}") for k in summed]
        idx, r = [], 0
        for k in range(data.ndim):
            if k in summed:
                idx.append(raxes[r].var)
                r += 1
            else:
                idx.append(out_idx[k - offset])
        return te.sum(data[tuple(idx)], axis=raxes)

    return te.compute(target, fcompute, name=f"{data.op.name}_red")


def _scan(reducer: Any, name: str) -> Callable:
    def compute(data: te.Tensor, axis: int | None = None, dtype: str | None = None,
                exclusive: bool = False) -> te.Tensor:
        if axis is None:  # over the flattened tensor, as numpy
            data = reshape(data, [_prod(data.shape)])
            axis = 0
        axis = normalize_axes(axis, data.ndim, f"topi.{name}")[0]
        dtype = dtype or data.dtype

        def fcompute(*idx: Any) -> PrimExpr:
            k = te.reduce_axis((0, data.shape[axis]), "k")
            src = list(idx)
            src[axis] = k.var
            # element i gathers the elements up to i (before i when exclusive)
            upto = _op.less(k.var, idx[axis]) if exclusive else _op.less_equal(k.var, idx[axis])
            return reducer(_op.cast(data[tuple(src)], dtype), axis=k, where=upto)

        return te.compute(data.shape, fcompute, name=f"T_{name}")

    compute.__name__ = name
    compute.__doc__ = (f"The running {name[3:]} of ``data`` along ``axis`` (None: the flattened tensor) "
                       "in ``dtype``; ``exclusive`` leaves each element out of its own result.")
    return compute


cumsum = _scan(te.sum, "cumsum")
cumprod = _scan(_product, "cumprod")
