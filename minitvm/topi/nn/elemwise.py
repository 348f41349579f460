"""Activations: relu, leaky_relu, gelu (exact and tanh form), silu; dropout at inference."""

from __future__ import annotations

import math

from ... import te
from ...tir import op as _op
from ...tir.expr import const


def relu(x: te.Tensor) -> te.Tensor:
    """``max(x, 0)`` element-wise."""
    return te.compute(x.shape, lambda *i: _op.max(x(*i), const(0, x.dtype)), name="T_relu")


def leaky_relu(x: te.Tensor, alpha: float = 0.01) -> te.Tensor:
    """``x`` where positive, else ``alpha * x``."""
    def f(*i):
        v = x(*i)
        return _op.Select(_op.greater(v, const(0, x.dtype)), v, _op.mul(v, const(alpha, x.dtype)))
    return te.compute(x.shape, f, name="T_leaky_relu")


def gelu(x: te.Tensor) -> te.Tensor:
    """``x * Φ(x)`` with the exact normal CDF: ``0.5 * x * (1 + erf(x / √2))``."""
    def f(*i):
        v = x(*i)
        half, one = const(0.5, x.dtype), const(1.0, x.dtype)
        return half * v * (one + _op.erf(v * const(1 / math.sqrt(2), x.dtype)))
    return te.compute(x.shape, f, name="T_gelu")


def gelu_tanh(x: te.Tensor) -> te.Tensor:
    """The tanh approximation of gelu: ``0.5x(1 + tanh(√(2/π)(x + 0.044715x³)))``."""
    def f(*i):
        v = x(*i)
        c = const(math.sqrt(2 / math.pi), x.dtype)
        inner = c * (v + const(0.044715, x.dtype) * v * v * v)
        return const(0.5, x.dtype) * v * (const(1.0, x.dtype) + _op.tanh(inner))
    return te.compute(x.shape, f, name="T_gelu_tanh")


def silu(x: te.Tensor) -> te.Tensor:
    """``x * sigmoid(x)`` element-wise."""
    return te.compute(x.shape, lambda *i: x(*i) * _op.sigmoid(x(*i)), name="T_silu")


def dropout(x: te.Tensor, rate: float = 0.5) -> te.Tensor:
    """Dropout at inference: the identity (a copy)."""
    return te.compute(x.shape, lambda *i: x(*i), name="T_dropout")
