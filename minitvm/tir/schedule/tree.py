"""Finding and replacing statements inside an immutable TIR tree, as schedules need it.

Schedules rebuild the function after every primitive.  Loops are recognised by
their loop variable (a Var object that survives rebuilding) and blocks by name,
so references a learner holds stay valid across primitives that do not remove
the loop or block they point to.

The general walkers (``walk_stmts``, ``block_realizes``, ``replace_stmt`` ...) live on the
``tir`` floor in :mod:`minitvm.tir.stmt_functor`; the schedule's modules read them from
here, next to the helpers only schedules use.
"""

from __future__ import annotations

from ..stmt import Block, BlockRealize, For, Stmt
from ..stmt_functor import block_realizes, blocks_under, child_stmts, path_to, replace_stmt, walk_stmts
from .error import ScheduleError

__all__ = ["walk_stmts", "path_to", "ancestors", "replace_stmt", "remove_block_with_empty_loops",
           "block_realizes", "loops_above", "child_stmts", "blocks_under", "scope_blocks", "unique_block_name"]


def ancestors(root: Stmt, target: Stmt) -> tuple:
    """The statements from ``root`` down to ``target``'s parent (``target`` found by identity)."""
    for _, p in path_to(root, lambda x: x is target):
        return p
    raise ScheduleError("internal: statement not found in the function")


def scope_blocks(s: Stmt, path: tuple = ()) -> list[tuple[BlockRealize, tuple]]:
    """The block realizes directly in ``s``'s block scope (not those nested inside them),
    each with its ancestors (``path`` is ``s``'s own)."""
    out = []

    def walk(x: Stmt, p: tuple) -> None:
        if isinstance(x, BlockRealize):
            out.append((x, p))
            return
        for c in child_stmts(x):
            walk(c, p + (x,))

    start = s.body if isinstance(s, Block) else s
    walk(start, path + ((s,) if isinstance(s, Block) else ()))
    return out


def unique_block_name(root: Stmt, base: str) -> str:
    """``base``, or ``base_1``, ``base_2`` ... when a block under ``root`` already has that
    name: blocks are looked up by name, so a new block must not repeat one."""
    taken = {r.block.name_hint for r, _ in block_realizes(root)}
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    return name


def loops_above(path: tuple, stop_at_block: bool = True) -> list[For]:
    """The For loops in ``path`` below the innermost enclosing block (outer to inner)."""
    loops: list[For] = []
    for s in path:
        if isinstance(s, For):
            loops.append(s)
        elif isinstance(s, Block) and stop_at_block:
            loops = []
    return loops


def remove_block_with_empty_loops(root: Stmt, realize: BlockRealize, path: tuple) -> Stmt:
    """``root`` without ``realize`` and the loops around it that hold nothing else
    (``path``: its ancestors)."""
    victim: Stmt = realize
    for s in reversed(path):
        if isinstance(s, For) and s.body is victim:
            victim = s
        else:
            break
    return replace_stmt(root, victim, None)
