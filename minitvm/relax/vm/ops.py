"""The memory operators that lowering to the VM introduces (TVM's names).

* ``R.builtin.alloc_tensor(shape, dtype, runtime_device_index)`` -- a fresh tensor for
  one output (what :func:`~minitvm.relax.transform.CallTIRRewrite` emits);
* ``R.memory.alloc_storage(size, virtual_device_index, storage_scope, dtype)`` -- a block
  of ``size`` bytes (``size`` is a one-value shape);
* ``R.memory.alloc_tensor(storage, offset, shape, dtype, runtime_device_index)`` -- a tensor placed in a
  storage at a byte offset (what :func:`~minitvm.relax.transform.StaticPlanBlockMemory`
  emits so that tensors with disjoint lifetimes share memory).

:func:`~minitvm.relax.transform.VMBuiltinLower` turns them into calls of the VM builtins
``vm.builtin.alloc_storage`` / ``vm.builtin.alloc_tensor``.
"""

from __future__ import annotations

from typing import Any

from ...ir.op import Op
from ..expr import Call, DataTypeImm, Expr, ExternFunc, Function, PrimValue, SeqExpr, ShapeExpr, StringImm
from ..op.memory import ALLOC_STORAGE, ALLOC_TENSOR, MEMORY_ALLOC_TENSOR  # registers the operators

__all__ = ["alloc_tensor", "alloc_storage", "memory_alloc_tensor", "ALLOC_TENSOR", "ALLOC_STORAGE",
           "MEMORY_ALLOC_TENSOR", "is_op", "starts_with_shape_heap"]


def starts_with_shape_heap(func: Function) -> bool:
    """True when VMShapeLower ran on ``func`` (its first binding allocates the shape heap)."""
    body = func.body
    if not isinstance(body, SeqExpr) or not body.blocks or not body.blocks[0].bindings:
        return False
    value = body.blocks[0].bindings[0].value
    if is_op(value, "relax.call_builtin_with_ctx"):  # TVM's form of the allocation
        value = value.args[0]
    elif is_op(value, "relax.null_value"):  # TVM's: a function that needs no heap
        return True
    else:
        value = value.op if isinstance(value, Call) else None
    return isinstance(value, ExternFunc) and value.global_symbol == "vm.builtin.alloc_shape_heap"


def is_op(expr: Any, name: str) -> bool:
    """True when ``expr`` is a call of the operator ``name``."""
    return isinstance(expr, Call) and isinstance(expr.op, Op) and expr.op.name == name


def alloc_tensor(shape: Expr, dtype: str, runtime_device_index: int = 0) -> Call:
    return Call(Op.get(ALLOC_TENSOR), [shape, DataTypeImm(dtype), PrimValue(runtime_device_index)])


def alloc_storage(nbytes: int, dtype: str = "uint8") -> Call:
    return Call(Op.get(ALLOC_STORAGE), [ShapeExpr([nbytes]), PrimValue(0), StringImm("global"),
                                        DataTypeImm(dtype)])


def memory_alloc_tensor(storage: Expr, offset: int, shape: Expr, dtype: str) -> Call:
    return Call(Op.get(MEMORY_ALLOC_TENSOR), [storage, PrimValue(offset), shape, DataTypeImm(dtype), PrimValue(0)])
