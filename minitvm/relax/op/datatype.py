"""``astype``: element-wise conversion to another dtype; ``wrap_param``: a model parameter
read in another dtype (TVM's, which ToMixedPrecision drops and legalization casts)."""

from __future__ import annotations

from typing import Any

from ...ir import dtype as _dt
from ..expr import Call, Expr
from ..struct_info import StructInfo, TensorStructInfo
from .registry import OpPattern, check_num_args, make_call, register, tensor_arg

__all__ = ["astype", "wrap_param"]


@register("relax.astype", pattern=OpPattern.ELEMWISE, num_inputs=1)
def _infer_astype(call: Call, ctx: Any) -> StructInfo:
    """The input's shape, with the dtype of the ``dtype`` attribute."""
    check_num_args(call, "relax.astype", 1)
    x = tensor_arg(call, 0, "relax.astype", "x")
    dtype = call.attrs["dtype"]
    return TensorStructInfo(x.shape, dtype, x.vdevice, x.ndim if x.shape is None else -1)


def astype(x: Expr, dtype: str) -> Call:
    """``x`` converted element-wise to ``dtype``."""
    return make_call("relax.astype", x, attrs={"dtype": _dt.check(str(dtype))})


@register("relax.wrap_param", pattern=OpPattern.ELEMWISE, num_inputs=1)
def _infer_wrap_param(call: Call, ctx: Any) -> StructInfo:
    """The parameter's shape, with the dtype of the ``dtype`` attribute."""
    check_num_args(call, "relax.wrap_param", 1)
    x = tensor_arg(call, 0, "relax.wrap_param", "data")
    return TensorStructInfo(x.shape, call.attrs["dtype"], x.vdevice, x.ndim if x.shape is None else -1)


def wrap_param(data: Expr, dtype: str = "float32") -> Call:
    """The model parameter ``data`` read as ``dtype`` (cast when it differs)."""
    return make_call("relax.wrap_param", data, attrs={"dtype": _dt.check(str(dtype))})
