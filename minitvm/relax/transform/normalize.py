"""Normalize: every Relax function in A-normal form with struct info everywhere, as TVM's
``relax.transform.Normalize`` leaves it (nested calls bound to variables, function bodies
and If branches as SeqExprs)."""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...transform import PassContext, module_pass
from ..expr_functor import ExprMutator
from ._util import map_functions

__all__ = ["Normalize"]


class _Normalizer(ExprMutator):
    pass


@module_pass(opt_level=0, name="Normalize")
class Normalize:
    """``Normalize()``: rebuild each Relax function through the BlockBuilder's normalizer."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        def rewrite(func: Any, m: IRModule) -> Any:
            return _Normalizer(m).visit_expr(func)
        return map_functions(mod, rewrite)
