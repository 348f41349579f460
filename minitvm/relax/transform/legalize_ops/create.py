"""Legalization of the creation and datatype operators: full/ones/zeros (and their
``*_like`` forms), tril/triu, arange, astype.

As in TVM, the ``*_like`` kernels read only the shape of their model tensor (it is not
passed to the PrimFunc), a constant 0-d fill value is folded into the kernel, and an
``arange`` or ``astype`` of constants is computed here and becomes a constant.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .... import te, tir, topi
from ....tir.expr import FloatImm, IntImm
from ...block_builder import BlockBuilder
from ...expr import Call, Expr, PrimValue, const, struct_info_of
from .common import LegalizeFunc, _try_convert_to_scalar_const, register_legalize


def _full(is_like: bool, fill_value: float | None, name: str) -> LegalizeFunc:
    def legalize(bb: BlockBuilder, call: Call) -> Expr:
        value: Any = fill_value
        if value is None:
            value = _try_convert_to_scalar_const(call.args[1], python_native=True)
        shape = struct_info_of(call.args[0]).shape_values if is_like else call.args[0]
        return bb.call_te(topi.full, list(shape) if is_like else shape, call.struct_info.dtype, value,
                          primfunc_name_hint=name)
    return legalize


register_legalize("relax.full", _full(False, None, "full"))
register_legalize("relax.full_like", _full(True, None, "full"))
register_legalize("relax.ones", _full(False, 1.0, "ones"))
register_legalize("relax.ones_like", _full(True, 1.0, "ones"))
register_legalize("relax.zeros", _full(False, 0.0, "zeros"))
register_legalize("relax.zeros_like", _full(True, 0.0, "zeros"))


def _trilu(upper: bool, name: str) -> LegalizeFunc:
    def legalize(bb: BlockBuilder, call: Call) -> Expr:
        data, k = call.args
        return bb.call_te(topi.trilu, data, k, upper=upper, primfunc_name_hint=name)
    return legalize


register_legalize("relax.tril", _trilu(False, "tril"))
register_legalize("relax.triu", _trilu(True, "triu"))


@register_legalize("relax.arange")
def _arange(bb: BlockBuilder, call: Call) -> Expr:
    if not all(isinstance(a, PrimValue) for a in call.args):
        return call
    start, end, step = (a.value for a in call.args)
    dtype = call.attrs["dtype"]
    if all(isinstance(v, (IntImm, FloatImm)) for v in (start, end, step)):
        return const(np.arange(start.value, end.value, step.value, dtype=dtype), dtype)
    return bb.call_te(topi.arange, start, end, step, dtype, primfunc_name_hint="arange")


@register_legalize("relax.wrap_param")
def _wrap_param(bb: BlockBuilder, call: Call) -> Expr:
    data = call.args[0]
    if data.struct_info.dtype == call.attrs["dtype"]:
        return data
    return bb.call_te(topi.cast, data, call.attrs["dtype"], primfunc_name_hint="cast")


@register_legalize("relax.astype")
def _astype(bb: BlockBuilder, call: Call) -> Expr:
    value = _try_convert_to_scalar_const(call.args[0], python_native=True)
    if isinstance(value, Expr):
        return bb.call_te(topi.cast, value, call.attrs["dtype"], primfunc_name_hint="cast")
    return const(value, call.attrs["dtype"])


def _eye(is_like: bool) -> LegalizeFunc:
    def legalize(bb: BlockBuilder, call: Call) -> Expr:
        if is_like:
            shape = list(struct_info_of(call.args[0]).shape_values)
            k = call.args[1]
        else:
            shape = [call.args[0].value, call.args[1].value]
            k = call.args[2]
        dtype = call.struct_info.dtype

        def te_eye(k: Any) -> te.Tensor:
            def element(i: Any, j: Any) -> Any:
                on = tir.Cast("int64", j) - tir.Cast("int64", i) == tir.Cast("int64", k)
                return tir.Select(on, tir.const(1, dtype), tir.const(0, dtype))
            return te.compute(shape, element, name="T_eye")
        return bb.call_te(te_eye, k.value, primfunc_name_hint="eye")
    return legalize


register_legalize("relax.eye", _eye(False))
register_legalize("relax.eye_like", _eye(True))
