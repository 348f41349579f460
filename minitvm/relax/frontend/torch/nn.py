"""Neural-network operators: convolution, pooling, softmax, normalization."""

from __future__ import annotations

import numpy as np

from ... import op as _op
from ...expr import TupleGetItem, const
from ._common import arg_or


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
    bias = conv.arg(arg_or(node, 2, "bias", None))
    return _conv2d(conv, node, x, w, bias, arg_or(node, 3, "stride", 1), arg_or(node, 4, "padding", 0),
                   arg_or(node, 5, "dilation", 1), arg_or(node, 6, "groups", 1))


def convolution(node, conv):
    (x, w, bias, stride, padding, dilation, transposed, _out_pad, groups) = node.args[:9]
    if transposed:
        raise ValueError("from_exported_program: transposed convolution is not supported")
    return _conv2d(conv, node, conv.arg(x), conv.arg(w), conv.arg(bias), stride, padding, dilation, groups)


def max_pool2d(node, conv):
    x = conv.arg(node.args[0])
    kernel = arg_or(node, 1, "kernel_size", None)
    stride = arg_or(node, 2, "stride", None) or kernel
    out = conv.bb.emit(_op.nn.max_pool2d(
        x, pool_size=_pair(kernel), strides=_pair(stride), padding=_pair(arg_or(node, 3, "padding", 0)),
        dilation=_pair(arg_or(node, 4, "dilation", 1)), ceil_mode=bool(arg_or(node, 5, "ceil_mode", False))))
    return out


def max_pool2d_with_indices(node, conv):
    """(values, indices); only the values are available (a use of the indices fails)."""
    return (max_pool2d(node, conv), None)


def avg_pool2d(node, conv):
    if arg_or(node, 6, "divisor_override", None) is not None:
        raise NotImplementedError("from_exported_program: avg_pool2d's divisor_override is not supported")
    x = conv.arg(node.args[0])
    kernel = arg_or(node, 1, "kernel_size", None)
    stride = arg_or(node, 2, "stride", None) or kernel
    return conv.bb.emit(_op.nn.avg_pool2d(
        x, pool_size=_pair(kernel), strides=_pair(stride), padding=_pair(arg_or(node, 3, "padding", 0)),
        ceil_mode=bool(arg_or(node, 4, "ceil_mode", False)),
        count_include_pad=bool(arg_or(node, 5, "count_include_pad", True))))


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
    weight = conv.arg(arg_or(node, 2, "weight", None))
    bias = conv.arg(arg_or(node, 3, "bias", None))
    if weight is None:
        weight = const(np.ones(normalized_shape, dtype))
    if bias is None:
        bias = const(np.zeros(normalized_shape, dtype))
    eps = float(arg_or(node, eps_index, "eps", 1e-5))
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
    eps = float(arg_or(node, 6, "eps", 1e-5))
    return (_batch_norm_output(conv, node, x, w, b, mean, var, eps), None, None)


def _batch_norm_output(conv, node, x, w, b, mean, var, eps):
    """Inference batch norm over axis 1 with the running statistics; missing affine
    parameters are ones and zeros."""
    dtype = conv.dtype_of(node.args[0])
    channels = conv.shape_of(node.args[0])[1]
    if w is None:
        w = const(np.ones((channels,), dtype))
    if b is None:
        b = const(np.zeros((channels,), dtype))
    out = conv.bb.emit(_op.nn.batch_norm(x, w, b, mean, var, axis=1, epsilon=eps, training=False))
    return conv.bb.emit(TupleGetItem(out, 0))


def batch_norm(node, conv):
    """``aten.batch_norm`` (not decomposed) in inference mode: the normalized output only."""
    if bool(arg_or(node, 5, "training", False)):
        raise ValueError("from_exported_program: batch_norm in training mode is not supported; call model.eval()")
    x, w, b, mean, var = (conv.arg(arg_or(node, k, name, None)) for k, name in
                          enumerate(("input", "weight", "bias", "running_mean", "running_var")))
    eps = float(arg_or(node, 7, "eps", 1e-5))
    return _batch_norm_output(conv, node, x, w, b, mean, var, eps)


def embedding(node, conv):
    """``embedding(weight, ids)``: rows of the table, a take along axis 0."""
    return conv.bb.emit(_op.take(conv.arg(node.args[0]), conv.arg(node.args[1]), axis=0))


def _attention_mask(conv, node, scores, mask, is_causal):
    """The scores with masked-out positions at -inf (a bool mask, or causal) or a float mask added."""
    if is_causal:
        q_len, k_len = conv.shape_of(node)[-2], conv.shape_of(node.args[1])[-2]
        if not (isinstance(q_len, int) and isinstance(k_len, int)):
            raise ValueError("from_exported_program: causal attention over a symbolic sequence length is not supported")
        keep = const(np.tril(np.ones((q_len, k_len), dtype=bool)))
        scores = _op.where(keep, scores, conv.scalar_of(float("-inf"), conv.dtype_of(node)))
    if mask is None:
        return scores
    if conv.dtype_of(mask) == "bool":
        return _op.where(conv.arg(mask), scores, conv.scalar_of(float("-inf"), conv.dtype_of(node)))
    return _op.add(scores, conv.arg(mask))


def scaled_dot_product_attention(node, conv):
    """``softmax(q @ k^T * scale + mask) @ v`` over the last two dims (no dropout: inference)."""
    q, k, v = (conv.arg(a) for a in node.args[:3])
    mask = arg_or(node, 3, "attn_mask", None)
    is_causal = bool(arg_or(node, 5, "is_causal", False))
    scale = node.kwargs.get("scale")
    ndim = len(conv.shape_of(node.args[0]))
    head_dim = conv.shape_of(node.args[0])[-1]
    if scale is None:
        scale = 1.0 / float(np.sqrt(head_dim))
    axes = list(range(ndim - 2)) + [ndim - 1, ndim - 2]
    scores = _op.multiply(_op.matmul(q, _op.permute_dims(k, axes)), conv.scalar(scale, q))
    scores = conv.bb.emit(_attention_mask(conv, node, scores, mask, is_causal))
    probs = conv.bb.emit(_op.nn.softmax(scores, axis=-1))
    return conv.bb.emit(_op.matmul(probs, v))


CONVERTERS = {
    "aten.embedding.default": embedding,
    "aten.scaled_dot_product_attention.default": scaled_dot_product_attention,
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
    "aten.batch_norm.default": batch_norm,
}
