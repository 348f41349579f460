"""Element-wise operators of one tensor."""

from __future__ import annotations

import math

from ....tir.op_table import UNARY
from ... import op as _op
from ...expr import struct_info_of
from ._common import arg_or


def _input(node, conv):
    """The operand in the dtype torch computes the result in (``sin`` of an int tensor is
    float32)."""
    return conv.as_dtype(conv.arg(node.args[0]), conv.dtype_of(node))


def _simple(fn):
    def convert(node, conv):
        return conv.bb.emit(fn(_input(node, conv)))
    convert.__name__ = f"convert_{fn.__name__}"
    return convert


def _float_input(node, conv):
    """The operand as a float tensor (of the result's dtype when that is a float)."""
    x = conv.arg(node.args[0])
    dtype = conv.dtype_of(node)
    return conv.as_dtype(x, dtype if dtype.startswith(("float", "bfloat")) else "float32")


def _emit(conv, expr):
    return conv.bb.emit(expr)


def _k(conv, x, value):
    """A Python number as a 0-d constant of ``x``'s dtype."""
    return conv.scalar(value, x)


def log1p_of(conv, x):
    """``log(1 + x)`` accurate for tiny ``x`` (Goldberg: ``log(u) * x / (u - 1)`` with
    ``u = 1 + x``, and ``x`` itself where ``u`` rounds to 1)."""
    u = _emit(conv, _op.add(x, _k(conv, x, 1)))
    um1 = _emit(conv, _op.subtract(u, _k(conv, x, 1)))
    ratio = _op.multiply(_op.log(u), _op.divide(x, _op.where(_op.equal(um1, _k(conv, x, 0)), _k(conv, x, 1), um1)))
    inf = _op.equal(u, _k(conv, x, math.inf))
    return _emit(conv, _op.where(_op.equal(um1, _k(conv, x, 0)), x, _op.where(inf, u, ratio)))


def expm1_of(conv, x):
    """``exp(x) - 1`` accurate for tiny ``x`` (Kahan: ``(u - 1) * x / log(u)`` with
    ``u = exp(x)``; ``x`` where ``u`` rounds to 1, ``-1`` where it is 0, ``u`` where infinite)."""
    u = _emit(conv, _op.exp(x))
    um1 = _emit(conv, _op.subtract(u, _k(conv, x, 1)))
    logu = _op.log(_op.where(_op.equal(um1, _k(conv, x, 0)), _k(conv, x, 2), u))
    ratio = _op.multiply(um1, _op.divide(x, logu))
    special = _op.logical_or(_op.equal(u, _k(conv, x, 0)), _op.equal(u, _k(conv, x, math.inf)))
    return _emit(conv, _op.where(_op.equal(um1, _k(conv, x, 0)), x, _op.where(special, um1, ratio)))


def log1p(node, conv):
    return log1p_of(conv, _float_input(node, conv))


def expm1(node, conv):
    return expm1_of(conv, _float_input(node, conv))


def _log_base(base: float):
    def convert(node, conv):
        x = _float_input(node, conv)
        return _emit(conv, _op.divide(_op.log(x), _k(conv, x, math.log(base))))
    convert.__name__ = f"convert_log{int(base)}"
    convert.__doc__ = f"``log(x) / log({int(base)})``."
    return convert


def exp2(node, conv):
    x = _float_input(node, conv)
    return _emit(conv, _op.power(_k(conv, x, 2.0), x))


def reciprocal(node, conv):
    x = _float_input(node, conv)
    return _emit(conv, _op.divide(_k(conv, x, 1), x))


def frac(node, conv):
    """``x - trunc(x)``."""
    x = _input(node, conv)
    return _emit(conv, _op.subtract(x, _op.trunc(x)))


def round_decimals(node, conv):
    """``round(x * 10**d) / 10**d`` (half to even, as torch)."""
    x = _input(node, conv)
    scale = _k(conv, x, 10.0 ** int(arg_or(node, 1, "decimals", 0)))
    return _emit(conv, _op.divide(_op.round(_op.multiply(x, scale)), scale))


def _check(fn):
    """isnan / isinf / isfinite: of a float tensor; an integer or bool one is always finite."""
    def convert(node, conv):
        x = conv.arg(node.args[0])
        if not conv.dtype_of(node.args[0]).startswith(("float", "bfloat")):
            return conv.bb.emit(_op.full_like(x, conv.scalar_of(fn is _op.isfinite, "bool"), "bool"))
        return conv.bb.emit(fn(x))
    convert.__name__ = f"convert_{fn.__name__}"
    return convert


def sign(node, conv):
    x = conv.arg(node.args[0])
    if conv.dtype_of(node.args[0]) == "bool":
        return x
    return conv.bb.emit(_op.sign(x))


# -- activations ----------------------------------------------------------------------------------

def _elu_of(conv, x, alpha: float, scale: float = 1.0, input_scale: float = 1.0):
    """``scale * (x if x > 0 else alpha * (exp(x * input_scale) - 1))``."""
    neg = expm1_of(conv, _emit(conv, _op.multiply(x, _k(conv, x, input_scale))) if input_scale != 1 else x)
    out = _op.where(_op.greater(x, _k(conv, x, 0)), x, _op.multiply(neg, _k(conv, x, alpha)))
    return _emit(conv, _op.multiply(out, _k(conv, x, scale)) if scale != 1 else out)


def elu(node, conv):
    return _elu_of(conv, _float_input(node, conv), float(arg_or(node, 1, "alpha", 1.0)),
                   float(arg_or(node, 2, "scale", 1.0)), float(arg_or(node, 3, "input_scale", 1.0)))


def selu(node, conv):
    return _elu_of(conv, _float_input(node, conv), 1.6732632423543772848170429916717,
                   1.0507009873554804934193349852946)


def celu(node, conv):
    alpha = float(arg_or(node, 1, "alpha", 1.0))
    return _elu_of(conv, _float_input(node, conv), alpha, 1.0, 1.0 / alpha)


def leaky_relu(node, conv):
    return conv.bb.emit(_op.nn.leakyrelu(_float_input(node, conv), float(arg_or(node, 1, "negative_slope", 0.01))))


def hardsigmoid(node, conv):
    """``clip(x / 6 + 1 / 2, 0, 1)``."""
    x = _float_input(node, conv)
    return _emit(conv, _op.clip(_op.add(_op.divide(x, _k(conv, x, 6)), _k(conv, x, 0.5)), 0, 1))


def hardswish(node, conv):
    """``x * clip(x + 3, 0, 6) / 6``."""
    x = _float_input(node, conv)
    return _emit(conv, _op.divide(_op.multiply(x, _op.clip(_op.add(x, _k(conv, x, 3)), 0, 6)), _k(conv, x, 6)))


def _softplus_of(conv, x, beta: float, threshold: float):
    """``log1p(exp(beta * x)) / beta``, or ``x`` where ``beta * x > threshold``."""
    bx = _emit(conv, _op.multiply(x, _k(conv, x, beta))) if beta != 1 else x
    soft = log1p_of(conv, _emit(conv, _op.exp(bx)))
    if beta != 1:
        soft = _op.divide(soft, _k(conv, x, beta))
    return _emit(conv, _op.where(_op.greater(bx, _k(conv, x, threshold)), x, soft))


def softplus(node, conv):
    return _softplus_of(conv, _float_input(node, conv), float(arg_or(node, 1, "beta", 1.0)),
                        float(arg_or(node, 2, "threshold", 20.0)))


def mish(node, conv):
    """``x * tanh(softplus(x))``."""
    x = _float_input(node, conv)
    return _emit(conv, _op.multiply(x, _op.tanh(_softplus_of(conv, x, 1.0, 20.0))))


def softsign(node, conv):
    x = _float_input(node, conv)
    return _emit(conv, _op.divide(x, _op.add(_op.abs(x), _k(conv, x, 1))))


def softshrink(node, conv):
    """``x - l`` above ``l``, ``x + l`` below ``-l``, else 0."""
    x = _float_input(node, conv)
    lam = float(arg_or(node, 1, "lambd", 0.5))
    zero = _k(conv, x, 0)
    low = _op.where(_op.less(x, _k(conv, x, -lam)), _op.add(x, _k(conv, x, lam)), zero)
    return _emit(conv, _op.where(_op.greater(x, _k(conv, x, lam)), _op.subtract(x, _k(conv, x, lam)), low))


def hardshrink(node, conv):
    """``x`` where ``|x| > l``, else 0."""
    x = _float_input(node, conv)
    lam = float(arg_or(node, 1, "lambd", 0.5))
    return _emit(conv, _op.where(_op.greater(_op.abs(x), _k(conv, x, lam)), x, _k(conv, x, 0)))


def threshold(node, conv):
    """``x`` where ``x > threshold``, else ``value``."""
    x = _input(node, conv)
    th, value = node.args[1], node.args[2]
    return _emit(conv, _op.where(_op.greater(x, _k(conv, x, th)), x, _k(conv, x, value)))


def prelu(node, conv):
    """``x`` where positive, else ``weight * x`` (one weight, or one per channel on axis 1)."""
    x, w = conv.arg(node.args[0]), conv.arg(node.args[1])
    ndim = len(conv.shape_of(node.args[0]))
    count = conv.shape_of(node.args[1])
    if ndim >= 2 and count and count[0] != 1:
        w = _op.reshape(w, [-1] + [1] * (ndim - 2))
    elif ndim < 2 or not count or count[0] == 1:
        w = _op.reshape(w, [])
    return _emit(conv, _op.where(_op.greater(x, _k(conv, x, 0)), x, _op.multiply(x, w)))


def logit(node, conv):
    """``log(x / (1 - x))``, ``x`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given."""
    x = _float_input(node, conv)
    eps = arg_or(node, 1, "eps", None)
    if eps is not None:
        x = _emit(conv, _op.clip(x, float(eps), 1 - float(eps)))
    return _emit(conv, _op.log(_op.divide(x, _op.subtract(_k(conv, x, 1), x))))


def log_sigmoid(node, conv):
    """``-softplus(-x)``: ``min(x, 0) - log1p(exp(-|x|))``."""
    x = _float_input(node, conv)
    soft = log1p_of(conv, _emit(conv, _op.exp(_op.negative(_op.abs(x)))))
    return _emit(conv, _op.subtract(_op.minimum(x, _k(conv, x, 0)), soft))


def _scaled(factor: float):
    def convert(node, conv):
        x = _float_input(node, conv)
        return _emit(conv, _op.multiply(x, _k(conv, x, factor)))
    return convert


def native_dropout(node, conv):
    """Dropout at inference (``train=False``): the input, and a mask of ones."""
    x = conv.arg(node.args[0])
    return (x, conv.bb.emit(_op.full_like(x, conv.scalar_of(True, "bool"), "bool")))


def copy(node, conv):
    """``copy(self, src)``: ``src`` in ``self``'s shape and dtype."""
    src = conv.as_dtype(conv.arg(node.args[1]), conv.dtype_of(node))
    if struct_info_of(src).shape_values is not None and list(conv.shape_of(node)) == list(conv.shape_of(node.args[1])):
        return src
    return conv.bb.emit(_op.broadcast_to(src, conv.shape_of(node)))


def nan_to_num(node, conv):
    """NaN, +inf and -inf replaced (by 0 and the dtype's largest / smallest finite value)."""
    import numpy as np

    x = _input(node, conv)
    dtype = conv.dtype_of(node)
    if not dtype.startswith("float"):
        return x
    info = np.finfo(dtype)
    nan = arg_or(node, 1, "nan", 0.0)
    posinf, neginf = arg_or(node, 2, "posinf", None), arg_or(node, 3, "neginf", None)
    posinf = float(info.max) if posinf is None else posinf
    neginf = float(info.min) if neginf is None else neginf
    out = _op.where(_op.isnan(x), _k(conv, x, 0.0 if nan is None else nan), x)
    out = _op.where(_op.equal(x, _k(conv, x, math.inf)), _k(conv, x, posinf), out)
    return _emit(conv, _op.where(_op.equal(x, _k(conv, x, -math.inf)), _k(conv, x, neginf), out))


def gelu(node, conv):
    x = conv.arg(node.args[0])
    approximate = node.kwargs.get("approximate", node.args[1] if len(node.args) > 1 else "none")
    fn = _op.nn.gelu_tanh if approximate == "tanh" else _op.nn.gelu
    return conv.bb.emit(fn(x))


def identity(node, conv):
    """clone, contiguous, detach, alias, dropout in eval mode: the input itself."""
    return conv.arg(node.args[0])


def _clamped(node, conv, lo, hi):
    """``x`` limited to ``[lo, hi]``: Python numbers through ``clip``, tensors (torch's
    ``clamp.Tensor``) through ``maximum`` / ``minimum``; None is an open side."""
    dtype = conv.dtype_of(node)
    x = conv.as_dtype(conv.arg(node.args[0]), dtype)
    lo, hi = conv.arg(lo), conv.arg(hi)
    numbers = all(v is None or isinstance(v, (int, float)) for v in (lo, hi))
    if numbers and dtype.startswith("float"):
        return conv.bb.emit(_op.clip(x, lo, hi))
    if lo is not None:
        x = _op.maximum(x, conv.as_dtype(lo, dtype))
    if hi is not None:
        x = _op.minimum(x, conv.as_dtype(hi, dtype))
    return conv.bb.emit(x)


def clamp(node, conv):
    """``torch.clamp(x, min, max)``; either bound may be absent or a tensor."""
    return _clamped(node, conv, arg_or(node, 1, "min", None), arg_or(node, 2, "max", None))


def clamp_min(node, conv):
    return _clamped(node, conv, node.args[1], None)


def clamp_max(node, conv):
    return _clamped(node, conv, None, node.args[1])


def hardtanh(node, conv):
    """``hardtanh(x, min_val=-1, max_val=1)``; ``ReLU6`` arrives as ``hardtanh(x, 0, 6)``."""
    lo = arg_or(node, 1, "min_val", -1.0)
    hi = arg_or(node, 2, "max_val", 1.0)
    return conv.bb.emit(_op.clip(conv.arg(node.args[0]), lo, hi))


def relu6(node, conv):
    return conv.bb.emit(_op.clip(conv.arg(node.args[0]), 0.0, 6.0))


def bitwise_not(node, conv):
    """``~x``: logical not of a bool tensor, every bit flipped of an integer one."""
    x = conv.arg(node.args[0])
    if conv.dtype_of(node.args[0]) == "bool":
        return conv.bb.emit(_op.logical_not(x))
    return conv.bb.emit(_op.bitwise_not(x))


def logical_not(node, conv):
    """``not x``; a number is true where nonzero."""
    x = conv.arg(node.args[0])
    dtype = conv.dtype_of(node.args[0])
    if dtype != "bool":
        x = _op.not_equal(x, conv.scalar_of(0, dtype))
    return conv.bb.emit(_op.logical_not(x))


CONVERTERS = {
    # every unary operator of the table (minitvm.tir.op_table) from its ATen ops; the converters
    # written out below replace these where torch's dtype rules need more (isnan of an int tensor)
    **{aten: _simple(getattr(_op, row.name)) for row in UNARY for aten in row.aten},
    "aten.relu.default": _simple(_op.nn.relu),
    "aten.silu.default": _simple(_op.nn.silu),
    "aten.gelu.default": gelu,
    "aten.clone.default": identity,
    "aten.contiguous.default": identity,
    "aten.detach.default": identity,
    "aten.alias.default": identity,
    "aten.dropout.default": identity,
    "aten.clamp.default": clamp,
    "aten.clamp.Tensor": clamp,
    "aten.clamp_min.Tensor": clamp_min,
    "aten.clamp_max.Tensor": clamp_max,
    "aten.clamp_min.default": clamp_min,
    "aten.clamp_max.default": clamp_max,
    "aten.hardtanh.default": hardtanh,
    "aten.relu6.default": relu6,
    "aten.logical_not.default": logical_not,
    "aten.bitwise_not.default": bitwise_not,
    "aten.lift_fresh.default": identity,
    "aten.sign.default": sign,
    "aten.sgn.default": sign,
    "aten.round.decimals": round_decimals,
    "aten.frac.default": frac,
    "aten.log1p.default": log1p,
    "aten.expm1.default": expm1,
    "aten.log10.default": _log_base(10.0),
    "aten.exp2.default": exp2,
    "aten.reciprocal.default": reciprocal,
    "aten.isnan.default": _check(_op.isnan),
    "aten.isinf.default": _check(_op.isinf),
    "aten.isfinite.default": _check(_op.isfinite),
    "aten.nan_to_num.default": nan_to_num,
    "aten.logit.default": logit,
    "aten.elu.default": elu,
    "aten.selu.default": selu,
    "aten.celu.default": celu,
    "aten.leaky_relu.default": leaky_relu,
    "aten.hardsigmoid.default": hardsigmoid,
    "aten.hardswish.default": hardswish,
    "aten.softplus.default": softplus,
    "aten.mish.default": mish,
    "aten.softshrink.default": softshrink,
    "aten.hardshrink.default": hardshrink,
    "aten.threshold.default": threshold,
    "aten.prelu.default": prelu,
    "aten._prelu_kernel.default": prelu,
    # in-place spellings (torch.export keeps some on fresh tensors): the same values
    "aten.relu_.default": _simple(_op.nn.relu),
    "aten.silu_.default": _simple(_op.nn.silu),
    "aten.hardtanh_.default": hardtanh,
    "aten.relu6_.default": relu6,
    "aten.leaky_relu_.default": leaky_relu,
    "aten.hardswish_.default": hardswish,
    "aten.hardsigmoid_.default": hardsigmoid,
    "aten.elu_.default": elu,
    "aten.dropout_.default": identity,
    "aten.detach_.default": identity,
    "aten.native_dropout.default": native_dropout,
    "aten.log_sigmoid.default": log_sigmoid,
    "aten.deg2rad.default": _scaled(math.pi / 180),
    "aten.rad2deg.default": _scaled(180 / math.pi),
    # real tensors: the sign bit and conjugation are no-ops, copies are values
    "aten.positive.default": identity,
    "aten.resolve_neg.default": identity,
    "aten.resolve_conj.default": identity,
    "aten.conj_physical.default": identity,
    "aten.alias_copy.default": identity,
    "aten.copy.default": copy,
    "aten.copy_.default": copy,
}
