"""Each operator's layout rule for ConvertLayout (TVM's ``FRelaxInferLayout``): given the
call, the desired layouts and the layouts its arguments are in now, which layouts the
arguments must come in, what the results' layouts are, and the attributes rewritten to
match (an axis renumbered, a ``data_layout`` renamed).  Registered as the op attribute
``FRelaxInferLayout``; an op without one makes ConvertLayout restore its inputs' layouts."""

from __future__ import annotations

from typing import Any, Callable

from ...ir.op import Op
from ...tir.op_table import ELEMENTWISE
from ..expr import Call, struct_info_of
from ..struct_info import TensorStructInfo
from .infer_layout_utils import (
    InferLayoutOutput,
    can_prove_layout_transform,
    find_axis,
    follow_decision,
    get_nlayout,
    initial_decision,
    initial_layout,
    is_packed,
    layout_axes,
    ndim_primal,
    transpose_like,
    transpose_sub_layout_like,
)

__all__ = ["register_infer_layout"]

Rule = Callable[[Call, dict, dict], InferLayoutOutput]


def register_infer_layout(*op_names: str) -> Callable[[Rule], Rule]:
    def wrap(rule: Rule) -> Rule:
        for name in op_names:
            Op.get(name).set_attr("FRelaxInferLayout", rule)
        return rule
    return wrap


def _layout(layouts: dict, call: Call, i: int) -> str:
    return get_nlayout(layouts, call.args[i])


def _ndim(call: Call, i: int) -> int:
    return struct_info_of(call.args[i]).ndim


def _shape(call: Call, i: int) -> list | None:
    sinfo = struct_info_of(call.args[i])
    return list(sinfo.shape_values) if isinstance(sinfo, TensorStructInfo) and sinfo.shape_values is not None \
        else None


def _plain(layout: str, ndim: int) -> str:
    """``layout`` unless it blocks an axis (most rules cannot follow blocks): then initial."""
    return initial_layout(ndim) if is_packed(layout) else layout


def _attrs(call: Call, **changes: Any) -> dict:
    return dict(call.attrs or {}, **changes)


# -- element-wise ------------------------------------------------------------------------------

_UNARY = [f"relax.{r.name}" for r in ELEMENTWISE if r.arity == 1] + [
    "relax.astype", "relax.nn.relu", "relax.nn.gelu", "relax.nn.gelu_tanh", "relax.nn.silu"]
_BINARY = [f"relax.{r.name}" for r in ELEMENTWISE if r.arity == 2]


@register_infer_layout(*_UNARY)
def _unary(call: Call, desired: dict, layouts: dict) -> InferLayoutOutput:
    layout = _layout(layouts, call, 0)
    return InferLayoutOutput([layout], [layout], call.attrs)


@register_infer_layout(*_BINARY)
def _binary(call: Call, desired: dict, layouts: dict) -> InferLayoutOutput:
    """Both operands follow the lower-rank one's layout (broadcast keeps leading axes); a
    blocked layout is kept when the other operand's shape splits the same way."""
    l1, l2 = _layout(layouts, call, 0), _layout(layouts, call, 1)
    n1, n2 = _ndim(call, 0), _ndim(call, 1)
    s1, s2 = _shape(call, 0), _shape(call, 1)
    if (is_packed(l1) or is_packed(l2)) and ndim_primal(l1) == ndim_primal(l2):
        if len(layout_axes(l1)) >= len(layout_axes(l2)) and s2 is not None:
            if can_prove_layout_transform(initial_layout(len(s2)), l1, s2):
                return InferLayoutOutput([l1, l1], [l1], call.attrs)
        elif s1 is not None and can_prove_layout_transform(initial_layout(len(s1)), l2, s1):
            return InferLayoutOutput([l2, l2], [l2], call.attrs)
    if n1 <= n2:
        if n1 == 0:
            return InferLayoutOutput(["", l2], [l2], call.attrs)
        out = follow_decision(l1, n2)
        return InferLayoutOutput([l1, out], [out], call.attrs)
    if n2 == 0:
        return InferLayoutOutput([l1, ""], [l1], call.attrs)
    out = follow_decision(l2, n1)
    return InferLayoutOutput([out, l2], [out], call.attrs)


@register_infer_layout("relax.ewise_fma")
def _ewise_fma(call: Call, desired: dict, layouts: dict) -> InferLayoutOutput:
    l0, l1, l2 = (_layout(layouts, call, i) for i in range(3))
    layout = l1 if l1 == l2 else l0
    return InferLayoutOutput([layout] * 3, [layout], call.attrs)


# -- convolutions and pooling ---------------------------------------------------------------------

def _desired(desired: dict, op: str) -> tuple[str, str, str] | None:
    want = desired.get(op)
    if want is None:
        return None
    want = [str(w) for w in want]
    return want[0], want[1], want[2] if len(want) == 3 else want[0]


def _conv_follow(call: Call, data: str, weight: str, ndim: int) -> InferLayoutOutput:
    """No desired layout: the convolution follows its data's and weight's layouts."""
    a = call.attrs
    init = initial_layout(ndim)
    attrs = _attrs(call, data_layout=transpose_like(a["data_layout"], init, data),
                   kernel_layout=transpose_like(a["kernel_layout"], init, weight),
                   out_layout=transpose_like(a["out_layout"], init, data))
    return InferLayoutOutput([data, weight], [data], attrs)


def _conv_rule(op: str, ndim: int) -> Rule:
    def rule(call: Call, desired: dict, layouts: dict) -> InferLayoutOutput:
        a = call.attrs
        want = _desired(desired, op)
        init = initial_layout(ndim)
        if want is None:
            return _conv_follow(call, _layout(layouts, call, 0), _layout(layouts, call, 1), ndim)
        if any(is_packed(w) for w in want):
            raise ValueError(f"ConvertLayout: {op} converts by swapping axes only, not to {want}")
        data, weight, out = (transpose_like(init, src, dst) for src, dst in
                             zip((a["data_layout"], a["kernel_layout"], a["out_layout"]), want))
        attrs = _attrs(call, data_layout=want[0], kernel_layout=want[1], out_layout=want[2])
        return InferLayoutOutput([data, weight], [out], attrs)
    return rule


for _op, _nd in (("relax.nn.conv1d", 3), ("relax.nn.conv3d", 5), ("relax.nn.conv1d_transpose", 3),
                 ("relax.nn.conv2d_transpose", 4)):
    register_infer_layout(_op)(_conv_rule(_op, _nd))


@register_infer_layout("relax.nn.conv2d")
def _conv2d(call: Call, desired: dict, layouts: dict) -> InferLayoutOutput:
    """A desired layout of the same rank is an axis swap; a blocked one (NCHW4c) is taken
    when both the data's and the weight's channels divide by their blocks."""
    a = call.attrs
    data, weight = _layout(layouts, call, 0), _layout(layouts, call, 1)
    want = _desired(desired, "relax.nn.conv2d")
    init = initial_layout(4)
    if want is not None:
        lengths = [len(layout_axes(w)) for w in want]
        if lengths == [len(layout_axes(a[k])) for k in ("data_layout", "kernel_layout", "out_layout")]:
            data, weight, out = (transpose_like(init, src, dst) for src, dst in
                                 zip((a["data_layout"], a["kernel_layout"], a["out_layout"]), want))
            attrs = _attrs(call, data_layout=want[0], kernel_layout=want[1], out_layout=want[2])
            return InferLayoutOutput([data, weight], [out], attrs)
        ds, ws = _shape(call, 0), _shape(call, 1)
        if ds is not None and ws is not None and can_prove_layout_transform(a["data_layout"], want[0], ds) \
                and can_prove_layout_transform(a["kernel_layout"], want[1], ws):
            data, weight, out = (transpose_sub_layout_like(init, src, dst) for src, dst in
                                 zip((a["data_layout"], a["kernel_layout"], a["out_layout"]), want))
            attrs = _attrs(call, data_layout=want[0], kernel_layout=want[1], out_layout=want[2])
            return InferLayoutOutput([data, weight], [out], attrs)
        data = weight = init
    return _conv_follow(call, data, weight, 4)


def _pool_rule(ndim: int) -> Rule:
    def rule(call: Call, desired: dict, layouts: dict) -> InferLayoutOutput:
        a = call.attrs
        layout = _layout(layouts, call, 0)
        init = initial_layout(ndim)
        if is_packed(layout):
            want = transpose_sub_layout_like(a["layout"], init, layout)
            shape = _shape(call, 0)
            if ndim == 4 and shape is not None and can_prove_layout_transform(a["layout"], want, shape):
                return InferLayoutOutput([layout], [layout], _layout_attrs(call, want))
            layout = init
        return InferLayoutOutput([layout], [layout], _layout_attrs(call, transpose_like(a["layout"], init, layout)))
    return rule


def _layout_attrs(call: Call, layout: str) -> dict:
    changes = {"layout": layout}
    if "out_layout" in call.attrs:
        changes["out_layout"] = layout
    return _attrs(call, **changes)


register_infer_layout("relax.nn.max_pool2d", "relax.nn.avg_pool2d", "relax.nn.adaptive_avg_pool2d")(_pool_rule(4))


# -- normalizations and softmax -------------------------------------------------------------------

@register_infer_layout("relax.nn.softmax")
def _softmax(call: Call, desired: dict, layouts: dict) -> InferLayoutOutput:
    layout = _plain(_layout(layouts, call, 0), _ndim(call, 0))
    return InferLayoutOutput([layout], [layout], _attrs(call, axis=find_axis(layout, call.attrs["axis"])))


@register_infer_layout("relax.nn.prelu")
def _prelu(call: Call, desired: dict, layouts: dict) -> InferLayoutOutput:
    layout = _plain(_layout(layouts, call, 0), _ndim(call, 0))
    alpha = _layout(layouts, call, 1)
    return InferLayoutOutput([layout, alpha], [layout], _attrs(call, axis=find_axis(layout, call.attrs["axis"])))


def _initials(call: Call, count: int) -> list[str]:
    return [initial_decision(_ndim(call, i)) for i in range(count)]


@register_infer_layout("relax.nn.batch_norm")
def _batch_norm(call: Call, desired: dict, layouts: dict) -> InferLayoutOutput:
    inits = _initials(call, 5)
    ndim = _ndim(call, 0)
    layout = _plain(_layout(layouts, call, 0), ndim)
    attrs = _attrs(call, axis=find_axis(layout, (call.attrs["axis"] + ndim) % ndim))
    return InferLayoutOutput([layout] + inits[1:], [[layout, inits[3], inits[4]]], attrs)


@register_infer_layout("relax.nn.layer_norm")
def _layer_norm(call: Call, desired: dict, layouts: dict) -> InferLayoutOutput:
    inits = _initials(call, 3)
    ndim = _ndim(call, 0)
    layout = _layout(layouts, call, 0)
    axes = tuple(find_axis(layout, (ax + ndim) % ndim) for ax in call.attrs["axes"])
    return InferLayoutOutput([layout] + inits[1:], [layout], _attrs(call, axes=axes))


@register_infer_layout("relax.nn.group_norm")
def _group_norm(call: Call, desired: dict, layouts: dict) -> InferLayoutOutput:
    inits = _initials(call, 3)
    layout = _layout(layouts, call, 0)
    a = call.attrs
    attrs = _attrs(call, axes=tuple(find_axis(layout, ax) for ax in a["axes"]),
                   channel_axis=find_axis(layout, a["channel_axis"]))
    return InferLayoutOutput([layout] + inits[1:], [layout], attrs)


@register_infer_layout("relax.nn.rms_norm")
def _rms_norm(call: Call, desired: dict, layouts: dict) -> InferLayoutOutput:
    inits = _initials(call, 2)
    layout = _layout(layouts, call, 0)
    attrs = _attrs(call, axes=tuple(find_axis(layout, ax) for ax in call.attrs["axes"]))
    return InferLayoutOutput([layout] + inits[1:], [layout], attrs)


# -- manipulation ----------------------------------------------------------------------------------

@register_infer_layout("relax.concat")
def _concat(call: Call, desired: dict, layouts: dict) -> InferLayoutOutput:
    """All inputs take the first blocked layout if every input's shape splits that way, else
    the first plain one."""
    nlayout = _layout(layouts, call, 0)
    layout = nlayout[0]
    for cand in nlayout:
        if not is_packed(cand):
            continue
        fields = struct_info_of(call.args[0]).fields
        for cur, sinfo in zip(nlayout, fields):
            if sinfo.shape_values is None or not can_prove_layout_transform(cur, cand, list(sinfo.shape_values)):
                cand = next((x for x in nlayout if not is_packed(x)), cand)
                break
        layout = cand
        break
    axis = call.attrs["axis"]
    attrs = _attrs(call, axis=find_axis(layout, 0 if axis is None else axis))
    return InferLayoutOutput([[layout] * len(nlayout)], [layout], attrs)


@register_infer_layout("relax.expand_dims")
def _expand_dims(call: Call, desired: dict, layouts: dict) -> InferLayoutOutput:
    ndim = _ndim(call, 0)
    existing = _plain(_layout(layouts, call, 0), ndim)
    out_ndim = ndim + len(call.attrs["axis"])
    new = {(ax + out_ndim) % out_ndim for ax in call.attrs["axis"]}
    kept = "".join(chr(ord("A") + i) for i in range(out_ndim) if i not in new)
    kept = transpose_like(kept, initial_layout(ndim), existing)
    it = iter(kept)
    out = "".join(chr(ord("A") + i) if i in new else next(it) for i in range(out_ndim))
    return InferLayoutOutput([existing], [out], call.attrs)


@register_infer_layout("relax.permute_dims")
def _permute_dims(call: Call, desired: dict, layouts: dict) -> InferLayoutOutput:
    """The permutation composed with the input's layout: the result is in initial layout."""
    ndim = _ndim(call, 0)
    existing = _plain(_layout(layouts, call, 0), ndim)
    axes = call.attrs["axes"]
    order = list(range(ndim - 1, -1, -1)) if axes is None else [(a + ndim) % ndim for a in axes]
    order_str = "".join(chr(ord("A") + a) for a in order)
    new_axes = transpose_like(initial_layout(ndim), existing, order_str)
    attrs = _attrs(call, axes=tuple(ord(ch) - ord("A") for ch in new_axes))
    return InferLayoutOutput([existing], [initial_layout(ndim)], attrs)


@register_infer_layout("relax.split")
def _split(call: Call, desired: dict, layouts: dict) -> InferLayoutOutput:
    ndim = _ndim(call, 0)
    existing = _layout(layouts, call, 0)
    out_fields = struct_info_of(call).fields
    if is_packed(existing):
        for sinfo in out_fields:
            if sinfo.shape_values is None or not can_prove_layout_transform(
                    initial_layout(ndim), existing, list(sinfo.shape_values)):
                existing = initial_layout(ndim)
                break
    attrs = _attrs(call, axis=find_axis(existing, call.attrs["axis"]))
    return InferLayoutOutput([existing], [[existing] * len(out_fields)], attrs)


def _marked(ndim: int, marked: set, mark: str) -> str:
    """``ndim`` characters: ``mark`` at the marked axes, the others lettered A, B ... in order."""
    out, j = [], 0
    for i in range(ndim):
        if i in marked:
            out.append(mark)
        else:
            out.append(chr(ord("A") + j))
            j += 1
    return "".join(out)


@register_infer_layout("relax.squeeze")
def _squeeze(call: Call, desired: dict, layouts: dict) -> InferLayoutOutput:
    ndim = _ndim(call, 0)
    shape = _shape(call, 0)
    if shape is None:
        raise ValueError("ConvertLayout: squeeze needs a known input shape")
    axis = call.attrs["axis"]
    if axis is None:
        axis = [i for i, d in enumerate(shape) if getattr(d, "value", None) == 1]
    existing = _plain(_layout(layouts, call, 0), ndim)
    new_str = transpose_like(_marked(ndim, {(a + ndim) % ndim for a in axis}, "1"), initial_layout(ndim), existing)
    attrs = _attrs(call, axis=tuple(i for i, ch in enumerate(new_str) if ch == "1"))
    return InferLayoutOutput([existing], [new_str.replace("1", "")], attrs)


@register_infer_layout("relax.stack")
def _stack(call: Call, desired: dict, layouts: dict) -> InferLayoutOutput:
    nlayout = _layout(layouts, call, 0)
    layout = nlayout[0]
    axis = call.attrs["axis"]
    out = layout[:axis] + "S" + layout[axis:]
    return InferLayoutOutput([[layout] * len(nlayout)], [out], _attrs(call, axis=find_axis(layout, axis)))


@register_infer_layout("relax.repeat")
def _repeat(call: Call, desired: dict, layouts: dict) -> InferLayoutOutput:
    ndim = _ndim(call, 0)
    existing = _plain(_layout(layouts, call, 0), ndim)
    axis = call.attrs["axis"]
    if axis is None:  # flattened: the result is 1-d
        return InferLayoutOutput([existing], [initial_layout(1)], call.attrs)
    new_str = transpose_like(_marked(ndim, {(axis + ndim) % ndim}, "1"), initial_layout(ndim), existing)
    return InferLayoutOutput([existing], [existing], _attrs(call, axis=new_str.index("1")))


@register_infer_layout("relax.tile")
def _tile(call: Call, desired: dict, layouts: dict) -> InferLayoutOutput:
    """The repeats reordered with the axes (fewer repeats than axes count from the right;
    more add leading axes, which stay first)."""
    ndim = _ndim(call, 0)
    existing = _plain(_layout(layouts, call, 0), ndim)
    reps = list(call.attrs["repeats"])
    init = initial_layout(ndim)
    if len(reps) <= ndim:
        reps = [1] * (ndim - len(reps)) + reps
        new = [reps[init.index(ch)] for ch in existing]
        return InferLayoutOutput([existing], [existing], _attrs(call, repeats=tuple(new)))
    extra = len(reps) - ndim
    new = reps[:extra] + [reps[init.index(ch) + extra] for ch in existing]
    return InferLayoutOutput([existing], [follow_decision(existing, len(reps))], _attrs(call, repeats=tuple(new)))


@register_infer_layout("relax.flip")
def _flip(call: Call, desired: dict, layouts: dict) -> InferLayoutOutput:
    ndim = _ndim(call, 0)
    existing = _plain(_layout(layouts, call, 0), ndim)
    axis = (call.attrs["axis"] + ndim) % ndim
    return InferLayoutOutput([existing], [existing], _attrs(call, axis=find_axis(existing, axis)))


@register_infer_layout("relax.gather_elements")
def _gather_elements(call: Call, desired: dict, layouts: dict) -> InferLayoutOutput:
    data, indices = _layout(layouts, call, 0), _layout(layouts, call, 1)
    layout = data
    if data == initial_layout(len(layout_axes(data))) and indices != initial_layout(len(layout_axes(indices))):
        layout = indices
    layout = _plain(layout, _ndim(call, 0))
    attrs = _attrs(call, axis=find_axis(layout, call.attrs["axis"]))
    return InferLayoutOutput([layout, layout], [layout], attrs)


@register_infer_layout("relax.scatter_elements")
def _scatter_elements(call: Call, desired: dict, layouts: dict) -> InferLayoutOutput:
    data, indices, updates = (_layout(layouts, call, i) for i in range(3))
    layout = indices if indices == updates else data
    layout = _plain(layout, _ndim(call, 0))
    attrs = _attrs(call, axis=find_axis(layout, call.attrs["axis"]))
    return InferLayoutOutput([layout] * 3, [layout], attrs)


@register_infer_layout("relax.strided_slice")
def _strided_slice(call: Call, desired: dict, layouts: dict) -> InferLayoutOutput:
    existing = _plain(_layout(layouts, call, 0), _ndim(call, 0))
    axes = tuple(find_axis(existing, a) for a in call.attrs["axes"])
    return InferLayoutOutput([existing], [existing], _attrs(call, axes=axes))


@register_infer_layout("relax.sum", "relax.mean", "relax.max", "relax.min", "relax.prod", "relax.std",
                       "relax.variance")
def _statistical(call: Call, desired: dict, layouts: dict) -> InferLayoutOutput:
    """The reduced axes renumbered; without keepdims the result's layout drops them (and the
    blocks of a blocked axis with them)."""
    ndim = _ndim(call, 0)
    axis = call.attrs["axis"]
    axes = range(ndim) if axis is None else [(a + ndim) % ndim for a in axis]
    existing = _layout(layouts, call, 0)
    ref = transpose_sub_layout_like(_marked(ndim, set(axes), "#"), initial_layout(ndim), existing)
    letters = "".join(ch for ch in ref if not ch.isdigit())
    new_axis = tuple(i for i, ch in enumerate(letters) if ch == "#")
    out = "".join(ch for i, ch in enumerate(ref)
                  if ch != "#" and not (ch.isdigit() and i + 1 < len(ref) and ref[i + 1] == "#"))
    out_layout = existing if call.attrs["keepdims"] else out
    return InferLayoutOutput([existing], [out_layout], _attrs(call, axis=new_axis))


@register_infer_layout("relax.image.resize2d")
def _resize2d(call: Call, desired: dict, layouts: dict) -> InferLayoutOutput:
    a = call.attrs
    want = desired.get("relax.image.resize2d")
    init = initial_layout(4)
    if want is not None:
        want = str(want[0])
        if is_packed(want):
            raise ValueError(f"ConvertLayout: resize2d converts by swapping axes only, not to {want}")
        data, attrs = transpose_like(init, a["layout"], want), _attrs(call, layout=want)
    else:
        data = _plain(_layout(layouts, call, 0), 4)
        attrs = _attrs(call, layout=transpose_like(a["layout"], init, data))
    return InferLayoutOutput([data, get_nlayout({}, call.args[1])], [data], attrs)
