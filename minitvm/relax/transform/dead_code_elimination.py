"""DeadCodeElimination: drop unused bindings and functions nobody can reach (TVM's steps).

1. Functions of the module not reachable from an entry go.  Entries are the names given in
   ``entry_functions`` plus every externally visible function (one with a ``global_symbol``
   attribute: public Relax functions and public PrimFuncs).  A Relax function reaches the
   functions it names (``R.call_tir`` of a PrimFunc, calls of other Relax functions).
2. In every Relax function, unused bindings go when evaluating them cannot have a side
   effect: :func:`relax.analysis.remove_all_unused`.  An unused impure call
   (``R.call_packed("f", x, out)`` writing ``out``, a call of an ``R.function(pure=False)``)
   stays, and so does everything it reads.
3. Step 1 again: step 2 may have removed the last call of a function.

::

    mod = relax.transform.DeadCodeElimination()(mod)
"""

from __future__ import annotations

from typing import Sequence

from ...ir.module import GlobalVar, IRModule
from ...transform import PassContext, module_pass
from ..analysis.remove_unused import remove_all_unused
from ..analysis.vars import all_global_vars
from ..expr import ExternFunc, Function

__all__ = ["DeadCodeElimination"]


def _is_external(func: object) -> bool:
    attrs = getattr(func, "attrs", None) or {}
    return isinstance(func, ExternFunc) or bool(attrs.get("global_symbol"))


def _remove_unreachable(mod: IRModule, entries: set[str]) -> IRModule:
    """``mod`` without the functions no entry reaches (unchanged when a reachable function
    names one the module does not hold: nothing can be said about what that one calls)."""
    by_name = {gv.name_hint: gv for gv in mod.functions}
    stack = [by_name[name] for name in entries]
    seen: set[GlobalVar] = set(stack)
    while stack:
        func = mod.functions[stack.pop()]
        if not isinstance(func, Function):
            continue
        for ref in all_global_vars(func):
            target = by_name.get(ref.name_hint)
            if target is None:
                return mod
            if target not in seen:
                seen.add(target)
                stack.append(target)
    if len(seen) == len(mod.functions):
        return mod
    return IRModule({gv: f for gv, f in mod.functions.items() if gv in seen}, mod.attrs, mod.global_infos)


@module_pass(opt_level=1, name="DeadCodeElimination")
class DeadCodeElimination:
    """Remove unused pure bindings and unreachable functions:
    ``DeadCodeElimination(entry_functions=None)(mod)``."""

    def __init__(self, entry_functions: Sequence[str] | None = None):
        if isinstance(entry_functions, str):
            entry_functions = [entry_functions]
        self.entry_functions = list(entry_functions or [])

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        for name in self.entry_functions:
            if name not in mod:
                raise ValueError(f"DeadCodeElimination: entry function {name!r} is not in the module")
        entries = set(self.entry_functions) | {gv.name_hint for gv, f in mod.functions.items() if _is_external(f)}
        mod = _remove_unreachable(mod, entries)
        funcs, changed = {}, False
        for gv, func in mod.functions.items():
            new = remove_all_unused(func, mod) if isinstance(func, Function) else func
            changed |= new is not func
            funcs[gv] = new
        if changed:
            mod = IRModule(funcs, mod.attrs, mod.global_infos)
        return _remove_unreachable(mod, entries)
