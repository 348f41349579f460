"""Neural-network operators: convolution, pooling, softmax, normalization."""

from __future__ import annotations

import numpy as np

from ... import op as _op
from ...expr import TupleGetItem, const


def _arg(node, i, name, default):
    """Positional argument ``i`` or keyword ``name`` of an ATen call, else ``default``."""
    if len(node.args) > i:
        return node.args[i]
    return node.kwargs.get(name, default)


def _pair(v):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return (v[0], v[0]) if len(v) == 1 else tuple(v)


def _conv2d(conv, node, x, w, bias, stride, padding, dilation, groups):
    ndim = len(conv.shape_of(node.args[0]))
    if ndim != 4:
        raise ValueError(f"from_exported_program: only 2-D convolution is supported, got a {ndim}-D input")
    out = conv.bb.emit(_op.nn.conv2d(x, w, strides=_pair(stride), padding=_pair(padding),
                                     dilation=_pair(dilation), groups=int(groups)))
    if bias is not None:
        out = conv.bb.emit(_op.add(out, _op.reshape(bias, (1, -1, 1, 1))))
    return out


def conv2d(node, conv):
    x, w = conv.arg(node.args[0]), conv.arg(node.args[1])
    bias = conv.arg(_arg(node, 2, "bias", None))
    return _conv2d(conv, node, x, w, bias, _arg(node, 3, "stride", 1), _arg(node, 4, "padding", 0),
                   _arg(node, 5, "dilation", 1), _arg(node, 6, "groups", 1))


def convolution(node, conv):
    (x, w, bias, stride, padding, dilation, transposed, _out_pad, groups) = node.args[:9]
    if transposed:
        raise ValueError("from_exported_program: transposed convolution is not supported")
    return _conv2d(conv, node, conv.arg(x), conv.arg(w), conv.arg(bias), stride, padding, dilation, groups)


def max_pool2d(node, conv):
    x = conv.arg(node.args[0])
    kernel = _arg(node, 1, "kernel_size", None)
    stride = _arg(node, 2, "stride", None) or kernel
    out = conv.bb.emit(_op.nn.max_pool2d(
        x, pool_size=_pair(kernel), strides=_pair(stride), padding=_pair(_arg(node, 3, "padding", 0)),
        dilation=_pair(_arg(node, 4, "dilation", 1)), ceil_mode=bool(_arg(node, 5, "ceil_mode", False))))
    return out


def max_pool2d_with_indices(node, conv):
    """(values, indices); only the values are available (a use of the indices fails)."""
    return (max_pool2d(node, conv), None)


def avg_pool2d(node, conv):
    x = conv.arg(node.args[0])
    kernel = _arg(node, 1, "kernel_size", None)
    stride = _arg(node, 2, "stride", None) or kernel
    return conv.bb.emit(_op.nn.avg_pool2d(
        x, pool_size=_pair(kernel), strides=_pair(stride), padding=_pair(_arg(node, 3, "padding", 0)),
        ceil_mode=bool(_arg(node, 4, "ceil_mode", False)),
        count_include_pad=bool(_arg(node, 5, "count_include_pad", True))))


def adaptive_avg_pool2d(node, conv):
    return conv.bb.emit(_op.nn.adaptive_avg_pool2d(conv.arg(node.args[0]), _pair(node.args[1])))


def softmax(node, conv):
    return conv.bb.emit(_op.nn.softmax(conv.arg(node.args[0]), axis=int(node.args[1])))


def log_softmax(node, conv):
    return conv.bb.emit(_op.nn.log_softmax(conv.arg(node.args[0]), axis=int(node.args[1])))


def _layer_norm(node, conv, eps_index):
    x = conv.arg(node.args[0])
    normalized_shape = list(node.args[1])
    dtype = conv.dtype_of(node.args[0])
    weight = conv.arg(_arg(node, 2, "weight", None))
    bias = conv.arg(_arg(node, 3, "bias", None))
    if weight is None:
        weight = const(np.ones(normalized_shape, dtype))
    if bias is None:
        bias = const(np.zeros(normalized_shape, dtype))
    eps = float(_arg(node, eps_index, "eps", 1e-5))
    axes = list(range(-len(normalized_shape), 0))
    return conv.bb.emit(_op.nn.layer_norm(x, weight, bias, axes=axes, epsilon=eps))


def layer_norm(node, conv):
    return _layer_norm(node, conv, 4)


def native_layer_norm(node, conv):
    """(output, mean, rstd); only the output is available."""
    return (_layer_norm(node, conv, 4), None, None)


def batch_norm_no_training(node, conv):
    """``_native_batch_norm_legit_no_training``: (output, saved mean, saved invstd)."""
    x, w, b, mean, var = (conv.arg(a) for a in node.args[:5])
    eps = float(_arg(node, 6, "eps", 1e-5))
    dtype = conv.dtype_of(node.args[0])
    channels = conv.shape_of(node.args[0])[1]
    if w is None:
        w = const(np.ones((channels,), dtype))
    if b is None:
        b = const(np.zeros((channels,), dtype))
    out = conv.bb.emit(_op.nn.batch_norm(x, w, b, mean, var, axis=1, epsilon=eps))
    return (conv.bb.emit(TupleGetItem(out, 0)), None, None)


CONVERTERS = {
    "aten.conv2d.default": conv2d,
    "aten.convolution.default": convolution,
    "aten.max_pool2d.default": max_pool2d,
    "aten.max_pool2d_with_indices.default": max_pool2d_with_indices,
    "aten.avg_pool2d.default": avg_pool2d,
    "aten.adaptive_avg_pool2d.default": adaptive_avg_pool2d,
    "aten._adaptive_avg_pool2d.default": adaptive_avg_pool2d,
    "aten._softmax.default": softmax,
    "aten.softmax.int": softmax,
    "aten._log_softmax.default": log_softmax,
    "aten.log_softmax.int": log_softmax,
    "aten.layer_norm.default": layer_norm,
    "aten.native_layer_norm.default": native_layer_norm,
    "aten._native_batch_norm_legit_no_training.default": batch_norm_no_training,
}
