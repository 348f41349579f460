"""Reductions: sum, mean, amax/amin, max/min over everything, any/all of bool tensors."""

from __future__ import annotations

from ... import op as _op
from ._common import arg_or


def _axes(dims):
    """torch's ``dim`` argument (None, an int, or a list; ``[]`` means every axis) as Relax axes."""
    if dims is None:
        return None
    if isinstance(dims, int):
        return [dims]
    return [int(d) for d in dims] or None


def _reduce(fn):
    def convert(node, conv):
        axis = _axes(arg_or(node, 1, "dim", None))
        keepdim = bool(arg_or(node, 2, "keepdim", False))
        return conv.bb.emit(fn(conv.arg(node.args[0]), axis=axis, keepdims=keepdim))
    convert.__name__ = f"convert_{fn.__name__}"
    convert.__doc__ = f"``{fn.__name__}`` over ``dim`` (every axis when absent or empty)."
    return convert


def _reduce_all(fn):
    def convert(node, conv):
        return conv.bb.emit(fn(conv.arg(node.args[0])))
    convert.__name__ = f"convert_{fn.__name__}_all"
    convert.__doc__ = f"``{fn.__name__}`` of every element (a 0-d result)."
    return convert


def _bool_reduce(fn):
    """any / all: the max / min of the mask as int8, back to bool (no Relax op of their own)."""
    def convert(node, conv):
        x = conv.arg(node.args[0])
        axis = _axes(arg_or(node, 1, "dim", None))
        keepdim = bool(arg_or(node, 2, "keepdim", False))
        as_int = _op.astype(x, "int8")
        return conv.bb.emit(_op.astype(fn(as_int, axis=axis, keepdims=keepdim), "bool"))
    convert.__name__ = f"convert_{'any' if fn is _op.max else 'all'}"
    convert.__doc__ = "any / all of a bool tensor over ``dim``."
    return convert


CONVERTERS = {
    "aten.sum.dim_IntList": _reduce(_op.sum),
    "aten.sum.default": _reduce_all(_op.sum),
    "aten.mean.dim": _reduce(_op.mean),
    "aten.mean.default": _reduce_all(_op.mean),
    "aten.prod.dim_int": _reduce(_op.prod),
    "aten.amax.default": _reduce(_op.max),
    "aten.amin.default": _reduce(_op.min),
    "aten.max.default": _reduce_all(_op.max),
    "aten.min.default": _reduce_all(_op.min),
    "aten.any.dim": _bool_reduce(_op.max),
    "aten.any.dims": _bool_reduce(_op.max),
    "aten.any.default": _bool_reduce(_op.max),
    "aten.all.dim": _bool_reduce(_op.min),
    "aten.all.default": _bool_reduce(_op.min),
}
