"""BindSymbolicVars: give symbolic dimensions fixed values (TVM's
``relax.transform.BindSymbolicVars``).

``binding_map`` maps a ``tir.Var`` (that variable only) or a name (every variable of that
name) to a value (an int or a PrimExpr); ``func_name`` limits the change to one function.
Struct info, shapes, prim values and the ``out_sinfo`` of calls are rewritten and
simplified (``m - 1`` with ``m = 3`` is ``2``).  A key that names no variable of the
functions bound is an error, as in TVM.
"""

from __future__ import annotations

from typing import Any

from ...error import TVMError
from ...ir.module import IRModule
from ...tir.expr import IntImm, PrimExpr
from ...tir.expr import Var as TirVar
from ...transform import PassContext, module_pass
from ..analysis import defined_symbolic_vars, free_symbolic_vars
from ..analysis.struct_info_analysis import substitute_struct_info
from ..expr import Function, Var
from .bind_params import _SymbolicBinder

__all__ = ["BindSymbolicVars", "bind_function_symbolic_vars"]


def _value(v: Any, like: TirVar) -> PrimExpr:
    return IntImm(like.dtype, int(v)) if isinstance(v, int) else v


def bind_function_symbolic_vars(func: Function, table: dict[int, Any]) -> Function:
    """``func`` with each symbolic variable whose id is in ``table`` replaced by its value (an
    int or a PrimExpr); no checks (``Function.bind_symbolic_vars`` makes TVM's)."""
    table = {k: IntImm("int64", v) if isinstance(v, int) else v for k, v in table.items()}

    def fmap(v: TirVar) -> PrimExpr | None:
        return table.get(id(v))

    binder = _SymbolicBinder(fmap)
    new_params = []
    for p in func.params:
        sinfo = substitute_struct_info(p.struct_info, fmap)  # simplified: (m - 1 -> 2)
        new = Var(p.name, sinfo)
        binder.set_var_remap(p, new)
        new_params.append(new)
    body = binder.visit_with_new_scope(func.body)
    ret = substitute_struct_info(func.ret_struct_info, fmap) if func.ret_struct_info is not None else None
    return binder.builder_.normalize(Function(new_params, body, ret, func.is_pure, func.attrs))


@module_pass(opt_level=0, name="BindSymbolicVars")
class BindSymbolicVars:
    """``BindSymbolicVars(binding_map, func_name=None)``."""

    def __init__(self, binding_map: dict, func_name: str | None = None) -> None:
        self.binding_map = dict(binding_map)
        self.func_name = func_name

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        if self.func_name is not None and self.func_name not in mod:
            raise TVMError(f"BindSymbolicVars: the module has no function {self.func_name!r}")
        used: set[int] = set()
        funcs = dict(mod.functions)
        for gv, func in mod.functions.items():
            if not isinstance(func, Function) or (self.func_name is not None and gv.name_hint != self.func_name):
                continue
            table: dict[int, PrimExpr] = {}
            seen = {id(v): v for v in [*defined_symbolic_vars(func), *free_symbolic_vars(func)]}
            for i, (key, value) in enumerate(self.binding_map.items()):
                for v in seen.values():
                    if (isinstance(key, str) and v.name == key) or key is v:
                        table[id(v)] = _value(value, v)
                        used.add(i)
            if table:
                funcs[gv] = bind_function_symbolic_vars(func, table)
        unused = [k for i, k in enumerate(self.binding_map) if i not in used]
        if unused:
            raise TVMError(f"BindSymbolicVars: no symbolic variable matches {unused} "
                           f"(in {'function ' + self.func_name if self.func_name else 'the module'})")
        return IRModule(funcs, mod.attrs, mod.global_infos)
