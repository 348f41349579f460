"""RemovePurityChecking: after it, purity is no longer tracked.

Every pure Relax function (inner ones too) gets ``{"relax.force_pure": True}``, so the
side-effecting calls that lowering inserts (allocations, kernels writing their outputs, kills)
may sit in it, and every ``R.call_pure_packed(f, *args)`` becomes the plain call ``f(*args)``
(``R.invoke_pure_closure`` becomes ``R.invoke_closure``)
-- the wrapper only told the purity checker to trust the call.  Run after ``ToNonDataflow``
(a dataflow block must stay pure whatever its function says), as TVM's pipeline does.
"""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...ir.op import Op
from ...transform import PassContext, module_pass
from ..expr import Call, Function
from ..expr_functor import ExprMutator
from ._util import map_functions

__all__ = ["RemovePurityChecking", "FORCE_PURE"]

#: the function attribute that makes the purity checker trust a function (TVM's kForcePure)
FORCE_PURE = "relax.force_pure"


class _PurityRemover(ExprMutator):
    def visit_function_(self, op: Function) -> Any:
        func = op.with_attr(FORCE_PURE, True) if op.is_pure and not op.attrs.get(FORCE_PURE) else op
        body = self.visit_expr(func.body)
        if body is func.body:
            return func
        return Function(func.params, body, func.ret_struct_info, func.is_pure, func.attrs)

    def visit_call_(self, op: Call) -> Any:
        if isinstance(op.op, Op) and op.op.name == "relax.call_pure_packed":
            # the callee itself, with the result type the wrapper declared
            return self.visit_expr(Call(op.args[0], list(op.args[1:]), None, list(op.sinfo_args)))
        if isinstance(op.op, Op) and op.op.name == "relax.invoke_pure_closure":
            return self.visit_expr(Call(Op.get("relax.invoke_closure"), list(op.args), op.attrs, list(op.sinfo_args)))
        return super().visit_call_(op)


def _rewrite(func: Function, mod: IRModule) -> Function:
    return _PurityRemover(mod).visit_function_(func)


@module_pass(opt_level=0, name="RemovePurityChecking")
class RemovePurityChecking:
    """Pure functions -> ``relax.force_pure``, ``call_pure_packed`` unwrapped: ``RemovePurityChecking()(mod)``."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, _rewrite)
