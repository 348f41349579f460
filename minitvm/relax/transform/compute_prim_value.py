"""ComputePrimValue: each ``R.prim_value`` of a compound symbolic expression (``N % 16 == 0``,
``N * M``) becomes a call of a small host PrimFunc ``compute_symbolic_expr`` that returns it
(TVM's ``relax.transform.ComputePrimValue``), so the VM need not evaluate TIR arithmetic
itself.  A branch condition (``if R.prim_value(...)``) is bound to ``condition`` first.
Prim values that are a constant or a lone variable stay."""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...ir.type import PrimType
from ...tir import stmt as tir_stmt
from ...tir.expr import FloatImm, IntImm, PrimExpr
from ...tir.expr import Var as TirVar
from ...tir.function import PrimFunc
from ...tir.functor import post_order_visit, substitute
from ...tir.op import ret
from ...transform import PassContext, module_pass
from ..expr import Call, If, PrimValue, _set_struct_info
from ..expr_functor import ExprMutator
from ..struct_info import PrimStructInfo
from ._util import rewrite_with_builder

__all__ = ["ComputePrimValue"]


def _free_vars(expr: PrimExpr) -> list[TirVar]:
    seen: dict[int, TirVar] = {}
    post_order_visit(expr, lambda n: seen.setdefault(id(n), n) if isinstance(n, TirVar) else None)
    return list(seen.values())


class _Computer(ExprMutator):
    def __init__(self, mod: IRModule) -> None:
        super().__init__(mod)

    def visit_prim_value_(self, op: PrimValue) -> Any:
        value = op.value
        if isinstance(value, (IntImm, FloatImm, TirVar)) or not isinstance(value, PrimExpr):
            return op  # a constant or a lone variable: nothing to compute
        params = _free_vars(value)
        fresh = [TirVar(v.name, v.dtype) for v in params]  # the PrimFunc binds its own variables
        body = substitute(value, {old: new for old, new in zip(params, fresh)})
        func = PrimFunc(tuple(fresh), {}, tir_stmt.Evaluate(ret(body)), PrimType(value.dtype),
                        {"tir.is_host_func": True})
        gv = self.builder_.add_func(func, "compute_symbolic_expr")
        call = Call(gv, [PrimValue(v) for v in params])
        _set_struct_info(call, PrimStructInfo(value.dtype))
        return call

    def visit_if_(self, op: If) -> Any:
        cond = self.visit_expr(op.cond)
        if cond is not op.cond and isinstance(cond, Call):
            cond = self.builder_.emit(cond, "condition")
        then, other = self.visit_with_new_scope(op.true_branch), self.visit_with_new_scope(op.false_branch)
        if cond is op.cond and then is op.true_branch and other is op.false_branch:
            return op
        return If(cond, then, other)


@module_pass(opt_level=0, name="ComputePrimValue")
class ComputePrimValue:
    """``ComputePrimValue()``."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        new, changed = rewrite_with_builder(mod, _Computer(mod))
        return new if changed else mod
