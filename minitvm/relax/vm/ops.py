"""The memory operators that lowering to the VM introduces (TVM's names).

* ``R.builtin.alloc_tensor(shape, dtype, runtime_device_index)`` -- a fresh tensor for
  one output (what :func:`~minitvm.relax.transform.CallTIRRewrite` emits);
* ``R.memory.alloc_storage(size, virtual_device_index, storage_scope, dtype)`` -- a block
  of ``size`` bytes (``size`` is a one-value shape);
* ``R.memory.alloc_tensor(storage, offset, shape, dtype)`` -- a tensor placed in a
  storage at a byte offset (what :func:`~minitvm.relax.transform.StaticPlanBlockMemory`
  emits so that tensors with disjoint lifetimes share memory).

:func:`~minitvm.relax.transform.VMBuiltinLower` turns them into calls of the VM builtins
``vm.builtin.alloc_storage`` / ``vm.builtin.alloc_tensor``.
"""

from __future__ import annotations

from typing import Any

from ...ir.op import Op, register_op
from ..expr import Call, DataTypeImm, Expr, PrimValue, ShapeExpr, StringImm, struct_info_of
from ..struct_info import ObjectStructInfo, ShapeStructInfo, StructInfo, StructInfoError, TensorStructInfo

__all__ = ["alloc_tensor", "alloc_storage", "memory_alloc_tensor", "ALLOC_TENSOR", "ALLOC_STORAGE",
           "MEMORY_ALLOC_TENSOR", "is_op"]

ALLOC_TENSOR = "relax.builtin.alloc_tensor"
ALLOC_STORAGE = "relax.memory.alloc_storage"
MEMORY_ALLOC_TENSOR = "relax.memory.alloc_tensor"


def _register(name: str, doc: str, infer: Any) -> Op:
    op = register_op(name, doc, -1)
    if not op.has_attr("FInferStructInfo"):
        op.set_attr("FInferStructInfo", infer)
        op.set_attr("TOpPattern", 8)  # opaque
        op.set_attr("FPurity", True)
    return op


def _tensor_sinfo(shape: Any, dtype: Any, name: str) -> StructInfo:
    if not isinstance(dtype, DataTypeImm):
        raise StructInfoError(f"{name}: the dtype must be R.dtype(...), got {dtype!r}")
    sinfo = struct_info_of(shape)
    if isinstance(shape, ShapeExpr):
        return TensorStructInfo(shape, dtype.value)
    if isinstance(sinfo, ShapeStructInfo):
        return TensorStructInfo(None, dtype.value, ndim=sinfo.ndim)
    raise StructInfoError(f"{name}: the shape must be a shape value, got {shape!r}")


def _infer_alloc_tensor(call: Call, ctx: Any) -> StructInfo:
    if len(call.args) != 3:
        raise StructInfoError(f"{ALLOC_TENSOR} takes shape, dtype, runtime_device_index")
    return _tensor_sinfo(call.args[0], call.args[1], ALLOC_TENSOR)


def _infer_alloc_storage(call: Call, ctx: Any) -> StructInfo:
    if len(call.args) != 4:
        raise StructInfoError(f"{ALLOC_STORAGE} takes size, virtual_device_index, storage_scope, dtype")
    return ObjectStructInfo()


def _infer_memory_alloc_tensor(call: Call, ctx: Any) -> StructInfo:
    if len(call.args) != 4:
        raise StructInfoError(f"{MEMORY_ALLOC_TENSOR} takes storage, offset, shape, dtype")
    return _tensor_sinfo(call.args[2], call.args[3], MEMORY_ALLOC_TENSOR)


_register(ALLOC_TENSOR, "A tensor with its own memory.", _infer_alloc_tensor)
_register(ALLOC_STORAGE, "A block of memory that tensors are placed in.", _infer_alloc_storage)
_register(MEMORY_ALLOC_TENSOR, "A tensor placed in a storage at a byte offset.", _infer_memory_alloc_tensor)


def is_op(expr: Any, name: str) -> bool:
    """True when ``expr`` is a call of the operator ``name``."""
    return isinstance(expr, Call) and isinstance(expr.op, Op) and expr.op.name == name


def alloc_tensor(shape: Expr, dtype: str, runtime_device_index: int = 0) -> Call:
    return Call(Op.get(ALLOC_TENSOR), [shape, DataTypeImm(dtype), PrimValue(runtime_device_index)])


def alloc_storage(nbytes: int, dtype: str = "uint8") -> Call:
    return Call(Op.get(ALLOC_STORAGE), [ShapeExpr([nbytes]), PrimValue(0), StringImm("global"),
                                        DataTypeImm(dtype)])


def memory_alloc_tensor(storage: Expr, offset: int, shape: Expr, dtype: str) -> Call:
    return Call(Op.get(MEMORY_ALLOC_TENSOR), [storage, PrimValue(offset), shape, DataTypeImm(dtype)])
