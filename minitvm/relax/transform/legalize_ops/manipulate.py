"""Legalization of repeat, tile, flip and the collapse sums, as TVM's LegalizeOps writes
them (repeat without an axis flattens first)."""

from __future__ import annotations

from typing import Any

from .... import te, tir, topi
from ...block_builder import BlockBuilder
from ...expr import Call, Expr, struct_info_of
from ...op._utils import product
from ...op.base import tensor_to_shape
from ...struct_info import ShapeStructInfo
from .common import _tensors_of, register_legalize


@register_legalize("relax.repeat")
def _repeat(bb: BlockBuilder, call: Call) -> Expr:
    def te_repeat(data: te.Tensor, repeats: int, axis: Any) -> te.Tensor:
        if axis is None:
            data = topi.reshape(data, [product(data.shape)])
            axis = 0
        return topi.repeat(data, repeats, axis)
    return bb.call_te(te_repeat, call.args[0], call.attrs["repeats"], call.attrs["axis"], primfunc_name_hint="repeat")


@register_legalize("relax.tile")
def _tile(bb: BlockBuilder, call: Call) -> Expr:
    return bb.call_te(topi.tile, call.args[0], list(call.attrs["repeats"]), primfunc_name_hint="tile")


@register_legalize("relax.flip")
def _flip(bb: BlockBuilder, call: Call) -> Expr:
    return bb.call_te(topi.flip, call.args[0], call.attrs["axis"], primfunc_name_hint="flip")


@register_legalize("relax.collapse_sum_like")
def _collapse_sum_like(bb: BlockBuilder, call: Call) -> Expr:
    target = struct_info_of(call.args[1]).shape_values
    return bb.call_te(topi.collapse_sum, call.args[0], list(target), primfunc_name_hint="collapse_sum")


@register_legalize("relax.collapse_sum_to")
def _collapse_sum_to(bb: BlockBuilder, call: Call) -> Expr:
    return bb.call_te(topi.collapse_sum, call.args[0], call.args[1], primfunc_name_hint="collapse_sum")


@register_legalize("relax.einsum")
def _einsum(bb: BlockBuilder, call: Call) -> Expr:
    return bb.call_te(topi.einsum, call.attrs["subscripts"], *_tensors_of(bb, call.args[0]),
                      primfunc_name_hint="einsum")


@register_legalize("relax.gather_elements")
def _gather_elements(bb: BlockBuilder, call: Call) -> Expr:
    return bb.call_te(topi.gather, call.args[0], call.attrs["axis"], call.args[1], primfunc_name_hint="gather")


@register_legalize("relax.scatter_elements")
def _scatter_elements(bb: BlockBuilder, call: Call) -> Expr:
    return bb.call_te(topi.scatter_elements, *call.args, axis=call.attrs["axis"], reduction=call.attrs["reduction"],
                      primfunc_name_hint="scatter_elements")


@register_legalize("relax.scatter_nd")
def _scatter_nd(bb: BlockBuilder, call: Call) -> Expr:
    def te_scatter_nd(data: te.Tensor, indices: te.Tensor, updates: te.Tensor, reduction: str) -> te.Tensor:
        # Relax keeps the coordinates on indices' last axis, TOPI on its first
        axes = list(range(indices.ndim))
        return topi.scatter_nd(data, topi.transpose(indices, axes[-1:] + axes[:-1]), updates, reduction)
    return bb.call_te(te_scatter_nd, *call.args, call.attrs["reduction"], primfunc_name_hint="scatter_nd")


@register_legalize("relax.dynamic_strided_slice")
def _dynamic_strided_slice(bb: BlockBuilder, call: Call) -> Expr:
    # as TVM: a shape function computes the extents, tensor_to_shape reads them at run time
    # and a match_cast names them, so the slicing kernel's output has symbolic extents
    ndim = struct_info_of(call.args[0]).ndim
    if ndim == -1:
        raise ValueError("LegalizeOps: relax.dynamic_strided_slice needs the rank of its data to be known")
    extents = bb.normalize(bb.call_te(topi.dynamic_strided_slice_shape, *call.args, primfunc_name_hint="shape_func"))
    shape = bb.emit(tensor_to_shape(extents))
    names = [tir.Var("s", "int64") for _ in range(ndim)]
    bb.match_cast(shape, ShapeStructInfo(names))
    return bb.call_te(topi.dynamic_strided_slice, *call.args, output_shape=names,
                      primfunc_name_hint="dynamic_strided_slice")
