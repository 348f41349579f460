"""VMBuiltinLower: the memory operators become calls of the VM's builtin functions.

=====================================================  ===============================================
``R.builtin.alloc_tensor(shape, dtype, dev)``           ``storage = vm.builtin.alloc_storage(shape, dtype)``
                                                        ``vm.builtin.alloc_tensor(storage, 0, shape, dtype)``
``R.memory.alloc_storage(size, dev, scope, dtype)``     ``vm.builtin.alloc_storage(size, "uint8")``  (size in bytes)
``R.memory.alloc_tensor(storage, offset, shape, dt)``   ``vm.builtin.alloc_tensor(storage, offset, shape, dt)``
``R.call_pure_packed(f, *args)``                        ``f(*args)``
``R.call_py_func("name", (a, b), out_ty=...)``          ``vm.builtin.call_py_func(("name", (a, b)))``, checked
                                                        against ``out_ty`` (a match_cast)
``R.vm.call_tir_dyn(f, (a, out, R.shape([n])))``        ``f(a, out, n)`` (a PrimFunc of the module)
``R.tensor_to_shape(t)``                               ``vm.builtin.tensor_to_shape(t)``
``R.reshape(x, R.shape([n, 32]))``                      ``vm.builtin.reshape(x, R.shape([n, 32]))`` (a view)
``R.memory.kill_tensor(x)`` / ``kill_storage(x)``        ``R.vm.kill_object(x)`` (the code generator
                                                        empties x's register)
=====================================================  ===============================================

``LowerRuntimeBuiltin`` (TVM's name; :mod:`.lower_runtime_builtin`) is this pass, except that
it refuses ``R.builtin.alloc_tensor``, which ``LowerAllocTensor`` lowers first in TVM's
pipeline; ``VMBuiltinLower`` accepts it, as minitvm's own VM lowering runs no LowerAllocTensor.

Afterwards every call in a function is a call of a name (``R.ExternFunc``) or of a module
function (a PrimFunc kernel or another Relax function): what the VM code generator emits.
"""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...ir.op import Op
from ...transform import PassContext, module_pass
from ..expr import Call, DataTypeImm, ExternFunc, Function, PrimValue, ShapeExpr, Tuple, _set_struct_info
from ..op.memory import KILL_STORAGE, KILL_TENSOR
from ..op.vm import CALL_TIR_DYN, KILL_OBJECT, kill_object
from ..struct_info import ObjectStructInfo, TupleStructInfo
from ..vm.ops import ALLOC_STORAGE, ALLOC_TENSOR, MEMORY_ALLOC_TENSOR
from ._util import KernelCallMutator, map_functions

__all__ = ["VMBuiltinLower"]


def builtin_call(name: str, args: list, sinfo: Any = None) -> Call:
    """``R.ExternFunc(name)(*args)`` with the struct info of its result."""
    return Call(ExternFunc(name), args, None, [sinfo or ObjectStructInfo()])


class _BuiltinLower(KernelCallMutator):
    #: the name of the pass, for its errors; a pass that refuses ``R.builtin.alloc_tensor`` sets it
    pass_name = "VMBuiltinLower"
    lowers_alloc_tensor = True

    def visit_call_(self, op: Call) -> Any:
        call = self.visit_children(op)
        if not isinstance(call.op, Op):
            return call
        name = call.op.name
        if name == ALLOC_TENSOR and not self.lowers_alloc_tensor:
            raise ValueError(f"{self.pass_name}: {name} is still in the module; run LowerAllocTensor first "
                             "(after StaticPlanBlockMemory) to give each such tensor a storage")
        if name in (KILL_STORAGE, KILL_TENSOR):
            return kill_object(call.args[0])
        if name in (KILL_OBJECT, "relax.vm.alloc_storage", "relax.vm.alloc_tensor") or call.op.get_attr("FCallPacked"):
            return call  # already the VM's forms; an FCallPacked op (relax.unique) is called by name
        if name == "relax.reshape":  # a view of the same memory, made by the VM
            return Call(ExternFunc("vm.builtin.reshape"), list(call.args), None, [call.struct_info])
        if name == ALLOC_TENSOR:
            shape, dtype = call.args[0], call.args[1]
            storage = self.builder_.emit(builtin_call("vm.builtin.alloc_storage", [shape, dtype]), "storage")
            return builtin_call("vm.builtin.alloc_tensor", [storage, PrimValue(0), shape, dtype], call.struct_info)
        if name == ALLOC_STORAGE:
            # the size is in bytes whatever the dtype (the dtype only tells what it will hold)
            return builtin_call("vm.builtin.alloc_storage", [call.args[0], DataTypeImm("uint8")])
        if name == MEMORY_ALLOC_TENSOR:
            return builtin_call("vm.builtin.alloc_tensor", list(call.args[:4]), call.struct_info)
        if name in ("relax.print", "relax.assert_op", "relax.tensor_to_shape", "relax.shape_of",
                    "relax.shape_to_tensor", "relax.null_value"):  # run-time builtins of the VM
            return Call(ExternFunc("vm.builtin." + name.removeprefix("relax.")), list(call.args), None,
                        [call.struct_info])
        if name == CALL_TIR_DYN:  # the PrimFunc called directly, the shape's values as scalars
            *tensors, shape = call.args[1].fields
            values = shape.values if isinstance(shape, ShapeExpr) else None
            if values is None:
                raise ValueError(f"{self.pass_name}: {name} needs its last argument to be an R.shape, got {shape!r}")
            kernel = Call(call.args[0], [*tensors, *(PrimValue(v) for v in values)])
            _set_struct_info(kernel, TupleStructInfo([]))
            return kernel
        if name == "relax.call_pure_packed":
            return Call(call.args[0], list(call.args[1:]), None, [call.struct_info])
        if name == "relax.call_py_func":  # as TVM: one (name, args) tuple for the callback builtin
            raw = self.builder_.emit(builtin_call("vm.builtin.call_py_func", [Tuple([call.args[0], call.args[1]])]),
                                     "py_result")
            # unlike TVM, what Python returns is checked against out_ty (VMShapeLower turns the
            # cast into shape and dtype checks): compiled kernels trust the shapes they are given
            return self.builder_.match_cast(raw, call.struct_info, f"call_py_func_{call.args[0].value}")
        if name in ("relax.call_tir", "relax.call_tir_inplace", "relax.call_dps_packed"):
            raise ValueError(f"{self.pass_name}: {name} is still in the module; run CallTIRRewrite first")
        raise ValueError(f"{self.pass_name}: operator {name} has no VM lowering; run LegalizeOps first "
                         "(relax.get_pipeline('zero') does) to turn it into call_tir of a PrimFunc")


def _rewrite(func: Function, mod: IRModule) -> Function:
    return _BuiltinLower(mod).visit_expr(func)


@module_pass(opt_level=0, name="VMBuiltinLower")
class VMBuiltinLower:
    """Memory operators -> VM builtin calls: ``VMBuiltinLower()(mod)``."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, _rewrite)
