"""Quantization: ``quantize`` (float to a narrow integer or float8 type) and ``dequantize``
(back), per tensor (a scalar or 1-element scale and zero point) or per channel along ``axis``.
Struct-info rules as TVM's (src/relax/op/tensor/qdq.cc): the dtypes each argument may have,
an unknown dtype anywhere giving an unknown output dtype, a rank-0 input taking only
per-tensor parameters, and per-channel parameters provably as long as the channel axis."""

from __future__ import annotations

from typing import Any

from ...tir.expr import IntImm
from ..expr import Call, Expr
from ..struct_info import StructInfo, StructInfoError, TensorStructInfo, struct_info_text
from ._utils import _ANALYZER
from .registry import OpPattern, check_num_args, make_call, register, tensor_arg

__all__ = ["quantize", "dequantize"]

_FLOAT8 = ("float8_e4m3fn", "float8_e5m2")
_QUANTIZE_OUT = ("int8", "uint8", "int16", "uint16", *_FLOAT8)
_QUANTIZE_DATA = ("float16", "float32")
_DEQUANTIZE_OUT = ("float16", "float32")
_DEQUANTIZE_DATA = ("int8", "uint8", "int16", "uint16", "int32", *_FLOAT8, "float16", "float32")
_SCALE = ("float16", "float32")
_ZERO_POINT = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "float16")


def _per_tensor(p: TensorStructInfo) -> bool:
    """A 0-d parameter, or one whose dimensions are all provably 1."""
    if p.ndim == 0:
        return True
    dims = p.shape_values
    return bool(dims) and all(_ANALYZER.can_prove_equal(d, 1) for d in dims)


def _dim(d: Any) -> str:
    return str(d.value) if isinstance(d, IntImm) else str(d)


def _check_param(op: str, name: str, p: TensorStructInfo, x: TensorStructInfo, axis: int) -> None:
    """A per-channel parameter: 1-d, as long as the data's ``axis`` (provably, as TVM asks)."""
    if _per_tensor(p):
        return
    if x.ndim == 0:
        raise StructInfoError(f"{op}: scale and zero_point must be scalar or singleton tensors for "
                              f"rank-0 input; {name} is {struct_info_text(p)}")
    if p.ndim not in (-1, 1):
        raise StructInfoError(f"{op}: {name} must be a scalar or 1-d (one value per channel), got "
                              f"{struct_info_text(p)}")
    if p.shape_values is None or x.shape_values is None:
        return
    size, channels = p.shape_values[0], x.shape_values[axis]
    if not _ANALYZER.can_prove_equal(size, channels):
        raise StructInfoError(f"Size mismatch: {op}: the input shape at dim {axis} is '{_dim(channels)}', "
                              f"but size of {name} param is '{_dim(size)}'")


def _qdq_sinfo(call: Call, op: str, data_ok: tuple[str, ...], out_ok: tuple[str, ...]) -> StructInfo:
    check_num_args(call, op, 3)
    x = tensor_arg(call, 0, op, "data")
    scale = tensor_arg(call, 1, op, "scale")
    zp = tensor_arg(call, 2, op, "zero_point")
    out_dtype = call.attrs["out_dtype"]
    if out_dtype not in out_ok:
        raise StructInfoError(f"{op}: out_dtype must be one of {', '.join(out_ok)}, got {out_dtype!r}")
    if x.is_unknown_dtype or scale.is_unknown_dtype or zp.is_unknown_dtype:
        out_dtype = "void"  # as TVM: nothing is checked, and the result's dtype is unknown too
    else:
        for name, sinfo, ok in (("data", x, data_ok), ("scale", scale, _SCALE), ("zero_point", zp, _ZERO_POINT)):
            if sinfo.dtype not in ok:
                raise StructInfoError(f"{op}: {name} must have dtype {', '.join(ok)}, got {struct_info_text(sinfo)}")
    if x.ndim > 0:
        axis = call.attrs["axis"]
        if not -x.ndim <= axis < x.ndim:
            raise StructInfoError(f"{op}: axis param is out of range ({axis}) for a tensor of {x.ndim} "
                                  f"dimension{'s' if x.ndim != 1 else ''}")
        axis %= x.ndim
    else:
        axis = 0
    if x.ndim != -1:
        _check_param(op, "scale", scale, x, axis)
        _check_param(op, "zero_point", zp, x, axis)
    return TensorStructInfo(x.shape, out_dtype, x.vdevice, x.ndim)


@register("relax.quantize", pattern=OpPattern.ELEMWISE, num_inputs=3)
def _infer_quantize(call: Call, ctx: Any) -> StructInfo:
    """``clip(round(data / scale) + zero_point)`` in out_dtype's range."""
    return _qdq_sinfo(call, "relax.quantize", _QUANTIZE_DATA, _QUANTIZE_OUT)


@register("relax.dequantize", pattern=OpPattern.ELEMWISE, num_inputs=3)
def _infer_dequantize(call: Call, ctx: Any) -> StructInfo:
    """``(data - zero_point) * scale`` as float32 or float16."""
    return _qdq_sinfo(call, "relax.dequantize", _DEQUANTIZE_DATA, _DEQUANTIZE_OUT)


def quantize(data: Expr, scale: Expr, zero_point: Expr, axis: int = -1, out_dtype: str = "int8") -> Call:
    """``clip(round(data / scale) + zero_point, min, max)`` of ``out_dtype``; scale and zero
    point are scalars or hold one value per index along ``axis``."""
    return make_call("relax.quantize", data, scale, zero_point, attrs={"axis": int(axis), "out_dtype": out_dtype})


def dequantize(data: Expr, scale: Expr, zero_point: Expr, axis: int = -1, out_dtype: str = "float32") -> Call:
    """``(data - zero_point) * scale`` as ``out_dtype`` (float32 or float16)."""
    return make_call("relax.dequantize", data, scale, zero_point, attrs={"axis": int(axis), "out_dtype": out_dtype})
