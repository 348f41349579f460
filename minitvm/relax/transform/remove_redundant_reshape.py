"""RemoveRedundantReshape: drop the operations that do not change their input.

An exported model is full of them: ``reshape`` to the shape the tensor already has,
``broadcast_to`` its own shape, ``astype`` to its own dtype, ``permute_dims`` with the axes in
order -- each one a kernel call that copies a tensor into a new one of the same contents.
This pass replaces such a call by its input, and a ``reshape`` of a ``reshape`` by one
``reshape`` of the original tensor (the middle shape never matters); ``CanonicalizeBindings``
then removes the ``y = x`` aliases left behind.  TVM's pass of the same name does the two
reshape cases; the other no-op copies follow the same rule.

::

    mod = relax.transform.RemoveRedundantReshape()(mod)
"""

from __future__ import annotations

from ...ir.module import IRModule
from ...ir.op import Op
from ...ir.structural import structural_equal
from ...transform import PassContext, module_pass
from ..expr import Call, Expr, Function, Var
from ..expr_functor import ExprMutator
from ..struct_info import TensorStructInfo
from ._util import map_functions
from .canonicalize_bindings import CanonicalizeBindings

__all__ = ["RemoveRedundantReshape"]

#: operations that are the identity when their output has their input's struct info
_SAME_SHAPE_NOOPS = ("relax.reshape", "relax.broadcast_to", "relax.astype")


def _same_tensor_type(a: object, b: object) -> bool:
    return (isinstance(a, TensorStructInfo) and isinstance(b, TensorStructInfo) and a.dtype == b.dtype
            and a.shape_values is not None and b.shape_values is not None
            and len(a.shape_values) == len(b.shape_values) and structural_equal(a.shape_values, b.shape_values))


class _Remover(ExprMutator):
    def visit_call_(self, op: Call) -> Expr:
        call = super().visit_call_(op)
        if not isinstance(call, Call) or not isinstance(call.op, Op) or not call.args:
            return call
        name = call.op.name
        x = call.args[0]
        if name in _SAME_SHAPE_NOOPS + ("relax.permute_dims",):
            out_sinfo = call.struct_info if call.struct_info is not None else self.builder_.normalize(call).struct_info
            if name == "relax.permute_dims":
                axes = call.attrs.get("axes")
                ndim = getattr(x.struct_info, "ndim", -1)
                if axes is not None and list(axes) == list(range(ndim)):
                    return x
            elif _same_tensor_type(x.struct_info, out_sinfo):
                return x
        if name == "relax.reshape" and isinstance(x, Var):
            inner = self.lookup_binding(x)
            if isinstance(inner, Call) and inner.op == Op.get("relax.reshape"):
                return Call(call.op, [inner.args[0], *call.args[1:]], call.attrs, call.sinfo_args)
        return call


def _remove(func: Function, mod: IRModule) -> Function:
    if func.attrs.get("Primitive"):
        return func
    return _Remover(mod).visit_expr(func)


@module_pass(opt_level=0, name="RemoveRedundantReshape")
class RemoveRedundantReshape:
    """``RemoveRedundantReshape()``: no-op reshape / broadcast_to / astype / permute_dims -> their
    input, reshape of reshape -> one reshape; then ``CanonicalizeBindings`` (see the module docstring)."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        out = map_functions(mod, _remove)
        return mod if out is mod else CanonicalizeBindings()(out)
