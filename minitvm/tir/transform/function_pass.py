"""PrimFuncPass: a pass applied to every TIR function of a module."""

from __future__ import annotations

from typing import Any, Callable

from ...ir.module import IRModule
from ...transform.pass_infra import Pass, PassContext, PassInfo, _make_pass_decorator
from ..function import PrimFunc

__all__ = ["PrimFuncPass", "prim_func_pass"]


class PrimFuncPass(Pass):
    """Runs ``fn(func, mod, ctx) -> func`` on each PrimFunc; other functions are left alone."""

    def __init__(self, fn: Callable[[PrimFunc, IRModule, PassContext], PrimFunc], info: PassInfo):
        self._fn = fn
        self.info = info

    def transform(self, mod: IRModule, ctx: PassContext) -> IRModule:
        out = mod
        for gv, func in mod.items():
            if isinstance(func, PrimFunc):
                new = self._fn(func, mod, ctx)
                if new is not func:
                    out = out.with_function(gv, new)
        return out


prim_func_pass: Any = _make_pass_decorator(PrimFuncPass, "function")
prim_func_pass.__doc__ = """Make a TIR function pass: ``@prim_func_pass(opt_level=0)`` on
``def f(func, mod, ctx) -> func`` or on a class with ``transform_function(self, func, mod, ctx)``."""
