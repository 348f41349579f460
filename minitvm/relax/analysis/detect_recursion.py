"""``detect_recursion(mod)``: the groups of Relax functions that call (or refer to) one
another in a cycle, as TVM's ``relax.analysis.detect_recursion``."""

from __future__ import annotations

from ...ir.module import GlobalVar, IRModule
from ..expr import Function
from .vars import all_global_vars

__all__ = ["detect_recursion"]


def detect_recursion(mod: IRModule) -> list[list[GlobalVar]]:
    """Each strongly connected group of the module's Relax functions that recurses: two or
    more functions reaching one another, or one that reaches itself.  A reference counts as
    much as a call (a function passed as a value may be called); PrimFuncs are left out."""
    funcs = {gv: f for gv, f in mod.items() if isinstance(f, Function)}
    by_name = {gv.name_hint: gv for gv in funcs}
    edges = {gv: [by_name[g.name_hint] for g in all_global_vars(f.body) if g.name_hint in by_name]
             for gv, f in funcs.items()}
    index: dict[GlobalVar, int] = {}
    low: dict[GlobalVar, int] = {}
    stack: list[GlobalVar] = []
    on_stack: set[GlobalVar] = set()
    groups: list[list[GlobalVar]] = []

    def connect(v: GlobalVar) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w is v:
                    break
            if len(group) > 1 or v in edges[v]:
                groups.append(group[::-1])

    for gv in funcs:
        if gv not in index:
            connect(gv)
    return groups
