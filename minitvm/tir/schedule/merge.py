"""merge: fuse sibling loop nests of equal extents into one nest running both bodies.

``merge(i, j)`` with ``i`` over the first nest and ``j`` over a later one (same depth below
their lowest common ancestor, same extents level by level, each a perfect nest of loops
that start at 0 and carry no annotation) replaces the first nest by loops named
``<loop>_m`` whose body runs the first nest's body, then the second's, and removes the second
nest — TVM's semantics, including its refusals.  It returns the innermost merged loop.
"""

from __future__ import annotations

from ...arith import Analyzer
from ..expr import IntImm, Var, const
from ..functor import substitute
from ..stmt import Block, For, ForKind, SeqStmt, Stmt
from .error import ScheduleError
from .tree import ancestors, replace_stmt

__all__ = ["merge"]


def merge(root: Stmt, loops: list[For]) -> tuple[Stmt, Var]:
    """``root`` with the nests above ``loops`` merged; returns it and the innermost new loop var."""
    names = ", ".join(lp.loop_var.name for lp in loops)
    if len(loops) < 2:
        raise ScheduleError(f"cannot merge {names}: merge needs at least 2 loops")
    full = [ancestors(root, lp) + (lp,) for lp in loops]
    lca_depth = -1
    for depth in range(min(len(p) for p in full)):
        node = full[0][depth]
        if not all(p[depth] is node for p in full):
            break
        if isinstance(node, (For, Block)):
            lca_depth = depth
    chains: list[list[For]] = []
    for lp, path in zip(loops, full):
        below = [s for s in path[lca_depth + 1:] if isinstance(s, For)]
        if not below:
            raise ScheduleError(f"cannot merge {names}: loop {lp.loop_var.name} contains another of the loops")
        chains.append(list(reversed(below)))  # the given loop first, then the loops around it
    scopes = [next((s for s in reversed(p) if isinstance(s, Block)), None) for p in full]
    ana = Analyzer()
    for chain in chains:
        for lp in chain:
            if lp.annotations or lp.thread_binding is not None or lp.kind == ForKind.THREAD_BINDING:
                raise ScheduleError(f"cannot merge {names}: loop {lp.loop_var.name} has an annotation or "
                                    "a thread binding")
            if not (isinstance(lp.min, IntImm) and lp.min.value == 0):
                raise ScheduleError(f"cannot merge {names}: loop {lp.loop_var.name} does not start at 0")
        for inner, outer in zip(chain, chain[1:]):
            if outer.body is not inner:
                raise ScheduleError(f"cannot merge {names}: loop {inner.loop_var.name} is not the only "
                                    f"child of loop {outer.loop_var.name}")
    for k in range(1, len(chains)):
        if scopes[k] is not scopes[0]:
            raise ScheduleError(f"cannot merge {names}: the loops are not under the same block scope")
        if len(chains[k]) != len(chains[0]):
            raise ScheduleError(f"cannot merge {names}: the loops are nested {len(chains[0])} and "
                                f"{len(chains[k])} deep below their common ancestor; they must be as deep")
        for a, b in zip(chains[0], chains[k]):
            if not ana.can_prove_equal(a.extent, b.extent):
                raise ScheduleError(f"cannot merge {names}: loops {a.loop_var.name} and {b.loop_var.name} "
                                    f"have different extents ({a.extent} and {b.extent})")
    new_vars = [Var(f"{lp.loop_var.name}_m", lp.loop_var.dtype) for lp in chains[0]]
    bodies = [substitute(chain[0].body, {lp.loop_var: v for lp, v in zip(chain, new_vars)}) for chain in chains]
    zero = const(0, "int32")
    merged: Stmt = For(new_vars[0], zero, chains[0][0].extent, ForKind.SERIAL, SeqStmt(tuple(bodies)))
    for v, lp in zip(new_vars[1:], chains[0][1:]):
        merged = For(v, zero, lp.extent, ForKind.SERIAL, merged)
    out = replace_stmt(root, chains[0][-1], merged)
    for chain in chains[1:]:
        try:
            out = replace_stmt(out, chain[-1], None)
        except ValueError:
            raise ScheduleError(f"cannot merge {names}: loop {chain[-1].loop_var.name} is not part of a "
                                "sequence it could be removed from") from None
    return out, new_vars[0]
