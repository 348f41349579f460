"""``get_relax_matmul_module``: a Relax ``main`` computing a matmul and its epilogue (TVM's
``relax.testing.matmul``), the workload TVM's BYOC and matmul-fusion tests start from."""

from __future__ import annotations

from typing import Any, Callable

from ...ir.module import IRModule
from .. import op
from ..block_builder import BlockBuilder
from ..expr import Var
from ..struct_info import TensorStructInfo

__all__ = ["get_relax_matmul_module"]


def get_relax_matmul_module(x_shape: Any, y_shape: Any, in_dtype: str, out_dtype: str | None = None,
                            transposed_y: bool = False, bias_shape: Any = None,
                            activation: Callable | None = None, residual_bin_op: Callable | None = None,
                            residual_activation: Callable | None = None) -> IRModule:
    """``main(x, y[, bias])``: ``matmul(x, y)`` (``y`` transposed in its last two axes first when
    ``transposed_y``), ``+ bias``, ``activation(...)``, ``residual_bin_op(..., x)`` and
    ``residual_activation(...)``, each only when given, in one dataflow block."""
    out_dtype = out_dtype if out_dtype is not None else in_dtype
    x = Var("x", TensorStructInfo(x_shape, in_dtype))
    y = Var("y", TensorStructInfo(y_shape, in_dtype))
    params = [x, y]
    if bias_shape is not None:
        params.append(Var("bias", TensorStructInfo(bias_shape, out_dtype)))
    bb = BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            rhs = y
            if transposed_y:
                axes = list(range(len(y_shape) - 2)) + [-1, -2]
                rhs = bb.emit(op.permute_dims(y, axes=axes))
            result = bb.emit(op.matmul(x, rhs, out_dtype=out_dtype))
            if bias_shape is not None:
                result = bb.emit(op.add(result, params[2]))
            if activation is not None:
                result = bb.emit(activation(result))
            if residual_bin_op is not None:
                result = bb.emit(residual_bin_op(result, x))
                if residual_activation is not None:
                    result = bb.emit(residual_activation(result))
            out = bb.emit_output(result)
        bb.emit_func_output(out)
    return bb.get()
