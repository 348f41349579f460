"""Neural-network operators: convolution, pooling, softmax, normalization."""

from __future__ import annotations

import numpy as np

from ... import op as _op
from ...analysis.struct_info_analysis import prove_dim_equal
from ...expr import Tuple, TupleGetItem, const, struct_info_of
from ._common import arg_or


def _pair(v):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return (v[0], v[0]) if len(v) == 1 else tuple(v)


def _per_dim(v, dim: int) -> list[int]:
    v = [int(x) for x in v] if isinstance(v, (list, tuple)) else [int(v)]
    return v * dim if len(v) == 1 else v


def _batched(conv, x, x_node, spatial: int):
    """``x`` with a batch dim of 1 added when torch's unbatched form (C, spatial...) is used."""
    if len(conv.shape_of(x_node)) == spatial + 1:
        return conv.bb.emit(_op.expand_dims(x, [0])), True
    return x, False


def _unbatched(conv, out, was_unbatched: bool):
    return conv.bb.emit(_op.squeeze(out, [0])) if was_unbatched else out


def _conv_padding(padding, w_shape, dilation, dim: int):
    """(befores, afters) of torch's padding: numbers, ``"valid"``, or ``"same"`` (the extra
    element goes after, as torch does)."""
    if padding == "valid":
        return [0] * dim, [0] * dim
    if padding == "same":
        total = [d * (int(k) - 1) for d, k in zip(dilation, w_shape[2:])]
        return [t // 2 for t in total], [t - t // 2 for t in total]
    p = _per_dim(padding, dim)
    return p, list(p)


def _convolve(conv, node, x_node, w_node, bias, stride, padding, dilation, transposed, output_padding, groups):
    """Any of torch's convolutions: 1-, 2- or 3-D, grouped, dilated, transposed (1-D and
    2-D), unbatched inputs included; the bias added per channel."""
    w_shape = conv.shape_of(w_node)
    dim = len(w_shape) - 2
    x, unbatched = _batched(conv, conv.arg(x_node), x_node, dim)
    w = conv.arg(w_node)
    stride, dilation = _per_dim(stride, dim), _per_dim(dilation, dim)
    before, after = _conv_padding(padding, w_shape, dilation, dim)
    if transposed:
        fn = {1: _op.nn.conv1d_transpose, 2: _op.nn.conv2d_transpose}[dim]
        out = conv.bb.emit(fn(x, w, strides=stride, padding=before + after,
                              output_padding=_per_dim(output_padding, dim), dilation=dilation, groups=int(groups),
                              out_dtype=conv.dtype_of(node)))
    else:
        fn = {1: _op.nn.conv1d, 2: _op.nn.conv2d, 3: _op.nn.conv3d}[dim]
        out = conv.bb.emit(fn(x, w, strides=stride, padding=before + after, dilation=dilation, groups=int(groups),
                              out_dtype=conv.dtype_of(node)))
    if bias is not None:
        out = conv.bb.emit(_op.add(out, _op.reshape(conv.arg(bias), [1, -1] + [1] * dim)))
    return _unbatched(conv, out, unbatched)


def convolution(node, conv):
    """``aten.convolution(x, w, bias, stride, padding, dilation, transposed, output_padding, groups)``."""
    (x, w, bias, stride, padding, dilation, transposed, output_padding, groups) = node.args[:9]
    return _convolve(conv, node, x, w, bias, stride, padding, dilation, transposed, output_padding, groups)


def conv_nd(node, conv):
    """``conv1d/2d/3d(x, w, bias, stride, padding, dilation, groups)``; padding may be
    ``"same"`` or ``"valid"``."""
    return _convolve(conv, node, node.args[0], node.args[1], arg_or(node, 2, "bias", None),
                     arg_or(node, 3, "stride", 1), arg_or(node, 4, "padding", 0), arg_or(node, 5, "dilation", 1),
                     False, 0, arg_or(node, 6, "groups", 1))


def conv_transpose_nd(node, conv):
    """``conv_transpose1d/2d(x, w, bias, stride, padding, output_padding, groups, dilation)``."""
    return _convolve(conv, node, node.args[0], node.args[1], arg_or(node, 2, "bias", None),
                     arg_or(node, 3, "stride", 1), arg_or(node, 4, "padding", 0), arg_or(node, 7, "dilation", 1),
                     True, arg_or(node, 5, "output_padding", 0), arg_or(node, 6, "groups", 1))


def _check_convolution(node, conv):
    name = str(node.target)
    dim = len(conv.shape_of(node.args[1])) - 2
    if name == "aten.convolution.default":
        transposed, dilation = node.args[6], node.args[5]
    else:
        transposed = "transpose" in name
        dilation = arg_or(node, 7 if transposed else 5, "dilation", 1)
    if transposed and dim == 3:
        return "a 3-D transposed convolution is not supported (1-D and 2-D are)"
    if transposed and any(d != 1 for d in _per_dim(dilation, dim)):
        return "a dilated transposed convolution is not supported"
    return None


# -- pooling ----------------------------------------------------------------------------------------

def _pool_args(node, dim: int, avg: bool):
    kernel = _per_dim(arg_or(node, 1, "kernel_size", None), dim)
    stride = arg_or(node, 2, "stride", None)
    stride = _per_dim(stride, dim) if stride else kernel
    padding = _per_dim(arg_or(node, 3, "padding", 0), dim)
    if avg:
        return kernel, stride, padding, [1] * dim, bool(arg_or(node, 4, "ceil_mode", False)), \
            bool(arg_or(node, 5, "count_include_pad", True))
    return kernel, stride, padding, _per_dim(arg_or(node, 4, "dilation", 1), dim), \
        bool(arg_or(node, 5, "ceil_mode", False)), False


def _pool(conv, x, kind, dim, kernel, stride, padding, dilation, ceil_mode, count_include_pad):
    fn = {("max", 2): _op.nn.max_pool2d, ("avg", 2): _op.nn.avg_pool2d,
          ("max", 3): _op.nn.max_pool3d, ("avg", 3): _op.nn.avg_pool3d}[kind, dim]
    return conv.bb.emit(fn(x, pool_size=kernel, strides=stride, padding=padding, dilation=dilation,
                           ceil_mode=ceil_mode, count_include_pad=count_include_pad))


def _pool_nd(kind: str, dim: int):
    """max / avg pooling in 1, 2 or 3 dims (1-D through the 2-D kernel as a 1 x k window), as
    TVM emits it; ``*_with_indices`` gives TVM's pair (the result, ``zeros_like`` it in place of
    the indices, which ``_check_pool`` refuses to read)."""
    def convert(node, conv):
        kernel, stride, padding, dilation, ceil_mode, cip = _pool_args(node, dim, kind == "avg")
        x, unbatched = _batched(conv, conv.arg(node.args[0]), node.args[0], dim)
        val = node.meta["val"]
        out_shape = [conv._prim(d) for d in val[0].shape] if isinstance(val, (tuple, list)) else conv.shape_of(node)
        out_shape = list(out_shape) if not unbatched else [1] + list(out_shape)
        if dim == 1:
            x = conv.bb.emit(_op.expand_dims(x, [2]))
            out = _pool(conv, x, kind, 2, [1] + kernel, [1] + stride, [0] + padding, [1] + dilation, ceil_mode, cip)
        else:
            out = _pool(conv, x, kind, dim, kernel, stride, padding, dilation, ceil_mode, cip)
        if not _same_shape(struct_info_of(out).shape_values, out_shape):
            out = conv.bb.emit(_op.reshape(out, out_shape))
        out = _unbatched(conv, out, unbatched)
        if isinstance(node.meta["val"], (tuple, list)):
            return conv.bb.emit(Tuple([out, _op.zeros_like(out)]))
        return out
    return convert


def _same_shape(have, want) -> bool:
    """Two shapes proved equal, dimension by dimension."""
    if have is None or len(have) != len(want):
        return False
    return all(prove_dim_equal(h, w) for h, w in zip(have, want))


def _check_pool(node, conv):
    if "avg_pool" in str(node.target) and arg_or(node, 6, "divisor_override", None) is not None:
        return "avg_pool's divisor_override is not supported"
    if "with_indices" in str(node.target) and any(
            len(user.args) > 1 and user.args[1] == 1 for user in node.users):
        return "the indices output of max_pool is not supported (only its values are)"
    return None


def _adaptive_avg(dim: int):
    """adaptive average pooling in 1, 2 or 3 dims (1-D through the 2-D kernel), as TVM emits it."""
    def convert(node, conv):
        x, unbatched = _batched(conv, conv.arg(node.args[0]), node.args[0], dim)
        size = _per_dim(node.args[1], dim)
        shape = struct_info_of(x).shape_values
        if dim == 1:
            out = conv.bb.emit(_op.nn.adaptive_avg_pool2d(_op.expand_dims(x, [2]), (1, size[0])))
        elif dim == 2:
            out = conv.bb.emit(_op.nn.adaptive_avg_pool2d(x, tuple(size)))
        else:
            out = conv.bb.emit(_op.nn.adaptive_avg_pool3d(x, tuple(size)))
        want = list(shape[:2]) + size
        if not _same_shape(struct_info_of(out).shape_values, want):
            out = conv.bb.emit(_op.reshape(out, want))
        return _unbatched(conv, out, unbatched)
    return convert


# -- resampling --------------------------------------------------------------------------------------

def _source_positions(n_in: int, n_out: int, scale, align_corners: bool, mode: str) -> np.ndarray:
    """Where output position ``i`` reads from along one axis, as torch computes it (float)."""
    i = np.arange(n_out, dtype="float64")
    if mode == "linear" and align_corners:
        return i * ((n_in - 1) / (n_out - 1)) if n_out > 1 else np.zeros(n_out)
    ratio = (1.0 / scale) if scale else n_in / n_out
    if mode == "nearest":
        return np.minimum(np.floor(i * np.float32(ratio)), n_in - 1)
    if mode == "nearest-exact":
        return np.minimum(np.floor((i + 0.5) * ratio), n_in - 1)
    return np.maximum((i + 0.5) * ratio - 0.5, 0.0)


def _resample(mode: str, spatial: int):
    """upsample_{nearest,bilinear,linear,trilinear}{1,2,3}d: separable, one ``take`` per axis
    (and for linear modes a weighted sum of two), the positions computed here as torch does."""
    def convert(node, conv):
        x = conv.arg(node.args[0])
        in_shape, out_shape = conv.shape_of(node.args[0]), conv.shape_of(node)
        linear = mode == "linear"
        align = bool(arg_or(node, 2, "align_corners", False)) if linear else False
        scales = node.kwargs.get("scale_factors", node.args[3] if linear and len(node.args) > 3 else
                                 node.args[2] if not linear and len(node.args) > 2 else None)
        if str(node.target).endswith(".default"):  # upsample_*.default(x, output_size, [align,] scales...)
            rest = node.args[3 if linear else 2:]
            scales = [s for s in rest if s is not None] or None
        dtype = conv.dtype_of(node)
        for k in range(spatial):
            axis = len(in_shape) - spatial + k
            n_in, n_out = in_shape[axis], out_shape[axis]
            if not (isinstance(n_in, int) and isinstance(n_out, int)):
                raise ValueError(f"from_exported_program: {node.target} over a symbolic size is not supported")
            scale = scales[k] if scales else None
            src = _source_positions(n_in, n_out, scale, align, "linear" if linear else mode)
            if not linear:
                x = conv.bb.emit(_op.take(x, const(src.astype("int64")), axis=axis))
                continue
            lo = np.minimum(np.floor(src), n_in - 1).astype("int64")
            hi = np.minimum(lo + 1, n_in - 1)
            w = (src - lo).astype(dtype).reshape([n_out] + [1] * (len(in_shape) - axis - 1))
            a = _op.take(x, const(lo), axis=axis)
            b = _op.take(x, const(hi), axis=axis)
            x = conv.bb.emit(_op.add(a, _op.multiply(_op.subtract(b, a), const(w))))
        return x
    return convert


def pixel_shuffle(node, conv):
    """(..., C r², H, W) -> (..., C, H r, W r)."""
    r = int(node.args[1])
    shape = conv.shape_of(node.args[0])
    lead, (c, h, w) = list(shape[:-3]), shape[-3:]
    x = _op.reshape(conv.arg(node.args[0]), lead + [c // (r * r), r, r, h, w])
    k = len(lead)
    x = _op.permute_dims(x, list(range(k)) + [k, k + 3, k + 1, k + 4, k + 2])
    return conv.bb.emit(_op.reshape(x, conv.shape_of(node)))


def pixel_unshuffle(node, conv):
    """(..., C, H r, W r) -> (..., C r², H, W)."""
    r = int(node.args[1])
    shape = conv.shape_of(node.args[0])
    lead, (c, h, w) = list(shape[:-3]), shape[-3:]
    x = _op.reshape(conv.arg(node.args[0]), lead + [c, h // r, r, w // r, r])
    k = len(lead)
    x = _op.permute_dims(x, list(range(k)) + [k, k + 2, k + 4, k + 1, k + 3])
    return conv.bb.emit(_op.reshape(x, conv.shape_of(node)))


def glu(node, conv):
    """``a * sigmoid(b)`` of the two halves along ``dim``."""
    shape = conv.shape_of(node.args[0])
    dim = int(arg_or(node, 1, "dim", -1)) % len(shape)
    half = shape[dim] // 2
    x = conv.arg(node.args[0])
    a = _op.strided_slice(x, [dim], [0], [half])
    b = _op.strided_slice(x, [dim], [half], [2 * half])
    return conv.bb.emit(_op.multiply(a, _op.sigmoid(b)))


def _softmax_like(fn):
    """softmax / log_softmax along ``dim`` (of a 0-d tensor: as of a one-element vector)."""
    def convert(node, conv):
        x = conv.as_dtype(conv.arg(node.args[0]), conv.dtype_of(node))
        if not conv.shape_of(node.args[0]):
            return conv.bb.emit(_op.reshape(fn(_op.reshape(x, [1]), axis=0), []))
        return conv.bb.emit(fn(x, axis=int(node.args[1])))
    convert.__name__ = f"convert_{fn.__name__}"
    return convert


softmax = _softmax_like(_op.nn.softmax)
log_softmax = _softmax_like(_op.nn.log_softmax)


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
    momentum = float(arg_or(node, 5, "momentum", 0.1))
    return (_batch_norm_output(conv, node, x, w, b, mean, var, eps, momentum), None, None)


def _batch_norm_output(conv, node, x, w, b, mean, var, eps, momentum):
    """Inference batch norm over axis 1 with the running statistics; missing affine
    parameters are ones and zeros."""
    dtype = conv.dtype_of(node.args[0])
    channels = conv.shape_of(node.args[0])[1]
    if w is None:
        w = const(np.ones((channels,), dtype))
    if b is None:
        b = const(np.zeros((channels,), dtype))
    # torch's momentum kept as TVM keeps it (inference does not read it)
    out = conv.bb.emit(_op.nn.batch_norm(x, w, b, mean, var, axis=1, epsilon=eps, momentum=momentum, training=False))
    return conv.bb.emit(TupleGetItem(out, 0))


def batch_norm(node, conv):
    """``aten.batch_norm`` (not decomposed) in inference mode: the normalized output only."""
    if bool(arg_or(node, 5, "training", False)):
        raise ValueError("from_exported_program: batch_norm in training mode is not supported; call model.eval()")
    x, w, b, mean, var = (conv.arg(arg_or(node, k, name, None)) for k, name in
                          enumerate(("input", "weight", "bias", "running_mean", "running_var")))
    eps = float(arg_or(node, 7, "eps", 1e-5))
    return _batch_norm_output(conv, node, x, w, b, mean, var, eps, float(arg_or(node, 6, "momentum", 0.1)))


def _ones_or(conv, value, count, dtype, fill=1.0):
    return conv.arg(value) if value is not None else const(np.full((count,), fill, dtype))


def group_norm(node, conv):
    """``F.group_norm(x, groups, weight, bias, eps)``."""
    shape = conv.shape_of(node.args[0])
    dtype = conv.dtype_of(node.args[0])
    groups = int(node.args[1])
    w = _ones_or(conv, arg_or(node, 2, "weight", None), shape[1], dtype)
    b = _ones_or(conv, arg_or(node, 3, "bias", None), shape[1], dtype, 0.0)
    eps = float(arg_or(node, 4, "eps", 1e-5))
    return conv.bb.emit(_op.nn.group_norm(conv.arg(node.args[0]), w, b, groups, 1, list(range(2, len(shape))), eps))


def native_group_norm(node, conv):
    """``native_group_norm(x, w, b, N, C, HxW, groups, eps)``: (output, mean, rstd)."""
    shape = conv.shape_of(node.args[0])
    dtype = conv.dtype_of(node.args[0])
    w = _ones_or(conv, node.args[1], shape[1], dtype)
    b = _ones_or(conv, node.args[2], shape[1], dtype, 0.0)
    out = conv.bb.emit(_op.nn.group_norm(conv.arg(node.args[0]), w, b, int(node.args[6]), 1,
                                         list(range(2, len(shape))), float(node.args[7])))
    return (out, None, None)


def _normalize_per_channel(conv, node, x, axes, w, b, eps):
    """``(x - mean) / sqrt(var + eps) * w + b`` with the statistics over ``axes`` (biased
    variance), the affine parameters per channel (axis 1)."""
    ndim = len(conv.shape_of(node.args[0]))
    mean = conv.bb.emit(_op.mean(x, axis=axes, keepdims=True))
    dev = conv.bb.emit(_op.subtract(x, mean))
    var = _op.mean(_op.multiply(dev, dev), axis=axes, keepdims=True)
    out = _op.multiply(dev, _op.rsqrt(_op.add(var, conv.scalar(eps, x))))
    view = [1, -1] + [1] * (ndim - 2)
    if w is not None:
        out = _op.multiply(out, _op.reshape(conv.arg(w), view))
    if b is not None:
        out = _op.add(out, _op.reshape(conv.arg(b), view))
    return conv.bb.emit(out)


def batch_norm_no_stats(node, conv):
    """``_native_batch_norm_legit.no_stats``: normalized with the batch's own statistics per
    channel (what ``instance_norm`` decomposes to): (output, mean, rstd)."""
    x = conv.arg(node.args[0])
    ndim = len(conv.shape_of(node.args[0]))
    eps = float(arg_or(node, 5, "eps", 1e-5))
    out = _normalize_per_channel(conv, node, x, [0] + list(range(2, ndim)), node.args[1], node.args[2], eps)
    return (out, None, None)


def instance_norm(node, conv):
    """``instance_norm(x, w, b, running_mean, running_var, use_input_stats, momentum, eps)``:
    each (sample, channel) normalized over its own spatial values."""
    x = conv.arg(node.args[0])
    ndim = len(conv.shape_of(node.args[0]))
    eps = float(arg_or(node, 7, "eps", 1e-5))
    if not arg_or(node, 5, "use_input_stats", True):
        mean, var = conv.arg(node.args[3]), conv.arg(node.args[4])
        view = [1, -1] + [1] * (ndim - 2)
        out = _op.multiply(_op.subtract(x, _op.reshape(mean, view)),
                           _op.rsqrt(_op.add(_op.reshape(var, view), conv.scalar(eps, x))))
        w, b = arg_or(node, 1, "weight", None), arg_or(node, 2, "bias", None)
        if w is not None:
            out = _op.multiply(out, _op.reshape(conv.arg(w), view))
        if b is not None:
            out = _op.add(out, _op.reshape(conv.arg(b), view))
        return conv.bb.emit(out)
    return _normalize_per_channel(conv, node, x, list(range(2, ndim)), arg_or(node, 1, "weight", None),
                                  arg_or(node, 2, "bias", None), eps)


def rms_norm(node, conv):
    """``F.rms_norm(x, normalized_shape, weight, eps)`` (eps None: the dtype's machine epsilon)."""
    x = conv.arg(node.args[0])
    shape = [int(d) for d in node.args[1]]
    dtype = conv.dtype_of(node.args[0])
    w = arg_or(node, 2, "weight", None)
    w = conv.arg(w) if w is not None else const(np.ones(shape, dtype))
    eps = arg_or(node, 3, "eps", None)
    eps = float(np.finfo(dtype).eps) if eps is None else float(eps)
    return conv.bb.emit(_op.nn.rms_norm(x, w, axes=list(range(-len(shape), 0)), epsilon=eps))


def embedding(node, conv):
    """``embedding(weight, ids)``: rows of the table, a take along axis 0."""
    return conv.bb.emit(_op.take(conv.arg(node.args[0]), conv.arg(node.args[1]), axis=0))


def _attention_mask(conv, node, scores, mask, is_causal):
    """The scores with masked-out positions at -inf (a bool mask, or causal) or a float mask added."""
    if is_causal:
        q_len, k_len = conv.shape_of(node.args[0])[-2], conv.shape_of(node.args[1])[-2]
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
    heads, kv_heads = conv.shape_of(node.args[0])[-3:-2], conv.shape_of(node.args[1])[-3:-2]
    if heads and kv_heads and heads[0] != kv_heads[0]:  # grouped-query attention (enable_gqa)
        rep = heads[0] // kv_heads[0]
        k = conv.bb.emit(_op.repeat(k, rep, axis=len(conv.shape_of(node.args[1])) - 3))
        v = conv.bb.emit(_op.repeat(v, rep, axis=len(conv.shape_of(node.args[2])) - 3))
    mask = arg_or(node, 3, "attn_mask", None)
    is_causal = bool(arg_or(node, 5, "is_causal", False))
    scale = node.kwargs.get("scale")
    ndim = len(conv.shape_of(node.args[0]))
    head_dim = conv.shape_of(node.args[0])[-1]
    if scale is None:
        scale = 1.0 / float(np.sqrt(head_dim))
    axes = list(range(ndim - 2)) + [ndim - 1, ndim - 2]
    if len(conv.shape_of(node.args[1])) != ndim:
        axes = list(range(len(conv.shape_of(node.args[1])) - 2)) + [len(conv.shape_of(node.args[1])) - 1,
                                                                     len(conv.shape_of(node.args[1])) - 2]
    scores = _op.multiply(_op.matmul(q, _op.permute_dims(k, axes)), conv.scalar(scale, q))
    scores = conv.bb.emit(_attention_mask(conv, node, scores, mask, is_causal))
    probs = conv.bb.emit(_op.nn.softmax(scores, axis=-1))
    return conv.bb.emit(_op.matmul(probs, v))


def _check_sdpa(node, conv):
    if float(arg_or(node, 4, "dropout_p", 0.0)) != 0.0:
        return "scaled_dot_product_attention with dropout_p > 0 is not supported (inference only)"
    q, k = conv.shape_of(node.args[0]), conv.shape_of(node.args[1])
    if len(q) >= 3 and len(k) >= 3 and isinstance(q[-3], int) and isinstance(k[-3], int) and q[-3] % k[-3]:
        return f"{q[-3]} query heads do not divide into {k[-3]} key/value heads"
    return None


CONVERTERS = {
    "aten.conv1d.default": conv_nd,
    "aten.conv3d.default": conv_nd,
    "aten.conv1d.padding": conv_nd,
    "aten.conv2d.padding": conv_nd,
    "aten.conv3d.padding": conv_nd,
    "aten.conv_transpose1d.default": conv_transpose_nd,
    "aten.conv_transpose2d.input": conv_transpose_nd,
    "aten.max_pool1d.default": _pool_nd("max", 1),
    "aten.max_pool1d_with_indices.default": _pool_nd("max", 1),
    "aten.max_pool3d.default": _pool_nd("max", 3),
    "aten.max_pool3d_with_indices.default": _pool_nd("max", 3),
    "aten.avg_pool1d.default": _pool_nd("avg", 1),
    "aten.avg_pool3d.default": _pool_nd("avg", 3),
    "aten.adaptive_avg_pool1d.default": _adaptive_avg(1),
    "aten.adaptive_avg_pool3d.default": _adaptive_avg(3),
    "aten._adaptive_avg_pool3d.default": _adaptive_avg(3),
    "aten.upsample_nearest1d.vec": _resample("nearest", 1),
    "aten.upsample_nearest2d.vec": _resample("nearest", 2),
    "aten.upsample_nearest3d.vec": _resample("nearest", 3),
    "aten.upsample_nearest1d.default": _resample("nearest", 1),
    "aten.upsample_nearest2d.default": _resample("nearest", 2),
    "aten.upsample_nearest3d.default": _resample("nearest", 3),
    "aten._upsample_nearest_exact1d.vec": _resample("nearest-exact", 1),
    "aten._upsample_nearest_exact2d.vec": _resample("nearest-exact", 2),
    "aten._upsample_nearest_exact3d.vec": _resample("nearest-exact", 3),
    "aten.upsample_linear1d.vec": _resample("linear", 1),
    "aten.upsample_bilinear2d.vec": _resample("linear", 2),
    "aten.upsample_trilinear3d.vec": _resample("linear", 3),
    "aten.upsample_linear1d.default": _resample("linear", 1),
    "aten.upsample_bilinear2d.default": _resample("linear", 2),
    "aten.upsample_trilinear3d.default": _resample("linear", 3),
    "aten.pixel_shuffle.default": pixel_shuffle,
    "aten.pixel_unshuffle.default": pixel_unshuffle,
    "aten.glu.default": glu,
    "aten.group_norm.default": group_norm,
    "aten.native_group_norm.default": native_group_norm,
    "aten._native_batch_norm_legit.no_stats": batch_norm_no_stats,
    "aten.instance_norm.default": instance_norm,
    "aten.rms_norm.default": rms_norm,
    "aten.embedding.default": embedding,
    "aten.scaled_dot_product_attention.default": scaled_dot_product_attention,
    "aten.conv2d.default": conv_nd,
    "aten.convolution.default": convolution,
    "aten.max_pool2d.default": _pool_nd("max", 2),
    "aten.max_pool2d_with_indices.default": _pool_nd("max", 2),
    "aten.avg_pool2d.default": _pool_nd("avg", 2),
    "aten.adaptive_avg_pool2d.default": _adaptive_avg(2),
    "aten._adaptive_avg_pool2d.default": _adaptive_avg(2),
    "aten._softmax.default": softmax,
    "aten.softmax.int": softmax,
    "aten._log_softmax.default": log_softmax,
    "aten.log_softmax.int": log_softmax,
    "aten.layer_norm.default": layer_norm,
    "aten.native_layer_norm.default": native_layer_norm,
    "aten._native_batch_norm_legit_no_training.default": batch_norm_no_training,
    "aten.batch_norm.default": batch_norm,
}


CHECKS = {
    **{name: _check_convolution for name in ("aten.convolution.default", "aten.conv_transpose1d.default",
                                             "aten.conv_transpose2d.input")},
    **{name: _check_pool for name in ("aten.avg_pool1d.default", "aten.avg_pool2d.default", "aten.avg_pool3d.default",
                                      "aten.max_pool1d_with_indices.default", "aten.max_pool2d_with_indices.default",
                                      "aten.max_pool3d_with_indices.default")},
    "aten.scaled_dot_product_attention.default": _check_sdpa,
}
