"""EliminateCommonSubexpr: a pure value computed twice in a dataflow block is computed once.

::

    lv0 = R.add(x, y)          lv0 = R.add(x, y)
    lv1 = R.add(x, y)    ->    (lv1 removed; its uses read lv0)
    gv  = R.multiply(lv0, lv1) gv  = R.multiply(lv0, lv0)

Two values are the same when they are structurally equal after earlier replacements (so
chains of duplicates fold too); free variables compare by identity.  Only dataflow blocks
are searched (their bindings are pure), each on its own.  A duplicate bound to an output
variable stays as ``gv = lv0`` (the output must still be defined);
``CanonicalizeBindings`` removes such copies when it can.  Plain variables, constants and
``match_cast`` are left alone; with ``call_only=True`` only calls are considered (not
tuples or tuple items).  Calls of impure operators or functions are never merged.

::

    mod = relax.transform.EliminateCommonSubexpr()(mod)
"""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...ir.structural import structural_equal, structural_hash
from ...transform import PassContext, module_pass
from ..analysis.purity import is_impure_call
from ..expr import (
    BindingBlock,
    Call,
    DataflowBlock,
    DataflowVar,
    Tuple,
    TupleGetItem,
    VarBinding,
)
from ..expr_functor import ExprMutator
from ._util import map_functions

__all__ = ["EliminateCommonSubexpr"]


class _CSE(ExprMutator):
    def __init__(self, mod: IRModule, call_only: bool) -> None:
        super().__init__(mod)
        self.mod = mod
        self.call_only = call_only
        self.table: dict[int, list[tuple[Any, Any]]] | None = None

    def _candidate(self, value: Any) -> bool:
        if isinstance(value, Call):
            return not is_impure_call(value, self.mod)
        return not self.call_only and isinstance(value, (Tuple, TupleGetItem))

    def visit_dataflow_block_(self, block: DataflowBlock) -> BindingBlock:
        saved, self.table = self.table, {}
        try:
            return super().visit_dataflow_block_(block)
        finally:
            self.table = saved

    def visit_binding_block_(self, block: BindingBlock) -> BindingBlock:
        saved, self.table = self.table, None
        try:
            return super().visit_binding_block_(block)
        finally:
            self.table = saved

    def visit_var_binding_(self, binding: VarBinding) -> None:
        if self.table is None or not self._candidate(binding.value):
            return super().visit_var_binding_(binding)
        value = self.visit_expr(binding.value)
        bucket = self.table.setdefault(structural_hash(value), [])
        for known, var in bucket:
            if structural_equal(known, value):
                if isinstance(binding.var, DataflowVar):
                    self.set_var_remap(binding.var, var)
                else:
                    self.builder_.emit_normalized(VarBinding(binding.var, var))
                return
        new_var = self.with_struct_info(binding.var, value.struct_info)
        if new_var is not binding.var:
            self.set_var_remap(binding.var, new_var)
        if new_var is binding.var and value is binding.value:
            self.builder_.emit_normalized(binding)
        else:
            self.builder_.emit_normalized(VarBinding(new_var, value))
        bucket.append((value, new_var))


@module_pass(opt_level=0, name="EliminateCommonSubexpr")
class EliminateCommonSubexpr:
    """Merge identical pure computations in each dataflow block:
    ``EliminateCommonSubexpr(call_only=False)(mod)``."""

    def __init__(self, call_only: bool = False):
        self.call_only = call_only

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, lambda f, m: _CSE(m, self.call_only).visit_expr(f))
