"""``relax.nn.pad``: a tensor surrounded by a constant."""

from __future__ import annotations

from typing import Any, Sequence

from ...expr import Call, Expr
from ...struct_info import StructInfo, StructInfoError, TensorStructInfo, shape_text
from .._utils import simplify
from ..registry import OpPattern, check_num_args, make_call, register, tensor_arg

__all__ = ["pad"]


@register("relax.nn.pad", pattern=OpPattern.INJECTIVE, num_inputs=1)
def _infer_pad(call: Call, ctx: Any) -> StructInfo:
    """Each dimension grows by its before + after widths (``pad_width`` is flat:
    ``[before_0, after_0, before_1, after_1, ...]``)."""
    op = "relax.nn.pad"
    check_num_args(call, op, 1)
    x = tensor_arg(call, 0, op, "data")
    width = call.attrs["pad_width"]
    if call.attrs["pad_mode"] != "constant":
        raise StructInfoError(f"{op}: only pad_mode='constant' is supported, got {call.attrs['pad_mode']!r}")
    if x.ndim == -1:
        return TensorStructInfo(None, x.dtype, None, -1)
    if len(width) != 2 * x.ndim:
        raise StructInfoError(f"{op}: pad_width needs 2 values per dimension ({2 * x.ndim} for shape "
                              f"{shape_text(x.shape_values)}), got {len(width)}")
    xs = x.shape_values
    if xs is None:
        return x
    return TensorStructInfo([simplify(d + width[2 * k] + width[2 * k + 1]) for k, d in enumerate(xs)], x.dtype)


def pad(data: Expr, pad_width: Sequence[int], pad_mode: str = "constant", pad_value: float = 0.0) -> Call:
    """``data`` surrounded by ``pad_value``; ``pad_width`` is ``[before_0, after_0, ...]``."""
    return make_call("relax.nn.pad", data, attrs={"pad_width": tuple(int(v) for v in pad_width),
                                                   "pad_mode": pad_mode, "pad_value": float(pad_value)})
