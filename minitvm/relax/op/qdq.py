"""Quantization: ``quantize`` (float to a narrow integer type) and ``dequantize`` (back),
per tensor (scalar scale and zero point) or per channel along ``axis``."""

from __future__ import annotations

from typing import Any

from ...ir import dtype as _dt
from ..expr import Call, Expr
from ..struct_info import StructInfo, StructInfoError, TensorStructInfo, struct_info_text
from ._utils import const_dim, normalize_axis
from .registry import OpPattern, check_num_args, make_call, register, tensor_arg

__all__ = ["quantize", "dequantize"]


def _qdq_sinfo(call: Call, op: str, data_ok: Any, out_ok: tuple[str, ...]) -> StructInfo:
    check_num_args(call, op, 3)
    x = tensor_arg(call, 0, op, "data")
    scale = tensor_arg(call, 1, op, "scale")
    zp = tensor_arg(call, 2, op, "zero_point")
    out_dtype = call.attrs["out_dtype"]
    if out_dtype not in out_ok:
        raise StructInfoError(f"{op}: out_dtype must be one of {', '.join(out_ok)}, got {out_dtype!r}")
    if not x.is_unknown_dtype and not data_ok(x.dtype):
        raise StructInfoError(f"{op}: data of dtype {x.dtype} is not supported")
    if not scale.is_unknown_dtype and not _dt.is_float(scale.dtype):
        raise StructInfoError(f"{op}: scale must be a float tensor, got {struct_info_text(scale)}")
    if x.ndim != -1:
        axis = normalize_axis(op, call.attrs["axis"], x.ndim)
        channels = const_dim(x.shape_values[axis]) if x.shape_values is not None else None
        for name, p in (("scale", scale), ("zero_point", zp)):
            if p.ndim not in (-1, 0, 1):
                raise StructInfoError(f"{op}: {name} must be a scalar or 1-d, got {struct_info_text(p)}")
            size = const_dim(p.shape_values[0]) if p.ndim == 1 and p.shape_values is not None else None
            if channels is not None and size not in (None, 1, channels):
                raise StructInfoError(f"{op}: {name} has {size} values but axis {axis} of the data has "
                                      f"{channels} channels")
    if x.shape_values is None:
        return TensorStructInfo(None, out_dtype, None, x.ndim)
    return TensorStructInfo(list(x.shape_values), out_dtype)


@register("relax.quantize", pattern=OpPattern.ELEMWISE, num_inputs=3)
def _infer_quantize(call: Call, ctx: Any) -> StructInfo:
    """``clip(round(data / scale) + zero_point)`` in out_dtype's range."""
    return _qdq_sinfo(call, "relax.quantize", lambda d: d in ("float16", "float32"),
                      ("int8", "uint8", "int16", "uint16", "float8_e4m3fn", "float8_e5m2"))


@register("relax.dequantize", pattern=OpPattern.ELEMWISE, num_inputs=3)
def _infer_dequantize(call: Call, ctx: Any) -> StructInfo:
    """``(data - zero_point) * scale`` as float32 or float16."""
    return _qdq_sinfo(call, "relax.dequantize", lambda d: _dt.is_int(d) or _dt.is_float(d),
                      ("float16", "float32"))


def quantize(data: Expr, scale: Expr, zero_point: Expr, axis: int = -1, out_dtype: str = "int8") -> Call:
    """``clip(round(data / scale) + zero_point, min, max)`` of ``out_dtype``; scale and zero
    point are scalars or hold one value per index along ``axis``."""
    return make_call("relax.quantize", data, scale, zero_point, attrs={"axis": int(axis), "out_dtype": out_dtype})


def dequantize(data: Expr, scale: Expr, zero_point: Expr, axis: int = -1, out_dtype: str = "float32") -> Call:
    """``(data - zero_point) * scale`` as ``out_dtype`` (float32 or float16)."""
    return make_call("relax.dequantize", data, scale, zero_point, attrs={"axis": int(axis), "out_dtype": out_dtype})
