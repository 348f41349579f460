"""Convolutions (``relax.nn.conv1d/2d/3d`` and the transposed ``conv1d_transpose`` /
``conv2d_transpose``): one struct-info rule for any layout.  Data layouts name N, C and the
spatial dimensions (``NCW``, ``NCHW``, ``NHWC``), kernel layouts O, I and the same spatial
letters (``OIW``, ``OIHW``, ``HWIO``); the output is laid out as the data."""

from __future__ import annotations

from typing import Any

from ....topi.nn.conv2d import conv_out_size
from ....topi.nn.conv_transpose import conv_transpose_out_size
from ...expr import Call, Expr
from ...struct_info import StructInfo, StructInfoError, TensorStructInfo, dim_text, shape_text
from .._utils import const_dim, same_dtype
from ..layout import layout_axes, shape_from_primal, shape_to_primal
from ..registry import OpPattern, check_num_args, make_call, register, tensor_arg

__all__ = ["conv1d", "conv2d", "conv3d", "conv1d_transpose", "conv2d_transpose"]


def _check_layout(op: str, layout: str, fixed: str, dim: int, what: str) -> list[str]:
    spatial = [ch for ch in layout if ch not in fixed]
    if len(layout) != dim + 2 or any(ch not in layout for ch in fixed) or len(set(layout)) != len(layout) \
            or any(ch not in "DHW" for ch in spatial):
        raise StructInfoError(f"{op}: {what} layout {layout!r} must name {fixed[0]}, {fixed[1]} and "
                              f"{dim} spatial dimension{'s' if dim > 1 else ''} once each")
    return spatial


def given_out_dtype(attrs: Any) -> str | None:
    """The out_dtype a convolution was given, or None for "void" (the operands' dtype), as TVM's
    attrs, which store an unset out_dtype as void."""
    dt = attrs.get("out_dtype")
    return None if dt in (None, "", "void") else str(dt)


def conv_sinfo(call: Call, op: str, dim: int) -> StructInfo:
    """The output of an N-d convolution: its layout the data's, channels the kernel's O,
    spatial sizes ``(d + pad - (k - 1) * dilation - 1) // stride + 1``."""
    check_num_args(call, op, 2)
    x, w = tensor_arg(call, 0, op, "data"), tensor_arg(call, 1, op, "weight")
    a = call.attrs
    dl, kl, ol = a["data_layout"], a["kernel_layout"], a["out_layout"]
    if any(not layout.isalpha() or not layout.isupper() for layout in (dl, kl, ol)):
        return _blocked_conv_sinfo(call, op, dim, x, w)
    spatial = _check_layout(op, dl, "NC", dim, "data")
    kspatial = _check_layout(op, kl, "OI", dim, "kernel")
    if sorted(spatial) != sorted(kspatial):
        raise StructInfoError(f"{op}: the kernel layout {kl!r} and the data layout {dl!r} name different "
                              "spatial dimensions")
    if ol != dl:
        raise NotImplementedError(f"{op}: out_layout {ol!r} different from data_layout {dl!r} is not supported")
    out_dtype = given_out_dtype(a) or same_dtype(op, [x, w])
    for name, t in (("data", x), ("weight", w)):
        if t.ndim not in (-1, dim + 2):
            raise StructInfoError(f"{op}: {name} must be {dim + 2}-D, got shape {shape_text(t.shape_values)}")
    xs, ws = x.shape_values, w.shape_values
    if xs is None or ws is None:
        return TensorStructInfo(None, out_dtype, None, dim + 2)
    groups = a["groups"]
    c, cg, o = xs[dl.index("C")], ws[kl.index("I")], ws[kl.index("O")]
    if const_dim(c) is not None and const_dim(cg) is not None and const_dim(c) != const_dim(cg) * groups:
        raise StructInfoError(f"{op}: data {shape_text(xs)} has {const_dim(c)} channels but weight "
                              f"{shape_text(ws)} expects {dim_text(cg)} per group x {groups} groups")
    if const_dim(o) is not None and const_dim(o) % groups:
        raise StructInfoError(f"{op}: {const_dim(o)} output channels of weight {shape_text(ws)} do not "
                              f"divide into {groups} groups")
    pad = a["padding"]
    out = list(xs)
    out[dl.index("C")] = o
    for j, ch in enumerate(spatial):
        d, k = xs[dl.index(ch)], ws[kl.index(ch)]
        size = conv_out_size(d, k, pad[j], pad[j + dim], a["strides"][j], a["dilation"][j])
        if const_dim(size) is not None and const_dim(size) <= 0:
            raise StructInfoError(f"{op}: the kernel {shape_text(ws)} does not fit the padded data "
                                  f"{shape_text(xs)} (output size {const_dim(size)} along {ch})")
        out[dl.index(ch)] = size
    return TensorStructInfo(out, out_dtype)


def _blocked_conv_sinfo(call: Call, op: str, dim: int, x: TensorStructInfo, w: TensorStructInfo) -> StructInfo:
    """A convolution whose layouts block an axis (``NCHW4c`` data, ``OIHW4o`` kernel): the
    output computed on the whole axes, then laid out as ``out_layout``."""
    a = call.attrs
    dl, kl, ol = a["data_layout"], a["kernel_layout"], a["out_layout"]
    primal = [ch for ch in dl if ch.isupper()]
    spatial = [ch for ch in primal if ch not in "NC"]
    if sorted(primal) != sorted("NC" + "DHW"[3 - dim:]) or sorted(ch for ch in kl if ch.isupper()) != \
            sorted("OI" + "DHW"[3 - dim:]):
        raise StructInfoError(f"{op}: layouts {dl!r}/{kl!r} must name N, C (O, I) and {dim} spatial dimensions")
    out_dtype = given_out_dtype(a) or same_dtype(op, [x, w])
    if x.shape_values is None or w.shape_values is None:
        return TensorStructInfo(None, out_dtype, None, len(layout_axes(ol)))
    xp, wp = shape_to_primal(dl, list(x.shape_values)), shape_to_primal(kl, list(w.shape_values))
    pad = a["padding"]
    out = {"N": xp["N"], "C": wp["O"]}
    for j, ch in enumerate(spatial):
        out[ch] = conv_out_size(xp[ch], wp[ch], pad[j], pad[j + dim], a["strides"][j], a["dilation"][j])
    return TensorStructInfo(shape_from_primal(ol, out), out_dtype)


def _per_dim(v: Any, dim: int, what: str) -> tuple:
    t = (int(v),) * dim if isinstance(v, int) else tuple(int(x) for x in v)
    if len(t) == 1:
        t = t * dim
    if len(t) != dim:
        raise ValueError(f"{what} must be an int or {dim} values, got {v!r}")
    return t


def conv_attrs(dim: int, name: str, strides: Any, padding: Any, dilation: Any, groups: int, data_layout: str,
               kernel_layout: str, out_layout: str | None, out_dtype: str | None) -> dict:
    """The attributes of an N-d convolution call; padding becomes (befores..., afters...)."""
    p = (int(padding),) * dim if isinstance(padding, int) else tuple(int(x) for x in padding)
    if len(p) == 1:
        p = p * dim
    if len(p) == dim:
        p = p + p
    if len(p) != 2 * dim:
        raise ValueError(f"{name} padding must have 1, {dim} or {2 * dim} values, got {padding!r}")
    return {"strides": _per_dim(strides, dim, f"{name} strides"), "padding": p,
            "dilation": _per_dim(dilation, dim, f"{name} dilation"), "groups": int(groups),
            "data_layout": data_layout, "kernel_layout": kernel_layout,
            "out_layout": out_layout or data_layout,
            "out_dtype": "void" if out_dtype in (None, "") else str(out_dtype)}


@register("relax.nn.conv1d", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=2)
def _infer_conv1d(call: Call, ctx: Any) -> StructInfo:
    """1-D convolution (NCW data with OIW weight by default)."""
    return conv_sinfo(call, "relax.nn.conv1d", 1)


def conv1d(data: Expr, weight: Expr, strides: Any = 1, padding: Any = 0, dilation: Any = 1, groups: int = 1,
           data_layout: str = "NCW", kernel_layout: str = "OIW", out_layout: str | None = None,
           out_dtype: str | None = None) -> Call:
    """1-D convolution; ``padding`` is an int or (left, right)."""
    return make_call("relax.nn.conv1d", data, weight, attrs=conv_attrs(
        1, "conv1d", strides, padding, dilation, groups, data_layout, kernel_layout, out_layout, out_dtype))


@register("relax.nn.conv2d", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=2)
def _infer_conv2d(call: Call, ctx: Any) -> StructInfo:
    """2-D convolution (NCHW data with OIHW weight by default; NHWC, HWIO ... too)."""
    return conv_sinfo(call, "relax.nn.conv2d", 2)


def conv2d(data: Expr, weight: Expr, strides: Any = (1, 1), padding: Any = (0, 0), dilation: Any = (1, 1),
           groups: int = 1, data_layout: str = "NCHW", kernel_layout: str = "OIHW",
           out_layout: str | None = None, out_dtype: str | None = None) -> Call:
    """2-D convolution of ``data`` with ``weight`` (NCHW and OIHW by default); ``padding``
    is an int, (h, w) or (top, left, bottom, right)."""
    return make_call("relax.nn.conv2d", data, weight, attrs=conv_attrs(
        2, "conv2d", strides, padding, dilation, groups, data_layout, kernel_layout, out_layout, out_dtype))


@register("relax.nn.conv3d", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=2)
def _infer_conv3d(call: Call, ctx: Any) -> StructInfo:
    """3-D convolution (NCDHW data with OIDHW weight by default)."""
    return conv_sinfo(call, "relax.nn.conv3d", 3)


def conv3d(data: Expr, weight: Expr, strides: Any = 1, padding: Any = 0, dilation: Any = 1, groups: int = 1,
           data_layout: str = "NCDHW", kernel_layout: str = "OIDHW", out_layout: str | None = None,
           out_dtype: str | None = None) -> Call:
    """3-D convolution; ``padding`` is an int, 3 values or (front, top, left, back, bottom, right)."""
    return make_call("relax.nn.conv3d", data, weight, attrs=conv_attrs(
        3, "conv3d", strides, padding, dilation, groups, data_layout, kernel_layout, out_layout, out_dtype))


# -- transposed convolution ----------------------------------------------------------------------

def conv_transpose_sinfo(call: Call, op: str, dim: int) -> StructInfo:
    """The output of an N-d transposed convolution of NC... data with an IO... kernel."""
    check_num_args(call, op, 2)
    x, w = tensor_arg(call, 0, op, "data"), tensor_arg(call, 1, op, "weight")
    a = call.attrs
    want_data, want_kernel = "NC" + "DHW"[3 - dim:], "IO" + "DHW"[3 - dim:]
    if a["data_layout"] != want_data or a["kernel_layout"] != want_kernel or a["out_layout"] != want_data:
        raise NotImplementedError(f"{op}: only {want_data} data with an {want_kernel} kernel is supported, got "
                                  f"{a['data_layout']}/{a['kernel_layout']} (output {a['out_layout']})")
    if any(d != 1 for d in a["dilation"]):
        raise NotImplementedError(f"{op}: dilation {list(a['dilation'])} is not supported (only 1)")
    out_dtype = given_out_dtype(a) or same_dtype(op, [x, w])
    for name, t in (("data", x), ("weight", w)):
        if t.ndim not in (-1, dim + 2):
            raise StructInfoError(f"{op}: {name} must be {dim + 2}-D, got shape {shape_text(t.shape_values)}")
    for j, (s, p) in enumerate(zip(a["strides"], a["output_padding"])):
        if p >= s:
            raise StructInfoError(f"{op}: output_padding {p} must be smaller than the stride {s} (axis {j})")
    xs, ws = x.shape_values, w.shape_values
    if xs is None or ws is None:
        return TensorStructInfo(None, out_dtype, None, dim + 2)
    groups = a["groups"]
    if const_dim(xs[1]) is not None and const_dim(ws[0]) is not None and const_dim(xs[1]) != const_dim(ws[0]):
        raise StructInfoError(f"{op}: data {shape_text(xs)} has {const_dim(xs[1])} channels but weight "
                              f"{shape_text(ws)} takes {const_dim(ws[0])}")
    out = [xs[0], simplify_mul(ws[1], groups)]
    pad = a["padding"]
    for j in range(dim):
        out.append(conv_transpose_out_size(xs[2 + j], ws[2 + j], pad[j], pad[dim + j], a["strides"][j], 1,
                                           a["output_padding"][j]))
    return TensorStructInfo(out, out_dtype)


def simplify_mul(d: Any, k: int) -> Any:
    return d if k == 1 else (d * k if const_dim(d) is None else type(d)("int64", const_dim(d) * k))


def conv_transpose_attrs(dim: int, name: str, strides: Any, padding: Any, output_padding: Any, dilation: Any,
                         groups: int, data_layout: str, kernel_layout: str, out_layout: str | None,
                         out_dtype: str | None) -> dict:
    attrs = conv_attrs(dim, name, strides, padding, dilation, groups, data_layout, kernel_layout, out_layout,
                       out_dtype)
    attrs["output_padding"] = _per_dim(output_padding, dim, f"{name} output_padding")
    return attrs


@register("relax.nn.conv1d_transpose", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=2)
def _infer_conv1d_transpose(call: Call, ctx: Any) -> StructInfo:
    """1-D transposed convolution (NCW data, IOW weight)."""
    return conv_transpose_sinfo(call, "relax.nn.conv1d_transpose", 1)


@register("relax.nn.conv2d_transpose", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=2)
def _infer_conv2d_transpose(call: Call, ctx: Any) -> StructInfo:
    """2-D transposed convolution (NCHW data, IOHW weight)."""
    return conv_transpose_sinfo(call, "relax.nn.conv2d_transpose", 2)


def conv1d_transpose(data: Expr, weight: Expr, strides: Any = 1, padding: Any = 0, output_padding: Any = 0,
                     dilation: Any = 1, groups: int = 1, data_layout: str = "NCW", kernel_layout: str = "IOW",
                     out_layout: str | None = None, out_dtype: str | None = None) -> Call:
    """1-D transposed convolution ("deconvolution")."""
    return make_call("relax.nn.conv1d_transpose", data, weight, attrs=conv_transpose_attrs(
        1, "conv1d_transpose", strides, padding, output_padding, dilation, groups, data_layout, kernel_layout,
        out_layout, out_dtype))


def conv2d_transpose(data: Expr, weight: Expr, strides: Any = (1, 1), padding: Any = (0, 0),
                     output_padding: Any = (0, 0), dilation: Any = (1, 1), groups: int = 1,
                     data_layout: str = "NCHW", kernel_layout: str = "IOHW", out_layout: str | None = None,
                     out_dtype: str | None = None) -> Call:
    """2-D transposed convolution ("deconvolution")."""
    return make_call("relax.nn.conv2d_transpose", data, weight, attrs=conv_transpose_attrs(
        2, "conv2d_transpose", strides, padding, output_padding, dilation, groups, data_layout, kernel_layout,
        out_layout, out_dtype))
