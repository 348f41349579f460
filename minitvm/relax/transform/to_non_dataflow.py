"""ToNonDataflow: dataflow blocks become ordinary binding blocks, DataflowVars plain Vars.

Lowering to the VM inserts side-effecting calls (allocations, kernels writing outputs),
which a dataflow block may not hold; this pass is the first step of that lowering.
"""

from __future__ import annotations

from ...ir.module import IRModule
from ...transform import PassContext, module_pass
from ..expr import BindingBlock, DataflowBlock, DataflowVar, Function, Var
from ..expr_functor import ExprMutator
from ._util import map_functions

__all__ = ["ToNonDataflow"]


class _ToNonDataflow(ExprMutator):
    def visit_dataflow_block_(self, block: DataflowBlock) -> BindingBlock:
        self.builder_.begin_binding_block()
        try:
            for b in block.bindings:
                self.visit_binding(b)
        finally:
            new = self.builder_.end_block()
        return new

    def visit_dataflow_var_def_(self, var: DataflowVar) -> Var:
        new = Var(var.name, var.struct_info)
        self.set_var_remap(var, new)
        return new


def _rewrite(func: Function, mod: IRModule) -> Function:
    return _ToNonDataflow(mod).visit_expr(func)


@module_pass(opt_level=0, name="ToNonDataflow")
class ToNonDataflow:
    """Dataflow blocks -> binding blocks in every Relax function: ``ToNonDataflow()(mod)``."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, _rewrite)
