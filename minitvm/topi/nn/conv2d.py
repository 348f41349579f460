"""Convolutions, as TVM's ``topi/nn/conv2d.py`` holds them: ``conv``, N-d in any layout of
the letters N, C and the spatial ones (data) and O, I and the same spatial ones (kernel),
grouped forms included, and ``conv1d`` on it; ``conv2d_nchw``, the NCHW kernel with OIHW
weights written out for 2-D as TVM's is, and ``conv2d`` on it.  Each kernel reads a
zero-padded copy of the data (``pad_temp``)."""

from __future__ import annotations

from typing import Any

from ... import te
from ...arith import Analyzer
from ...tir import op as _op
from ...tir.expr import PrimExpr, const
from ..utils import const_int
from .pad import pad as _pad

__all__ = ["conv", "conv1d", "conv_padding", "conv_out_size", "conv2d", "conv2d_nchw", "conv2d_padding"]


def conv_padding(padding: Any, dim: int) -> tuple[list[int], list[int]]:
    """(before, after) per spatial dimension from an int, ``dim`` values (both sides) or
    ``2 * dim`` values (all befores, then all afters)."""
    p = [int(padding)] * dim if isinstance(padding, int) else [int(v) for v in padding]
    if len(p) == 1:
        p = p * dim
    if len(p) == dim:
        return p, list(p)
    if len(p) == 2 * dim:
        return p[:dim], p[dim:]
    raise ValueError(f"conv: padding must have 1, {dim} or {2 * dim} values, got {padding!r}")


def conv_out_size(d: Any, k: Any, pad_before: int, pad_after: int, stride: int, dilation: int) -> PrimExpr:
    """``(d + pads - (k - 1) * dilation - 1) // stride + 1``, simplified into the form TVM's
    kernels carry (``h + 1 - kh`` for a symbolic kernel at stride and dilation 1)."""
    if stride == 1 and dilation == 1 and const_int(k) is None:
        extra = pad_before + pad_after + 1
        return _op.sub(_op.add(d, const(extra, k.dtype)) if extra else d, k)
    span = _op.sub(_op.add(d, pad_before + pad_after), _op.add(_op.mul(_op.sub(k, 1), dilation), 1))
    return Analyzer().simplify(_op.add(_op.floordiv(span, stride), 1))


def _per_dim(v: Any, dim: int, what: str) -> list[int]:
    out = [int(v)] * dim if isinstance(v, int) else [int(x) for x in v]
    if len(out) == 1:
        out = out * dim
    if len(out) != dim:
        raise ValueError(f"conv: {what} must have 1 or {dim} values, got {v!r}")
    return out


def _spatial(layout: str, skip: str) -> list[int]:
    return [k for k, ch in enumerate(layout) if ch not in skip]


def _times(i: Any, c: int) -> Any:
    return i if c == 1 else _op.mul(i, const(c, i.dtype))


def conv(data: te.Tensor, kernel: te.Tensor, strides: Any = 1, padding: Any = 0, dilation: Any = 1,
         groups: int = 1, data_layout: str = "NCHW", kernel_layout: str = "OIHW",
         out_dtype: str | None = None) -> te.Tensor:
    """``out[n, o, y...] = Σ pad(data)[n, group(o) + c, y·s + r·d ...] · kernel[o, c, r...]``
    laid out as ``data_layout`` (the kernel as ``kernel_layout``)."""
    dim = data.ndim - 2
    if sorted(data_layout) != sorted("NC" + "".join(ch for ch in data_layout if ch not in "NC")) or \
            len(data_layout) != data.ndim or "N" not in data_layout or "C" not in data_layout:
        raise ValueError(f"topi.nn.conv: data layout {data_layout!r} does not describe a {data.ndim}-d tensor")
    if len(kernel_layout) != kernel.ndim or "O" not in kernel_layout or "I" not in kernel_layout:
        raise ValueError(f"topi.nn.conv: kernel layout {kernel_layout!r} does not describe a {kernel.ndim}-d kernel")
    out_dtype = out_dtype or data.dtype
    strides = _per_dim(strides, dim, "strides")
    dilation = _per_dim(dilation, dim, "dilation")
    d_sp, k_sp = _spatial(data_layout, "NC"), _spatial(kernel_layout, "OI")
    c_ax = data_layout.index("C")
    o_ax, i_ax = kernel_layout.index("O"), kernel_layout.index("I")
    in_c, out_c, in_c_per_group = data.shape[c_ax], kernel.shape[o_ax], kernel.shape[i_ax]
    if const_int(in_c) is not None and const_int(in_c_per_group) is not None and \
            const_int(in_c) != const_int(in_c_per_group) * groups:
        raise ValueError(f"topi.nn.conv: data has {in_c} channels but the kernel expects "
                         f"{in_c_per_group} per group x {groups} groups")
    ksizes = [kernel.shape[k] for k in k_sp]
    before, after = conv_padding(padding, dim)
    pad_before, pad_after = [0] * data.ndim, [0] * data.ndim
    for j, ax in enumerate(d_sp):
        pad_before[ax], pad_after[ax] = before[j], after[j]
    padded = _pad(data, pad_before, pad_after, 0.0, name="pad_temp")

    out_shape = list(data.shape)
    out_shape[c_ax] = out_c
    for j, ax in enumerate(d_sp):
        out_shape[ax] = conv_out_size(data.shape[ax], ksizes[j], before[j], after[j], strides[j], dilation[j])

    rc = te.reduce_axis((0, in_c_per_group), "rc")
    rs = [te.reduce_axis((0, k), f"r{'yxz'[j]}") for j, k in enumerate(ksizes)]
    # the reduce axes follow the data layout's order of C and the spatial letters
    order = sorted([(c_ax, rc)] + [(ax, r) for ax, r in zip(d_sp, rs)], key=lambda t: t[0])
    raxes = [r for _, r in order]
    out_c_per_group = const_int(out_c) // groups if const_int(out_c) is not None else _op.floordiv(out_c, groups)

    def fcompute(*idx: Any) -> PrimExpr:
        ff = idx[c_ax]
        channel: Any = rc.var if groups == 1 else _op.add(
            _op.mul(_op.floordiv(ff, out_c_per_group), in_c_per_group), rc.var)
        src = list(idx)
        src[c_ax] = channel
        for j, ax in enumerate(d_sp):
            src[ax] = _op.add(_times(idx[ax], strides[j]), _times(rs[j].var, dilation[j]))
        kidx: list[Any] = [None] * kernel.ndim
        kidx[o_ax], kidx[i_ax] = ff, rc.var
        for j, ax in enumerate(k_sp):
            kidx[ax] = rs[j].var
        return te.sum(_op.cast(padded[tuple(src)], out_dtype) * _op.cast(kernel[tuple(kidx)], out_dtype), axis=raxes)

    names = {"N": "nn", "C": "ff"}
    spatial_names = iter(["yy", "xx", "zz"])
    arg_names = [names.get(ch) or next(spatial_names) for ch in data_layout]
    name = f"{'group_' if groups > 1 else ''}conv{dim}d_{data_layout.lower()}"
    return te.compute(out_shape, fcompute, name=name, varargs_names=arg_names)


def conv1d(data: te.Tensor, kernel: te.Tensor, strides: Any = 1, padding: Any = 0, dilation: Any = 1,
           groups: int = 1, data_layout: str = "NCW", kernel_layout: str = "OIW",
           out_dtype: str | None = None) -> te.Tensor:
    """1-D convolution (``conv`` with one spatial dimension)."""
    return conv(data, kernel, strides, padding, dilation, groups, data_layout, kernel_layout, out_dtype)


def _pair(v: Any) -> tuple:
    return (v, v) if isinstance(v, int) else tuple(v)


def conv2d_padding(padding: Any) -> tuple[int, int, int, int]:
    """Padding as (top, left, bottom, right) from an int, (h, w) or four values."""
    p = [padding] * 4 if isinstance(padding, int) else list(padding)
    if len(p) == 2:
        p = [p[0], p[1], p[0], p[1]]
    if len(p) != 4:
        raise ValueError(f"conv2d: padding must have 1, 2 or 4 values, got {padding!r}")
    return tuple(p)  # type: ignore[return-value]


def conv2d_nchw(data: te.Tensor, kernel: te.Tensor, stride: Any = 1, padding: Any = 0,
                dilation: Any = 1, groups: int = 1, out_dtype: str | None = None) -> te.Tensor:
    """``out[n, o, y, x] = Σ_{c, ky, kx} pad(data)[n, g·C/G + c, y·sh + ky·dh, x·sw + kx·dw]
    · kernel[o, c, ky, kx]`` with ``g`` the group of output channel ``o``."""
    out_dtype = out_dtype or data.dtype
    sh, sw = _pair(stride)
    dh, dw = _pair(dilation)
    top, left, bottom, right = conv2d_padding(padding)
    batch, in_c, h, w = data.shape
    out_c, in_c_per_group, kh, kw = kernel.shape
    out_c_per_group = _op.floordiv(out_c, groups)
    if const_int(in_c) is not None and const_int(in_c_per_group) is not None and \
            const_int(in_c) != const_int(in_c_per_group) * groups:
        raise ValueError(f"topi.nn.conv2d_nchw: data has {in_c} channels but the kernel expects "
                         f"{in_c_per_group} per group × {groups} groups")
    padded = data
    if any(const_int(p) != 0 for p in (top, left, bottom, right)):
        padded = _pad(data, [0, 0, top, left], [0, 0, bottom, right], 0.0, name="pad_temp")
    out_h = _op.add(_op.floordiv(_op.sub(_op.add(h, top + bottom), _op.add(_op.mul(_op.sub(kh, 1), dh), 1)), sh), 1)
    out_w = _op.add(_op.floordiv(_op.sub(_op.add(w, left + right), _op.add(_op.mul(_op.sub(kw, 1), dw), 1)), sw), 1)

    def fcompute(n: Any, o: Any, y: Any, x: Any) -> Any:
        rc = te.reduce_axis((0, in_c_per_group), "rc")
        ry = te.reduce_axis((0, kh), "ry")
        rx = te.reduce_axis((0, kw), "rx")
        c = rc.var if groups == 1 else _op.add(_op.mul(_op.floordiv(o, out_c_per_group), in_c_per_group), rc.var)
        v = padded[n, c, _op.add(_op.mul(y, sh), _op.mul(ry.var, dh)), _op.add(_op.mul(x, sw), _op.mul(rx.var, dw))]
        return te.sum(_op.cast(v, out_dtype) * _op.cast(kernel[o, rc, ry, rx], out_dtype), axis=[rc, ry, rx])

    return te.compute((batch, out_c, out_h, out_w), fcompute, name="conv2d_nchw")


def conv2d(data: te.Tensor, kernel: te.Tensor, strides: Any = 1, padding: Any = 0, dilation: Any = 1,
           groups: int = 1, layout: str = "NCHW", out_dtype: str | None = None) -> te.Tensor:
    """2-D convolution; only the NCHW layout (OIHW kernel) is implemented."""
    if layout != "NCHW":
        raise NotImplementedError(f"topi.nn.conv2d: layout {layout!r} is not supported (only NCHW)")
    return conv2d_nchw(data, kernel, strides, padding, dilation, groups, out_dtype)
