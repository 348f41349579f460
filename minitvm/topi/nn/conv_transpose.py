"""Transposed N-d convolution (NCW / NCHW data, IOW / IOHW kernel), built as TVM builds
it: the data dilated by the strides ("data_dilate"), padded by ``k - 1 - pad``
("data_pad"), then a plain convolution with the flipped, transposed kernel."""

from __future__ import annotations

from typing import Any

from ... import te
from ...arith import Analyzer
from ...tir import op as _op
from ...tir.expr import PrimExpr, const
from ..utils import const_int
from .pad import pad as _pad

__all__ = ["conv_transpose", "conv_transpose_out_size"]


def conv_transpose_out_size(d: Any, k: Any, pad_before: int, pad_after: int, stride: int, dilation: int,
                            output_padding: int) -> Any:
    """``(d - 1) * stride - pads + (k - 1) * dilation + 1 + output_padding``."""
    size = _op.add(_op.sub(_op.mul(_op.sub(d, 1), stride), pad_before + pad_after),
                   _op.add(_op.mul(_op.sub(k, 1), dilation), 1 + output_padding))
    return Analyzer().simplify(size)


def conv_transpose(data: te.Tensor, kernel: te.Tensor, strides: list[int], padding: list[int],
                   output_padding: list[int], groups: int = 1, out_dtype: str | None = None,
                   kernel_name: str = "kernel_transform") -> te.Tensor:
    """The gradient-of-convolution "deconvolution" of ``data`` (N, C, spatial...) with
    ``kernel`` (C, O / groups, k...); ``padding`` is (befores..., afters...)."""
    dim = data.ndim - 2
    out_dtype = out_dtype or data.dtype
    in_c, out_per_group = data.shape[1], kernel.shape[1]
    ks = list(kernel.shape[2:])
    if any(const_int(k) is None for k in ks):
        raise NotImplementedError("topi.nn.conv_transpose: symbolic kernel sizes are not supported")
    ks_c = [const_int(k) for k in ks]
    zero = const(0, data.dtype)

    # 1. dilate: stride - 1 zeros between neighbours
    dil_shape = list(data.shape[:2]) + [_op.add(_op.mul(_op.sub(d, 1), s), 1) if s != 1 else d
                                        for d, s in zip(data.shape[2:], strides)]
    dil_shape = [const(const_int(d), "int64") if const_int(d) is not None else d for d in dil_shape]

    def dilate(*idx: Any) -> PrimExpr:
        conds, src = [], list(idx[:2])
        for j, s in enumerate(strides):
            i = idx[2 + j]
            if s == 1:
                src.append(i)
            else:
                conds.append(_op.equal(_op.floormod(i, const(s, i.dtype)), const(0, i.dtype)))
                src.append(_op.floordiv(i, const(s, i.dtype)))
        if not conds:
            return data[tuple(src)]
        return _op.if_then_else(te.all(*conds), data[tuple(src)], zero)

    dilated = te.compute(dil_shape, dilate, name="data_dilate")
    # 2. pad by k - 1 - padding before, k - 1 - padding + output_padding after
    before = [0, 0] + [k - 1 - padding[j] for j, k in enumerate(ks_c)]
    after = [0, 0] + [k - 1 - padding[dim + j] + output_padding[j] for j, k in enumerate(ks_c)]
    padded = _pad(dilated, before, after, 0.0, name="data_pad")
    # 3. the kernel with in/out channels swapped and each window flipped
    kt_shape = [out_per_group, in_c] + ks

    def transform(o: Any, i: Any, *w: Any) -> PrimExpr:
        return kernel[(i, o, *(_op.sub(const(k - 1, wj.dtype), wj) for k, wj in zip(ks_c, w)))]

    kt = te.compute(kt_shape, transform, name=kernel_name,
                    varargs_names=["o", "i", *(["w"] if dim == 1 else ["h", "w"] if dim == 2 else ["d", "h", "w"])])
    in_per_group = const(const_int(in_c) // groups, "int64") if const_int(in_c) is not None \
        else _op.floordiv(in_c, groups)
    dc = te.reduce_axis((0, in_per_group), "dc")
    rs = [te.reduce_axis((0, k), f"d{n}") for k, n in zip(ks, ["w"] if dim == 1 else ["h", "w"] if dim == 2
                                                              else ["d", "h", "w"])]
    out_c = const(const_int(out_per_group) * groups, "int64") if const_int(out_per_group) is not None \
        else _op.mul(out_per_group, groups)
    out_shape = [data.shape[0], out_c] + [
        conv_transpose_out_size(d, k, padding[j], padding[dim + j], strides[j], 1, output_padding[j])
        for j, (d, k) in enumerate(zip(data.shape[2:], ks))]

    def fcompute(b: Any, c: Any, *sp: Any) -> PrimExpr:
        if groups == 1:
            channel, kc = dc.var, c
        else:
            first = _op.mul(_op.floordiv(c, out_per_group), in_per_group)
            channel, kc = _op.add(first, dc.var), _op.floormod(c, out_per_group)
        src = [b, channel, *(_op.add(i, r.var) for i, r in zip(sp, rs))]
        kidx = [kc, channel if groups > 1 else dc.var, *(r.var for r in rs)]
        return te.sum(_op.cast(padded[tuple(src)], out_dtype) * _op.cast(kt[tuple(kidx)], out_dtype),
                      axis=[dc, *rs])

    names = ["b", "c", *(["w"] if dim == 1 else ["h", "w"] if dim == 2 else ["d", "h", "w"])]
    return te.compute(out_shape, fcompute, name="compute", varargs_names=names)
