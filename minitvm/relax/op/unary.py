"""Element-wise unary operators: the result has the input's struct info."""

from __future__ import annotations

from typing import Any

from ...ir import dtype as _dt
from ..expr import Call, Expr
from ..struct_info import StructInfo, StructInfoError
from .registry import OpPattern, check_num_args, make_call, register, tensor_arg

__all__ = ["exp", "unary_sinfo"]


def unary_sinfo(call: Call, op_name: str, require_float: bool = False) -> StructInfo:
    """Struct info of an element-wise unary op: the input's, unchanged."""
    check_num_args(call, op_name, 1)
    x = tensor_arg(call, 0, op_name, "x")
    if require_float and not x.is_unknown_dtype and not _dt.is_float(x.dtype):
        raise StructInfoError(f"{op_name} needs a floating-point tensor, got dtype {x.dtype}")
    return x


@register("relax.exp", pattern=OpPattern.ELEMWISE, num_inputs=1)
def _infer_exp(call: Call, ctx: Any) -> StructInfo:
    """Element-wise e**x."""
    return unary_sinfo(call, "relax.exp", require_float=True)


def exp(x: Expr) -> Call:
    """``e ** x`` element-wise."""
    return make_call("relax.exp", x)
