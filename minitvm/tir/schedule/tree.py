"""Finding and replacing statements inside an immutable TIR tree.

Schedules rebuild the function after every primitive.  Loops are recognised by
their loop variable (a Var object that survives rebuilding) and blocks by name,
so references a learner holds stay valid across primitives that do not remove
the loop or block they point to.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable, Iterator

from ...ir.node import Node
from ..buffer import Buffer
from ..functor import StmtExprMutator
from ..stmt import Block, BlockRealize, For, SeqStmt, Stmt
from .error import ScheduleError

__all__ = ["walk_stmts", "path_to", "ancestors", "replace_stmt", "remove_block_with_empty_loops",
           "block_realizes", "loops_above", "child_stmts", "blocks_under", "scope_blocks"]


def child_stmts(s: Stmt) -> list[Stmt]:
    """The statements directly inside ``s`` (not expressions)."""
    if isinstance(s, SeqStmt):
        return list(s.seq)
    if isinstance(s, BlockRealize):
        return [s.block]
    if isinstance(s, Block):
        return [x for x in (s.init, s.body) if x is not None]
    out = []
    for name in ("body", "then_case", "else_case"):
        value = getattr(s, name, None)
        if isinstance(value, Stmt):
            out.append(value)
    return out


def walk_stmts(s: Stmt, path: tuple = ()) -> Iterator[tuple[Stmt, tuple]]:
    """Every statement with the tuple of its ancestors, parents before children."""
    yield s, path
    for c in child_stmts(s):
        yield from walk_stmts(c, path + (s,))


def path_to(root: Stmt, pred: Callable[[Stmt], bool]) -> list[tuple[Stmt, tuple]]:
    """All statements matching ``pred``, each with its ancestors (in the order of
    :func:`walk_stmts`; an ancestor tuple is made only for a match, so a search costs the
    size of the tree, not its size times its depth)."""
    found: list[tuple[Stmt, tuple]] = []
    stack: list[Stmt] = []

    def visit(s: Stmt) -> None:
        if pred(s):
            found.append((s, tuple(stack)))
        children = child_stmts(s)
        if children:
            stack.append(s)
            for c in children:
                visit(c)
            stack.pop()

    visit(root)
    return found


def ancestors(root: Stmt, target: Stmt) -> tuple:
    """The statements from ``root`` down to ``target``'s parent (``target`` found by identity)."""
    for _, p in path_to(root, lambda x: x is target):
        return p
    raise ScheduleError("internal: statement not found in the function")


#: the last few trees' block realizes, by the identity of the (immutable) tree: a schedule looks
#: blocks up by name after every primitive, and a default schedule of a fused chain of N blocks
#: does N lookups per tree (each a walk of the whole tree)
_REALIZES: OrderedDict = OrderedDict()
_REALIZES_LOCK = threading.Lock()


def block_realizes(root: Stmt) -> list[tuple[BlockRealize, tuple]]:
    with _REALIZES_LOCK:
        hit = _REALIZES.get(id(root))
        if hit is not None and hit[0] is root:
            _REALIZES.move_to_end(id(root))
            return list(hit[1])
    found = path_to(root, lambda s: isinstance(s, BlockRealize))
    with _REALIZES_LOCK:
        _REALIZES[id(root)] = (root, found)  # holds the tree: its id stays its own
        if len(_REALIZES) > 8:
            _REALIZES.popitem(last=False)
    return list(found)


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


def blocks_under(s: Stmt) -> list[BlockRealize]:
    return [r for r, _ in block_realizes(s)]


def loops_above(path: tuple, stop_at_block: bool = True) -> list[For]:
    """The For loops in ``path`` below the innermost enclosing block (outer to inner)."""
    loops: list[For] = []
    for s in path:
        if isinstance(s, For):
            loops.append(s)
        elif isinstance(s, Block) and stop_at_block:
            loops = []
    return loops


class _Replace(StmtExprMutator):
    def __init__(self, old: Node, new: Any):
        self.old, self.new = old, new

    def visit(self, n: Any) -> Any:
        if n is self.old:
            return self.new
        if isinstance(n, Buffer) or not isinstance(n, (Stmt, tuple)):
            return n  # statements only: expressions never contain statements
        return super().visit(n)


def replace_stmt(root: Stmt, old: Stmt, new: Stmt | None) -> Stmt:
    """``root`` with the statement ``old`` (found by identity) replaced by ``new``.

    ``new=None`` removes ``old`` from its enclosing sequence.
    """
    if new is None:
        for s, _ in walk_stmts(root):
            if isinstance(s, SeqStmt) and any(x is old for x in s.seq):
                rest = tuple(x for x in s.seq if x is not old)
                return replace_stmt(root, s, rest[0] if len(rest) == 1 else SeqStmt(rest))
        raise ValueError("statement to remove is not inside a sequence")
    return _Replace(old, new).visit(root)


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
