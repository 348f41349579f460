"""Activations: relu, leaky_relu, gelu (exact and tanh form), silu, softplus; dropout at inference;
pixel_shuffle."""

from __future__ import annotations

import math
from typing import Any

from ... import te
from ...tir import op as _op
from ...tir.expr import const
from ..broadcast import add, multiply
from ..elemwise import cast, erf, sigmoid, tanh
from ..utils import const_int


def relu(x: te.Tensor) -> te.Tensor:
    """``max(x, 0)`` element-wise."""
    return te.compute(x.shape, lambda *i: _op.max(x(*i), const(0, x.dtype)), name="compute")


def leaky_relu(x: te.Tensor, alpha: float = 0.01) -> te.Tensor:
    """``x`` where positive, else ``alpha * x``."""
    def f(*i):
        v = x(*i)
        return _op.Select(_op.less(const(0, x.dtype), v), v, _op.mul(v, const(alpha, x.dtype)))
    return te.compute(x.shape, f, name="compute")


def prelu(x: te.Tensor, slope: te.Tensor, axis: int = 1) -> te.Tensor:
    """``x`` where positive, else ``slope[c] * x`` with ``c`` the index along ``axis``."""
    axis = axis % x.ndim
    if slope.ndim != 1:
        raise ValueError(f"topi.nn.prelu: the slope must be 1-d, got shape {list(slope.shape)}")
    if const_int(slope.shape[0]) == 1:  # one slope for every channel
        one = slope
        slope = te.compute((x.shape[axis],), lambda c: one[0], name="slope_broadcasted")

    def f(*i):
        v = x(*i)
        return _op.Select(_op.less(const(0, x.dtype), v), v, _op.mul(v, slope(i[axis])))
    return te.compute(x.shape, f, name="compute")


# The composite activations are built from TOPI's element-wise ops, one compute each, as
# TVM's legalization writes them (its kernels have the same blocks: T_multiply, compute, ...).

def gelu(x: te.Tensor) -> te.Tensor:
    """``x * Φ(x)`` with the exact normal CDF: ``x * (0.5 + erf(x / √2) * 0.5)``."""
    dtype = x.dtype
    erf_in = multiply(x, const(0.5 ** 0.5, dtype))
    if dtype == "float16":  # erf in float32, as TVM
        erf_v = cast(erf(cast(erf_in, "float32")), "float16")
    else:
        erf_v = erf(erf_in)
    return multiply(x, add(const(0.5, dtype), multiply(erf_v, const(0.5, dtype))))


def gelu_tanh(x: te.Tensor) -> te.Tensor:
    """The tanh approximation of gelu: ``0.5x(1 + tanh(√(2/π)x(1 + 0.044715x²)))``."""
    dtype = x.dtype
    half_x = multiply(const(0.5, dtype), x)
    scaled = multiply(const(math.sqrt(2.0 / math.pi), dtype), x)
    cubic = add(const(1, dtype), multiply(multiply(const(0.044715, dtype), x), x))
    return multiply(half_x, add(const(1.0, dtype), tanh(multiply(scaled, cubic))))


def silu(x: te.Tensor) -> te.Tensor:
    """``x * sigmoid(x)`` element-wise."""
    return multiply(x, sigmoid(x))


def softplus(x: te.Tensor, beta: float = 1.0, threshold: float = 20.0) -> te.Tensor:
    """``log(1 + exp(beta * x)) / beta``, and ``x`` itself where ``beta * x`` passes
    ``threshold`` (where exp would overflow and the two agree), as TVM's."""
    def f(*i: Any) -> Any:
        v = x(*i)
        b, t = const(beta, x.dtype), const(threshold, x.dtype)
        soft = _op.mul(_op.div(const(1, x.dtype), b), _op.log(_op.add(const(1, x.dtype), _op.exp(_op.mul(b, v)))))
        return _op.Select(_op.greater(_op.mul(b, v), t), v, soft)
    return te.compute(x.shape, f, name="compute")


def pixel_shuffle(data: te.Tensor, upscale_factor: int, name: str = "PixelShuffle") -> te.Tensor:
    """``[..., C * r * r, H, W]`` rearranged to ``[..., C, H * r, W * r]``: output pixel
    ``(c, h, w)`` is input channel ``c * r * r + (h % r) * r + w % r`` at ``(h // r, w // r)``."""
    r = int(upscale_factor)
    if r <= 0 or data.ndim < 3:
        raise ValueError(f"topi.nn.pixel_shuffle: needs a positive upscale factor and a tensor of 3 or more "
                         f"dimensions, got {r} and {data.ndim}")
    rc = const(r, "int32")
    c_in, h_in, w_in = data.shape[-3:]
    out_shape = list(data.shape[:-3]) + [_op.floordiv(c_in, rc * rc), h_in * rc, w_in * rc]

    def f(*i: Any) -> Any:
        c, h, w = i[-3:]
        return data(*i[:-3], c * rc * rc + _op.floormod(h, rc) * rc + _op.floormod(w, rc),
                    _op.floordiv(h, rc), _op.floordiv(w, rc))
    return te.compute(out_shape, f, name=name)


def dropout(x: te.Tensor, rate: float = 0.5) -> te.Tensor:
    """Dropout at inference: the identity (a copy)."""
    return te.compute(x.shape, lambda *i: x(*i), name="T_dropout")
