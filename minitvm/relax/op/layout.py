"""``relax.layout_transform``: a tensor rearranged by an index map (TVM's
``relax.op.layout_transform``), e.g. NCHW to NCHW4c with ``lambda n, c, h, w: (n, c // 4, h,
w, c % 4)``.  Positions the map does not reach (padding) hold ``pad_value``."""

from __future__ import annotations

import re
from typing import Any, Callable

from ...tir import expr as _t
from ...tir.expr import FloatImm, IntImm, PrimExpr
from ...tir.index_map import IndexMap
from ..expr import Call, Expr, PrimValue
from ..struct_info import StructInfo, StructInfoError, TensorStructInfo
from ._utils import simplify
from .registry import OpPattern, check_num_args, make_call, register, tensor_arg

__all__ = ["layout_transform", "layout_axes", "primal_values", "spread_to_layout", "shape_to_primal",
           "shape_from_primal"]


@register("relax.layout_transform", pattern=OpPattern.INJECTIVE, num_inputs=1)
def _infer_layout_transform(call: Call, ctx: Any) -> StructInfo:
    """The input's shape mapped through the index map (each output's extent)."""
    op = "relax.layout_transform"
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "x")
    index_map: IndexMap = call.attrs["index_map"]
    pad = call.attrs.get("pad_value")
    if pad is not None and pad.value.dtype != x.dtype and not x.is_unknown_dtype:
        raise StructInfoError(f"{op}: pad_value dtype ({pad.value.dtype}) and input dtype ({x.dtype}) "
                              "must be the same")
    out_ndim = len(index_map.final_indices)
    if x.ndim == -1:
        return TensorStructInfo(None, x.dtype, x.vdevice, out_ndim)
    if x.ndim != index_map.ndim:
        raise StructInfoError(f"{op}: number of dimensions in input must match the number of source "
                              f"dimensions in index map, but got {x.ndim} != {index_map.ndim}")
    vals = x.shape_values
    if vals is None:
        return TensorStructInfo(None, x.dtype, x.vdevice, out_ndim)
    mapped = index_map.map_shape(list(vals))
    # an output index that is an input index keeps that dimension as written (unsimplified)
    shape = [vals[index_map.initial_indices.index(e)] if e in index_map.initial_indices else _as_int64(d)
             for e, d in zip(index_map.final_indices, mapped)]
    return TensorStructInfo(shape, x.dtype, x.vdevice)


def _as_int64(d: PrimExpr) -> PrimExpr:
    # maps built on int32 indices give int32 extents (a symbolic dimension cast down); Relax
    # shapes are int64
    if isinstance(d, IntImm):
        return IntImm("int64", d.value)
    if d.dtype == "int64":
        return d
    if isinstance(d, _t.Cast) and d.value.dtype == "int64":
        return d.value
    return _t.Cast("int64", d)


def _pad_value(x: Expr, pad_value: Any) -> PrimValue | None:
    if pad_value is None or isinstance(pad_value, PrimValue):
        return pad_value
    dtype = getattr(x.struct_info, "dtype", "float32")
    if "int" in dtype and isinstance(pad_value, int):
        return PrimValue(IntImm(dtype, pad_value))
    if "float" in dtype and isinstance(pad_value, (int, float)):
        return PrimValue(FloatImm(dtype, float(pad_value)))
    return PrimValue(pad_value)


def layout_transform(x: Expr, index_map: Callable | IndexMap, pad_value: Any = None,
                     axis_separators: Any = None, input_axis_separators: Any = None) -> Call:
    """``x`` rearranged by ``index_map`` (a function of the indices, or an IndexMap);
    ``pad_value`` (cast to ``x``'s dtype) fills the positions no input element reaches."""
    if callable(index_map) and not isinstance(index_map, IndexMap):
        index_map = IndexMap.from_func(index_map, index_dtype="int64")
    if not isinstance(index_map, IndexMap):
        raise TypeError(f"layout_transform: index_map must be an IndexMap or a function, got {index_map!r}")
    attrs = {"index_map": index_map, "pad_value": _pad_value(x, pad_value),
             "axis_separators": tuple(int(a) for a in (axis_separators or ())),
             "input_axis_separators": tuple(int(a) for a in (input_axis_separators or ()))}
    return make_call("relax.layout_transform", x, attrs=attrs)


# -- layouts named by letters (NCHW4c): shapes between a layout and its whole axes --------------

def layout_axes(layout: str) -> list[tuple[str, int | None]]:
    """``NCHW4c`` -> [(N, None), (C, None), (H, None), (W, None), (c, 4)]."""
    out = []
    for factor, name in re.findall(r"(\d*)([A-Za-z])", layout):
        out.append((name, int(factor) if factor else None))
    return out


def primal_values(layout: str, values: list, combine: Any) -> dict:
    """Each primal axis's value from ``values`` given in ``layout``: a blocked axis is
    ``combine(outer, factor, inner)``."""
    axes = layout_axes(layout)
    factors = {name.upper(): f for name, f in axes if name.islower()}
    pos = {name: k for k, (name, _) in enumerate(axes)}
    out = {}
    for name, _ in axes:
        if name.isupper():
            outer = values[pos[name]]
            inner_pos = pos.get(name.lower())
            out[name] = outer if inner_pos is None else combine(outer, factors[name], values[inner_pos])
    return out


def spread_to_layout(layout: str, primal: dict, split: Any) -> list:
    """Values in ``layout`` from primal ones: a blocked axis X gives ``split(X, factor)``."""
    axes = layout_axes(layout)
    factors = {name.upper(): f for name, f in axes if name.islower()}
    out = []
    for name, factor in axes:
        if name.isupper():
            out.append(primal[name] if name not in factors else split(primal[name], factors[name])[0])
        else:
            out.append(split(primal[name.upper()], factor)[1])
    return out


def _const(d: Any) -> int | None:
    return d.value if isinstance(d, _t.IntImm) else None


def shape_to_primal(layout: str, shape: list) -> dict:
    """Primal axis letter -> extent, for a shape laid out ``layout``."""
    def combine(outer: Any, f: int, inner: Any) -> Any:
        c = _const(outer)
        return _t.IntImm("int64", c * f) if c is not None else outer * _t.IntImm(outer.dtype, f)
    return primal_values(layout, list(shape), combine)


def shape_from_primal(layout: str, primal: dict) -> list:
    """The shape laid out ``layout`` of a tensor whose primal extents are ``primal``."""
    def split(v: Any, f: int) -> tuple:
        c = _const(v)
        outer = _t.IntImm("int64", c // f) if c is not None else simplify(_t.FloorDiv(v, _t.IntImm(v.dtype, f)))
        return outer, _t.IntImm("int64", f)
    return spread_to_layout(layout, primal, split)
