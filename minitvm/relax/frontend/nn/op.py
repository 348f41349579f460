"""Functional operators on :class:`nn.Tensor` (``nn.op.matmul(x, w)``, ``nn.op.relu(x)``).

Each one builds a high-level Relax op call (``relax.op.*``) and emits it through the
builder of the export in progress; ``relax.get_pipeline("zero")`` legalizes them later.
Python numbers are accepted where a tensor operand is, as constants of the other
operand's dtype.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ... import expr as rx
from ... import op as _op
from .core import Tensor, current_builder

__all__ = ["add", "subtract", "multiply", "divide", "negative", "maximum", "minimum", "matmul",
           "linear", "permute_dims", "reshape", "take", "mean", "sum", "sqrt", "rsqrt", "exp",
           "tanh", "sigmoid", "astype", "relu", "gelu", "silu", "softmax", "layer_norm", "conv2d",
           "rms_norm"]


def _emit(expr: rx.Expr, name: str = "") -> Tensor:
    return Tensor(current_builder().emit(expr, name))


def _pair(a: Any, b: Any) -> tuple[rx.Expr, rx.Expr]:
    """Relax operands for a binary op; a Python number takes the tensor operand's dtype."""
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return a._relax, b._relax
    if isinstance(a, Tensor):
        return a._relax, _scalar(b, a)
    if isinstance(b, Tensor):
        return _scalar(a, b), b._relax
    raise TypeError(f"nn.op: expected an nn.Tensor operand, got {type(a).__name__} and {type(b).__name__}")


def _scalar(value: Any, like: Tensor) -> rx.Constant:
    """A Python number as a 0-d constant of ``like``'s dtype (it broadcasts)."""
    if not isinstance(value, (int, float, bool, np.number)):
        raise TypeError(f"nn.op: expected an nn.Tensor or a number, got {type(value).__name__}")
    return rx.const(np.array(value, dtype=like.dtype))


def _binary(fn: Any, name: str) -> Any:
    def op(x1: Any, x2: Any, name: str = name) -> Tensor:
        a, b = _pair(x1, x2)
        return _emit(fn(a, b), name)
    op.__name__ = fn.__name__
    op.__doc__ = f"Element-wise ``{fn.__name__}`` with broadcasting (relax.op.{fn.__name__})."
    return op


add = _binary(_op.add, "add")
subtract = _binary(_op.subtract, "sub")
multiply = _binary(_op.multiply, "mul")
divide = _binary(_op.divide, "div")
maximum = _binary(_op.maximum, "maximum")
minimum = _binary(_op.minimum, "minimum")


def _unary(fn: Any, name: str) -> Any:
    def op(x: Tensor, name: str = name) -> Tensor:
        return _emit(fn(x._relax), name)
    op.__name__ = fn.__name__
    op.__doc__ = f"Element-wise ``{fn.__name__}`` (relax.op.{fn.__name__})."
    return op


negative = _unary(_op.negative, "neg")
sqrt = _unary(_op.sqrt, "sqrt")
rsqrt = _unary(_op.rsqrt, "rsqrt")
exp = _unary(_op.exp, "exp")
tanh = _unary(_op.tanh, "tanh")
sigmoid = _unary(_op.sigmoid, "sigmoid")
relu = _unary(_op.nn.relu, "relu")
gelu = _unary(_op.nn.gelu, "gelu")
silu = _unary(_op.nn.silu, "silu")


def matmul(a: Tensor, b: Tensor, out_dtype: str | None = None, name: str = "matmul") -> Tensor:
    """``a @ b`` (numpy.matmul semantics, batched)."""
    return _emit(_op.matmul(a._relax, b._relax, out_dtype), name)


def permute_dims(x: Tensor, axes: Sequence[int] | None = None, name: str = "permute_dims") -> Tensor:
    return _emit(_op.permute_dims(x._relax, axes), name)


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None, out_dtype: str | None = None) -> Tensor:
    """``x @ weight.T + bias`` with ``weight`` of shape (out_features, in_features): emitted
    as permute_dims, matmul, add (what ``relax.op.linear`` composes)."""
    wt = permute_dims(weight)
    out = matmul(x, wt, out_dtype)
    return out if bias is None else add(out, bias)


def reshape(x: Tensor, shape: Sequence[Any], name: str = "reshape") -> Tensor:
    return _emit(_op.reshape(x._relax, tuple(shape)), name)


def take(x: Tensor, indices: Tensor, axis: int | None = None, name: str = "take") -> Tensor:
    return _emit(_op.take(x._relax, indices._relax, axis), name)


def mean(x: Tensor, axis: Any = None, keepdims: bool = False, name: str = "mean") -> Tensor:
    return _emit(_op.mean(x._relax, axis, keepdims), name)


def sum(x: Tensor, axis: Any = None, keepdims: bool = False, name: str = "sum") -> Tensor:  # noqa: A001
    return _emit(_op.sum(x._relax, axis, keepdims), name)


def astype(x: Tensor, dtype: str, name: str = "astype") -> Tensor:
    return _emit(_op.astype(x._relax, dtype), name)


def softmax(x: Tensor, axis: int = -1, name: str = "softmax") -> Tensor:
    return _emit(_op.nn.softmax(x._relax, axis), name)


def layer_norm(x: Tensor, weight: Tensor, bias: Tensor, axes: Any = -1, eps: float = 1e-5,
               name: str = "layer_norm") -> Tensor:
    return _emit(_op.nn.layer_norm(x._relax, weight._relax, bias._relax, axes, eps), name)


def rms_norm(x: Tensor, weight: Tensor, axes: Any = -1, eps: float = 1e-5) -> Tensor:
    """``x * rsqrt(mean(x * x, axes) + eps) * weight``, composed of element-wise ops and
    ``mean`` (minitvm has no ``rms_norm`` operator)."""
    ms = mean(multiply(x, x, name="sq"), axes, keepdims=True, name="mean_sq")
    return multiply(multiply(x, rsqrt(add(ms, eps, name="add_eps")), name="normed"), weight, name="rms_norm")


def conv2d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1, name: str = "conv2d") -> Tensor:
    """NCHW convolution with an OIHW ``weight``; ``bias`` of shape (out_channels,)."""
    out = _emit(_op.nn.conv2d(x._relax, weight._relax, stride, padding, dilation, groups), name)
    if bias is None:
        return out
    return add(out, reshape(bias, (1, bias.shape[0], 1, 1)))
