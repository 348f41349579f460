"""Tensors made from nothing or from another's shape: full, zeros, ones, the ``*_like`` forms,
arange, scalar_tensor; ``lift_fresh_copy`` of constants written in ``forward``."""

from __future__ import annotations

import numpy as np

from ... import op as _op
from ...expr import PrimValue, const
from ._common import arg_or


def _fill_const(value, dtype: str):
    """A Python number as a 0-d constant of ``dtype`` (a bool fill stays exact)."""
    return const(np.array(value, dtype=dtype))


def _full_to_output(value_index: int | None, fill: float | None = None):
    """full / zeros / ones / new_*: the shape and dtype torch recorded for the result (symbolic
    sizes included), filled with argument ``value_index`` or the constant ``fill``."""
    def convert(node, conv):
        dtype = conv.dtype_of(node)
        value = fill if value_index is None else node.args[value_index]
        return conv.bb.emit(_op.full(conv.shape_of(node), _fill_const(value, dtype), dtype))
    return convert


def _full_like(fill: float | None):
    """full_like / zeros_like / ones_like as TVM emits them: ``full_like(x, R.const(value))``
    with the value's own dtype (an int is int32, a float float32) and no ``dtype`` when the
    result keeps ``x``'s; a value int32 cannot hold, or another result dtype, is spelled in that."""
    def convert(node, conv):
        dtype = conv.dtype_of(node)
        value = node.args[1] if fill is None else fill
        if dtype != conv.dtype_of(node.args[0]):
            return conv.bb.emit(_op.full_like(conv.arg(node.args[0]), _fill_const(value, dtype), dtype))
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                isinstance(value, int) and not -2**31 <= value < 2**31:
            fill_value = _fill_const(value, dtype)
        else:
            fill_value = const(np.array(value, dtype="int32" if isinstance(value, int) else "float32"))
        return conv.bb.emit(_op.full_like(conv.arg(node.args[0]), fill_value))
    return convert


def arange(node, conv):
    """``torch.arange(start, end, step)`` in the dtype torch chose: ``R.arange`` of integer or
    symbolic bounds, as TVM emits it; float bounds a constant of torch's values."""
    values = [conv.arg(a) for a in node.args]
    if len(values) == 1:
        values = [0, values[0]]
    start, end = values[0], values[1]
    step = values[2] if len(values) > 2 else node.kwargs.get("step", 1)
    if any(isinstance(v, float) for v in (start, end, step)) and \
            all(isinstance(v, (int, float)) for v in (start, end, step)):
        return torch_constant(node, conv)  # torch's own values (a float step accumulates its way)

    for v in (start, end, step):
        if isinstance(v, float):
            raise ValueError(f"from_exported_program: {node.target}: arange with a symbolic bound and a float "
                             f"one ({v}) is not supported")
    bounds = [v if isinstance(v, int) else PrimValue(v) for v in (start, end, step)]
    return conv.bb.emit(_op.arange(*bounds, dtype=conv.dtype_of(node)))


def torch_constant(node, conv):
    """A tensor made from constants only (``linspace``, ``eye``, a window function, ``arange``
    of numbers): torch computes it here and it becomes a Relax constant, bit for bit torch's."""
    import torch  # torch is optional and heavy: imported on first use

    args = [conv.arg(a) for a in node.args]
    kwargs = {k: conv.arg(v) for k, v in node.kwargs.items() if k not in ("device", "pin_memory")}
    for v in [*args, *kwargs.values()]:
        if not isinstance(v, (int, float, bool, str, type(None), torch.dtype, torch.layout, torch.memory_format,
                              list, tuple)):
            raise ValueError(f"from_exported_program: {node.target} with a computed argument {v} is not supported")
    if isinstance(node.target, str):  # from_fx restated the call by name: its recorded value is torch's
        value = node.meta["val"]
    else:
        value = node.target(*args, **kwargs, device="cpu") if "device" in node.kwargs else node.target(*args, **kwargs)
    return const(value.detach().contiguous().numpy())


def _check_constant(node, conv):
    for a in [*node.args, *node.kwargs.values()]:
        if hasattr(a, "meta"):
            return "a size or value computed in the graph (a symbolic one) is not supported here"
    return None


def zero_(node, conv):
    dtype = conv.dtype_of(node)
    return conv.bb.emit(_op.full_like(conv.arg(node.args[0]), _fill_const(0, dtype), dtype))


def fill_tensor(node, conv):
    """``fill(x, value)`` with a 0-d tensor value: the value broadcast to ``x``'s shape."""
    value = conv.as_dtype(conv.arg(node.args[1]), conv.dtype_of(node))
    return conv.bb.emit(_op.broadcast_to(value, conv.shape_of(node)))


def scalar_tensor(node, conv):
    """A 0-d constant, bound to a variable as TVM binds it."""
    return conv.bb.emit(_fill_const(node.args[0], conv.dtype_of(node)))


def lift_fresh_copy(node, conv):
    """A tensor literal written in ``forward``: already a constant."""
    return conv.arg(node.args[0])


def empty_to_zeros(node, conv):
    """``empty`` and ``zeros``: any values are correct for empty, zeros are deterministic;
    ``R.zeros`` as TVM emits both."""
    return conv.bb.emit(_op.zeros(conv.shape_of(node), conv.dtype_of(node)))


def empty_like(node, conv):
    """``empty_like(x)``: ``R.zeros_like`` as TVM (or zeros of torch's shape in another dtype)."""
    if conv.dtype_of(node) != conv.dtype_of(node.args[0]):
        return empty_to_zeros(node, conv)
    return conv.bb.emit(_op.zeros_like(conv.arg(node.args[0])))


def fill_scalar(node, conv):
    """``fill(x, value)``: a tensor like ``x`` of ``value``."""
    dtype = conv.dtype_of(node)
    value = arg_or(node, 1, "value", 0)
    return conv.bb.emit(_op.full_like(conv.arg(node.args[0]), _fill_const(value, dtype), dtype))


CONVERTERS = {
    "aten.full.default": _full_to_output(1),
    "aten.zeros.default": empty_to_zeros,
    "aten.ones.default": _full_to_output(None, 1),
    "aten.new_full.default": _full_to_output(2),
    "aten.new_zeros.default": _full_to_output(None, 0),
    "aten.new_ones.default": _full_to_output(None, 1),
    "aten.empty.memory_format": empty_to_zeros,
    "aten.empty_like.default": empty_like,
    "aten.full_like.default": _full_like(None),
    "aten.zeros_like.default": _full_like(0),
    "aten.ones_like.default": _full_like(1),
    "aten.fill.Scalar": fill_scalar,
    "aten.fill_.Scalar": fill_scalar,
    "aten.fill.Tensor": fill_tensor,
    "aten.fill_.Tensor": fill_tensor,
    "aten.zero_.default": zero_,
    "aten.zero.default": zero_,
    "aten.empty_permuted.default": empty_to_zeros,
    "aten.empty_strided.default": empty_to_zeros,
    "aten.new_empty.default": empty_to_zeros,
    "aten.new_empty_strided.default": empty_to_zeros,
    **{f"aten.{name}": torch_constant for name in (
        "linspace.default", "logspace.default", "eye.default", "eye.m", "hamming_window.default",
        "hamming_window.periodic", "hamming_window.periodic_alpha", "hamming_window.periodic_alpha_beta",
        "hann_window.default", "hann_window.periodic", "blackman_window.default", "blackman_window.periodic",
        "bartlett_window.default", "bartlett_window.periodic", "kaiser_window.default", "tril_indices.default",
        "triu_indices.default")},
    "aten.arange.default": arange,
    "aten.arange.start": arange,
    "aten.arange.start_step": arange,
    "aten.scalar_tensor.default": scalar_tensor,
    "aten.lift_fresh_copy.default": lift_fresh_copy,
}


CHECKS = {name: _check_constant for name, fn in CONVERTERS.items() if fn is torch_constant}
