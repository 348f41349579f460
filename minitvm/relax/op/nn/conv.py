"""Convolutions (``relax.nn.conv1d/2d/3d`` and the transposed ``conv1d_transpose`` /
``conv2d_transpose``): one struct-info rule for any layout.  Data layouts name N, C and the
spatial dimensions (``NCW``, ``NCHW``, ``NHWC``), kernel layouts O, I and the same spatial
letters (``OIW``, ``OIHW``, ``HWIO``); the output is laid out as the data."""

from __future__ import annotations

from typing import Any

from ....tir import op as _t
from ....topi.nn.conv2d import conv_out_size
from ....topi.nn.conv_transpose import conv_transpose_out_size
from ...expr import Call, Expr, struct_info_of
from ...struct_info import StructInfo, StructInfoError, StructInfoTypeError, TensorStructInfo, dim_text, shape_text
from .._utils import _ANALYZER, AttrInt, const_dim, simplify
from ..binary import _out_vdevice
from ..layout import layout_axes, shape_from_primal, shape_to_primal
from ..registry import OpPattern, check_num_args, make_call, register, tensor_arg

__all__ = ["conv1d", "conv2d", "conv3d", "conv1d_transpose", "conv2d_transpose"]


def check_conv_layout(op: str, layout: str, target: str, what: str) -> int:
    """The number of dimensions of ``layout``, which must name ``target``'s axes once each,
    a blocked axis (``16c``) only beside its whole one (``C``), as TVM's convertible layouts."""
    axes = layout_axes(layout)
    primal = [name for name, _ in axes if name.isupper()]
    subs = [name for name, _ in axes if name.islower()]
    well_formed = "".join(f"{f or ''}{n}" for n, f in axes) == layout and \
        all((f is None) == n.isupper() and (f is None or f > 0) for n, f in axes)
    if not well_formed or sorted(primal) != sorted(target) or len(set(subs)) != len(subs) or \
            any(name.upper() not in primal for name in subs):
        raise StructInfoError(f"{op}: the {what} layout {layout!r} cannot be converted to {target!r} "
                              f"(it must name each of {', '.join(target)} once, blocks as 16c beside C)")
    return len(axes)


def given_out_dtype(attrs: Any) -> str | None:
    """The out_dtype a convolution was given, or None for "void" (the operands' dtype), as TVM's
    attrs, which store an unset out_dtype as void."""
    dt = attrs.get("out_dtype")
    return None if dt in (None, "", "void") else str(dt)


def _binary_out_dtype(op: str, x: TensorStructInfo, w: TensorStructInfo) -> str:
    # TVM's InferBinaryArithOpOutDtype: unknown when either is, a TypeError when they differ
    if x.is_unknown_dtype or w.is_unknown_dtype:
        return "void"
    if x.dtype != w.dtype:
        raise StructInfoTypeError(f"{op}: data and weight have different dtypes {x.dtype} and {w.dtype}; "
                                  "give out_dtype or cast one with relax.op.astype first")
    return x.dtype


def _conv_operands(call: Call, op: str, targets: tuple[str, str]) -> tuple:
    """The checked operands of a convolution: (data, weight, out ndim, out dtype, vdevice, data
    and weight shapes by whole axis or None when either is unknown)."""
    check_num_args(call, op, 2)
    x, w = tensor_arg(call, 0, op, "data"), tensor_arg(call, 1, op, "weight")
    a = call.attrs
    dl, kl, ol = a["data_layout"], a["kernel_layout"], a["out_layout"]
    nd_x = check_conv_layout(op, dl, targets[0], "data")
    nd_w = check_conv_layout(op, kl, targets[1], "kernel")
    nd_o = check_conv_layout(op, ol, targets[0], "output")
    for name, t, nd, layout in (("data", x, nd_x, dl), ("weight", w, nd_w, kl)):
        if t.ndim not in (-1, nd):
            raise StructInfoError(f"{op}: {name} has {t.ndim} dimensions but its layout {layout!r} "
                                  f"has {nd}")
    out_dtype = given_out_dtype(a) or _binary_out_dtype(op, x, w)
    vdevice = _out_vdevice(op, x, w)
    xs, ws = x.shape_values, w.shape_values
    if xs is None or ws is None:
        return nd_o, out_dtype, vdevice, None, None
    return nd_o, out_dtype, vdevice, shape_to_primal(dl, list(xs)), shape_to_primal(kl, list(ws))


def _shape(call: Call, index: int) -> str:
    return shape_text(struct_info_of(call.args[index]).shape_values)


def _provably(cond: Any) -> bool:
    return _ANALYZER.can_prove(cond)


def _conv_size(d: Any, k: Any, pads: int, stride: int, dilation: int) -> Any:
    """``(d + pads - dilation * (k - 1) - 1) // stride + 1`` in the form TVM's simplifier gives:
    a symbolic kernel whose dilation the stride divides comes out of the division
    (``(iw + 3) // 2 + 1 - kw``)."""
    if const_dim(k) is None and stride > 1 and dilation % stride == 0:
        head = simplify(d + (pads + dilation - 1)) if pads + dilation - 1 else d
        return _t.floordiv(head, stride) + 1 - (k if dilation == stride else k * (dilation // stride))
    return conv_out_size(d, k, pads // 2, pads - pads // 2, stride, dilation)


def conv_sinfo(call: Call, op: str, dim: int) -> StructInfo:
    """The output of an N-d convolution (TVM's InferStructInfoConv): layouts any convertible to
    NC<spatial> / OI<spatial>, channels the kernel's O, spatial sizes
    ``(d + pad - (k - 1) * dilation - 1) // stride + 1``, laid out as ``out_layout``."""
    spatial = "DHW"[3 - dim:]
    a = call.attrs
    nd_o, out_dtype, vdevice, xp, wp = _conv_operands(call, op, ("NC" + spatial, "OI" + spatial))
    if xp is None:
        return TensorStructInfo(None, out_dtype, vdevice, nd_o)
    groups = int(a["groups"])
    if _provably(xp["C"] != wp["I"] * groups):
        raise StructInfoError(f"{op}: data {_shape(call, 0)} has {dim_text(xp['C'])} channels but weight "
                              f"{_shape(call, 1)} expects {dim_text(wp['I'])} per group x {groups} groups")
    if _provably(_t.floormod(wp["O"], groups) != 0):
        raise StructInfoError(f"{op}: {dim_text(wp['O'])} output channels of weight {_shape(call, 1)} do not "
                              f"divide into {groups} groups")
    out = {"N": xp["N"], "C": wp["O"]}
    pad = a["padding"]
    for j, ch in enumerate(spatial):
        out[ch] = _conv_size(xp[ch], wp[ch], int(pad[j]) + int(pad[j + dim]), int(a["strides"][j]),
                             int(a["dilation"][j]))
        if const_dim(out[ch]) is not None and const_dim(out[ch]) <= 0:  # TVM lets it through; refused early
            raise StructInfoError(f"{op}: the kernel {_shape(call, 1)} does not fit the padded data "
                                  f"{_shape(call, 0)} (output size {const_dim(out[ch])} along {ch})")
    return TensorStructInfo(shape_from_primal(a["out_layout"], out), out_dtype, vdevice)


def _per_dim(v: Any, dim: int, what: str, broadcast: bool = True) -> tuple:
    """TVM's per-dimension attribute: an int is one value; one value stands for every
    dimension of a 2-D/3-D op (conv1d takes exactly one)."""
    t = (int(v),) if isinstance(v, int) else tuple(int(x) for x in v)
    if len(t) == 1 and broadcast:
        t = t * dim
    if len(t) != dim:
        raise StructInfoError(f"{what} must have {dim} value{'s' if dim > 1 else ''}"
                              f"{' (or one)' if dim > 1 else ''}, got {v!r}")
    return tuple(AttrInt(x) for x in t)


def _complete_padding(padding: Any, dim: int, name: str) -> tuple:
    """(befores..., afters...) from an int, one value per dimension or the whole list."""
    p = (int(padding),) if isinstance(padding, int) else tuple(int(x) for x in padding)
    if len(p) == 1:
        p = p * (2 * dim)
    elif len(p) == dim:
        p = p + p
    if len(p) != 2 * dim:
        raise StructInfoError(f"{name} padding must have 1, {dim} or {2 * dim} values, got {padding!r}")
    return tuple(AttrInt(x) for x in p)


def conv_attrs(dim: int, name: str, strides: Any, padding: Any, dilation: Any, groups: int, data_layout: str,
               kernel_layout: str, out_layout: str | None, out_dtype: str | None) -> dict:
    """The attributes of an N-d convolution call; padding becomes (befores..., afters...)."""
    if int(groups) <= 0:
        raise StructInfoError(f"{name}: the number of groups must be positive, got {groups}")
    return {"strides": _per_dim(strides, dim, f"{name} strides", dim > 1),
            "padding": _complete_padding(padding, dim, name),
            "dilation": _per_dim(dilation, dim, f"{name} dilation", dim > 1), "groups": AttrInt(groups),
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
    """The output of an N-d transposed convolution (TVM's rule): layouts any convertible to
    NC<spatial> / IO<spatial>, channels O x groups, spatial sizes
    ``(d - 1) * stride - pad + dilation * (k - 1) + output_padding + 1``."""
    spatial = "DHW"[3 - dim:]
    a = call.attrs
    nd_o, out_dtype, vdevice, xp, wp = _conv_operands(call, op, ("NC" + spatial, "IO" + spatial))
    groups = int(a["groups"])
    if xp is not None:
        if _provably(xp["C"] != wp["I"]):
            raise StructInfoError(f"{op}: data {_shape(call, 0)} has {dim_text(xp['C'])} channels but weight "
                                  f"{_shape(call, 1)} takes {dim_text(wp['I'])}")
        if _provably(_t.floormod(wp["I"], groups) != 0):
            raise StructInfoError(f"{op}: {dim_text(wp['I'])} input channels of weight {_shape(call, 1)} do "
                                  f"not divide into {groups} groups")
    if any(int(p) >= int(s) for s, p in zip(a["strides"], a["output_padding"])):
        raise StructInfoError(f"{op}: output_padding {list(a['output_padding'])} must be smaller than the "
                              f"strides {list(a['strides'])}")
    if xp is None:
        return TensorStructInfo(None, out_dtype, vdevice, nd_o)
    out = {"N": xp["N"], "C": simplify_mul(wp["O"], groups)}
    pad = a["padding"]
    for j, ch in enumerate(spatial):
        out[ch] = conv_transpose_out_size(xp[ch], wp[ch], int(pad[j]), int(pad[dim + j]), int(a["strides"][j]),
                                          int(a["dilation"][j]), int(a["output_padding"][j]))
    return TensorStructInfo(shape_from_primal(a["out_layout"], out), out_dtype, vdevice)


def simplify_mul(d: Any, k: int) -> Any:
    return d if k == 1 else (d * k if const_dim(d) is None else type(d)("int64", const_dim(d) * k))


def conv_transpose_attrs(dim: int, name: str, strides: Any, padding: Any, output_padding: Any, dilation: Any,
                         groups: int, data_layout: str, kernel_layout: str, out_layout: str | None,
                         out_dtype: str | None) -> dict:
    attrs = conv_attrs(dim, name, strides, padding, dilation, groups, data_layout, kernel_layout, out_layout,
                       out_dtype)
    attrs["output_padding"] = _per_dim(output_padding, dim, f"{name} output_padding", dim > 1)
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
