"""2-D convolution in NCHW layout with OIHW weights: strides, padding, dilation, groups."""

from __future__ import annotations

from typing import Any, Sequence

from ... import te
from ...tir import op as _op
from ..utils import const_int
from .pad import pad as _pad


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


__all__: Sequence[str] = ["conv2d", "conv2d_nchw", "conv2d_padding"]
