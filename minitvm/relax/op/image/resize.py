"""``relax.image.resize2d``: an image batch resized to ``size`` (height, width) in any layout
naming N, C, H and W (``NCHW``, ``NHWC``, ``NCHW16c``), as TVM's op declares it.  minitvm has
no kernel for it yet: LegalizeOps leaves the call, and a build names it."""

from __future__ import annotations

from typing import Any

from ....tir.expr import PrimExpr
from ...expr import Call, Expr, ShapeExpr, struct_info_of
from ...struct_info import ShapeStructInfo, StructInfo, StructInfoError, TensorStructInfo, struct_info_text
from ..layout import layout_axes, shape_from_primal, shape_to_primal
from ..registry import OpPattern, make_call, register, tensor_arg

__all__ = ["resize2d"]


@register("relax.image.resize2d", pattern=OpPattern.INJECTIVE, num_inputs=2)
def _infer_resize2d(call: Call, ctx: Any) -> StructInfo:
    """The data's shape with H and W replaced by ``size``."""
    op = "relax.image.resize2d"
    if len(call.args) not in (1, 2):
        raise StructInfoError(f"{op} expects one or two arguments, got {len(call.args)}")
    x = tensor_arg(call, 0, op, "data")
    size = struct_info_of(call.args[1])
    if not isinstance(size, ShapeStructInfo):
        raise StructInfoError(f"{op} expects the output size to be a shape, got {struct_info_text(size)}")
    if size.ndim != 2:
        raise StructInfoError(f"{op} expects a 2-d output size, got ndim {size.ndim}")
    layout = call.attrs["layout"]
    if sorted(ch for ch in layout if ch.isupper()) != sorted("NCHW") or \
            any(ch.islower() and ch.upper() not in layout for ch in layout):
        raise StructInfoError(f"{op}: layout {layout!r} must name N, C, H and W")
    ndim = len(layout_axes(layout))
    if x.ndim not in (-1, ndim):
        raise StructInfoError(f"{op}: data laid out {layout} must be {ndim}-D, got {x.ndim} dimensions")
    dtype = call.attrs["out_dtype"] or x.dtype
    values = call.args[1].values if isinstance(call.args[1], ShapeExpr) else None
    if x.shape_values is None or values is None:
        return TensorStructInfo(None, dtype, x.vdevice, ndim)
    whole = dict(shape_to_primal(layout, list(x.shape_values)), H=values[0], W=values[1])
    return TensorStructInfo(shape_from_primal(layout, whole), dtype, x.vdevice)


def resize2d(data: Expr, size: Any, roi: Any = None, layout: str = "NCHW", method: str = "linear",
             coordinate_transformation_mode: str = "half_pixel", rounding_method: str = "round",
             cubic_alpha: float = -0.75, cubic_exclude: int = 0, extrapolation_value: float = 0.0,
             out_dtype: str | None = None) -> Call:
    """``data`` resized to ``size`` (an int: square; or (height, width), or a shape expression)."""
    if roi is None:
        roi = (0.0, 0.0, 0.0, 0.0)
    elif isinstance(roi, (int, float)):
        roi = (float(roi),) * 4
    roi = tuple(float(v) for v in roi)
    if isinstance(size, (int, PrimExpr)):
        size = (size, size)
    if not isinstance(size, Expr):
        size = list(size)
        size = ShapeExpr(size * 2 if len(size) == 1 else size)
    return make_call("relax.image.resize2d", data, size, attrs={
        "roi": roi, "layout": layout, "method": method,
        "coordinate_transformation_mode": coordinate_transformation_mode, "rounding_method": rounding_method,
        "cubic_alpha": float(cubic_alpha), "cubic_exclude": int(cubic_exclude),
        "extrapolation_value": float(extrapolation_value),
        "out_dtype": "" if out_dtype in (None, "void") else str(out_dtype)})
