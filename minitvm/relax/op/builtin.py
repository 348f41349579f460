"""``R.builtin.alloc_tensor``: a fresh tensor for one output (TVM's name and arguments).

The operator is registered in :mod:`.memory` with the other memory operators.
"""

from __future__ import annotations

from typing import Any

from ...ir.op import Op
from ..expr import Call, Expr, struct_info_of
from ..struct_info import StructInfo
from .memory import ALLOC_TENSOR, as_dtype, as_shape, check_global_scope, device_index
from .registry import check_num_args, make_call, register

__all__ = ["alloc_tensor", "stop_lift_params"]


def alloc_tensor(shape: Any, dtype: Any, runtime_device_index: Any, storage_scope: Any = "global") -> Call:
    """A call allocating a tensor of ``shape`` and ``dtype`` on device ``runtime_device_index``."""
    check_global_scope(storage_scope, ALLOC_TENSOR)
    return Call(Op.get(ALLOC_TENSOR), [as_shape(shape, ALLOC_TENSOR), as_dtype(dtype),
                                       device_index(runtime_device_index, ALLOC_TENSOR, "runtime_device_index")])


@register("relax.builtin.stop_lift_params", num_inputs=1)
def _infer_stop_lift_params(call: Call, ctx: Any) -> StructInfo:
    """Its argument, unchanged: a mark that LiftTransformParams lifts nothing from here on."""
    check_num_args(call, "relax.builtin.stop_lift_params", 1)
    return struct_info_of(call.args[0])


def stop_lift_params(x: Expr) -> Call:
    """``x`` itself; LiftTransformParams keeps what uses it in the function (at run time)."""
    return make_call("relax.builtin.stop_lift_params", x)
