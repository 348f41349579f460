"""``R.vm.*``: operators of the VM's calling convention (TVM's names and arguments).

* ``R.vm.call_tir_dyn(func, (a, b, ..., R.shape([n, m])))`` -- call the PrimFunc ``func``
  on tensors it writes in place (its outputs already allocated), the symbolic values of
  the trailing shape passed as its scalar parameters.  It returns nothing (``R.Tuple()``)
  and, writing its arguments, is impure.
* ``R.vm.alloc_storage(R.shape([nbytes]), runtime_device_index, R.dtype("uint8"))`` and
  ``R.vm.alloc_tensor(storage, offset, R.shape([...]), R.dtype(...))`` -- what TVM's
  ``LowerRuntimeBuiltin`` makes of ``R.memory.alloc_storage`` / ``alloc_tensor``; the code
  generator calls ``vm.builtin.alloc_storage`` / ``alloc_tensor`` for them.
* ``R.vm.kill_object(x)`` -- the VM drops its reference to ``x`` (the code generator empties
  x's register), so its memory can go before the function returns.

:class:`~minitvm.relax.transform.VMBuiltinLower` turns ``call_tir_dyn`` into a direct call of the PrimFunc
(``cls.func(a, b, ..., n, m)``), the form ``CallTIRRewrite`` gives ``call_tir`` with ``tir_vars``.
"""

from __future__ import annotations

from typing import Any

from ...ir.module import GlobalVar
from ...ir.op import Op, register_op
from ..expr import Call, Expr, Tuple
from ..struct_info import StructInfo, StructInfoError, TupleStructInfo
from .memory import (
    as_dtype,
    as_prim,
    as_shape,
    check_global_scope,
    device_index,
    infer_alloc_storage,
    infer_placed_tensor,
    register_memory_op,
)

__all__ = ["alloc_storage", "alloc_tensor", "call_tir_dyn", "kill_object", "CALL_TIR_DYN", "KILL_OBJECT",
           "VM_ALLOC_STORAGE", "VM_ALLOC_TENSOR"]

CALL_TIR_DYN = "relax.vm.call_tir_dyn"
KILL_OBJECT = "relax.vm.kill_object"
VM_ALLOC_STORAGE = "relax.vm.alloc_storage"
VM_ALLOC_TENSOR = "relax.vm.alloc_tensor"


def _infer_call_tir_dyn(call: Call, ctx: Any) -> StructInfo:
    if len(call.args) != 2 or not isinstance(call.args[1], Tuple):
        raise StructInfoError(f"{CALL_TIR_DYN} takes a PrimFunc and a tuple of its arguments")
    return TupleStructInfo([])


def _register_impure(name: str, doc: str, num_inputs: int, infer: Any) -> None:
    """An opaque operator with side effects (the VM's calling convention has only such)."""
    op = register_op(name, doc, num_inputs)
    if not op.has_attr("FInferStructInfo"):
        op.set_attr("FInferStructInfo", infer)
        op.set_attr("TOpPattern", 8)  # opaque
        op.set_attr("FPurity", False)


# call_tir_dyn writes its arguments
_register_impure(CALL_TIR_DYN, "Call a PrimFunc in destination-passing style, symbolic values last.", 2,
                 _infer_call_tir_dyn)


def call_tir_dyn(func: GlobalVar, args: Any) -> Call:
    """``R.vm.call_tir_dyn(cls.f, (x, out, R.shape([n])))``."""
    if not isinstance(func, GlobalVar):
        raise TypeError(f"{CALL_TIR_DYN}: expected the GlobalVar of a PrimFunc, got {func!r}")
    if isinstance(args, (list, tuple)):
        args = Tuple(list(args))
    if not isinstance(args, Tuple):
        raise TypeError(f"{CALL_TIR_DYN}: the arguments must be a tuple, got {args!r}")
    return Call(Op.get(CALL_TIR_DYN), [func, args])


def _infer_kill_object(call: Call, ctx: Any) -> StructInfo:
    if len(call.args) != 1:
        raise StructInfoError(f"{KILL_OBJECT} takes one argument, the object to release")
    return TupleStructInfo([])


# the VM code generator empties the register of the object (what LowerRuntimeBuiltin makes of
# R.memory.kill_tensor / kill_storage)
_register_impure(KILL_OBJECT, "Release the object held in a VM register.", 1, _infer_kill_object)


def kill_object(obj: Any) -> Call:
    """``R.vm.kill_object(x)``: the VM drops its reference to ``x`` here."""
    return Call(Op.get(KILL_OBJECT), [obj])


# allocations are pure, as in TVM (nothing else is written)
# (the struct info is R.memory's: the same arguments, storage_scope and dtype swapped)
register_memory_op(VM_ALLOC_STORAGE, "A block of VM memory.", infer_alloc_storage)
register_memory_op(VM_ALLOC_TENSOR, "A tensor in a VM storage.", infer_placed_tensor)


def alloc_storage(shape: Any, runtime_device_index: Any, dtype: Any, storage_scope: Any = "global") -> Call:
    """``R.vm.alloc_storage``: a block of ``shape`` (a one-value shape) bytes."""
    return Call(Op.get(VM_ALLOC_STORAGE), [
        as_shape(shape, VM_ALLOC_STORAGE), device_index(runtime_device_index, VM_ALLOC_STORAGE, "runtime_device_index"),
        as_dtype(dtype), check_global_scope(storage_scope, VM_ALLOC_STORAGE)])


def alloc_tensor(storage: Expr, offset: Any, shape: Any, dtype: Any, runtime_device_ind: Any = 0) -> Call:
    """``R.vm.alloc_tensor``: a tensor of ``shape``/``dtype`` at byte ``offset`` of ``storage``."""
    return Call(Op.get(VM_ALLOC_TENSOR), [
        storage, as_prim(offset), as_shape(shape, VM_ALLOC_TENSOR), as_dtype(dtype),
        device_index(runtime_device_ind, VM_ALLOC_TENSOR, "runtime_device_ind")])
