"""Neural-network operators (``relax.op.nn``): activations, softmax, normalization,
convolution, pooling, padding, dropout."""

from __future__ import annotations

from typing import Any, Sequence

from ...ir import dtype as _dt
from ...topi.nn.pooling import pool_out_size
from ..expr import Call, Expr
from ..struct_info import StructInfo, StructInfoError, TensorStructInfo, TupleStructInfo, shape_text
from ._utils import const_dim, normalize_axes, normalize_axis, same_dtype, simplify
from .conv import conv_attrs, conv_sinfo
from .registry import OpPattern, check_num_args, make_call, register, tensor_arg
from .unary import unary_sinfo

__all__ = ["relu", "gelu", "gelu_tanh", "silu", "softmax", "log_softmax", "layer_norm",
           "batch_norm", "conv2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "pad",
           "dropout"]


# -- activations ---------------------------------------------------------------------------

for _name, _doc, _float in [
    ("relu", "Element-wise max(x, 0).", False),
    ("gelu", "Element-wise x * Phi(x) with the exact normal CDF.", True),
    ("gelu_tanh", "Element-wise gelu, tanh approximation.", True),
    ("silu", "Element-wise x * sigmoid(x).", True),
]:
    def _make(op: str, require_float: bool):
        def infer(call: Call, ctx: Any) -> StructInfo:
            return unary_sinfo(call, op, require_float)
        return infer
    _infer = _make(f"relax.nn.{_name}", _float)
    _infer.__doc__ = _doc
    register(f"relax.nn.{_name}", pattern=OpPattern.ELEMWISE, num_inputs=1)(_infer)


def relu(data: Expr) -> Call:
    """``max(data, 0)`` element-wise."""
    return make_call("relax.nn.relu", data)


def gelu(data: Expr) -> Call:
    """``0.5 x (1 + erf(x / sqrt(2)))`` element-wise."""
    return make_call("relax.nn.gelu", data)


def gelu_tanh(data: Expr) -> Call:
    """``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`` element-wise."""
    return make_call("relax.nn.gelu_tanh", data)


def silu(data: Expr) -> Call:
    """``x * sigmoid(x)`` element-wise."""
    return make_call("relax.nn.silu", data)


# -- softmax ---------------------------------------------------------------------------------

def _softmax_sinfo(call: Call, op: str) -> StructInfo:
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "data")
    if not x.is_unknown_dtype and not _dt.is_float(x.dtype):
        raise StructInfoError(f"{op} needs a floating-point tensor, got dtype {x.dtype}")
    if x.ndim == 0:
        raise StructInfoError(f"{op} needs at least one dimension, got a scalar")
    if x.ndim != -1:
        normalize_axis(op, call.attrs["axis"], x.ndim)
    return x


for _name in ("softmax", "log_softmax"):
    def _make_sm(op: str):
        def infer(call: Call, ctx: Any) -> StructInfo:
            return _softmax_sinfo(call, op)
        infer.__doc__ = f"{op[9:]} along ``axis``; the input's struct info."
        return infer
    register(f"relax.nn.{_name}", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=1)(_make_sm(f"relax.nn.{_name}"))


def softmax(data: Expr, axis: int = -1) -> Call:
    """``exp(x) / sum(exp(x))`` along ``axis``."""
    return make_call("relax.nn.softmax", data, attrs={"axis": int(axis)})


def log_softmax(data: Expr, axis: int = -1) -> Call:
    """``log(softmax(x))`` along ``axis``, computed stably."""
    return make_call("relax.nn.log_softmax", data, attrs={"axis": int(axis)})


# -- normalization -----------------------------------------------------------------------------

def _check_param(op: str, name: str, p: TensorStructInfo, want: list, data: TensorStructInfo) -> None:
    vals = p.shape_values
    if vals is None:
        return
    if len(vals) != len(want) or any(const_dim(a) is not None and const_dim(b) is not None
                                      and const_dim(a) != const_dim(b) for a, b in zip(vals, want)):
        raise StructInfoError(f"{op}: {name} has shape {shape_text(vals)} but data of shape "
                              f"{shape_text(data.shape_values)} needs {shape_text(want)}")


@register("relax.nn.layer_norm", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=3)
def _infer_layer_norm(call: Call, ctx: Any) -> StructInfo:
    """Normalizes over ``axes``; gamma and beta have those axes' shape.  The data's struct info."""
    op = "relax.nn.layer_norm"
    check_num_args(call, op, 3)
    x = tensor_arg(call, 0, op, "data")
    gamma, beta = tensor_arg(call, 1, op, "gamma"), tensor_arg(call, 2, op, "beta")
    same_dtype(op, [x, gamma, beta])
    if x.shape_values is not None:
        axes = normalize_axes(op, call.attrs["axes"], x.ndim)
        want = [x.shape_values[a] for a in axes]
        _check_param(op, "gamma", gamma, want, x)
        _check_param(op, "beta", beta, want, x)
    return x


def layer_norm(data: Expr, gamma: Expr, beta: Expr, axes: int | Sequence[int] = -1,
               epsilon: float = 1e-5, center: bool = True, scale: bool = True) -> Call:
    """``(x - mean) / sqrt(var + epsilon) * gamma + beta`` over ``axes``."""
    axes = (int(axes),) if isinstance(axes, int) else tuple(int(a) for a in axes)
    return make_call("relax.nn.layer_norm", data, gamma, beta,
                     attrs={"axes": axes, "epsilon": float(epsilon), "center": center, "scale": scale})


@register("relax.nn.batch_norm", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=5)
def _infer_batch_norm(call: Call, ctx: Any) -> StructInfo:
    """A tuple (output, moving_mean, moving_var), as in TVM; the output has the data's
    struct info, each statistic is ``(C,)`` for C the length of ``axis``."""
    op = "relax.nn.batch_norm"
    check_num_args(call, op, 5)
    names = ("data", "gamma", "beta", "moving_mean", "moving_var")
    xs = [tensor_arg(call, k, op, n) for k, n in enumerate(names)]
    same_dtype(op, xs)
    x = xs[0]
    if x.shape_values is not None:
        axis = normalize_axis(op, call.attrs["axis"], x.ndim)
        want = [x.shape_values[axis]]
        for name, p in zip(names[1:], xs[1:]):
            _check_param(op, name, p, want, x)
    return TupleStructInfo([x, xs[3], xs[4]])


def batch_norm(data: Expr, gamma: Expr, beta: Expr, moving_mean: Expr, moving_var: Expr,
               axis: int = 1, epsilon: float = 1e-5, center: bool = True, scale: bool = True,
               momentum: float = 0.1, training: bool = True) -> Call:
    """Batch norm; returns the tuple ``(output, mean, var)`` as TVM does (take ``[0]`` for
    the output).  ``training`` (TVM's default) normalizes with the batch's statistics and
    returns the moving ones updated by ``momentum``; ``training=False`` uses the moving
    statistics and returns them unchanged."""
    return make_call("relax.nn.batch_norm", data, gamma, beta, moving_mean, moving_var,
                     attrs={"axis": int(axis), "epsilon": float(epsilon), "center": center, "scale": scale,
                            "momentum": float(momentum), "training": bool(training)})


# -- conv2d -------------------------------------------------------------------------------------

def _pair(v: Any, what: str) -> tuple:
    t = (int(v), int(v)) if isinstance(v, int) else tuple(int(x) for x in v)
    if len(t) == 1:
        t = (t[0], t[0])
    if len(t) != 2:
        raise ValueError(f"{what} must be an int or a pair, got {v!r}")
    return t


def _padding4(v: Any, what: str) -> tuple:
    """(top, left, bottom, right) from an int, (h, w) or four values."""
    t = (int(v),) * 4 if isinstance(v, int) else tuple(int(x) for x in v)
    if len(t) == 1:
        t = t * 4
    if len(t) == 2:
        t = (t[0], t[1], t[0], t[1])
    if len(t) != 4:
        raise ValueError(f"{what} must have 1, 2 or 4 values, got {v!r}")
    return t


def _window_out(size: Any, lo: int, hi: int, k: Any, stride: int, dilation: int, ceil_mode: bool = False) -> Any:
    if ceil_mode:

        return simplify(pool_out_size(size, lo, hi, k, stride, dilation, True))
    span = size + (lo + hi) - ((k - 1) * dilation + 1)
    return simplify(span // stride + 1)


@register("relax.nn.conv2d", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=2)
def _infer_conv2d(call: Call, ctx: Any) -> StructInfo:
    """2-D convolution (NCHW data with OIHW weight by default; NHWC, HWIO ... too)."""
    return conv_sinfo(call, "relax.nn.conv2d", 2)


def conv2d(data: Expr, weight: Expr, strides: Any = (1, 1), padding: Any = (0, 0), dilation: Any = (1, 1),
           groups: int = 1, data_layout: str = "NCHW", kernel_layout: str = "OIHW",
           out_layout: str | None = None, out_dtype: str | None = None) -> Call:
    """2-D convolution of ``data`` with ``weight`` (NCHW and OIHW by default); ``padding``
    is an int, (h, w) or (top, left, bottom, right)."""
    return make_call("relax.nn.conv2d", data, weight, attrs=conv_attrs(
        2, "conv2d", strides, padding, dilation, groups, data_layout, kernel_layout, out_layout, out_dtype))


# -- pooling --------------------------------------------------------------------------------------

def _pool_sinfo(call: Call, op: str) -> StructInfo:
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "data")
    a = call.attrs
    if a["layout"] != "NCHW":
        raise StructInfoError(f"{op}: only the NCHW layout is supported, got {a['layout']}")
    if x.ndim not in (-1, 4):
        raise StructInfoError(f"{op}: data must be 4-D (NCHW), got shape {shape_text(x.shape_values)}")
    xs = x.shape_values
    if xs is None:
        return TensorStructInfo(None, x.dtype, None, 4)
    n, c, h, w = xs
    (kh, kw), (sh, sw), (dh, dw) = a["pool_size"], a["strides"], a["dilation"]
    top, left, bottom, right = a["padding"]
    oh = _window_out(h, top, bottom, kh, sh, dh, a["ceil_mode"])
    ow = _window_out(w, left, right, kw, sw, dw, a["ceil_mode"])
    for v in (oh, ow):
        if const_dim(v) is not None and const_dim(v) <= 0:
            raise StructInfoError(f"{op}: the window {kh}x{kw} does not fit the data {shape_text(xs)}")
    return TensorStructInfo([n, c, oh, ow], x.dtype)


for _name in ("max_pool2d", "avg_pool2d"):
    def _make_pool(op: str):
        def infer(call: Call, ctx: Any) -> StructInfo:
            return _pool_sinfo(call, op)
        infer.__doc__ = f"{op[9:]} over NCHW windows: ``(N, C, H', W')``."
        return infer
    register(f"relax.nn.{_name}", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=1)(_make_pool(f"relax.nn.{_name}"))


def _check_same_out_layout(name: str, layout: str, out_layout: str | None) -> None:
    """A pooling output in another layout than its input is TVM's option minitvm lacks."""
    if out_layout is not None and out_layout != layout:
        raise NotImplementedError(f"relax.op.nn.{name}: out_layout {out_layout!r} different from layout "
                                  f"{layout!r} is not supported")


def _pool(name: str, data: Expr, pool_size: Any, strides: Any, padding: Any, dilation: Any,
          ceil_mode: bool, count_include_pad: bool, layout: str, out_layout: str | None) -> Call:
    _check_same_out_layout(name, layout, out_layout)
    strides = pool_size if strides is None else strides
    return make_call(f"relax.nn.{name}", data, attrs={
        "pool_size": _pair(pool_size, f"{name} pool_size"), "strides": _pair(strides, f"{name} strides"),
        "padding": _padding4(padding, f"{name} padding"), "dilation": _pair(dilation, f"{name} dilation"),
        "ceil_mode": bool(ceil_mode), "count_include_pad": bool(count_include_pad), "layout": layout})


def max_pool2d(data: Expr, pool_size: Any = (1, 1), strides: Any = (1, 1), padding: Any = (0, 0),
               dilation: Any = (1, 1), ceil_mode: bool = False, count_include_pad: bool = False,
               layout: str = "NCHW", out_layout: str | None = None) -> Call:
    """The maximum over each window of NCHW ``data`` (padding never wins)."""
    return _pool("max_pool2d", data, pool_size, strides, padding, dilation, ceil_mode,
                 count_include_pad, layout, out_layout)


def avg_pool2d(data: Expr, pool_size: Any = (1, 1), strides: Any = (1, 1), padding: Any = (0, 0),
               dilation: Any = (1, 1), ceil_mode: bool = False, count_include_pad: bool = False,
               layout: str = "NCHW", out_layout: str | None = None) -> Call:
    """The average over each window; padding counts only with ``count_include_pad``."""
    return _pool("avg_pool2d", data, pool_size, strides, padding, dilation, ceil_mode,
                 count_include_pad, layout, out_layout)


@register("relax.nn.adaptive_avg_pool2d", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=1)
def _infer_adaptive_avg_pool2d(call: Call, ctx: Any) -> StructInfo:
    """``(N, C, OH, OW)``; without output_size the input's H and W are kept."""
    op = "relax.nn.adaptive_avg_pool2d"
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "data")
    if call.attrs["layout"] != "NCHW":
        raise StructInfoError(f"{op}: only the NCHW layout is supported, got {call.attrs['layout']}")
    if x.ndim not in (-1, 4):
        raise StructInfoError(f"{op}: data must be 4-D (NCHW), got shape {shape_text(x.shape_values)}")
    xs = x.shape_values
    if xs is None:
        return TensorStructInfo(None, x.dtype, None, 4)
    size = call.attrs["output_size"]
    oh, ow = (xs[2], xs[3]) if size is None else size
    return TensorStructInfo([xs[0], xs[1], oh, ow], x.dtype)


def adaptive_avg_pool2d(data: Expr, output_size: Any = None, layout: str = "NCHW",
                        out_layout: str | None = None) -> Call:
    """Average pooling to a fixed ``(OH, OW)`` (an int: square) whatever the input size."""
    _check_same_out_layout("adaptive_avg_pool2d", layout, out_layout)
    size = None if output_size is None else _pair(output_size, "adaptive_avg_pool2d output_size")
    return make_call("relax.nn.adaptive_avg_pool2d", data, attrs={"output_size": size, "layout": layout})


# -- pad / dropout ------------------------------------------------------------------------------

@register("relax.nn.pad", pattern=OpPattern.INJECTIVE, num_inputs=1)
def _infer_pad(call: Call, ctx: Any) -> StructInfo:
    """Each dimension grows by its before + after widths (``pad_width`` is flat:
    ``[before_0, after_0, before_1, after_1, ...]``)."""
    op = "relax.nn.pad"
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "data")
    width = call.attrs["pad_width"]
    if call.attrs["pad_mode"] != "constant":
        raise StructInfoError(f"{op}: only pad_mode='constant' is supported, got {call.attrs['pad_mode']!r}")
    if x.ndim == -1:
        return TensorStructInfo(None, x.dtype, None, -1)
    if len(width) != 2 * x.ndim:
        raise StructInfoError(f"{op}: pad_width needs 2 values per dimension ({2 * x.ndim} for shape "
                              f"{shape_text(x.shape_values)}), got {len(width)}")
    xs = x.shape_values
    if xs is None:
        return x
    return TensorStructInfo([simplify(d + width[2 * k] + width[2 * k + 1]) for k, d in enumerate(xs)], x.dtype)


def pad(data: Expr, pad_width: Sequence[int], pad_mode: str = "constant", pad_value: float = 0.0) -> Call:
    """``data`` surrounded by ``pad_value``; ``pad_width`` is ``[before_0, after_0, ...]``."""
    return make_call("relax.nn.pad", data, attrs={"pad_width": tuple(int(v) for v in pad_width),
                                                   "pad_mode": pad_mode, "pad_value": float(pad_value)})


@register("relax.nn.dropout", pattern=OpPattern.ELEMWISE, num_inputs=1)
def _infer_dropout(call: Call, ctx: Any) -> StructInfo:
    """A tuple (output, mask) of the data's struct info, as in TVM."""
    check_num_args(call, "relax.nn.dropout", 1)
    x = tensor_arg(call, 0, "relax.nn.dropout", "data")
    return TupleStructInfo([x, x])


def dropout(data: Expr, rate: float = 0.5) -> Call:
    """Dropout, as TVM returns it: a tuple (output, mask).  Compiled code is for
    inference, where the output is ``data`` unchanged and the mask all ones."""
    return make_call("relax.nn.dropout", data, attrs={"rate": float(rate)})


from .conv import conv1d, conv1d_transpose, conv2d_transpose, conv3d  # noqa: E402
from .nn_more import cross_entropy_with_logits, group_norm, leakyrelu, nll_loss, prelu, rms_norm  # noqa: E402

__all__ += ["leakyrelu", "prelu", "rms_norm", "group_norm", "cross_entropy_with_logits", "nll_loss", "conv1d",
            "conv1d_transpose", "conv2d_transpose", "conv3d"]
