"""Purity: which calls may have visible side effects (TVM's ``contains_impure_call``).

A call is impure when its callee says so:

* an operator: its ``FPurity`` attribute is not true (``R.call_tir``, ``R.add`` are pure);
* an ``ExternFunc`` (``R.call_packed``): impure, its struct info says ``purity=False``
  (``R.call_pure_packed`` is the pure spelling);
* a module function (``cls.f(x)``): what ``f`` declares (``@R.function(pure=False)``),
  read from the module when one is given, else from the GlobalVar's struct info; a direct
  call of a PrimFunc writes its arguments, so it is impure;
* any other callee (a local function variable): its ``FuncStructInfo.purity``.

Passes that drop or merge bindings (``remove_all_unused``, ``DeadCodeElimination``,
``EliminateCommonSubexpr``, ``ConvertToDataflow``) ask here, so an unused
``R.call_packed("f", x, out)`` that writes ``out`` is never removed.
"""

from __future__ import annotations

from typing import Any

from ...ir.module import GlobalVar, IRModule
from ...ir.op import Op
from ...tir.function import PrimFunc
from ..expr import Call, ExternFunc, Function, Var, struct_info_of
from ..expr_functor import ExprVisitor
from ..struct_info import FuncStructInfo, prim_func_struct_info

__all__ = ["contains_impure_call", "call_purity", "is_impure_call", "find_impure_call"]


def call_purity(call: Call, mod: IRModule | None = None) -> bool | None:
    """True when ``call`` is known pure, False when known impure, None when nothing says
    (a GlobalVar neither ``mod`` nor its struct info describes)."""
    op = call.op
    if isinstance(op, Op):
        return bool(op.get_attr("FPurity"))
    if isinstance(op, GlobalVar):
        if mod is not None and op in mod:
            func = mod[op]
            if isinstance(func, Function):
                return func.is_pure
            if isinstance(func, PrimFunc):
                # as TVM reads its struct info: impure when it writes an argument's buffer
                try:
                    return prim_func_struct_info(func).purity
                except (TypeError, ValueError):  # a signature Relax cannot describe (int32 extents)
                    return False
    sinfo = struct_info_of(op)
    if isinstance(sinfo, FuncStructInfo):
        return sinfo.purity
    return None


def is_impure_call(call: Call, mod: IRModule | None = None) -> bool:
    """Whether ``call`` may have side effects (an unknown callee counts as impure)."""
    return call_purity(call, mod) is not True


class _ImpureCallFinder(ExprVisitor):
    def __init__(self, own_name: Any, mod: IRModule | None, unknown_is_impure: bool = True) -> None:
        self.own_name = own_name
        self.mod = mod
        self.unknown_is_impure = unknown_is_impure
        self.found: Call | None = None

    def visit_expr(self, expr: Any) -> Any:
        # (an in-line PrimFunc is no Relax expression: the well-formed check reports it)
        if self.found is None and not isinstance(expr, PrimFunc):
            return super().visit_expr(expr)
        return None

    def visit_function_(self, op: Function) -> None:
        pass  # defining a function runs nothing: its impure calls happen only when it is called

    def visit_call_(self, op: Call) -> None:
        recursive = self.own_name is not None and op.op is self.own_name
        purity = None if recursive else call_purity(op, self.mod)
        if not recursive and (purity is False or (purity is None and self.unknown_is_impure)):
            self.found = op
        else:
            super().visit_call_(op)


def contains_impure_call(expr: Any, own_name: Any = None, mod: IRModule | None = None, *,
                         unknown_is_impure: bool = True) -> bool:
    """Whether evaluating ``expr`` (for a Function: its body) may call something impure.

    ``own_name`` (the Var or GlobalVar naming a recursive function) excludes its calls of
    itself; ``mod`` lets calls of module functions be judged by the functions themselves.
    Functions defined inside ``expr`` are not looked into: defining one has no effect.
    A callee nothing describes counts as impure unless ``unknown_is_impure=False`` (inside a
    dataflow block, whose calls are pure by construction).
    """
    if own_name is not None and not isinstance(own_name, (GlobalVar, Var)):
        raise TypeError(f"contains_impure_call: own_name must be a Var or GlobalVar, got {own_name!r}")
    if isinstance(expr, Function):
        expr = expr.body
    finder = _ImpureCallFinder(own_name, mod, unknown_is_impure)
    finder.visit_expr(expr)
    return finder.found is not None


class _DeclaredImpureCallFinder(_ImpureCallFinder):
    def visit_call_(self, op: Call) -> None:
        if _lowered_call(op, self.mod):
            super(_ImpureCallFinder, self).visit_call_(op)  # its arguments still count
            return
        super().visit_call_(op)


def _lowered_call(call: Call, mod: IRModule | None) -> bool:
    """A call of the forms the VM lowering inserts: a PrimFunc in destination-passing style
    (it writes only outputs its caller allocated) or a packed function (``R.call_packed``, an
    ExternFunc; call_dps_packed and call_pure_packed become these).  TVM's pipeline marks a
    function ``relax.force_pure`` (RemovePurityChecking) before inserting them; minitvm's
    pipeline does not, so they are not counted against a pure function (impure operators
    such as ``R.print`` are)."""
    op = call.op
    if isinstance(op, GlobalVar):
        return mod is not None and isinstance(mod.functions.get(op), PrimFunc)
    return isinstance(op, ExternFunc) or (isinstance(op, Op) and op.name == "relax.call_packed")


def find_impure_call(expr: Any, mod: IRModule | None = None) -> Call | None:
    """The first call evaluating ``expr`` makes that is known impure (TVM's ``FindImpureCall``:
    a callee nothing describes and a PrimFunc of ``mod`` are not counted; functions defined
    inside are not looked into)."""
    finder = _DeclaredImpureCallFinder(None, mod, unknown_is_impure=False)
    finder.visit_expr(expr.body if isinstance(expr, Function) else expr)
    return finder.found
