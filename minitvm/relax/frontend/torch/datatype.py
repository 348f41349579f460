"""Dtype conversions: ``_to_copy`` / ``to`` with a dtype, ``type_as``."""

from __future__ import annotations

from ....ir import dtype as _dt
from ... import op as _op
from ...expr import struct_info_of


def to_dtype(node, conv):
    """``x.to(dtype)``; without a dtype (a device or layout copy) the input itself."""
    dtype = node.kwargs.get("dtype", node.args[1] if len(node.args) > 1 else None)
    x = conv.arg(node.args[0])
    if dtype is None or not hasattr(dtype, "is_floating_point"):
        return x
    name = conv.dtype_name(dtype)
    return x if struct_info_of(x).dtype == name else conv.bb.emit(_op.astype(x, name))


def type_as(node, conv):
    """``x.type_as(other)``: ``x`` in ``other``'s dtype."""
    x, name = conv.arg(node.args[0]), conv.dtype_of(node.args[1])
    return x if struct_info_of(x).dtype == name else conv.bb.emit(_op.astype(x, name))


CONVERTERS = {
    "aten._to_copy.default": to_dtype,
    "aten.to.dtype": to_dtype,
    "aten.to.dtype_layout": to_dtype,
    "aten.type_as.default": type_as,
}


def _check_dtype(node, conv):
    """A cast to a dtype minitvm has no kernels for (bfloat16, complex)."""
    val = node.meta.get("val")
    name = conv.dtype_name(val.dtype) if hasattr(val, "dtype") else None
    try:
        if name is not None:
            _dt.check(name)
    except (TypeError, ValueError):
        return f"a cast to {name} is not supported (minitvm has no {name} kernels)"
    return None


CHECKS = {name: _check_dtype for name in CONVERTERS}
