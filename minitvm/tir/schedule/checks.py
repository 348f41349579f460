"""Checks TVM's primitives make before they touch the IR, in one place.

A loop may run in parallel (be vectorized, bound to a thread) only when the blocks under it
have a *compact data flow*: each is a complete block (only spatial iterators, the only
writer of what it writes, not reading what it writes) or a reduction block (a ``T.init``,
quasi-affine bindings, the only writer of its output, reduction iterators not indexing the
output).  Anything else — an accumulation declared spatial, a block updating a buffer in
place, a non-affine binding — could race, so it is refused as TVM refuses it.
"""

from __future__ import annotations

from ..analysis import uses_var
from ..expr import Add, FloorDiv, FloorMod, IntImm, Mul, PrimExpr, Sub, Var
from ..functor import post_order_visit
from ..stmt import Block, BlockRealize, For, Stmt
from .error import ScheduleError
from .shared_analyses import is_padding_guard_only
from .tree import child_stmts

__all__ = ["is_quasi_affine", "child_blocks", "complete_block_problem", "reduction_block_problem",
           "check_compact_dataflow", "check_complete_or_reduction", "loop_var_ids",
           "is_affine_binding"]


def _loop_vars_in(e: PrimExpr, loop_vars: set[int]) -> bool:
    found: list = []
    post_order_visit(e, lambda n: found.append(n) if isinstance(n, Var) and id(n) in loop_vars else None)
    return bool(found)


def is_quasi_affine(e: PrimExpr, loop_vars: set[int]) -> bool:
    """``e`` is built from loop variables by +, -, * constant, // constant and % constant, a
    constant being a number or an expression free of the loops (a symbolic extent: fusing loops
    of extents n, m binds ``f // m``, ``f % m``)."""
    if not _loop_vars_in(e, loop_vars):
        return True
    if isinstance(e, Var):
        return True
    if isinstance(e, (Add, Sub)):
        return is_quasi_affine(e.a, loop_vars) and is_quasi_affine(e.b, loop_vars)
    if isinstance(e, Mul):
        a_free, b_free = not _loop_vars_in(e.a, loop_vars), not _loop_vars_in(e.b, loop_vars)
        return (a_free and is_quasi_affine(e.b, loop_vars)) or (b_free and is_quasi_affine(e.a, loop_vars))
    if isinstance(e, (FloorDiv, FloorMod)):
        positive = e.b.value > 0 if isinstance(e.b, IntImm) else not _loop_vars_in(e.b, loop_vars)
        return positive and is_quasi_affine(e.a, loop_vars)
    return False


def child_blocks(s: Stmt) -> list[BlockRealize]:
    """The blocks directly under ``s`` (not those nested inside another block)."""
    out: list[BlockRealize] = []

    def collect(x: Stmt) -> None:
        for c in child_stmts(x):
            if isinstance(c, BlockRealize):
                out.append(c)
            else:
                collect(c)

    collect(s.body if isinstance(s, Block) else s)
    return out


def _writers(scope: Stmt) -> dict[int, list[Block]]:
    writers: dict[int, list[Block]] = {}
    for r in child_blocks(scope):
        for w in r.block.writes:
            writers.setdefault(id(w.buffer), []).append(r.block)
    return writers


def _not_dominant(block: Block, writers: dict[int, list[Block]]) -> str | None:
    for w in block.writes:
        others = [b.name_hint for b in writers.get(id(w.buffer), []) if b is not block]
        if others:
            return f"it is not the only writer of {w.buffer.name} ({', '.join(others)} also writes it)"
    return None


def complete_block_problem(realize: BlockRealize, scope: Stmt) -> str | None:
    """Why the block is not a complete block in ``scope`` (None when it is one)."""
    block = realize.block
    reduce = [iv.var.name for iv in block.iter_vars if iv.iter_type != "spatial"]
    if reduce:
        return f"iterator {reduce[0]} is not spatial"
    why = _not_dominant(block, _writers(scope))
    if why:
        return why
    written = {id(w.buffer) for w in block.writes}
    both = [r.buffer.name for r in block.reads if id(r.buffer) in written]
    if both:
        return f"it reads {both[0]}, which it also writes"
    return None


def reduction_block_problem(realize: BlockRealize, scope: Stmt, loop_vars: set[int]) -> str | None:
    """Why the block is not a reduction block in ``scope`` (None when it is one)."""
    block = realize.block
    if block.init is None:
        return "it has no T.init"
    for iv, value in zip(block.iter_vars, realize.iter_values):
        if not is_quasi_affine(value, loop_vars):
            return f"the binding of {iv.var.name} ({value}) is not quasi-affine"
    odd = [iv.var.name for iv in block.iter_vars if iv.iter_type not in ("spatial", "reduce")]
    if odd:
        return f"iterator {odd[0]} is neither spatial nor a reduction"
    why = _not_dominant(block, _writers(scope))
    if why:
        return why
    reduce_vars = [iv.var for iv in block.iter_vars if iv.iter_type == "reduce"]
    for w in block.writes:
        for r in w.region:
            used = [v.name for v in reduce_vars if uses_var(r.min, v) or uses_var(r.extent, v)]
            if used:
                return f"the reduction iterator {used[0]} indexes its output {w.buffer.name}"
    return None


def loop_var_ids(path: tuple, extra: Stmt | None = None) -> set[int]:
    """Ids of the loop variables on ``path`` (and of the loops inside ``extra``)."""
    ids = {id(s.loop_var) for s in path if isinstance(s, For)}
    if extra is not None:  # loops are statements: a walk of the statements finds them all
        stack = [extra]
        while stack:
            s = stack.pop()
            if isinstance(s, For):
                ids.add(id(s.loop_var))
            stack += child_stmts(s)
    return ids


def check_complete_or_reduction(realize: BlockRealize, scope: Stmt, loop_vars: set[int], what: str) -> None:
    """``what`` needs the block to be a complete or a reduction block of ``scope``."""
    complete = complete_block_problem(realize, scope)
    if complete is None:
        return
    reduction = reduction_block_problem(realize, scope, loop_vars)
    if reduction is None:
        return
    raise ScheduleError(f"cannot {what}: block {realize.block.name_hint} is neither a complete block "
                        f"({complete}) nor a reduction block ({reduction})")


def check_compact_dataflow(loop: For, path: tuple, what: str) -> None:
    """Every block directly under ``loop`` is a complete or a reduction block there."""
    loop_vars = loop_var_ids(path + (loop,), loop)
    for realize in child_blocks(loop):
        complete = complete_block_problem(realize, loop)
        if complete is None:
            continue
        reduction = reduction_block_problem(realize, loop, loop_vars)
        if reduction is None:
            continue
        raise ScheduleError(
            f"cannot {what}: the blocks under loop {loop.loop_var.name} do not have a compact data flow: "
            f"block {realize.block.name_hint} is neither a complete block ({complete}) nor a reduction "
            f"block ({reduction}), so its iterations may depend on each other")



def _linear_terms(e: PrimExpr, iters: dict[int, int]) -> dict[int, int] | None:
    """``e`` as {loop var id: coefficient} over the iterating loops (other terms are constants),
    or None when an iterating loop appears non-linearly."""
    if not _loop_vars_in(e, set(iters)):
        return {}
    if isinstance(e, Var):
        return {id(e): 1}
    if isinstance(e, (Add, Sub)):
        a, b = _linear_terms(e.a, iters), _linear_terms(e.b, iters)
        if a is None or b is None:
            return None
        sign = 1 if isinstance(e, Add) else -1
        out = dict(a)
        for k, c in b.items():
            out[k] = out.get(k, 0) + sign * c
        return out
    if isinstance(e, Mul):
        for x, c in ((e.a, e.b), (e.b, e.a)):
            if isinstance(c, IntImm):
                inner = _linear_terms(x, iters)
                return None if inner is None else {k: v * c.value for k, v in inner.items()}
        return None
    return None


def is_affine_binding(realize: BlockRealize, iters: dict[int, int | None]) -> bool:
    """Each binding is a fused pattern of the iterating loops (``iters``: var id -> extent):
    coefficients 1, e1, e1*e2 ... with every loop used once; loops outside ``iters`` count as
    constants.  Bindings with // or % (from fuse) only need to be quasi-affine."""
    if not is_padding_guard_only(realize):
        return False
    used: set[int] = set()
    for value in realize.iter_values:
        if isinstance(value, (FloorDiv, FloorMod)) or _has_div(value):
            if not is_quasi_affine(value, set(iters)):
                return False
            continue
        terms = _linear_terms(value, iters)
        if terms is None:
            return False
        # surjective, as TVM checks it: sorted by coefficient, each term may overlap what the
        # smaller ones reach (``v0 * 2 + v1`` with v1 < 4) but must leave no gap (``l * 16``)
        reach: int | None = 1  # first value not yet reachable; None once an extent is symbolic
        # a loop of extent 1 only ever adds 0, wherever it appears
        steps = [(k, c) for k, c in terms.items() if c != 0 and iters.get(k) != 1]
        for var_id, coeff in sorted(steps, key=lambda kc: kc[1]):
            if var_id in used or coeff < 0 or (reach is not None and coeff > reach):
                return False
            used.add(var_id)
            extent = iters[var_id]
            reach = None if reach is None or extent is None else reach + coeff * (extent - 1)
    return True


def _has_div(e: PrimExpr) -> bool:
    found: list = []
    post_order_visit(e, lambda n: found.append(n) if isinstance(n, (FloorDiv, FloorMod)) else None)
    return bool(found)
