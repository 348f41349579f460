"""Pooling over the spatial axes (W; H, W; D, H, W) of 1-, 2- and 3-D data:
``relax.nn.max_pool{1,2,3}d``, ``avg_pool{1,2,3}d`` and ``adaptive_avg_pool{1,2,3}d``.

The data may be in any layout naming N, C and the spatial axes (``NCHW``, ``NHWC``,
``NCHW16c``); the output is in ``out_layout`` (the data's by default).  Shapes are inferred in
the canonical layout (``NCW``/``NCHW``/``NCDHW``) and laid out from it, as in TVM.
"""

from __future__ import annotations

from typing import Any

from ....tir import op as _op
from ....tir.expr import IntImm
from ...expr import Call, Expr
from ...struct_info import StructInfo, StructInfoError, TensorStructInfo, shape_text
from .._layout import check_layout, from_canonical, to_canonical
from .._utils import AttrInt, const_dim, simplify
from ..registry import OpPattern, check_num_args, make_call, register, tensor_arg

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d"]

_CANONICAL = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


def _per_axis(v: Any, dim: int, what: str, spread: bool = True) -> tuple:
    """``v`` (an int or a sequence) as ``dim`` int64 values; one value is repeated when
    ``spread`` (TVM repeats a single 2-D/3-D window size, but a 1-D op takes exactly one)."""
    t = (v,) if isinstance(v, int) else tuple(v)
    if len(t) == 1 and spread:
        t = t * dim
    if len(t) != dim:
        raise StructInfoError(f"{what} must have {dim} value{'s' if dim > 1 else ''}, got {v!r}")
    return tuple(AttrInt(int(x)) for x in t)


def _padding(v: Any, dim: int, what: str) -> tuple:
    """(befores..., afters...) from an int, one value per axis or both sides of each."""
    t = (v,) if isinstance(v, int) else tuple(v)
    if len(t) == 1:
        t = t * (2 * dim)
    elif len(t) == dim and dim > 1:
        t = t + t
    if len(t) != 2 * dim:
        raise StructInfoError(f"{what} must have 1{', ' + str(dim) if dim > 1 else ''} or {2 * dim} "
                              f"values, got {v!r}")
    return tuple(AttrInt(int(x)) for x in t)


def _layouts(call: Call, op: str, dim: int) -> tuple[list, list]:
    a = call.attrs
    return (check_layout(op, a["layout"], _CANONICAL[dim], "data"),
            check_layout(op, a["out_layout"], _CANONICAL[dim], "output"))


def _data(call: Call, op: str, layout: list) -> TensorStructInfo:
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "data")
    if x.ndim not in (-1, len(layout)):
        got = shape_text(x.shape_values) if x.shape_values is not None else f"{x.ndim}-D data"
        raise StructInfoError(f"{op}: data must be {len(layout)}-D for the layout "
                              f"{call.attrs['layout']!r}, got {got}")
    return x


def _window_out(size: Any, lo: int, hi: int, k: int, s: int, d: int, ceil_mode: bool) -> Any:
    """Windows along one axis; in ceil mode a last window that would start in the trailing
    padding is dropped (TVM's and torch's rule)."""
    numerator = size + IntImm("int64", lo + hi - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0))
    raw = _op.add(_op.floordiv(numerator, IntImm("int64", s)), IntImm("int64", 1))
    if not ceil_mode:
        return simplify(raw)
    one = IntImm("int64", 1)
    starts_in_pad = _op.greater_equal(_op.mul(_op.sub(raw, one), IntImm("int64", s)), size + IntImm("int64", lo))
    return simplify(_op.if_then_else(starts_in_pad, _op.sub(raw, one), raw))


def _pool_sinfo(call: Call, op: str, dim: int) -> StructInfo:
    layout, out_layout = _layouts(call, op, dim)
    x = _data(call, op, layout)
    if x.shape_values is None:
        return TensorStructInfo(None, x.dtype, x.vdevice, len(out_layout))
    a = call.attrs
    canon = to_canonical(op, layout, x.shape_values, _CANONICAL[dim])
    for i in range(dim):
        canon[2 + i] = _window_out(canon[2 + i], a["padding"][i], a["padding"][i + dim], a["pool_size"][i],
                                   a["strides"][i], a["dilation"][i], a["ceil_mode"])
        if const_dim(canon[2 + i]) is not None and const_dim(canon[2 + i]) <= 0:
            raise StructInfoError(f"{op}: the window {list(a['pool_size'])} does not fit the data "
                                  f"{shape_text(x.shape_values)} padded by {list(a['padding'])}")
    return TensorStructInfo(from_canonical(op, out_layout, canon, _CANONICAL[dim]), x.dtype, x.vdevice)


def _pool(name: str, dim: int, data: Expr, pool_size: Any, strides: Any, padding: Any, dilation: Any,
          ceil_mode: bool, count_include_pad: bool, layout: str, out_layout: str | None) -> Call:
    spread = dim > 1
    return make_call(f"relax.nn.{name}", data, attrs={
        "pool_size": _per_axis(pool_size, dim, f"relax.nn.{name} pool_size", spread),
        "strides": _per_axis(strides, dim, f"relax.nn.{name} strides", spread),
        "padding": _padding(padding, dim, f"relax.nn.{name} padding"),
        "dilation": _per_axis(dilation, dim, f"relax.nn.{name} dilation", spread),
        "ceil_mode": bool(ceil_mode), "count_include_pad": bool(count_include_pad),
        "layout": layout, "out_layout": out_layout or layout})


def _register_pool(kind: str, dim: int) -> None:
    op = f"relax.nn.{kind}_pool{dim}d"

    def infer(call: Call, ctx: Any) -> StructInfo:
        return _pool_sinfo(call, op, dim)
    infer.__doc__ = f"{kind} over windows of {_CANONICAL[dim]}-like data: the windows' count per spatial axis."
    register(op, pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=1)(infer)


for _kind in ("max", "avg"):
    for _dim in (1, 2, 3):
        _register_pool(_kind, _dim)


def max_pool1d(data: Expr, pool_size: Any = (1,), strides: Any = (1,), padding: Any = (0, 0),
               dilation: Any = (1,), ceil_mode: bool = False, count_include_pad: bool = False,
               layout: str = "NCW", out_layout: str | None = None) -> Call:
    """The maximum over each window along W (padding never wins)."""
    return _pool("max_pool1d", 1, data, pool_size, strides, padding, dilation, ceil_mode,
                 count_include_pad, layout, out_layout)


def max_pool2d(data: Expr, pool_size: Any = (1, 1), strides: Any = (1, 1), padding: Any = (0, 0),
               dilation: Any = (1, 1), ceil_mode: bool = False, count_include_pad: bool = False,
               layout: str = "NCHW", out_layout: str | None = None) -> Call:
    """The maximum over each H x W window (padding never wins); ``padding`` is an int,
    (h, w) or (top, left, bottom, right)."""
    return _pool("max_pool2d", 2, data, pool_size, strides, padding, dilation, ceil_mode,
                 count_include_pad, layout, out_layout)


def max_pool3d(data: Expr, pool_size: Any = (1, 1, 1), strides: Any = (1, 1, 1), padding: Any = (0, 0, 0),
               dilation: Any = (1, 1, 1), ceil_mode: bool = False, count_include_pad: bool = False,
               layout: str = "NCDHW", out_layout: str | None = None) -> Call:
    """The maximum over each D x H x W window; ``padding`` is an int, (d, h, w) or
    (front, top, left, back, bottom, right)."""
    return _pool("max_pool3d", 3, data, pool_size, strides, padding, dilation, ceil_mode,
                 count_include_pad, layout, out_layout)


def avg_pool1d(data: Expr, pool_size: Any = (1,), strides: Any = (1,), padding: Any = (0, 0),
               dilation: Any = (1,), ceil_mode: bool = False, count_include_pad: bool = False,
               layout: str = "NCW", out_layout: str | None = None) -> Call:
    """The average over each window along W; padding counts only with ``count_include_pad``."""
    return _pool("avg_pool1d", 1, data, pool_size, strides, padding, dilation, ceil_mode,
                 count_include_pad, layout, out_layout)


def avg_pool2d(data: Expr, pool_size: Any = (1, 1), strides: Any = (1, 1), padding: Any = (0, 0),
               dilation: Any = (1, 1), ceil_mode: bool = False, count_include_pad: bool = False,
               layout: str = "NCHW", out_layout: str | None = None) -> Call:
    """The average over each H x W window; padding counts only with ``count_include_pad``."""
    return _pool("avg_pool2d", 2, data, pool_size, strides, padding, dilation, ceil_mode,
                 count_include_pad, layout, out_layout)


def avg_pool3d(data: Expr, pool_size: Any = (1, 1, 1), strides: Any = (1, 1, 1), padding: Any = (0, 0, 0),
               dilation: Any = (1, 1, 1), ceil_mode: bool = False, count_include_pad: bool = False,
               layout: str = "NCDHW", out_layout: str | None = None) -> Call:
    """The average over each D x H x W window; padding counts only with ``count_include_pad``."""
    return _pool("avg_pool3d", 3, data, pool_size, strides, padding, dilation, ceil_mode,
                 count_include_pad, layout, out_layout)


def _adaptive_sinfo(call: Call, op: str, dim: int) -> StructInfo:
    """The data's spatial sizes replaced by ``output_size`` (kept when it is None)."""
    layout, out_layout = _layouts(call, op, dim)
    x = _data(call, op, layout)
    a = call.attrs
    if x.shape_values is None:
        if x.shape is not None and a["out_layout"] == a["layout"] and a["output_size"] is None:
            return x  # a shape variable passes through
        return TensorStructInfo(None, x.dtype, x.vdevice, len(out_layout))
    canon = to_canonical(op, layout, x.shape_values, _CANONICAL[dim])
    if a["output_size"] is not None:
        canon[2:] = [IntImm("int64", int(s)) for s in a["output_size"]]
    return TensorStructInfo(from_canonical(op, out_layout, canon, _CANONICAL[dim]), x.dtype, x.vdevice)


def _register_adaptive(dim: int) -> None:
    op = f"relax.nn.adaptive_avg_pool{dim}d"

    def infer(call: Call, ctx: Any) -> StructInfo:
        return _adaptive_sinfo(call, op, dim)
    infer.__doc__ = f"Average pooling of {_CANONICAL[dim]}-like data to a fixed spatial size."
    register(op, pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=1)(infer)


for _dim in (1, 2, 3):
    _register_adaptive(_dim)


def _adaptive(dim: int, data: Expr, output_size: Any, layout: str, out_layout: str | None) -> Call:
    name = f"adaptive_avg_pool{dim}d"
    size = None if output_size is None else _per_axis(output_size, dim, f"relax.nn.{name} output_size", dim > 1)
    return make_call(f"relax.nn.{name}", data,
                     attrs={"output_size": size, "layout": layout, "out_layout": out_layout or layout})


def adaptive_avg_pool1d(data: Expr, output_size: Any = None, layout: str = "NCW",
                        out_layout: str | None = None) -> Call:
    """Average pooling to ``output_size`` positions along W whatever the input's width
    (None: the input's)."""
    return _adaptive(1, data, output_size, layout, out_layout)


def adaptive_avg_pool2d(data: Expr, output_size: Any = None, layout: str = "NCHW",
                        out_layout: str | None = None) -> Call:
    """Average pooling to a fixed ``(OH, OW)`` (an int: square; None: the input's H and W)."""
    return _adaptive(2, data, output_size, layout, out_layout)


def adaptive_avg_pool3d(data: Expr, output_size: Any = None, layout: str = "NCDHW",
                        out_layout: str | None = None) -> Call:
    """Average pooling to a fixed ``(OD, OH, OW)`` (an int: cubic; None: the input's)."""
    return _adaptive(3, data, output_size, layout, out_layout)
