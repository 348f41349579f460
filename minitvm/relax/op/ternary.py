"""``ewise_fma``: the fused multiply-add the MLC course rewrites ``add(multiply(a, b), c)`` into."""

from __future__ import annotations

from typing import Any

from ..analysis.struct_info_analysis import prove_dim_equal
from ..expr import Call, Expr
from ..struct_info import StructInfo, StructInfoError, TensorStructInfo, shape_text
from .registry import OpPattern, check_num_args, make_call, register, tensor_arg

__all__ = ["ewise_fma"]


@register("relax.ewise_fma", pattern=OpPattern.ELEMWISE, num_inputs=3)
def _infer_ewise_fma(call: Call, ctx: Any) -> StructInfo:
    """Element-wise x1 * x2 + x3 (no broadcasting: all three shapes are equal)."""
    op_name = "relax.ewise_fma"
    check_num_args(call, op_name, 3)
    xs = [tensor_arg(call, i, op_name, f"x{i + 1}") for i in range(3)]
    dtypes = {x.dtype for x in xs if not x.is_unknown_dtype}
    if len(dtypes) > 1:
        raise StructInfoError(f"{op_name}: operands have different dtypes {', '.join(sorted(dtypes))}")
    dtype = dtypes.pop() if dtypes and all(not x.is_unknown_dtype for x in xs) else "void"
    shapes = [x.shape_values for x in xs]
    if all(s is not None for s in shapes):
        first = shapes[0]
        for s in shapes[1:]:
            if len(s) != len(first) or not all(prove_dim_equal(a, b) for a, b in zip(first, s)):
                raise StructInfoError(f"{op_name}: operands must have equal shapes, got "
                                      f"{', '.join(shape_text(t) for t in shapes)}")
        return TensorStructInfo(list(first), dtype)
    ndims = {x.ndim for x in xs if x.ndim != -1}
    if len(ndims) > 1:
        raise StructInfoError(f"{op_name}: operands have different ranks {sorted(ndims)}")
    return TensorStructInfo(None, dtype, None, ndims.pop() if ndims else -1)


def ewise_fma(x1: Expr, x2: Expr, x3: Expr) -> Call:
    """``x1 * x2 + x3`` element-wise."""
    return make_call("relax.ewise_fma", x1, x2, x3)
