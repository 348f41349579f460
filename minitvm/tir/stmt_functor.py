"""Walking and rewriting TIR statement trees (TVM's ``tir.stmt_functor``).

The visitors (:mod:`.functor`) see every node; the walkers here see statements only, with
the ancestors of each, which is what passes, schedules and tools that search a kernel for
its loops and blocks need: ``walk_stmts``, ``path_to``, ``block_realizes``,
``replace_stmt`` (by identity: trees are immutable, a changed one is a new tree).
``post_order_visit``, ``pre_order_visit`` and ``substitute`` are here too, as in TVM.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

from ..ir.node import replace
from ..support.identity_cache import IdentityCache
from .functor import post_order_visit, pre_order_visit, substitute, walked_fields
from .stmt import Block, BlockRealize, For, SeqStmt, Stmt

__all__ = ["child_stmts", "walk_stmts", "path_to", "block_realizes", "loop_with_var", "blocks_under", "replace_stmt",
           "post_order_visit", "pre_order_visit", "substitute"]


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
    """Every statement with the tuple of its ancestors, parents before children.

    With a stack, not nested generators: a statement at depth d would pass through d of them,
    and schedules walk whole trees for every loop they look up."""
    stack = [(s, path)]
    while stack:
        s, path = stack.pop()
        yield s, path
        children = child_stmts(s)
        if children:
            inner = path + (s,)
            stack += [(c, inner) for c in reversed(children)]


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


#: the last few trees' block realizes and loops, by the identity of the (immutable) tree: a
#: schedule looks blocks and loops up after every primitive, and a default schedule of a fused
#: chain of N blocks does N lookups per tree (each a walk of the whole tree)
_REALIZES = IdentityCache(8)
_LOOPS = IdentityCache(8)


def block_realizes(root: Stmt) -> list[tuple[BlockRealize, tuple]]:
    """Every block realize under ``root``, each with its ancestors (outer first)."""
    return list(_REALIZES.get(root, lambda r: path_to(r, lambda s: isinstance(s, BlockRealize))))


def _loops_by_var(root: Stmt) -> dict[int, tuple[For, tuple]]:
    found: dict[int, tuple[For, tuple]] = {}
    for loop, path in path_to(root, lambda s: isinstance(s, For)):
        found.setdefault(id(loop.loop_var), (loop, path))  # (the first in walk order, as a search finds)
    return found


def loop_with_var(root: Stmt, loop_var: Any) -> tuple[For, tuple] | None:
    """The first loop under ``root`` (in :func:`walk_stmts` order) over ``loop_var``, with its
    ancestors, or None."""
    return _LOOPS.get(root, _loops_by_var).get(id(loop_var))  # (the tree holds the variables)


def blocks_under(s: Stmt) -> list[BlockRealize]:
    """The block realizes under ``s`` (``s`` itself included), outer first."""
    return [r for r, _ in block_realizes(s)]


def _replaced(n: Any, old: Stmt, new: Stmt) -> Any:
    """``n`` with every occurrence of ``old`` (by identity) replaced by ``new``.  Only statements
    and tuples are entered (expressions never contain statements), and only the fields a visitor
    walks: the same tree a StmtExprMutator would rebuild, without visiting each expression."""
    if n is old:
        return new
    if isinstance(n, tuple):
        items = None
        for k, x in enumerate(n):
            if isinstance(x, (Stmt, tuple)):
                y = _replaced(x, old, new)
                if y is not x:
                    if items is None:
                        items = list(n)
                    items[k] = y
        return n if items is None else tuple(items)
    if not isinstance(n, Stmt):
        return n
    changes = {}
    for name in walked_fields(type(n)):
        value = getattr(n, name)
        if isinstance(value, (Stmt, tuple)):
            y = _replaced(value, old, new)
            if y is not value:
                changes[name] = y
    return replace(n, **changes) if changes else n


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
    return _replaced(root, old, new)
