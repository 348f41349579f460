"""``relax.nn.pixel_shuffle``: channels folded into space, ``[..., C * r * r, H, W]`` to
``[..., C, H * r, W * r]`` (TVM's op, torch's ``PixelShuffle``)."""

from __future__ import annotations

from typing import Any

from ....tir.expr import IntImm
from ...expr import Call, Expr
from ...struct_info import StructInfo, StructInfoError, TensorStructInfo
from .._utils import AttrInt, const_dim, simplify
from ..registry import OpPattern, check_num_args, make_call, register, tensor_arg

__all__ = ["pixel_shuffle"]


@register("relax.nn.pixel_shuffle", pattern=OpPattern.INJECTIVE, num_inputs=1)
def _infer_pixel_shuffle(call: Call, ctx: Any) -> StructInfo:
    """The last three axes (C, H, W) become (C / r², H * r, W * r); as TVM's rule, the result
    carries no virtual device."""
    op = "relax.nn.pixel_shuffle"
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "data")
    r = int(call.attrs["upscale_factor"])
    if r <= 0:
        raise StructInfoError(f"{op}: the upscale factor must be positive, got {r}")
    if 0 <= x.ndim < 3:
        raise StructInfoError(f"{op} needs a tensor of at least 3 dimensions, got {x.ndim}")
    if x.shape_values is None:
        return TensorStructInfo(None, x.dtype, None, x.ndim)
    *rest, c, h, w = x.shape_values
    if const_dim(c) is not None and const_dim(c) % (r * r):
        raise StructInfoError(f"{op}: {const_dim(c)} input channels do not divide by the upscale factor "
                              f"squared ({r * r})")
    out_c = IntImm("int64", const_dim(c) // (r * r)) if const_dim(c) is not None else simplify(c // (r * r))
    return TensorStructInfo([*rest, out_c, simplify(h * r), simplify(w * r)], x.dtype)


def pixel_shuffle(data: Expr, upscale_factor: int) -> Call:
    """Rearrange ``[..., C * r * r, H, W]`` into ``[..., C, H * r, W * r]`` with ``r`` the
    upscale factor."""
    return make_call("relax.nn.pixel_shuffle", data, attrs={"upscale_factor": AttrInt(upscale_factor)})
