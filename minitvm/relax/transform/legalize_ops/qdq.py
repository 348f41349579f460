"""Legalization of quantize / dequantize: one element-wise kernel each ("quantized",
"dequantized"), a constant scalar scale or zero point folded into it, as TVM does."""

from __future__ import annotations

from typing import Any

from .... import te
from ....tir import op as _op
from ....tir.expr import FloatImm, IntImm, PrimExpr
from ...block_builder import BlockBuilder
from ...expr import Call, Expr
from .common import _try_convert_to_scalar_const, register_legalize


def _clip_cast(value: PrimExpr, dtype: str) -> PrimExpr:
    return _op.cast(_op.max(_op.min(value, _op.max_value(dtype)), _op.min_value(dtype)), dtype)


def _at(param: Any, idx: tuple, axis: int) -> PrimExpr:
    """A scalar parameter as it is, a per-channel one at the index along ``axis``; a 0-d
    tensor or one of all-1 dimensions (per tensor, even with several channels) at 0."""
    if isinstance(param, (IntImm, FloatImm)):
        return param
    if all(isinstance(d, IntImm) and d.value == 1 for d in param.shape):
        return param[(0,) * param.ndim]
    return param[idx[axis]]


@register_legalize("relax.quantize")
def _quantize(bb: BlockBuilder, call: Call) -> Expr:
    out_dtype = call.attrs["out_dtype"]

    def te_quantize(data: te.Tensor, scale: Any, zp: Any) -> te.Tensor:
        axis = call.attrs["axis"] % data.ndim

        def compute(*idx: Any) -> PrimExpr:
            scaled = data[idx] / _at(scale, idx, axis)
            rounded = _op.round(scaled) if "int" in out_dtype else scaled
            return _clip_cast(rounded + _at(zp, idx, axis), out_dtype)
        return te.compute(data.shape, compute, name="quantized")

    return bb.call_te(te_quantize, call.args[0], _try_convert_to_scalar_const(call.args[1]),
                      _try_convert_to_scalar_const(call.args[2]), primfunc_name_hint="quantize")


@register_legalize("relax.dequantize")
def _dequantize(bb: BlockBuilder, call: Call) -> Expr:
    out_dtype = call.attrs["out_dtype"]

    def te_dequantize(data: te.Tensor, scale: Any, zp: Any) -> te.Tensor:
        axis = call.attrs["axis"] % data.ndim

        def compute(*idx: Any) -> PrimExpr:
            wide = "float32" if "float" in data.dtype else "int32"
            shifted = _op.sub(_op.cast(data[idx], wide), _at(zp, idx, axis))
            out = _op.mul(shifted, _op.cast(_at(scale, idx, axis), "float32"))
            return out if out_dtype == "float32" else _clip_cast(out, out_dtype)
        return te.compute(data.shape, compute, name="dequantized")

    return bb.call_te(te_dequantize, call.args[0], _try_convert_to_scalar_const(call.args[1]),
                      _try_convert_to_scalar_const(call.args[2]), primfunc_name_hint="dequantize")
