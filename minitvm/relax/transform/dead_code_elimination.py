"""DeadCodeElimination: drop unused bindings and functions nobody can reach.

1. In every Relax function, bindings whose variables are never used go, if they are pure
   (anything in a dataflow block; outside one, pure operator calls, calls of pure
   functions -- the module's pure Relax functions included -- and plain values):
   :func:`relax.analysis.remove_all_unused`, repeated until nothing changes.
2. Functions of the module not reachable from an entry go.  Entries are the names given
   in ``entry_functions`` plus every externally visible function (one with a
   ``global_symbol`` attribute: public Relax functions and public PrimFuncs) plus ``main``
   when there is one.  A Relax function reaches the functions it names (``R.call_tir`` of a
   PrimFunc, calls of other Relax functions).

::

    mod = relax.transform.DeadCodeElimination()(mod)
"""

from __future__ import annotations

from typing import Any, Sequence

from ...ir.module import GlobalVar, IRModule
from ...transform import PassContext, module_pass
from ..analysis.remove_unused import remove_all_unused
from ..analysis.vars import all_global_vars
from ..expr import BindingBlock, Call, DataflowBlock, DataflowVar, Function, Var, VarBinding
from ..expr_functor import ExprMutator, ExprVisitor

__all__ = ["DeadCodeElimination"]


def _is_public(func: Any) -> bool:
    attrs = getattr(func, "attrs", None) or {}
    return bool(attrs.get("global_symbol"))


class _Uses(ExprVisitor):
    def __init__(self) -> None:
        self.used: set[Var] = set()

    def visit_var_(self, op: Var) -> None:
        self.used.add(op)

    def visit_dataflow_var_(self, op: DataflowVar) -> None:
        self.used.add(op)


class _DropPureGlobalCalls(ExprMutator):
    """Unused ``v = cls.f(...)`` outside dataflow blocks where ``f`` is a pure Relax
    function of the module (``remove_all_unused`` keeps calls of module functions)."""

    def __init__(self, mod: IRModule, used: set[Var]) -> None:
        super().__init__(mod)
        self.mod, self.used = mod, used

    def visit_dataflow_block_(self, block: DataflowBlock) -> BindingBlock:
        return block  # remove_all_unused handles dataflow blocks

    def visit_var_binding_(self, binding: VarBinding) -> None:
        value = binding.value
        if binding.var not in self.used and isinstance(value, Call) and isinstance(value.op, GlobalVar) \
                and value.op in self.mod:
            callee = self.mod[value.op]
            if isinstance(callee, Function) and callee.is_pure:
                return
        super().visit_var_binding_(binding)


def _remove_unused(func: Function, mod: IRModule) -> Function:
    while True:
        func = remove_all_unused(func)
        uses = _Uses()
        uses.visit_expr(func)
        new = _DropPureGlobalCalls(mod, uses.used).visit_expr(func)
        if new is func:
            return func
        func = new


def _reachable(mod: IRModule, entries: list[GlobalVar]) -> set[GlobalVar]:
    by_name = {gv.name_hint: gv for gv in mod.functions}
    seen: set[GlobalVar] = set()
    stack = list(entries)
    while stack:
        gv = stack.pop()
        if gv in seen:
            continue
        seen.add(gv)
        func = mod.functions[gv]
        if isinstance(func, Function):
            for ref in all_global_vars(func):
                target = by_name.get(ref.name_hint)
                if target is not None and target not in seen:
                    stack.append(target)
    return seen


@module_pass(opt_level=0, name="DeadCodeElimination")
class DeadCodeElimination:
    """Remove unused pure bindings and unreachable functions:
    ``DeadCodeElimination(entry_functions=None)(mod)``."""

    def __init__(self, entry_functions: Sequence[str] | None = None):
        if isinstance(entry_functions, str):
            entry_functions = [entry_functions]
        self.entry_functions = list(entry_functions or [])

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        names = set(self.entry_functions) | {"main"}
        for name in self.entry_functions:
            if name not in mod:
                raise ValueError(f"DeadCodeElimination: entry function {name!r} is not in the module")
        funcs = {}
        changed = False
        for gv, func in mod.functions.items():
            new = _remove_unused(func, mod) if isinstance(func, Function) else func
            changed |= new is not func
            funcs[gv] = new
        pruned = IRModule(funcs, mod.attrs) if changed else mod
        entries = [gv for gv, f in pruned.functions.items() if gv.name_hint in names or _is_public(f)]
        keep = _reachable(pruned, entries)
        if len(keep) == len(pruned.functions):
            return pruned
        return IRModule({gv: f for gv, f in pruned.functions.items() if gv in keep}, mod.attrs)
