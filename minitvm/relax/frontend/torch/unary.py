"""Element-wise operators of one tensor."""

from __future__ import annotations

from ... import op as _op


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


def to_dtype(node, conv):
    dtype = node.kwargs.get("dtype", node.args[1] if len(node.args) > 1 else None)
    x = conv.arg(node.args[0])
    return x if dtype is None else conv.bb.emit(_op.astype(x, conv.dtype_name(dtype)))


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
    "aten._to_copy.default": to_dtype,
}
