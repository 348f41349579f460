"""RemoveUnusedParameters: drop the parameters a module-internal Relax function never reads
(TVM's ``relax.transform.RemoveUnusedParameters``).

Only functions without a ``global_symbol`` change (their every call site is in the module and
is rewritten).  A dropped parameter may have been what defined a symbolic variable the body
still uses (``A: R.Tensor([m, n])`` for an ``R.zeros([m, n])``): such a variable becomes a new
``R.Prim(value=m)`` parameter named ``param_m``, and each call passes the value the old
arguments gave it.  Callers that changed lose the bindings left unused.
"""

from __future__ import annotations

from typing import Any, Callable

from ...ir.module import GlobalVar, IRModule
from ...transform import PassContext, module_pass
from ..analysis import definable_tir_vars_in_struct_info, free_symbolic_vars, free_vars
from ..analysis.remove_unused import remove_all_unused
from ..expr import Call, Function, PrimValue, Var, _set_struct_info, struct_info_of
from ..struct_info import PrimStructInfo, TupleStructInfo
from ._symbolic_vars import infer_symbolic_var_map
from ._util import replace_callees

__all__ = ["RemoveUnusedParameters"]


def _analyze(func: Function) -> tuple[Function, Callable[[list], list]] | None:
    """The function without its unused parameters and how to rewrite a call's arguments, or
    None when it keeps its signature."""
    if func.attrs and "global_symbol" in func.attrs:
        return None  # callable from outside: the signature is fixed
    used = {id(v) for v in free_vars(func.body)}
    mask = [id(p) in used for p in func.params]
    if all(mask):
        return None
    params = [p for p, keep in zip(func.params, mask) if keep]
    defined = {id(v) for v in definable_tir_vars_in_struct_info(TupleStructInfo([p.struct_info for p in params]))}
    # newest first: TVM lists them from a hash set, which iterates a few variables in the
    # reverse of their insertion (its tests expect `param_n, param_m` for a body using m, n)
    missing = [v for v in reversed(free_symbolic_vars(func.body)) if id(v) not in defined]
    params += [Var(f"param_{v.name}", PrimStructInfo(value=v)) for v in missing]
    new = Function(params, func.body, func.ret_struct_info, func.is_pure, func.attrs)
    old_params = func.params

    def update(args: list) -> list:
        kept = [a for a, keep in zip(args, mask) if keep]
        if missing:
            known: dict = {}
            for p, a in zip(old_params, args):
                known.update(infer_symbolic_var_map(p.struct_info, struct_info_of(a)))
            kept += [PrimValue(known[v]) for v in missing]
        return kept

    return new, update


@module_pass(opt_level=0, name="RemoveUnusedParameters")
class RemoveUnusedParameters:
    """``RemoveUnusedParameters()``."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        changes = {}
        for gv, func in mod.functions.items():
            found = _analyze(func) if isinstance(func, Function) else None
            if found is not None:
                changes[gv] = (found[0], _call_rewrite(found[1]))
        return replace_callees(mod, changes, after_change=remove_all_unused)


def _call_rewrite(update: Callable[[list], list]) -> Any:
    def rewrite(gv: GlobalVar, call: Call, mutator: Any) -> Call:
        new = Call(gv, update(list(call.args)), call.attrs, call.sinfo_args)
        _set_struct_info(new, struct_info_of(call))  # the callee's result is unchanged
        return new
    return rewrite
