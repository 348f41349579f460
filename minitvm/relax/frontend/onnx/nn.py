"""Neural-network ONNX operators: matrix products, convolution, pooling, normalization, softmax."""

from __future__ import annotations

import numpy as np

from ... import op as _op
from ...expr import TupleGetItem, const
from .importer import OnnxImporter, OnnxNode


def matmul(node: OnnxNode, imp: OnnxImporter):
    return imp.emit(_op.matmul(imp.tensor(node, 0), imp.tensor(node, 1)))


def gemm(node: OnnxNode, imp: OnnxImporter):
    """``alpha * A' @ B' + beta * C`` with ``A'``/``B'`` transposed as ``transA``/``transB`` say."""
    a, b = imp.tensor(node, 0), imp.tensor(node, 1)
    if node.attr("transA", 0):
        a = _op.permute_dims(a, [1, 0])
    if node.attr("transB", 0):
        b = _op.permute_dims(b, [1, 0])
    out = _op.matmul(a, b)
    alpha, beta = float(node.attr("alpha", 1.0)), float(node.attr("beta", 1.0))
    if alpha != 1.0:
        out = _op.multiply(out, imp.scalar_of(alpha, imp.dtype(node, 0)))
    if node.has_input(2) and beta != 0.0:
        c = imp.tensor(node, 2)
        out = _op.add(out, c if beta == 1.0 else _op.multiply(c, imp.scalar_of(beta, imp.dtype(node, 2))))
    return imp.emit(out)


# -- windows: convolution and pooling ---------------------------------------------------------------

def _window_pads(node: OnnxNode, in_sizes: list, kernel: list, strides: list, dilations: list) -> list:
    """ONNX's ``pads`` (befores then afters) or what ``auto_pad`` asks for: SAME_UPPER puts the
    odd element after, SAME_LOWER before; VALID none."""
    dim = len(kernel)
    auto = node.attr("auto_pad", "NOTSET")
    if auto in ("NOTSET", ""):
        pads = [int(p) for p in node.attr("pads", [0] * (2 * dim))]
        return pads
    if auto == "VALID":
        return [0] * (2 * dim)
    before, after = [], []
    for size, k, s, d in zip(in_sizes, kernel, strides, dilations):
        if not isinstance(size, int):
            raise node.error(f"auto_pad={auto} over a symbolic spatial size is not supported")
        out = -(-size // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        small, big = total // 2, total - total // 2
        before.append(small if auto == "SAME_UPPER" else big)
        after.append(big if auto == "SAME_UPPER" else small)
    return before + after


def _window(node: OnnxNode, imp: OnnxImporter, kernel: list):
    shape = imp.shape(node, 0)
    dim = len(kernel)
    strides = [int(s) for s in node.attr("strides", [1] * dim)]
    dilations = [int(d) for d in node.attr("dilations", [1] * dim)]
    return strides, dilations, _window_pads(node, shape[2:], kernel, strides, dilations)


def _add_bias(imp: OnnxImporter, node: OnnxNode, out, dim: int):
    if not node.has_input(2):
        return out
    return imp.emit(_op.add(out, _op.reshape(imp.tensor(node, 2), [1, -1] + [1] * dim)))


def conv(node: OnnxNode, imp: OnnxImporter):
    """1-, 2- or 3-D convolution, grouped, dilated, padded by ``pads`` or ``auto_pad``."""
    w_shape = imp.shape(node, 1)
    dim = len(w_shape) - 2
    kernel = [int(k) for k in node.attr("kernel_shape", w_shape[2:])]
    strides, dilations, pads = _window(node, imp, kernel)
    fn = {1: _op.nn.conv1d, 2: _op.nn.conv2d, 3: _op.nn.conv3d}.get(dim)
    if fn is None:
        raise node.error(f"a {dim}-D convolution is not supported (1-, 2- and 3-D are)")
    out = imp.emit(fn(imp.tensor(node, 0), imp.tensor(node, 1), strides=strides, padding=pads, dilation=dilations,
                      groups=int(node.attr("group", 1))))
    return _add_bias(imp, node, out, dim)


def conv_transpose(node: OnnxNode, imp: OnnxImporter):
    """1- or 2-D transposed convolution; ``output_shape`` sets the padding as ONNX says."""
    w_shape = imp.shape(node, 1)
    dim = len(w_shape) - 2
    fn = {1: _op.nn.conv1d_transpose, 2: _op.nn.conv2d_transpose}.get(dim)
    if fn is None:
        raise node.error(f"a {dim}-D transposed convolution is not supported (1- and 2-D are)")
    kernel = [int(k) for k in node.attr("kernel_shape", w_shape[2:])]
    strides = [int(s) for s in node.attr("strides", [1] * dim)]
    dilations = [int(d) for d in node.attr("dilations", [1] * dim)]
    out_pad = [int(p) for p in node.attr("output_padding", [0] * dim)]
    in_sizes = imp.shape(node, 0)[2:]
    auto = node.attr("auto_pad", "NOTSET")
    if node.attr("output_shape") is not None or auto in ("SAME_UPPER", "SAME_LOWER"):
        target = [int(v) for v in node.attr("output_shape", [])][-dim:] or [n * s for n, s in zip(in_sizes, strides)]
        totals = [s * (n - 1) + op + (k - 1) * d + 1 - t
                  for n, s, op, k, d, t in zip(in_sizes, strides, out_pad, kernel, dilations, target)]
        if auto == "SAME_LOWER":
            pads = [t - t // 2 for t in totals] + [t // 2 for t in totals]
        else:
            pads = [t // 2 for t in totals] + [t - t // 2 for t in totals]
    elif auto == "VALID":
        pads = [0] * (2 * dim)
    else:
        pads = [int(p) for p in node.attr("pads", [0] * (2 * dim))]
    if any(p < 0 for p in pads):
        raise node.error(f"output_shape {node.attr('output_shape')} needs negative padding {pads}")
    out = imp.emit(fn(imp.tensor(node, 0), imp.tensor(node, 1), strides=strides, padding=pads,
                      output_padding=out_pad, dilation=dilations, groups=int(node.attr("group", 1))))
    return _add_bias(imp, node, out, dim)


def _pool(kind: str):
    """MaxPool / AveragePool over 1 or 2 spatial dims (1-D as a 1 x k window)."""
    fn = _op.nn.max_pool2d if kind == "max" else _op.nn.avg_pool2d

    def convert(node: OnnxNode, imp: OnnxImporter):
        if kind == "max" and node.wants_output(1):
            raise node.error("MaxPool's Indices output is not supported")
        kernel = [int(k) for k in node.attr("kernel_shape")]
        dim = len(kernel)
        if dim not in (1, 2):
            raise node.error(f"{dim}-D pooling is not supported (1-D and 2-D are)")
        strides, dilations, pads = _window(node, imp, kernel)
        x = imp.tensor(node, 0)
        if dim == 1:
            x = _op.expand_dims(x, [2])
            kernel, strides, dilations = [1] + kernel, [1] + strides, [1] + dilations
            pads = [0, pads[0], 0, pads[1]]
        out = imp.emit(fn(x, pool_size=kernel, strides=strides, padding=pads, dilation=dilations,
                          ceil_mode=bool(node.attr("ceil_mode", 0)),
                          count_include_pad=bool(node.attr("count_include_pad", 0))))
        return imp.emit(_op.squeeze(out, [2])) if dim == 1 else out
    convert.__name__ = f"convert_{kind}_pool"
    return convert


def _global_pool(fn):
    def convert(node: OnnxNode, imp: OnnxImporter):
        rank = len(imp.shape(node, 0))
        return imp.emit(fn(imp.tensor(node, 0), axis=list(range(2, rank)), keepdims=True))
    return convert


# -- normalization ------------------------------------------------------------------------------------

def batch_normalization(node: OnnxNode, imp: OnnxImporter):
    """Inference batch norm over axis 1 with the given running statistics."""
    if node.attr("training_mode", 0):
        raise node.error("training_mode=1 is not supported (inference only)")
    x, scale, bias, mean, var = (imp.tensor(node, k) for k in range(5))
    out = imp.emit(_op.nn.batch_norm(x, scale, bias, mean, var, axis=1, epsilon=float(node.attr("epsilon", 1e-5)),
                                     training=False))
    return imp.emit(TupleGetItem(out, 0))


def layer_normalization(node: OnnxNode, imp: OnnxImporter):
    """Normalized over the axes from ``axis`` on; the optional Mean and InvStdDev outputs too."""
    shape = imp.shape(node, 0)
    axis = int(node.attr("axis", -1)) % len(shape)
    axes = list(range(axis, len(shape)))
    eps = float(node.attr("epsilon", 1e-5))
    x = imp.tensor(node, 0)
    bias = imp.tensor(node, 2)
    if bias is None:
        bias = const(np.zeros([int(d) for d in shape[axis:]], imp.dtype(node, 0)))
    out = imp.emit(_op.nn.layer_norm(x, imp.tensor(node, 1), bias, axes=axes, epsilon=eps))
    if not (node.wants_output(1) or node.wants_output(2)):
        return out
    mean = imp.emit(_op.mean(x, axis=axes, keepdims=True))
    dev = _op.subtract(x, mean)
    var = _op.mean(_op.multiply(dev, dev), axis=axes, keepdims=True)
    return [out, mean, imp.emit(_op.rsqrt(_op.add(var, imp.scalar(eps, x))))]


def instance_normalization(node: OnnxNode, imp: OnnxImporter):
    """Each (sample, channel) normalized over its spatial values, then scaled per channel."""
    rank = len(imp.shape(node, 0))
    x = imp.tensor(node, 0)
    axes = list(range(2, rank))
    mean = imp.emit(_op.mean(x, axis=axes, keepdims=True))
    dev = imp.emit(_op.subtract(x, mean))
    var = _op.mean(_op.multiply(dev, dev), axis=axes, keepdims=True)
    out = _op.multiply(dev, _op.rsqrt(_op.add(var, imp.scalar(float(node.attr("epsilon", 1e-5)), x))))
    view = [1, -1] + [1] * (rank - 2)
    out = _op.add(_op.multiply(out, _op.reshape(imp.tensor(node, 1), view)), _op.reshape(imp.tensor(node, 2), view))
    return imp.emit(out)


def _softmax(fn):
    """Softmax / LogSoftmax: along ``axis`` (opset 13 on, default -1); before 13 over the input
    seen as 2-D (``[prod(shape[:axis]), prod(shape[axis:])]``, default axis 1)."""
    def convert(node: OnnxNode, imp: OnnxImporter):
        x = imp.tensor(node, 0)
        if node.opset >= 13:
            return imp.emit(fn(x, axis=int(node.attr("axis", -1))))
        shape = imp.shape(node, 0)
        axis = int(node.attr("axis", 1)) % max(len(shape), 1)
        rows, cols = 1, 1
        for d in shape[:axis]:
            rows = rows * d
        for d in shape[axis:]:
            cols = cols * d
        flat = fn(_op.reshape(x, [rows, cols]), axis=1)
        return imp.emit(_op.reshape(flat, shape))
    return convert


def einsum(node: OnnxNode, imp: OnnxImporter):
    xs = [imp.tensor(node, k) for k in range(len(node.inputs))]
    return imp.emit(_op.einsum(xs, node.attr("equation").replace(" ", "")))


CONVERTERS = {
    "MatMul": matmul, "Gemm": gemm, "Conv": conv, "ConvTranspose": conv_transpose,
    "MaxPool": _pool("max"), "AveragePool": _pool("avg"),
    "GlobalAveragePool": _global_pool(_op.mean), "GlobalMaxPool": _global_pool(_op.max),
    "BatchNormalization": batch_normalization, "LayerNormalization": layer_normalization,
    "InstanceNormalization": instance_normalization,
    "Softmax": _softmax(_op.nn.softmax), "LogSoftmax": _softmax(_op.nn.log_softmax), "Einsum": einsum,
}
