"""Legalization of repeat, tile, flip and the collapse sums, as TVM's LegalizeOps writes
them (repeat without an axis flattens first)."""

from __future__ import annotations

from typing import Any

from .... import te, tir, topi
from ....tir.function import PrimFunc
from ....tir.functor import substitute
from ...block_builder import BlockBuilder
from ...expr import Call, Expr, struct_info_of
from ...op._utils import product
from ...op.base import call_pure_packed, call_tir, tensor_to_shape
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


@register_legalize("relax.layout_transform")
def _layout_transform(bb: BlockBuilder, call: Call) -> Expr:
    """As TVM writes it: an identity kernel whose output buffer ``transform_layout`` moves
    into the new layout (``pad_value``, 0 by default, fills padding), named
    ``te_layout_transform[_with_pad][_axis_separator]``; where the schedule cannot do that,
    a kernel reading the input through the inverse map."""
    x = call.args[0]
    shape = list(struct_info_of(x).shape_values)
    index_map = call.attrs["index_map"]
    dtype = struct_info_of(x).dtype
    pad = call.attrs.get("pad_value")
    pad_value = pad.value if pad is not None else tir.const(0, dtype)
    inverse, padding = index_map.non_surjective_inverse(shape)
    name = "te_layout_transform" + ("" if isinstance(padding, tir.IntImm) else "_with_pad") + \
        ("_axis_separator" if call.attrs["axis_separators"] else "")
    if not isinstance(padding, tir.IntImm):
        # minitvm's transform_layout leaves a padded output's padding loop unbound: read the
        # input through the inverse map instead
        return _layout_transform_by_inverse(bb, call, inverse, padding, pad_value, name)
    data = te.placeholder(shape, dtype, "A")
    out = te.compute(shape, lambda *i: data(*i), name=name)
    prim = te.create_prim_func([data, out], index_dtype_override="int64")
    sch = tir.Schedule(prim.with_attr("tir.noalias", True))
    sch.transform_layout(name, ("write", 0), index_map, pad_value)
    if call.attrs["axis_separators"]:
        sch.set_axis_separator(name, ("write", 0), list(call.attrs["axis_separators"]))
    if call.attrs["input_axis_separators"]:
        sch.set_axis_separator(name, ("read", 0), list(call.attrs["input_axis_separators"]))
    func = sch.mod["main"]
    # private, as TVM's: the module's GlobalVar names it
    func = PrimFunc(func.params, func.buffer_map, func.body, func.ret_type,
                    {k: v for k, v in func.attrs.items() if k != "global_symbol"})
    return call_tir(bb.add_func(func, name), (x,), call.struct_info)


def _layout_transform_by_inverse(bb: BlockBuilder, call: Call, inverse: Any, padding: Any, fill: Any,
                                 name: str) -> Expr:
    """Each output element reads the input at ``inverse`` of its indices; where the map pads
    (``padding``, over the inverse's indices, holds), ``fill``."""
    index_map = call.attrs["index_map"]

    def te_layout_transform(data: te.Tensor) -> te.Tensor:
        out_shape = index_map.map_shape(list(data.shape))

        def element(*idx: Any) -> Any:
            env = {v: tir.Cast(v.dtype, i) if v.dtype != i.dtype else i for v, i in zip(inverse.initial_indices, idx)}
            src = [tir.Cast(s.dtype, substitute(e, env)) if e.dtype != s.dtype else substitute(e, env)
                   for e, s in zip(inverse.final_indices, data.shape)]
            value = data(*src)
            if isinstance(padding, tir.IntImm) and not padding.value:
                return value
            return tir.if_then_else(substitute(padding, env), fill, value)
        return te.compute(out_shape, element, name=name)
    return bb.call_te(te_layout_transform, call.args[0], primfunc_name_hint=name)


def _hint_on_device(bb: BlockBuilder, call: Call) -> Expr:
    """A placement hint RealizeVDevice did not consume: its input (its struct info is the input's)."""
    return call.args[0]


def _to_vdevice(bb: BlockBuilder, call: Call) -> Expr:
    """minitvm runs every virtual device on the host CPU: the copy to another device is a copy
    in host memory, annotated with the destination (TVM copies between real devices here)."""
    return call_pure_packed("vm.builtin.copy", call.args[0], sinfo_args=struct_info_of(call))


register_legalize("relax.hint_on_device", _hint_on_device)
register_legalize("relax.to_vdevice", _to_vdevice)
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


@register_legalize("relax.gather_nd")
def _gather_nd(bb: BlockBuilder, call: Call) -> Expr:
    batch = call.attrs["batch_dims"]

    def te_gather_nd(data: te.Tensor, indices: te.Tensor) -> te.Tensor:
        k = int(indices.shape[-1])
        out_shape = list(indices.shape[:-1]) + list(data.shape[batch + k:])
        lead = indices.ndim - 1

        def element(*i: Any) -> Any:
            coords = [tir.Cast("int64", indices(*i[:lead], tir.IntImm("int64", c))) for c in range(k)]
            return data(*i[:batch], *coords, *i[lead:])
        return te.compute(out_shape, element, name="T_gather_nd")
    return bb.call_te(te_gather_nd, call.args[0], call.args[1], primfunc_name_hint="gather_nd")


@register_legalize("relax.meshgrid")
def _meshgrid(bb: BlockBuilder, call: Call) -> Expr:
    xy = call.attrs["indexing"] == "xy"

    def te_meshgrid(*xs: te.Tensor) -> list:
        order = list(range(len(xs)))
        if xy and len(xs) > 1:
            order[0], order[1] = 1, 0  # output axis k walks input order[k]
        shape = [xs[n].shape[0] for n in order]
        return [te.compute(shape, lambda *i, x=x, n=n: x(i[order.index(n)]),
                           name=f"T_meshgrid{'_' + str(n) if n else ''}") for n, x in enumerate(xs)]
    return bb.call_te(te_meshgrid, *_tensors_of(bb, call.args[0]), primfunc_name_hint="meshgrid")


@register_legalize("relax.one_hot")
def _one_hot(bb: BlockBuilder, call: Call) -> Expr:
    depth, on, off = call.attrs["depth"], call.args[1].value, call.args[2].value

    def te_one_hot(indices: te.Tensor) -> te.Tensor:
        axis = call.attrs["axis"] % (indices.ndim + 1)
        shape = list(indices.shape)
        shape.insert(axis, tir.IntImm("int64", depth))

        def element(*i: Any) -> Any:
            rest = i[:axis] + i[axis + 1:]
            return tir.Select(tir.Cast("int64", indices(*rest)) == tir.Cast("int64", i[axis]), on, off)
        return te.compute(shape, element, name="T_one_hot")
    return bb.call_te(te_one_hot, call.args[0], primfunc_name_hint="one_hot")
