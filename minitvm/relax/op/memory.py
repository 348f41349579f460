"""The memory operators that lowering to the VM introduces, with TVM's names and arguments.

* ``R.builtin.alloc_tensor(shape, dtype, runtime_device_index)`` -- a fresh tensor for
  one output (what ``CallTIRRewrite`` emits; :mod:`.builtin` holds its builder);
* ``R.memory.alloc_storage(size, virtual_device_index, storage_scope, dtype)`` -- a block
  of ``size`` bytes (``size`` is a one-value shape);
* ``R.memory.alloc_tensor(storage, offset, shape, dtype, runtime_device_index)`` -- a tensor placed in a
  storage at a byte offset (what ``StaticPlanBlockMemory`` emits so that tensors with
  disjoint lifetimes share memory);
* ``R.memory.kill_storage(storage)`` / ``R.memory.kill_tensor(tensor)`` -- the object is not
  used any more (what ``KillAfterLastUse`` inserts; ``LowerRuntimeBuiltin`` makes them
  ``R.vm.kill_object``).

The builders take what TVM's take (Python values or the matching Relax leaves:
``R.shape``, ``R.prim_value``, ``R.str``, ``R.dtype``), so TVMScript written for TVM
parses here.  minitvm has one device and one memory scope: another scope or device index
is refused, never ignored.
"""

from __future__ import annotations

from typing import Any

from ...ir.op import Op, register_op
from ..expr import Call, DataTypeImm, Expr, PrimValue, ShapeExpr, StringImm, struct_info_of
from ..struct_info import (
    ObjectStructInfo,
    ShapeStructInfo,
    StructInfo,
    StructInfoError,
    TensorStructInfo,
    TupleStructInfo,
)

__all__ = ["alloc_storage", "alloc_tensor", "kill_storage", "kill_tensor", "ALLOC_TENSOR", "ALLOC_STORAGE",
           "MEMORY_ALLOC_TENSOR", "KILL_STORAGE", "KILL_TENSOR"]

ALLOC_TENSOR = "relax.builtin.alloc_tensor"
ALLOC_STORAGE = "relax.memory.alloc_storage"
MEMORY_ALLOC_TENSOR = "relax.memory.alloc_tensor"
KILL_STORAGE = "relax.memory.kill_storage"
KILL_TENSOR = "relax.memory.kill_tensor"


def register_memory_op(name: str, doc: str, infer: Any, pure: bool = True) -> Op:
    """An opaque operator of the memory-planning kind (registered once: re-imports keep it)."""
    op = register_op(name, doc, -1)
    if not op.has_attr("FInferStructInfo"):
        op.set_attr("FInferStructInfo", infer)
        op.set_attr("TOpPattern", 8)  # opaque
        op.set_attr("FPurity", pure)
    return op


def tensor_sinfo(shape: Any, dtype: Any, name: str) -> StructInfo:
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
    return tensor_sinfo(call.args[0], call.args[1], ALLOC_TENSOR)


def infer_alloc_storage(call: Call, ctx: Any) -> StructInfo:
    """R.memory.alloc_storage and R.vm.alloc_storage: an object."""
    if len(call.args) != 4:
        raise StructInfoError(f"{call.op.name} takes 4 arguments: size, a device index, a storage scope "
                              f"and a dtype, got {len(call.args)}")
    return ObjectStructInfo()


def infer_placed_tensor(call: Call, ctx: Any) -> StructInfo:
    """R.memory.alloc_tensor and R.vm.alloc_tensor: a tensor of the shape and dtype given."""
    if len(call.args) not in (4, 5):
        raise StructInfoError(f"{call.op.name} takes storage, offset, shape, dtype, runtime_device_index")
    return tensor_sinfo(call.args[2], call.args[3], call.op.name)


register_memory_op(ALLOC_TENSOR, "A tensor with its own memory.", _infer_alloc_tensor)
register_memory_op(ALLOC_STORAGE, "A block of memory that tensors are placed in.", infer_alloc_storage)
register_memory_op(MEMORY_ALLOC_TENSOR, "A tensor placed in a storage at a byte offset.", infer_placed_tensor)


def _infer_kill(call: Call, ctx: Any) -> StructInfo:
    if len(call.args) != 1:
        raise StructInfoError(f"{call.op.name} takes one argument, the object to release")
    return TupleStructInfo([])


# the kills (KillAfterLastUse inserts them) release memory: a side effect, so not pure
for _name, _doc in ((KILL_STORAGE, "Release a storage after its last use."),
                    (KILL_TENSOR, "Release a tensor after its last use.")):
    register_memory_op(_name, _doc, _infer_kill, pure=False)


# -- argument conversion: Python values to the Relax leaves TVM stores -----------------------------

def as_shape(value: Any, name: str) -> Expr:
    if isinstance(value, (tuple, list)):
        return ShapeExpr(list(value))
    if isinstance(value, Expr):
        return value
    raise TypeError(f"{name}: expected a shape (tuple or R.shape), got {value!r}")


def as_dtype(value: Any) -> DataTypeImm:
    return value if isinstance(value, DataTypeImm) else DataTypeImm(str(value))


def as_prim(value: Any) -> Expr:
    return value if isinstance(value, Expr) else PrimValue(value)


def device_index(value: Any, op_name: str, what: str) -> PrimValue:
    """The device index as a PrimValue; minitvm has one device, index 0."""
    prim = as_prim(value)
    index = getattr(prim, "value", None)
    index = getattr(index, "value", index)  # PrimValue of an IntImm
    if index != 0:
        raise NotImplementedError(f"{op_name}: {what}={value!r}; minitvm allocates on device 0 only")
    return prim


def check_global_scope(value: Any, op_name: str) -> StringImm:
    scope = value if isinstance(value, StringImm) else StringImm(str(value))
    if scope.value != "global":
        raise NotImplementedError(f"{op_name}: storage_scope={scope.value!r}; minitvm has only 'global'")
    return scope


def alloc_storage(size: Any, virtual_device_index: Any, storage_scope: Any, dtype: Any) -> Call:
    """``R.memory.alloc_storage``: a block of ``size`` (a one-value shape) bytes."""
    return Call(Op.get(ALLOC_STORAGE), [
        as_shape(size, ALLOC_STORAGE),
        device_index(virtual_device_index, ALLOC_STORAGE, "virtual_device_index"),
        check_global_scope(storage_scope, ALLOC_STORAGE), as_dtype(dtype)])


def alloc_tensor(storage: Expr, offset: Any, shape: Any, dtype: Any, runtime_device_ind: Any = 0) -> Call:
    """``R.memory.alloc_tensor``: a tensor of ``shape``/``dtype`` at byte ``offset`` of ``storage``."""
    device = device_index(runtime_device_ind, MEMORY_ALLOC_TENSOR, "runtime_device_ind")
    return Call(Op.get(MEMORY_ALLOC_TENSOR), [storage, as_prim(offset), as_shape(shape, MEMORY_ALLOC_TENSOR),
                                              as_dtype(dtype), device])


def kill_storage(storage: Expr) -> Call:
    """``R.memory.kill_storage``: ``storage`` is not used any more (its memory may go)."""
    return Call(Op.get(KILL_STORAGE), [storage])


def kill_tensor(tensor: Expr) -> Call:
    """``R.memory.kill_tensor``: ``tensor`` is not used any more."""
    return Call(Op.get(KILL_TENSOR), [tensor])


from .view import ensure_zero_offset, view  # noqa: E402 - R.memory.view: its own module

__all__ += ["view", "ensure_zero_offset"]
