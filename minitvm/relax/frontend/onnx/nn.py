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
    """MaxPool / AveragePool / LpPool over 1, 2 or 3 spatial dims (1-D as a 1 x k window); LpPool
    is the sum of ``|x| ** p`` over the zero-padded window (an average times its size), to 1/p."""
    fns = {2: _op.nn.max_pool2d if kind == "max" else _op.nn.avg_pool2d,
           3: _op.nn.max_pool3d if kind == "max" else _op.nn.avg_pool3d}

    def convert(node: OnnxNode, imp: OnnxImporter):
        if kind == "max" and node.wants_output(1):
            raise node.error("MaxPool's Indices output is not supported")
        kernel = [int(k) for k in node.attr("kernel_shape")]
        dim = len(kernel)
        if dim not in (1, 2, 3):
            raise node.error(f"{dim}-D pooling is not supported (1-D, 2-D and 3-D are)")
        strides, dilations, pads = _window(node, imp, kernel)
        x = imp.tensor(node, 0)
        if kind == "lp":
            p = float(node.attr("p", 2))
            x = _op.power(_op.abs(x), imp.scalar(p, x))
        if dim == 1:
            x = _op.expand_dims(x, [2])
            kernel, strides, dilations = [1] + kernel, [1] + strides, [1] + dilations
            pads = [0, pads[0], 0, pads[1]]
        out = imp.emit(fns[max(dim, 2)](x, pool_size=kernel, strides=strides, padding=pads, dilation=dilations,
                                        ceil_mode=bool(node.attr("ceil_mode", 0)),
                                        count_include_pad=kind == "lp" or bool(node.attr("count_include_pad", 0))))
        if dim == 1:
            out = imp.emit(_op.squeeze(out, [2]))
        if kind == "lp":
            count = imp.scalar(float(np.prod(kernel)), out)
            out = imp.emit(_op.power(_op.multiply(out, count), imp.scalar(1.0 / p, out)))
        return out
    convert.__name__ = f"convert_{kind}_pool"
    return convert


def global_lp_pool(node: OnnxNode, imp: OnnxImporter):
    """``sum(|x| ** p) ** (1 / p)`` over the spatial axes."""
    x, rank, p = imp.tensor(node, 0), len(imp.shape(node, 0)), float(node.attr("p", 2))
    total = _op.sum(_op.power(_op.abs(x), imp.scalar(p, x)), axis=list(range(2, rank)), keepdims=True)
    return imp.emit(_op.power(total, imp.scalar(1.0 / p, x)))


def _global_pool(fn):
    def convert(node: OnnxNode, imp: OnnxImporter):
        rank = len(imp.shape(node, 0))
        return imp.emit(fn(imp.tensor(node, 0), axis=list(range(2, rank)), keepdims=True))
    return convert


# -- normalization ------------------------------------------------------------------------------------

def max_unpool(node: OnnxNode, imp: OnnxImporter):
    """MaxPool's inverse: each value written at its flat ``indices`` position of a zero tensor
    of the output shape (the third input, else ``(in - 1) * stride + kernel - pads``)."""
    in_shape = imp.shape(node, 0)
    kernel = list(node.attr("kernel_shape"))
    strides = list(node.attr("strides", [1] * len(kernel)))
    pads = list(node.attr("pads", [0] * 2 * len(kernel)))
    out_shape = imp.ints(node, 2, "the output shape")
    if out_shape is None:
        spatial = [(d - 1) * s + k - pads[i] - pads[i + len(kernel)]
                   for i, (d, s, k) in enumerate(zip(in_shape[2:], strides, kernel))]
        out_shape = list(in_shape[:2]) + spatial
    numel = 1
    for d in out_shape:
        numel = numel * d
    flat = _op.scatter_elements(_op.zeros([numel], imp.dtype(node, 0)),
                                _op.reshape(imp.tensor(node, 1), [-1]), _op.reshape(imp.tensor(node, 0), [-1]))
    return _op.reshape(imp.emit(flat), out_shape)


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
    out = _normalized(imp, imp.tensor(node, 0), list(range(2, rank)), float(node.attr("epsilon", 1e-5)))
    view = [1, -1] + [1] * (rank - 2)
    out = _op.add(_op.multiply(out, _op.reshape(imp.tensor(node, 1), view)), _op.reshape(imp.tensor(node, 2), view))
    return imp.emit(out)


def rms_normalization(node: OnnxNode, imp: OnnxImporter):
    """opset 23's RMSNormalization: over the axes from ``axis`` on, times ``scale``."""
    rank = len(imp.shape(node, 0))
    axis = int(node.attr("axis", -1)) % rank
    return imp.emit(_op.nn.rms_norm(imp.tensor(node, 0), imp.tensor(node, 1), axes=list(range(axis, rank)),
                                    epsilon=float(node.attr("epsilon", 1e-5))))


def group_normalization(node: OnnxNode, imp: OnnxImporter):
    """Channels in ``num_groups`` groups, each normalized over its channels and spatial values;
    scale and bias per channel (opset 21) or, before, per group."""
    shape = imp.shape(node, 0)
    groups = int(node.attr("num_groups"))
    scale, bias = imp.tensor(node, 1), imp.tensor(node, 2)
    if node.opset < 21:  # one value per group: repeat it over the group's channels
        per = int(shape[1]) // groups
        scale, bias = (_op.repeat(v, per, axis=0) for v in (scale, bias))
    return imp.emit(_op.nn.group_norm(imp.tensor(node, 0), scale, bias, groups, 1, list(range(2, len(shape))),
                                      float(node.attr("epsilon", 1e-5))))


def _normalized(imp: OnnxImporter, x, axes: list, eps: float):
    """``(x - mean) / sqrt(var + eps)`` with the (biased) statistics over ``axes``."""
    mean = imp.emit(_op.mean(x, axis=axes, keepdims=True))
    dev = imp.emit(_op.subtract(x, mean))
    var = _op.mean(_op.multiply(dev, dev), axis=axes, keepdims=True)
    return imp.emit(_op.multiply(dev, _op.rsqrt(_op.add(var, imp.scalar(eps, x)))))


def mean_variance_normalization(node: OnnxNode, imp: OnnxImporter):
    """``(x - mean) / sqrt(var)`` over ``axes`` (default N, H, W); ONNX's reference adds 1e-9."""
    rank = len(imp.shape(node, 0))
    axes = [int(a) % rank for a in node.attr("axes", [0, 2, 3])]
    return _normalized(imp, imp.tensor(node, 0), axes, 1e-9)


def lp_normalization(node: OnnxNode, imp: OnnxImporter):
    """``x / ||x||_p`` along ``axis`` (p 1 or 2); a zero norm gives 0."""
    x = imp.tensor(node, 0)
    axis, p = int(node.attr("axis", -1)), int(node.attr("p", 2))
    if p not in (1, 2):
        raise node.error(f"p={p} is not supported (1 and 2 are)")
    norm = _op.sum(_op.abs(x), axis=[axis], keepdims=True) if p == 1 else \
        _op.sqrt(_op.sum(_op.multiply(x, x), axis=[axis], keepdims=True))
    norm = imp.emit(norm)
    zero = imp.scalar(0.0, x)
    return imp.emit(_op.where(_op.equal(norm, zero), zero, _op.divide(x, norm)))


def lrn(node: OnnxNode, imp: OnnxImporter):
    """Local response normalization across channels: ``x / (bias + alpha / size * sum sq) ** beta``,
    the sum over a window of ``size`` channels (floor((size-1)/2) before, ceil after)."""
    size = int(node.attr("size"))
    alpha, beta, bias = (float(node.attr(k, d)) for k, d in (("alpha", 1e-4), ("beta", 0.75), ("bias", 1.0)))
    x = imp.tensor(node, 0)
    shape = imp.shape(node, 0)
    before, after = (size - 1) // 2, size - 1 - (size - 1) // 2
    sq = _op.multiply(x, x)
    padded = imp.emit(_op.nn.pad(sq, [0, 0, before, after] + [0, 0] * (len(shape) - 2)))
    window = _op.strided_slice(padded, [1], [0], [shape[1]])
    for k in range(1, size):
        window = _op.add(window, _op.strided_slice(padded, [1], [k], [k + shape[1]]))
    denom = _op.power(_op.add(_op.multiply(window, imp.scalar(alpha / size, x)), imp.scalar(bias, x)),
                      imp.scalar(beta, x))
    return imp.emit(_op.divide(x, denom))


def hardmax(node: OnnxNode, imp: OnnxImporter):
    """1 at the first largest element along ``axis`` (opset 13), else 0."""
    shape = imp.shape(node, 0)
    axis = int(node.attr("axis", -1)) % len(shape)
    if node.opset < 13:
        raise node.error("Hardmax before opset 13 (over the input seen as 2-D) is not supported")
    top = imp.emit(_op.argmax(imp.tensor(node, 0), axis=axis, keepdims=True))
    positions = const(np.arange(int(shape[axis]), dtype="int64").reshape([-1] + [1] * (len(shape) - axis - 1)))
    return imp.emit(_op.astype(_op.equal(top, positions), imp.dtype(node, 0)))


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


def _source_coords(mode: str, n_in: int, n_out: int, scale: float) -> np.ndarray:
    """Where output position ``i`` reads from along one axis (ONNX's coordinate_transformation_mode)."""
    i = np.arange(n_out, dtype="float64")
    width = n_in * scale  # ONNX's output width: fractional when the scale does not divide evenly
    if mode == "half_pixel":
        return (i + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (i + 0.5) / scale - 0.5 if n_out > 1 else np.zeros(n_out)
    if mode == "align_corners":
        return i * ((n_in - 1) / (width - 1)) if width != 1 else np.zeros(n_out)
    if mode == "asymmetric":
        return i / scale
    if mode == "half_pixel_symmetric":
        adjust = n_out / (scale * n_in)
        return n_in / 2 * (1 - adjust) + (i + 0.5) / scale - 0.5
    raise ValueError(f"coordinate_transformation_mode {mode!r} is not supported")


_NEAREST = {"round_prefer_floor": lambda x: np.ceil(x - 0.5), "round_prefer_ceil": lambda x: np.floor(x + 0.5),
            "floor": np.floor, "ceil": np.ceil}


def _resize_sizes(node: OnnxNode, imp: OnnxImporter, in_shape: list) -> tuple[list, list]:
    """(output sizes, scales) from ``sizes`` or ``scales`` (opset 10: the second input is scales)."""
    scales = imp.known(node, 1 if node.opset < 11 else 2)
    sizes = imp.ints(node, 3, "the sizes") if node.opset >= 11 else None
    if node.attr("axes") is not None or node.attr("keep_aspect_ratio_policy", "stretch") != "stretch":
        raise node.error("Resize's axes and keep_aspect_ratio_policy are not supported")
    if sizes is not None:
        return [int(v) for v in sizes], [o / i for o, i in zip(sizes, in_shape)]
    if scales is None or scales.size == 0:
        raise node.error("Resize needs scales or sizes known while importing")
    scales = [float(v) for v in scales.reshape(-1)]
    return [int(np.floor(i * sc)) for i, sc in zip(in_shape, scales)], scales


def _cubic_taps(src: np.ndarray, n_in: int, a: float, exclude_outside: bool) -> tuple[list, list]:
    """Four source positions per output position and their weights (Keys' cubic with ``a``), as
    ONNX's reference picks them: the left neighbour ``f`` is below ``src`` (``src - f`` in (0, 1]);
    positions past the ends read the edge, or with ``exclude_outside`` weigh 0 (the rest rescaled)."""
    f = np.ceil(src) - 1
    r = src - f
    s0, s1, s2, s3 = r + 1, r, 1 - r, 2 - r
    far = lambda t: ((a * t - 5 * a) * t + 8 * a) * t - 4 * a  # noqa: E731 - |t| in [1, 2]
    near = lambda t: ((a + 2) * t - (a + 3)) * t * t + 1  # noqa: E731 - |t| in [0, 1]
    weights = [far(s0), near(s1), near(s2), far(s3)]
    positions = [f - 1, f, f + 1, f + 2]
    if exclude_outside:
        weights = [np.where((p < 0) | (p >= n_in), 0.0, w) for p, w in zip(positions, weights)]
        total = sum(weights)
        weights = [w / total for w in weights]
    return [np.clip(p, 0, n_in - 1).astype("int64") for p in positions], weights


def resize(node: OnnxNode, imp: OnnxImporter):
    """nearest / linear / cubic resampling of static sizes, separable: per resized axis, a
    ``take`` of each tap's source positions (computed here as ONNX defines them) weighted and summed."""
    in_shape = imp.shape(node, 0)
    if any(not isinstance(d, int) for d in in_shape):
        raise node.error("Resize over symbolic sizes is not supported")
    mode = node.attr("mode", "nearest")
    coord = node.attr("coordinate_transformation_mode", "half_pixel" if node.opset >= 11 else "asymmetric")
    nearest = _NEAREST.get(node.attr("nearest_mode", "round_prefer_floor" if node.opset >= 11 else "floor"))
    if mode not in ("nearest", "linear", "cubic") or coord == "tf_crop_and_resize" or node.attr("antialias", 0):
        raise node.error(f"mode={mode!r} with coordinate_transformation_mode={coord!r}"
                         f"{', antialias' if node.attr('antialias', 0) else ''} is not supported")
    out_sizes, scales = _resize_sizes(node, imp, in_shape)
    x = imp.tensor(node, 0)
    dtype = imp.dtype(node, 0)
    for axis, (n_in, n_out, sc) in enumerate(zip(in_shape, out_sizes, scales)):
        if n_in == n_out and sc == 1.0:
            continue
        src = _source_coords(coord, n_in, n_out, sc)
        if mode == "nearest":
            pick = np.clip(nearest(src), 0, n_in - 1).astype("int64")
            x = imp.emit(_op.take(x, const(pick), axis=axis))
            continue
        view = [n_out] + [1] * (len(in_shape) - axis - 1)
        if mode == "linear":
            lo = np.floor(src)
            w = (src - lo).astype(dtype).reshape(view)
            a = _op.take(x, const(np.clip(lo, 0, n_in - 1).astype("int64")), axis=axis)
            b = _op.take(x, const(np.clip(lo + 1, 0, n_in - 1).astype("int64")), axis=axis)
            x = imp.emit(_op.add(a, _op.multiply(_op.subtract(b, a), const(w))))
            continue
        taps, weights = _cubic_taps(src, n_in, float(node.attr("cubic_coeff_a", -0.75)),
                                    bool(node.attr("exclude_outside", 0)))
        terms = [_op.multiply(_op.take(x, const(p), axis=axis), const(w.astype(dtype).reshape(view)))
                 for p, w in zip(taps, weights)]
        x = imp.emit(_op.add(_op.add(terms[0], terms[1]), _op.add(terms[2], terms[3])))
    return x


def einsum(node: OnnxNode, imp: OnnxImporter):
    xs = [imp.tensor(node, k) for k in range(len(node.inputs))]
    return imp.emit(_op.einsum(xs, node.attr("equation").replace(" ", "")))


CONVERTERS = {
    "MatMul": matmul, "Gemm": gemm, "Conv": conv, "ConvTranspose": conv_transpose,
    "MaxPool": _pool("max"), "AveragePool": _pool("avg"), "LpPool": _pool("lp"), "GlobalLpPool": global_lp_pool,
    "MaxUnpool": max_unpool,
    "GlobalAveragePool": _global_pool(_op.mean), "GlobalMaxPool": _global_pool(_op.max),
    "BatchNormalization": batch_normalization, "LayerNormalization": layer_normalization,
    "InstanceNormalization": instance_normalization, "RMSNormalization": rms_normalization,
    "GroupNormalization": group_normalization, "MeanVarianceNormalization": mean_variance_normalization,
    "LpNormalization": lp_normalization, "LRN": lrn, "Hardmax": hardmax,
    "Softmax": _softmax(_op.nn.softmax), "LogSoftmax": _softmax(_op.nn.log_softmax), "Einsum": einsum, "Resize": resize,
}
