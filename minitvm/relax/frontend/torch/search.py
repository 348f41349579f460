"""Selection and search: where, masked_fill, argmax/argmin, max/min along a dim (values and
indices)."""

from __future__ import annotations

from ... import op as _op
from ._common import arg_or


def where(node, conv):
    """``torch.where(condition, x, y)``."""
    dtype = conv.dtype_of(node)
    cond = conv.arg(node.args[0])
    x, y = (conv.as_dtype(conv.arg(a), dtype) for a in node.args[1:3])
    return conv.bb.emit(_op.where(cond, x, y))


def masked_fill(node, conv):
    """``x.masked_fill(mask, value)``: ``value`` where the mask is true."""
    x, mask = conv.arg(node.args[0]), conv.arg(node.args[1])
    value = conv.as_dtype(conv.arg(node.args[2]), conv.dtype_of(node))
    return conv.bb.emit(_op.where(mask, value, x))


def _arg_reduce(fn):
    def convert(node, conv):
        dim = arg_or(node, 1, "dim", None)
        keepdim = bool(arg_or(node, 2, "keepdim", False))
        return conv.bb.emit(fn(conv.arg(node.args[0]), None if dim is None else int(dim), keepdim))
    convert.__name__ = f"convert_{fn.__name__}"
    convert.__doc__ = f"``{fn.__name__}`` along ``dim`` (None: of the flattened tensor)."
    return convert


def _value_and_index(reduce_fn, arg_fn):
    """``torch.max(x, dim)``: (the reduction, its int64 index)."""
    def convert(node, conv):
        x, dim = conv.arg(node.args[0]), int(node.args[1])
        keepdim = bool(arg_or(node, 2, "keepdim", False))
        return (conv.bb.emit(reduce_fn(x, dim, keepdim)), conv.bb.emit(arg_fn(x, dim, keepdim)))
    convert.__name__ = f"convert_{reduce_fn.__name__}_dim"
    return convert


CONVERTERS = {
    "aten.where.self": where,
    "aten.masked_fill.Scalar": masked_fill,
    "aten.masked_fill.Tensor": masked_fill,
    "aten.argmax.default": _arg_reduce(_op.argmax),
    "aten.argmin.default": _arg_reduce(_op.argmin),
    "aten.max.dim": _value_and_index(_op.max, _op.argmax),
    "aten.min.dim": _value_and_index(_op.min, _op.argmin),
}
