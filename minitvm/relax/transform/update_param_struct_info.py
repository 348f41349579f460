"""UpdateParamStructInfo: give parameters new struct info from a callback and let every
binding and the result follow (TVM's ``relax.transform.UpdateParamStructInfo``).
``sinfo_func(param)`` returns the new struct info, or None to keep the parameter."""

from __future__ import annotations

from typing import Any, Callable

from ...ir.module import IRModule
from ...transform import PassContext, module_pass
from ..expr import Function, Var
from ..expr_functor import ExprMutator
from ._util import map_functions

__all__ = ["UpdateParamStructInfo"]


def _update(func: Function, sinfo_func: Callable[[Var], Any]) -> Function:
    mutator = ExprMutator()
    params, changed = [], False
    for p in func.params:
        sinfo = sinfo_func(p)
        new = p if sinfo is None else Var(p.name, sinfo)
        if new is not p:
            mutator.set_var_remap(p, new)
            changed = True
        params.append(new)
    if not changed:
        return func
    body = mutator.visit_with_new_scope(func.body)  # bindings re-inferred from the new parameters
    return mutator.builder_.normalize(Function(params, body, None, func.is_pure, func.attrs))


@module_pass(opt_level=0, name="UpdateParamStructInfo")
class UpdateParamStructInfo:
    """``UpdateParamStructInfo(sinfo_func)``."""

    def __init__(self, sinfo_func: Callable[[Var], Any]) -> None:
        self.sinfo_func = sinfo_func

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, lambda f, m: _update(f, self.sinfo_func))
