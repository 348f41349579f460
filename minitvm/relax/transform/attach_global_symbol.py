"""AttachGlobalSymbol: every function gets the ``global_symbol`` attribute its code is emitted under.

A Relax function's symbol is its name in the module; a PrimFunc's is that name after the
module attribute ``"system_lib_prefix"`` (empty unless set).  A function already carrying
another symbol gets the new one (as TVM's pass, which has the "keep an existing symbol" rule
switched off).  When a prefix makes a PrimFunc's symbol differ from its name, the function is
renamed to its symbol and every call of it in the module follows (the code generator looks a
kernel up by its name).  Private functions (TVMScript's ``private=True``) become public.
"""

from __future__ import annotations

from typing import Any

from ...ir.module import GlobalVar, IRModule
from ...tir.function import PrimFunc
from ...transform import PassContext, module_pass
from ..expr import Function
from ._util import KernelCallMutator

__all__ = ["AttachGlobalSymbol", "SYSTEM_LIB_PREFIX"]

#: the module attribute naming the prefix of the kernels' symbols (TVM's kSystemLibPrefix)
SYSTEM_LIB_PREFIX = "system_lib_prefix"


class _Renamer(KernelCallMutator):
    def __init__(self, mod: IRModule, renames: dict[GlobalVar, GlobalVar]) -> None:
        super().__init__(mod)
        self.renames = renames
        self.kernels |= set(renames.values())  # a direct kernel call keeps its struct info

    def visit_global_var_(self, op: GlobalVar) -> Any:
        return self.renames.get(op, op)


def _symbol_for(gv: GlobalVar, func: Any, prefix: str) -> str | None:
    if isinstance(func, PrimFunc):
        return prefix + gv.name_hint
    if isinstance(func, Function):
        return gv.name_hint
    return None  # an extern function or anything else keeps what it has


@module_pass(opt_level=0, name="AttachGlobalSymbol")
class AttachGlobalSymbol:
    """``global_symbol`` on every Relax function and PrimFunc: ``AttachGlobalSymbol()(mod)``."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        prefix = str((mod.attrs or {}).get(SYSTEM_LIB_PREFIX) or "")
        functions: dict[GlobalVar, Any] = {}
        renames: dict[GlobalVar, GlobalVar] = {}
        changed = False
        for gv, func in mod.items():
            symbol = _symbol_for(gv, func, prefix)
            if symbol is not None and func.attrs.get("global_symbol") != symbol:
                func, changed = func.with_attr("global_symbol", symbol), True
                if symbol != gv.name_hint:
                    renames[gv] = GlobalVar(symbol)
            functions[renames.get(gv, gv)] = func
        if not changed:
            return mod
        if renames:  # calls of a renamed kernel name it by its new GlobalVar
            functions = {gv: _Renamer(mod, renames).visit_expr(f) if isinstance(f, Function) else f
                         for gv, f in functions.items()}
        return IRModule(functions, mod.attrs, mod.global_infos)
