"""NormalizeGlobalVar: every public function's GlobalVar is named by its ``global_symbol``
(TVM's ``relax.transform.NormalizeGlobalVar``); a private function holding that name moves to
a fresh one (``f1``, ``f2`` ...), and every reference follows."""

from __future__ import annotations

from typing import Any

from ...ir.module import GlobalVar, IRModule
from ...transform import PassContext, module_pass
from ..expr import Function, _set_struct_info, struct_info_of
from ..expr_functor import ExprMutator

__all__ = ["NormalizeGlobalVar"]


def _symbol(func: Any) -> str | None:
    value = (getattr(func, "attrs", None) or {}).get("global_symbol")
    return None if value is None else str(value)


class _Rename(ExprMutator):
    def __init__(self, renamed: dict[GlobalVar, GlobalVar]) -> None:
        super().__init__()
        self.renamed = renamed

    def visit_global_var_(self, op: GlobalVar) -> Any:
        return self.renamed.get(op, op)


def _new_names(mod: IRModule) -> dict[GlobalVar, str]:
    names = {gv: _symbol(f) or gv.name_hint for gv, f in mod.functions.items()}
    claimed = {_symbol(f) for f in mod.functions.values() if _symbol(f) is not None}
    used = set(claimed)
    for gv, func in mod.functions.items():
        if _symbol(func) is None and gv.name_hint in claimed:  # a private function in a public name
            k = 1
            while f"{gv.name_hint}{k}" in used or f"{gv.name_hint}{k}" in names.values():
                k += 1
            names[gv] = f"{gv.name_hint}{k}"
        used.add(names[gv])
    return names


@module_pass(opt_level=0, name="NormalizeGlobalVar")
class NormalizeGlobalVar:
    """``NormalizeGlobalVar()`` (see the module docstring)."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        names = _new_names(mod)
        renamed = {}
        for gv, name in names.items():
            if name != gv.name_hint:
                new = GlobalVar(name)
                if struct_info_of(gv) is not None:
                    _set_struct_info(new, struct_info_of(gv))
                renamed[gv] = new
        if not renamed:
            return mod
        mutator = _Rename(renamed)
        funcs = {renamed.get(gv, gv): mutator.visit_expr(f) if isinstance(f, Function) else f
                 for gv, f in mod.functions.items()}
        return IRModule(dict(sorted(funcs.items(), key=lambda kv: kv[0].name_hint)), mod.attrs, mod.global_infos)
