"""Reductions: sum, mean, prod, amax/amin, max/min over everything, any/all, var/std,
logsumexp, vector norms, cumulative sums and products."""

from __future__ import annotations

import math

from ... import op as _op
from ._common import arg_or


def _axes(dims):
    """torch's ``dim`` argument (None, an int, or a list; ``[]`` means every axis) as Relax axes."""
    if dims is None:
        return None
    if isinstance(dims, int):
        return [dims]
    return [int(d) for d in dims] or None


def _operand(node, conv):
    """The input in the dtype torch accumulates in (an int32 or bool ``sum`` is int64)."""
    return conv.as_dtype(conv.arg(node.args[0]), conv.dtype_of(node))


def _reduce(fn):
    def convert(node, conv):
        axis = _axes(arg_or(node, 1, "dim", None))
        keepdim = bool(arg_or(node, 2, "keepdim", False))
        return conv.bb.emit(fn(_operand(node, conv), axis=axis, keepdims=keepdim))
    convert.__name__ = f"convert_{fn.__name__}"
    convert.__doc__ = f"``{fn.__name__}`` over ``dim`` (every axis when absent or empty)."
    return convert


def _reduce_all(fn):
    def convert(node, conv):
        return conv.bb.emit(fn(_operand(node, conv)))
    convert.__name__ = f"convert_{fn.__name__}_all"
    convert.__doc__ = f"``{fn.__name__}`` of every element (a 0-d result)."
    return convert


def _truth(conv, node_arg):
    """A tensor as bools: itself when bool, else ``x != 0``."""
    x = conv.arg(node_arg)
    dtype = conv.dtype_of(node_arg)
    return x if dtype == "bool" else _op.not_equal(x, conv.scalar_of(0, dtype))


def _bool_reduce(fn):
    """any / all: the max / min of the mask as int8, back to bool (no Relax op of their own)."""
    def convert(node, conv):
        axis = _axes(arg_or(node, 1, "dim", None))
        keepdim = bool(arg_or(node, 2, "keepdim", False))
        as_int = _op.astype(_truth(conv, node.args[0]), "int8")
        return conv.bb.emit(_op.astype(fn(as_int, axis=axis, keepdims=keepdim), "bool"))
    convert.__name__ = f"convert_{'any' if fn is _op.max else 'all'}"
    convert.__doc__ = "any / all of a tensor (nonzero is true) over ``dim``."
    return convert


def _count(conv, node, axes):
    """How many elements a reduction over ``axes`` (None: all) takes, as a Python int."""
    shape = conv.shape_of(node.args[0])
    dims = range(len(shape)) if axes is None else [a % max(len(shape), 1) for a in axes]
    n = 1
    for d in dims:
        if not isinstance(shape[d], int):
            raise ValueError(f"from_exported_program: {node.target} over the symbolic dim {d} is not supported")
        n *= shape[d]
    return n


def var_std(is_std: bool):
    """``var`` / ``std`` with ``correction`` (Bessel's 1 by default, ``unbiased=False`` is 0):
    the sum of squared deviations divided by ``N - correction``, through ``relax.variance``."""
    def convert(node, conv):
        val = node.meta["val"]
        dtype = conv.dtype_name((val[0] if isinstance(val, (tuple, list)) else val).dtype)  # var_mean: a pair
        x = conv.as_dtype(conv.arg(node.args[0]), dtype)
        axes = _axes(arg_or(node, 1, "dim", None))
        if str(node.target).endswith(".correction"):
            correction = node.kwargs.get("correction", node.args[2] if len(node.args) > 2 else None)
            correction = 1 if correction is None else correction
            keepdim = bool(node.kwargs.get("keepdim", node.args[3] if len(node.args) > 3 else False))
        else:  # var.dim(x, dim, unbiased=True, keepdim=False) / var.default(x, unbiased)
            if str(node.target).endswith(".default"):
                axes, unbiased, keepdim = None, arg_or(node, 1, "unbiased", True), False
            else:
                unbiased = arg_or(node, 2, "unbiased", True)
                keepdim = bool(arg_or(node, 3, "keepdim", False))
            correction = 1 if unbiased else 0
        if correction == 0 and is_std:
            return conv.bb.emit(_op.std(x, axis=axes, keepdims=keepdim))
        # relax.variance (two passes, accumulated in float64 by its legalization) is the mean
        # of the squared deviations; torch divides their sum by max(N - correction, 0) instead
        # (no degrees of freedom left gives inf, or NaN for a zero sum)
        out = _op.variance(x, axis=axes, keepdims=keepdim)
        if correction != 0:
            n = _count(conv, node, axes)
            denom = n - correction
            out = _op.multiply(out, conv.scalar(n / denom if denom > 0 else math.inf, x))
        return conv.bb.emit(_op.sqrt(out) if is_std else out)
    convert.__name__ = "convert_std" if is_std else "convert_var"
    return convert


def var_mean(node, conv):
    """``torch.var_mean``: (var, mean) over ``dim``."""
    variance = var_std(False)(node, conv)
    x = conv.as_dtype(conv.arg(node.args[0]), conv.dtype_of(node.args[0]))
    keepdim = bool(node.kwargs.get("keepdim", False))
    return (variance, conv.bb.emit(_op.mean(x, axis=_axes(arg_or(node, 1, "dim", None)), keepdims=keepdim)))


def logsumexp(node, conv):
    """``m + log(sum(exp(x - m)))`` with ``m`` the max (0 where it is infinite)."""
    x = conv.as_dtype(conv.arg(node.args[0]), conv.dtype_of(node))
    axes = _axes(arg_or(node, 1, "dim", None))
    keepdim = bool(arg_or(node, 2, "keepdim", False))
    m = conv.bb.emit(_op.max(x, axis=axes, keepdims=True))
    m = conv.bb.emit(_op.where(_op.isinf(m), conv.scalar(0.0, x), m))
    total = _op.sum(_op.exp(_op.subtract(x, m)), axis=axes, keepdims=True)
    out = _op.add(_op.log(total), m)
    if not keepdim:
        out = _op.squeeze(out, axes)
    return conv.bb.emit(out)


def vector_norm(node, conv):
    """``linalg.vector_norm(x, ord, dim, keepdim)``: ``sum(|x|^p)^(1/p)``, ``max|x|`` for
    ``inf``, ``min|x|`` for ``-inf``, the count of nonzeros for 0."""
    dtype = conv.dtype_of(node)
    x = conv.as_dtype(conv.arg(node.args[0]), dtype)
    p = float(arg_or(node, 1, "ord", 2))
    axes = _axes(arg_or(node, 2, "dim", None))
    keepdim = bool(arg_or(node, 3, "keepdim", False))
    a = conv.bb.emit(_op.abs(x))
    if p == math.inf:
        return conv.bb.emit(_op.max(a, axis=axes, keepdims=keepdim))
    if p == -math.inf:
        return conv.bb.emit(_op.min(a, axis=axes, keepdims=keepdim))
    if p == 0:
        nonzero = _op.astype(_op.not_equal(a, conv.scalar(0, a)), dtype)
        return conv.bb.emit(_op.sum(nonzero, axis=axes, keepdims=keepdim))
    # every other order as TVM spells it, 1 and 2 included: power, sum, power
    powered = conv.bb.emit(_op.power(a, conv.scalar(p, a)))
    total = conv.bb.emit(_op.sum(powered, axis=axes, keepdims=keepdim))
    return conv.bb.emit(_op.power(total, conv.scalar(1.0 / p, a)))


def _scan(fn):
    """cumsum / cumprod along ``dim`` as TVM emits it: a ``dtype`` attribute only where the call
    names one or torch promoted the input (bools and int32 run up in int64, not in their own)."""
    def convert(node, conv):
        dtype = conv.dtype_of(node)
        x = conv.arg(node.args[0])
        if len(conv.shape_of(node.args[0])) == 0:
            return conv.as_dtype(x, dtype)
        if "dtype" not in node.kwargs and conv.dtype_of(node.args[0]) == dtype:
            dtype = None
        return conv.bb.emit(fn(x, axis=int(arg_or(node, 1, "dim", 0)), dtype=dtype))
    convert.__name__ = f"convert_{fn.__name__}"
    return convert


def count_nonzero(node, conv):
    axes = _axes(arg_or(node, 1, "dim", None))
    return conv.bb.emit(_op.sum(_op.astype(_truth(conv, node.args[0]), "int64"), axis=axes))


CONVERTERS = {
    "aten.sum.dim_IntList": _reduce(_op.sum),
    "aten.sum.default": _reduce_all(_op.sum),
    "aten.mean.dim": _reduce(_op.mean),
    "aten.mean.default": _reduce_all(_op.mean),
    "aten.prod.dim_int": _reduce(_op.prod),
    "aten.prod.default": _reduce_all(_op.prod),
    "aten.amax.default": _reduce(_op.max),
    "aten.amin.default": _reduce(_op.min),
    "aten.max.default": _reduce_all(_op.max),
    "aten.min.default": _reduce_all(_op.min),
    "aten.any.dim": _bool_reduce(_op.max),
    "aten.any.dims": _bool_reduce(_op.max),
    "aten.any.default": _bool_reduce(_op.max),
    "aten.all.dim": _bool_reduce(_op.min),
    "aten.all.dims": _bool_reduce(_op.min),
    "aten.all.default": _bool_reduce(_op.min),
    "aten.var.correction": var_std(False),
    "aten.var.dim": var_std(False),
    "aten.var.default": var_std(False),
    "aten.std.correction": var_std(True),
    "aten.std.dim": var_std(True),
    "aten.std.default": var_std(True),
    "aten.logsumexp.default": logsumexp,
    "aten.var_mean.correction": var_mean,
    "aten.linalg_vector_norm.default": vector_norm,
    "aten.cumsum.default": _scan(_op.cumsum),
    "aten.cumprod.default": _scan(_op.cumprod),
    "aten.count_nonzero.dim_IntList": count_nonzero,
    "aten.count_nonzero.default": count_nonzero,
}
