"""Pooling over NCHW windows: ``relax.nn.max_pool2d``, ``avg_pool2d`` and
``adaptive_avg_pool2d``."""

from __future__ import annotations

from typing import Any

from ....topi.nn.pooling import pool_out_size
from ...expr import Call, Expr
from ...struct_info import StructInfo, StructInfoError, TensorStructInfo, shape_text
from .._utils import const_dim, simplify
from ..registry import OpPattern, check_num_args, make_call, register, tensor_arg

__all__ = ["max_pool2d", "avg_pool2d", "adaptive_avg_pool2d"]


def _pair(v: Any, what: str) -> tuple:
    t = (int(v), int(v)) if isinstance(v, int) else tuple(int(x) for x in v)
    if len(t) == 1:
        t = (t[0], t[0])
    if len(t) != 2:
        raise ValueError(f"{what} must be an int or a pair, got {v!r}")
    return t


def _padding4(v: Any, what: str) -> tuple:
    """(top, left, bottom, right) from an int, (h, w) or four values."""
    t = (int(v),) * 4 if isinstance(v, int) else tuple(int(x) for x in v)
    if len(t) == 1:
        t = t * 4
    if len(t) == 2:
        t = (t[0], t[1], t[0], t[1])
    if len(t) != 4:
        raise ValueError(f"{what} must have 1, 2 or 4 values, got {v!r}")
    return t


def _window_out(size: Any, lo: int, hi: int, k: Any, stride: int, dilation: int, ceil_mode: bool = False) -> Any:
    if ceil_mode:

        return simplify(pool_out_size(size, lo, hi, k, stride, dilation, True))
    span = size + (lo + hi) - ((k - 1) * dilation + 1)
    return simplify(span // stride + 1)


def _pool_sinfo(call: Call, op: str) -> StructInfo:
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "data")
    a = call.attrs
    if a["layout"] != "NCHW":
        raise StructInfoError(f"{op}: only the NCHW layout is supported, got {a['layout']}")
    if x.ndim not in (-1, 4):
        raise StructInfoError(f"{op}: data must be 4-D (NCHW), got shape {shape_text(x.shape_values)}")
    xs = x.shape_values
    if xs is None:
        return TensorStructInfo(None, x.dtype, None, 4)
    n, c, h, w = xs
    (kh, kw), (sh, sw), (dh, dw) = a["pool_size"], a["strides"], a["dilation"]
    top, left, bottom, right = a["padding"]
    oh = _window_out(h, top, bottom, kh, sh, dh, a["ceil_mode"])
    ow = _window_out(w, left, right, kw, sw, dw, a["ceil_mode"])
    for v in (oh, ow):
        if const_dim(v) is not None and const_dim(v) <= 0:
            raise StructInfoError(f"{op}: the window {kh}x{kw} does not fit the data {shape_text(xs)}")
    return TensorStructInfo([n, c, oh, ow], x.dtype)


for _name in ("max_pool2d", "avg_pool2d"):
    def _make_pool(op: str):
        def infer(call: Call, ctx: Any) -> StructInfo:
            return _pool_sinfo(call, op)
        infer.__doc__ = f"{op[9:]} over NCHW windows: ``(N, C, H', W')``."
        return infer
    register(f"relax.nn.{_name}", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=1)(_make_pool(f"relax.nn.{_name}"))


def _check_same_out_layout(name: str, layout: str, out_layout: str | None) -> None:
    """A pooling output in another layout than its input is TVM's option minitvm lacks."""
    if out_layout is not None and out_layout != layout:
        raise NotImplementedError(f"relax.op.nn.{name}: out_layout {out_layout!r} different from layout "
                                  f"{layout!r} is not supported")


def _pool(name: str, data: Expr, pool_size: Any, strides: Any, padding: Any, dilation: Any,
          ceil_mode: bool, count_include_pad: bool, layout: str, out_layout: str | None) -> Call:
    _check_same_out_layout(name, layout, out_layout)
    strides = pool_size if strides is None else strides
    return make_call(f"relax.nn.{name}", data, attrs={
        "pool_size": _pair(pool_size, f"{name} pool_size"), "strides": _pair(strides, f"{name} strides"),
        "padding": _padding4(padding, f"{name} padding"), "dilation": _pair(dilation, f"{name} dilation"),
        "ceil_mode": bool(ceil_mode), "count_include_pad": bool(count_include_pad), "layout": layout})


def max_pool2d(data: Expr, pool_size: Any = (1, 1), strides: Any = (1, 1), padding: Any = (0, 0),
               dilation: Any = (1, 1), ceil_mode: bool = False, count_include_pad: bool = False,
               layout: str = "NCHW", out_layout: str | None = None) -> Call:
    """The maximum over each window of NCHW ``data`` (padding never wins)."""
    return _pool("max_pool2d", data, pool_size, strides, padding, dilation, ceil_mode,
                 count_include_pad, layout, out_layout)


def avg_pool2d(data: Expr, pool_size: Any = (1, 1), strides: Any = (1, 1), padding: Any = (0, 0),
               dilation: Any = (1, 1), ceil_mode: bool = False, count_include_pad: bool = False,
               layout: str = "NCHW", out_layout: str | None = None) -> Call:
    """The average over each window; padding counts only with ``count_include_pad``."""
    return _pool("avg_pool2d", data, pool_size, strides, padding, dilation, ceil_mode,
                 count_include_pad, layout, out_layout)


@register("relax.nn.adaptive_avg_pool2d", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=1)
def _infer_adaptive_avg_pool2d(call: Call, ctx: Any) -> StructInfo:
    """``(N, C, OH, OW)``; without output_size the input's H and W are kept."""
    op = "relax.nn.adaptive_avg_pool2d"
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "data")
    if call.attrs["layout"] != "NCHW":
        raise StructInfoError(f"{op}: only the NCHW layout is supported, got {call.attrs['layout']}")
    if x.ndim not in (-1, 4):
        raise StructInfoError(f"{op}: data must be 4-D (NCHW), got shape {shape_text(x.shape_values)}")
    xs = x.shape_values
    if xs is None:
        return TensorStructInfo(None, x.dtype, None, 4)
    size = call.attrs["output_size"]
    oh, ow = (xs[2], xs[3]) if size is None else size
    return TensorStructInfo([xs[0], xs[1], oh, ow], x.dtype)


def adaptive_avg_pool2d(data: Expr, output_size: Any = None, layout: str = "NCHW",
                        out_layout: str | None = None) -> Call:
    """Average pooling to a fixed ``(OH, OW)`` (an int: square) whatever the input size."""
    _check_same_out_layout("adaptive_avg_pool2d", layout, out_layout)
    size = None if output_size is None else _pair(output_size, "adaptive_avg_pool2d output_size")
    return make_call("relax.nn.adaptive_avg_pool2d", data, attrs={"output_size": size, "layout": layout})
