"""Legalization of ``relax.sort``, ``relax.argsort`` and ``relax.topk`` to the TE kernels of
:mod:`minitvm.topi.sort` (TVM's LegalizeOps calls the same ``topi`` functions)."""

from __future__ import annotations

from .... import topi
from ...block_builder import BlockBuilder
from ...expr import Call, Expr
from .common import register_legalize


@register_legalize("relax.sort")
def _sort(bb: BlockBuilder, call: Call) -> Expr:
    a = call.attrs
    return bb.call_te(topi.sort, call.args[0], a["axis"], not a["descending"], primfunc_name_hint="sort")


@register_legalize("relax.argsort")
def _argsort(bb: BlockBuilder, call: Call) -> Expr:
    a = call.attrs
    dtype = a["dtype"] or call.args[0].struct_info.dtype
    return bb.call_te(topi.argsort, call.args[0], None, a["axis"], not a["descending"], dtype,
                      primfunc_name_hint="argsort")


@register_legalize("relax.topk")
def _topk(bb: BlockBuilder, call: Call) -> Expr:
    a = call.attrs
    dtype = a["dtype"] or call.args[0].struct_info.dtype
    return bb.call_te(topi.topk, call.args[0], a["k"], a["axis"], a["ret_type"], not a["largest"], dtype,
                      primfunc_name_hint="topk")
