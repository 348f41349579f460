"""``tvm.ir.transform.ApplyPassToFunction``: a pass run on some functions of a module only.

It lives with the Relax passes because the functions the pass must not touch are stood in
for by Relax ``ExternFunc`` placeholders; :mod:`minitvm.relax.transform` installs it in
:mod:`minitvm.transform` (``tvm.ir.transform``), the pass-infra floor below.
"""

from __future__ import annotations

import re

from ...ir.module import IRModule
from ...transform import ModulePass, Pass, PassContext, PassInfo
from ..expr import ExternFunc, _set_struct_info, struct_info_of

__all__ = ["ApplyPassToFunction"]


def ApplyPassToFunction(pass_: Pass, func_name_regex: str,  # noqa: N802 - TVM's name
                        error_if_no_function_matches_regex: bool = False) -> Pass:
    """``pass_`` run on the functions whose names fully match ``func_name_regex`` only.

    The pass sees the module with every other function replaced by an ``ExternFunc``
    placeholder of the same signature (calls of them stay well formed, and no pass can change
    them); what it returns for the matching functions replaces them in the whole module.  A
    matching private function is shown to the pass with a ``global_symbol`` (so no pass removes
    it as unused) and returned without it."""
    pattern = re.compile(func_name_regex)

    def run(mod: IRModule, ctx: PassContext) -> IRModule:
        subset, private, kept = {}, set(), set()
        for gv, func in mod.functions.items():
            if pattern.fullmatch(gv.name_hint):
                if "global_symbol" not in (getattr(func, "attrs", None) or {}):
                    private.add(gv.name_hint)
                    func = func.with_attr("global_symbol", gv.name_hint)
            else:
                kept.add(gv.name_hint)
                func = ExternFunc("dummy_" + gv.name_hint)
                if struct_info_of(gv) is not None:
                    _set_struct_info(func, struct_info_of(gv))
            subset[gv] = func
        if len(kept) == len(subset) and error_if_no_function_matches_regex:
            raise ValueError(f"ApplyPassToFunction: no function of the module matches {func_name_regex!r}")
        sub = IRModule(subset, mod.attrs, mod.global_infos)
        new = pass_(sub)
        if new is sub:
            return mod
        out = mod
        for gv, func in new.functions.items():
            if gv.name_hint in kept:
                continue
            if gv.name_hint in private:
                func = func.without_attr("global_symbol")
            out = out.without(gv.name_hint)
            out._put(gv, func)
        return out

    return ModulePass(run, PassInfo(0, f"ApplyPassTo{func_name_regex}"))
