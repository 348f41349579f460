"""Selection and search: where, masked_fill, argmax/argmin, max/min along a dim (values and
indices)."""

from __future__ import annotations

import numpy as np

from ... import op as _op
from ...expr import const, struct_info_of
from ._common import arg_or, norm_dim


def where(node, conv):
    """``torch.where(condition, x, y)``; ``x`` or ``y`` may be a Python number."""
    dtype = conv.dtype_of(node)
    cond = conv.arg(node.args[0])
    if conv.dtype_of(node.args[0]) != "bool":
        cond = _op.not_equal(cond, conv.scalar_of(0, conv.dtype_of(node.args[0])))
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
        if not conv.shape_of(node.args[0]):  # a 0-d tensor is its own max, at index 0
            return (x, conv.bb.emit(_op.zeros([], "int64")))
        return (conv.bb.emit(reduce_fn(x, dim, keepdim)), conv.bb.emit(arg_fn(x, dim, keepdim)))
    convert.__name__ = f"convert_{reduce_fn.__name__}_dim"
    return convert


def _ranks(conv, x, dim: int, n: int, descending: bool):
    """Where each element of ``x`` lands when ``x`` is sorted along ``dim`` (stable): the count
    of elements ``j`` that come before element ``i`` (smaller, or equal and earlier; NaN is
    the largest, as in torch)."""
    xi = _op.expand_dims(x, [dim + 1])  # element i along dim, j along dim + 1
    xj = _op.expand_dims(x, [dim])
    nan_i, nan_j = _op.isnan(xi), _op.isnan(xj)
    if descending:
        strictly = _op.logical_or(_op.greater(xj, xi), _op.logical_and(nan_j, _op.logical_not(nan_i)))
    else:
        strictly = _op.logical_or(_op.less(xj, xi), _op.logical_and(nan_i, _op.logical_not(nan_j)))
    same = _op.logical_or(_op.equal(xi, xj), _op.logical_and(nan_i, nan_j))
    ndim = len(struct_shape(conv, x))
    earlier = np.tril(np.ones((n, n), dtype=bool), -1)  # [i, j]: j < i
    earlier = const(earlier.reshape([n, n] + [1] * (ndim - dim - 1)))
    before = _op.logical_or(strictly, _op.logical_and(same, earlier))
    return conv.bb.emit(_op.sum(_op.astype(before, "int64"), axis=[dim + 1]))


def struct_shape(conv, x):
    return struct_info_of(x).shape_values


def _sorted(conv, node, x, dim: int, descending: bool, flat_size: int | None = None):
    """(values, int64 indices) of ``x`` sorted along ``dim``: each element scattered to its rank
    (``flat_size``: ``x`` is the flattened input, of that length)."""
    shape = conv.shape_of(node.args[0]) if flat_size is None else [flat_size]
    n = shape[dim]
    if not isinstance(n, int):
        raise ValueError(f"from_exported_program: {node.target} along the symbolic dim {dim} is not supported")
    if conv.dtype_of(node.args[0]) == "bool":
        x = conv.bb.emit(_op.astype(x, "int8"))
    ranks = _ranks(conv, x, dim, n, descending)
    values = conv.bb.emit(_op.scatter_elements(x, ranks, x, axis=dim))
    positions = np.arange(n, dtype="int64").reshape([n] + [1] * (len(shape) - dim - 1))
    order = conv.bb.emit(_op.broadcast_to(const(positions), shape))
    indices = conv.bb.emit(_op.scatter_elements(order, ranks, order, axis=dim))
    return values, indices


def _sort_args(node, conv):
    ndim = len(conv.shape_of(node.args[0]))
    if str(node.target) == "aten.sort.stable":
        dim = node.kwargs.get("dim", -1)
        descending = node.kwargs.get("descending", False)
    else:
        dim, descending = arg_or(node, 1, "dim", -1), arg_or(node, 2, "descending", False)
    return norm_dim(dim, max(ndim, 1), str(node.target)), bool(descending), ndim


def sort(node, conv):
    """``torch.sort(x, dim, descending)``: (values, indices), stable."""
    dim, descending, ndim = _sort_args(node, conv)
    x = conv.arg(node.args[0])
    if ndim == 0:
        return (x, conv.bb.emit(_op.zeros([], "int64")))
    values, indices = _sorted(conv, node, x, dim, descending)
    if conv.dtype_of(node.args[0]) == "bool":
        values = conv.bb.emit(_op.astype(values, "bool"))
    return (values, indices)


def argsort(node, conv):
    dim, descending, ndim = _sort_args(node, conv)
    if ndim == 0:
        return conv.bb.emit(_op.zeros([], "int64"))
    return _sorted(conv, node, conv.arg(node.args[0]), dim, descending)[1]


def topk(node, conv):
    """``torch.topk(x, k, dim, largest, sorted)``: the first ``k`` of the sorted ``x``."""
    k = int(node.args[1])
    ndim = len(conv.shape_of(node.args[0]))
    dim = norm_dim(arg_or(node, 2, "dim", -1), max(ndim, 1), "aten.topk")
    largest = bool(arg_or(node, 3, "largest", True))
    x = conv.arg(node.args[0])
    if ndim == 0:
        return (x, conv.bb.emit(_op.zeros([], "int64")))
    values, indices = _sorted(conv, node, x, dim, largest)
    return tuple(conv.bb.emit(_op.strided_slice(t, [dim], [0], [k])) for t in (values, indices))


def median(node, conv):
    """``torch.median``: the lower median (element ``(n - 1) // 2`` of the sorted values); along
    ``dim`` also its index."""
    x = conv.arg(node.args[0])
    shape = conv.shape_of(node.args[0])
    if str(node.target) == "aten.median.default":
        size = 1
        for d in shape:
            size *= d
        x = conv.bb.emit(_op.reshape(x, [size]))
        values, _ = _sorted(conv, node, x, 0, False, size)
        return conv.bb.emit(_op.reshape(_op.strided_slice(values, [0], [(size - 1) // 2], [(size - 1) // 2 + 1]), []))
    dim = norm_dim(arg_or(node, 1, "dim", -1), max(len(shape), 1), "aten.median.dim")
    keepdim = bool(arg_or(node, 2, "keepdim", False))
    values, indices = _sorted(conv, node, x, dim, False)
    k = (shape[dim] - 1) // 2
    out = []
    for t in (values, indices):
        t = _op.strided_slice(t, [dim], [k], [k + 1])
        out.append(conv.bb.emit(t if keepdim else _op.squeeze(t, [dim])))
    return tuple(out)


def isin(node, conv):
    """``torch.isin(elements, test_elements, invert=...)``: any equal among the test elements."""
    x, test = conv.arg(node.args[0]), conv.arg(node.args[1])
    size = 1
    for d in conv.shape_of(node.args[1]):
        size *= d
    dtype = conv.dtype_of(node.args[0])
    hit = _op.equal(_op.expand_dims(x, [-1]) if conv.shape_of(node.args[0]) else _op.reshape(x, [1]),
                    conv.as_dtype(conv.bb.emit(_op.reshape(test, [size])), dtype))
    found = _op.astype(_op.max(_op.astype(hit, "int8"), axis=[-1]), "bool")
    if not conv.shape_of(node.args[0]):
        found = _op.reshape(found, [])
    if node.kwargs.get("invert", False):
        found = _op.logical_not(found)
    return conv.bb.emit(found)


CONVERTERS = {
    "aten.median.default": median,
    "aten.median.dim": median,
    "aten.isin.Tensor_Tensor": isin,
    "aten.where.self": where,
    "aten.where.ScalarSelf": where,
    "aten.where.ScalarOther": where,
    "aten.where.Scalar": where,
    "aten.masked_fill_.Scalar": masked_fill,
    "aten.masked_fill_.Tensor": masked_fill,
    "aten.sort.default": sort,
    "aten.sort.stable": sort,
    "aten.argsort.default": argsort,
    "aten.argsort.stable": argsort,
    "aten.topk.default": topk,
    "aten.masked_fill.Scalar": masked_fill,
    "aten.masked_fill.Tensor": masked_fill,
    "aten.argmax.default": _arg_reduce(_op.argmax),
    "aten.argmin.default": _arg_reduce(_op.argmin),
    "aten.max.dim": _value_and_index(_op.max, _op.argmax),
    "aten.min.dim": _value_and_index(_op.min, _op.argmin),
}
