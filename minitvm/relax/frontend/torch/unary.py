"""Element-wise operators of one tensor."""

from __future__ import annotations

from ... import op as _op
from ._common import arg_or


def _simple(fn):
    def convert(node, conv):
        return conv.bb.emit(fn(conv.arg(node.args[0])))
    convert.__name__ = f"convert_{fn.__name__}"
    return convert


def gelu(node, conv):
    x = conv.arg(node.args[0])
    approximate = node.kwargs.get("approximate", node.args[1] if len(node.args) > 1 else "none")
    fn = _op.nn.gelu_tanh if approximate == "tanh" else _op.nn.gelu
    return conv.bb.emit(fn(x))


def identity(node, conv):
    """clone, contiguous, detach, alias, dropout in eval mode: the input itself."""
    return conv.arg(node.args[0])


def _bound(conv, value):
    """A clamp bound: a Python number, or None for an open side (tensor bounds are not supported)."""
    value = conv.arg(value)
    if value is not None and not isinstance(value, (int, float)):
        raise ValueError("from_exported_program: clamp with tensor bounds is not supported")
    return value


def clamp(node, conv):
    """``torch.clamp(x, min, max)``; either bound may be absent."""
    lo = _bound(conv, arg_or(node, 1, "min", None))
    hi = _bound(conv, arg_or(node, 2, "max", None))
    return conv.bb.emit(_op.clip(conv.arg(node.args[0]), lo, hi))


def clamp_min(node, conv):
    return conv.bb.emit(_op.clip(conv.arg(node.args[0]), _bound(conv, node.args[1]), None))


def clamp_max(node, conv):
    return conv.bb.emit(_op.clip(conv.arg(node.args[0]), None, _bound(conv, node.args[1])))


def hardtanh(node, conv):
    """``hardtanh(x, min_val=-1, max_val=1)``; ``ReLU6`` arrives as ``hardtanh(x, 0, 6)``."""
    lo = arg_or(node, 1, "min_val", -1.0)
    hi = arg_or(node, 2, "max_val", 1.0)
    return conv.bb.emit(_op.clip(conv.arg(node.args[0]), lo, hi))


def relu6(node, conv):
    return conv.bb.emit(_op.clip(conv.arg(node.args[0]), 0.0, 6.0))


def bitwise_not(node, conv):
    """``~x``: logical not of a bool tensor, ``-x - 1`` of an integer one."""
    x = conv.arg(node.args[0])
    if conv.dtype_of(node.args[0]) == "bool":
        return conv.bb.emit(_op.logical_not(x))
    return conv.bb.emit(_op.subtract(_op.negative(x), conv.scalar(1, x)))


CONVERTERS = {
    "aten.relu.default": _simple(_op.nn.relu),
    "aten.silu.default": _simple(_op.nn.silu),
    "aten.sigmoid.default": _simple(_op.sigmoid),
    "aten.tanh.default": _simple(_op.tanh),
    "aten.exp.default": _simple(_op.exp),
    "aten.log.default": _simple(_op.log),
    "aten.sqrt.default": _simple(_op.sqrt),
    "aten.rsqrt.default": _simple(_op.rsqrt),
    "aten.neg.default": _simple(_op.negative),
    "aten.abs.default": _simple(_op.abs),
    "aten.erf.default": _simple(_op.erf),
    "aten.gelu.default": gelu,
    "aten.clone.default": identity,
    "aten.contiguous.default": identity,
    "aten.detach.default": identity,
    "aten.alias.default": identity,
    "aten.dropout.default": identity,
    "aten.clamp.default": clamp,
    "aten.clamp_min.default": clamp_min,
    "aten.clamp_max.default": clamp_max,
    "aten.hardtanh.default": hardtanh,
    "aten.relu6.default": relu6,
    "aten.logical_not.default": _simple(_op.logical_not),
    "aten.bitwise_not.default": bitwise_not,
    "aten.lift_fresh.default": identity,
}
