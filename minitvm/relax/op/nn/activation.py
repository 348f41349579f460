"""Activations (``relax.nn.relu``, ``gelu``, ``gelu_tanh``, ``silu``, the parametric
``leakyrelu``, ``softplus`` and ``prelu``; ``relu6``, a clip), ``softmax`` / ``log_softmax``, and ``dropout``, which
inference applies to activations as the identity."""

from __future__ import annotations

from typing import Any

from ....ir import dtype as _dt
from ...expr import Call, Expr
from ...struct_info import StructInfo, StructInfoError, TupleStructInfo, struct_info_text
from .._utils import const_dim, normalize_axis, same_dtype
from ..registry import OpPattern, check_num_args, make_call, register, tensor_arg
from ..unary import clip, unary_sinfo

__all__ = ["relu", "relu6", "softplus", "gelu", "gelu_tanh", "silu", "leakyrelu", "prelu", "softmax", "log_softmax",
           "dropout"]


# -- element-wise activations ------------------------------------------------------------------

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


def relu6(data: Expr) -> Call:
    """``min(max(data, 0), 6)`` element-wise: as TVM, a ``relax.clip`` call."""
    return clip(data, 0, 6)


# -- activations with a parameter --------------------------------------------------------------

@register("relax.nn.softplus", pattern=OpPattern.ELEMWISE, num_inputs=1)
def _infer_softplus(call: Call, ctx: Any) -> StructInfo:
    """The input's struct info; floating-point tensors only."""
    return unary_sinfo(call, "relax.nn.softplus", True)


def softplus(data: Expr, beta: float = 1.0, threshold: float = 20.0) -> Call:
    """``log(1 + exp(beta * x)) / beta`` element-wise (``x`` where ``beta * x > threshold``)."""
    return make_call("relax.nn.softplus", data, attrs={"beta": float(beta), "threshold": float(threshold)})


@register("relax.nn.leakyrelu", pattern=OpPattern.ELEMWISE, num_inputs=1)
def _infer_leakyrelu(call: Call, ctx: Any) -> StructInfo:
    """``x`` where positive, else ``alpha * x``."""
    return unary_sinfo(call, "relax.nn.leakyrelu", True)


def leakyrelu(data: Expr, alpha: float = 0.01) -> Call:
    """Element-wise ``x if x > 0 else alpha * x``."""
    return make_call("relax.nn.leakyrelu", data, attrs={"alpha": float(alpha)})


@register("relax.nn.prelu", pattern=OpPattern.BROADCAST, num_inputs=2)
def _infer_prelu(call: Call, ctx: Any) -> StructInfo:
    """``x`` where positive, else ``alpha[c] * x``; alpha is 1-d along ``axis``."""
    op = "relax.nn.prelu"
    check_num_args(call, op, 2)
    x = tensor_arg(call, 0, op, "data")
    alpha = tensor_arg(call, 1, op, "alpha")
    same_dtype(op, [x, alpha])
    if alpha.ndim not in (-1, 1):
        raise StructInfoError(f"{op}: alpha must be 1-d (one slope per channel), got {struct_info_text(alpha)}")
    if x.ndim != -1:
        axis = normalize_axis(op, call.attrs["axis"], x.ndim)
        if x.shape_values is not None and alpha.shape_values is not None:
            c, a = const_dim(x.shape_values[axis]), const_dim(alpha.shape_values[0])
            if c is not None and a is not None and a not in (1, c):
                raise StructInfoError(f"{op}: alpha has {a} slopes but axis {axis} of the data has {c} channels")
    return x


def prelu(data: Expr, alpha: Expr, axis: int = 1) -> Call:
    """Element-wise ``x if x > 0 else alpha[c] * x`` with ``c`` the index along ``axis``."""
    return make_call("relax.nn.prelu", data, alpha, attrs={"axis": int(axis)})


# -- softmax -----------------------------------------------------------------------------------

def _softmax_sinfo(call: Call, op: str) -> StructInfo:
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "data")
    if not x.is_unknown_dtype and not (_dt.is_float(x.dtype) or x.dtype.startswith("bfloat")):
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


# -- dropout -----------------------------------------------------------------------------------

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
