"""Legalization of the statistical reductions TVM composes from TOPI: variance and std
(the mean of the squared deviations from the kept-dims mean, as TVM computes it)."""

from __future__ import annotations

from typing import Any

from .... import te, topi
from ...block_builder import BlockBuilder
from ...expr import Call, Expr
from .common import register_legalize


def _variance(x: te.Tensor, axis: Any, keepdims: bool) -> te.Tensor:
    deviation = topi.subtract(x, topi.mean(x, axis, True))
    return topi.mean(topi.multiply(deviation, deviation), axis, keepdims)


def _std(x: te.Tensor, axis: Any, keepdims: bool) -> te.Tensor:
    return topi.sqrt(_variance(x, axis, keepdims))


@register_legalize("relax.variance")
def _legalize_variance(bb: BlockBuilder, call: Call) -> Expr:
    axis = call.attrs["axis"]
    return bb.call_te(_variance, call.args[0], None if axis is None else list(axis), call.attrs["keepdims"],
                      primfunc_name_hint="variance")


@register_legalize("relax.std")
def _legalize_std(bb: BlockBuilder, call: Call) -> Expr:
    axis = call.attrs["axis"]
    return bb.call_te(_std, call.args[0], None if axis is None else list(axis), call.attrs["keepdims"],
                      primfunc_name_hint="std")


def _scan(fn: Any, name: str) -> Any:
    def legalize(bb: BlockBuilder, call: Call) -> Expr:
        a = call.attrs
        return bb.call_te(fn, call.args[0], a["axis"], a["dtype"] or None, a["exclusive"], primfunc_name_hint=name)
    return legalize


register_legalize("relax.cumsum", _scan(topi.cumsum, "cumsum"))
register_legalize("relax.cumprod", _scan(topi.cumprod, "cumprod"))
