"""Neural-network operators (``relax.op.nn``)."""

from __future__ import annotations

from typing import Any

from ..expr import Call, Expr
from ..struct_info import StructInfo
from .registry import OpPattern, make_call, register
from .unary import unary_sinfo

__all__ = ["relu"]


@register("relax.nn.relu", pattern=OpPattern.ELEMWISE, num_inputs=1)
def _infer_relu(call: Call, ctx: Any) -> StructInfo:
    """Element-wise max(x, 0)."""
    return unary_sinfo(call, "relax.nn.relu")


def relu(data: Expr) -> Call:
    """``max(data, 0)`` element-wise."""
    return make_call("relax.nn.relu", data)
