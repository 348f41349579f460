"""loop_partition: cut a loop's range into consecutive pieces, each its own loop nest.

``loop_partition(i, factors=[2, 1, 64])`` on ``for i in range(128)`` gives loops over
``[0, 2)``, ``[2, 3)``, ``[3, 67)`` and the rest ``[67, 128)`` (one factor may be None: it
takes what the others leave, and then nothing is appended).  As in TVM each piece is a copy
of the loop body wrapped in an opaque block ``<block>_<loop><k>_partition``, all of them in
a block ``<block>_<loop>_common``; a copied block whose iterator is bound to the piece's loop
is renamed ``<name>_<loop><k>``, its iterator's domain narrowed to the piece and the regions
of buffers it indexes directly by its iterators narrowed with it.  Other copied blocks are
renamed the same way; every copy gets iterators of its own (the same variable in two blocks
would not survive printing and parsing).
"""

from __future__ import annotations

from typing import Any

from ...arith import Analyzer
from ...ir import replace
from ..buffer import BufferRegion
from ..expr import LT, Add, And, IntImm, Max, Mul, PrimExpr, Range, Var, const
from ..functor import StmtExprMutator, pre_order_visit, substitute
from ..stmt import Block, BlockRealize, BufferStore, For, ForKind, SeqStmt, Stmt
from .error import ScheduleError
from .tree import replace_stmt

__all__ = ["loop_partition"]


def _first_block_name(s: Stmt) -> str:
    while not isinstance(s, BlockRealize):
        if isinstance(s, For):
            s = s.body
        elif isinstance(s, SeqStmt):
            s = s.seq[0]
        else:
            s = getattr(s, "body", None)
            if s is None:
                raise ScheduleError("cannot loop_partition: no block under the loop")
    return s.block.name_hint


def _direct_indices(block: Block) -> dict[str, list[str]]:
    """Buffer name -> the iterator names of its first access whose indices are all variables."""
    found: dict[str, list[str]] = {}

    def visit(n: Any) -> None:
        if isinstance(n, BufferStore) or type(n).__name__ == "BufferLoad":
            if n.buffer.name not in found and all(isinstance(i, Var) for i in n.indices):
                found[n.buffer.name] = [i.name for i in n.indices]

    pre_order_visit(block.body, visit)  # a store is seen before the loads in its value, as in TVM
    return found


class _Piece(StmtExprMutator):
    """One copy of the loop body for the piece ``[lo, end)`` of loop variable ``var``."""

    def __init__(self, var: Var, lo: PrimExpr, end: PrimExpr):
        self.var, self.lo, self.end = var, lo, end
        self.inner = -1  # which iterator of the block being visited is bound to ``var``
        self.extents: dict[Var, PrimExpr] = {}  # the loops around the node being visited

    def visit_for_(self, n: For) -> Stmt:
        self.extents[n.loop_var] = n.extent
        new = self.visit_children(n)
        del self.extents[n.loop_var]
        fresh = Var(n.loop_var.name, n.loop_var.dtype)  # each copy has its own loop variables
        return replace(new, loop_var=fresh, body=substitute(new.body, {n.loop_var: fresh}))

    def visit_block_realize_(self, n: BlockRealize) -> Stmt:
        self.inner = next((k for k, v in enumerate(n.iter_values) if v is self.var), -1)
        new = self.visit_children(n)
        predicate = self._implied_dropped(new.predicate)
        return new if predicate is new.predicate else replace(new, predicate=predicate)

    def _implied_dropped(self, predicate: PrimExpr) -> PrimExpr:
        """``predicate`` without the guard a split of a symbolic extent ``E`` by ``c`` leaves,
        ``var * c + inner < E`` (inner a loop over at most ``[0, c)``), in a piece ``[0, end)``
        with ``end * c <= E`` provable: there every tile is whole.  (A shape's variables have no
        constant bounds: the lowering's simplifier cannot see it.)"""
        if isinstance(predicate, And):
            a, b = self._implied_dropped(predicate.a), self._implied_dropped(predicate.b)
            if a is predicate.a and b is predicate.b:
                return predicate
            return b if _is_true(a) else a if _is_true(b) else And(a, b)
        if not (isinstance(predicate, LT) and isinstance(self.lo, IntImm) and self.lo.value == 0):
            return predicate
        lhs = predicate.a
        if not (isinstance(lhs, Add) and isinstance(lhs.a, Mul) and lhs.a.a is self.var
                and isinstance(lhs.a.b, IntImm) and isinstance(lhs.b, Var)):
            return predicate
        c, inner = lhs.a.b.value, self.extents.get(lhs.b)
        if isinstance(inner, IntImm) and inner.value <= c and Analyzer().can_prove(self.end * c <= predicate.b):
            return const(True, "bool")
        return predicate

    def visit_block_(self, n: Block) -> Stmt:
        new = self.visit_children(n)
        inner, self.inner = self.inner, -1
        # every copy has its own iterators, as its own loop variables (TVM's BlockMutator)
        fresh = {iv.var: Var(iv.var.name, iv.var.dtype) for iv in new.iter_vars}
        if inner >= 0:
            new = self._narrowed(new, new.iter_vars[inner].var)
        new = replace(new, name_hint=f"{n.name_hint}_{self.var.name}",
                      iter_vars=tuple(replace(iv, var=fresh[iv.var]) for iv in new.iter_vars))
        if not fresh:
            return new
        init = substitute(new.init, fresh) if new.init is not None else None
        return replace(new, body=substitute(new.body, fresh), init=init,
                       reads=substitute(new.reads, fresh), writes=substitute(new.writes, fresh))

    def _narrowed(self, block: Block, target: Var) -> Block:
        """``block`` with the domain of ``target`` (its iterator bound to the piece's loop) cut
        to the piece, and the regions it indexes directly by its iterators cut with it."""
        dtype = target.dtype
        lo = const(self.lo.value, dtype) if isinstance(self.lo, IntImm) else self.lo
        end = const(self.end.value, dtype) if isinstance(self.end, IntImm) else self.end
        length = (const(end.value - lo.value, dtype) if isinstance(lo, IntImm) and isinstance(end, IntImm)
                  else Analyzer().simplify(end - lo))
        iter_vars = tuple(replace(iv, dom=Range(lo, length))
                          if iv.var is target else iv for iv in block.iter_vars)
        doms = {iv.var.name: iv.dom for iv in iter_vars}
        direct = _direct_indices(block)

        def narrowed(regions: tuple) -> tuple:
            out = []
            for r in regions:
                names = direct.get(r.buffer.name)
                if names is not None and len(names) == len(r.region) and all(x in doms for x in names):
                    r = BufferRegion(r.buffer, tuple(doms[x] for x in names))
                out.append(r)
            return tuple(out)

        return replace(block, iter_vars=iter_vars, reads=narrowed(block.reads), writes=narrowed(block.writes))


def loop_partition(root: Stmt, loop: For, factors: list[int | None], factor_bits: int) -> tuple[Stmt, list[Var]]:
    """``root`` with ``loop`` partitioned by ``factors`` (see the module docstring); returns the
    new tree and the loop variable of each piece."""
    name = loop.loop_var.name
    if not isinstance(loop.extent, IntImm):
        return _symbolic_partition(root, loop, factors)
    if loop.annotations or loop.thread_binding is not None or loop.kind == ForKind.THREAD_BINDING:
        raise ScheduleError(f"cannot loop_partition loop {name}: it has an annotation or a thread binding")
    if not (isinstance(loop.min, IntImm) and isinstance(loop.extent, IntImm)):
        raise ScheduleError(f"cannot loop_partition loop {name}: its min and extent must be known "
                            f"constants, but it runs over [{loop.min}, {loop.min} + {loop.extent})")
    extent = loop.extent.value
    nones = [k for k, f in enumerate(factors) if f is None or f == -1]
    if len(nones) > 1:
        raise ScheduleError(f"cannot loop_partition loop {name}: only one factor can be None")
    total = 0
    for k, f in enumerate(factors):
        if k in nones:
            continue
        if f <= 0:
            raise ScheduleError(f"cannot loop_partition loop {name}: factor {f} (position {k}) is not positive")
        total += f
    if total >= extent:
        raise ScheduleError(f"cannot loop_partition loop {name} of extent {extent}: the factors {factors} "
                            f"add up to {total}, which leaves no iterations for the last piece")
    sizes = [extent - total if k in nones else f for k, f in enumerate(factors)]
    ends, acc = [], 0
    for s in sizes:
        acc += s
        ends.append(acc)
    if not nones:
        ends.append(extent)
    bits = max(int("".join(c for c in loop.loop_var.dtype if c.isdigit()) or 32), factor_bits)
    dtype = f"int{bits}"
    return _assemble(root, loop, ends, const(loop.min.value, dtype), dtype)


def _assemble(root: Stmt, loop: For, ends: list[PrimExpr | int], lo: PrimExpr, dtype: str,
              clamp_starts: bool = False) -> tuple[Stmt, list[Var]]:
    """``root`` with ``loop`` replaced by one piece per ``[previous end, end)``, in a common block
    (``clamp_starts``: each start at least the loop's start)."""
    name = loop.loop_var.name
    block_name = f"{_first_block_name(loop.body)}_{name}"
    pieces, new_vars = [], []
    for k, end in enumerate(ends):
        end = const(end, dtype) if isinstance(end, int) else end
        var = Var(f"{name}{k}", dtype)
        body = substitute(loop.body, {loop.loop_var: var})
        if clamp_starts and k > 0:
            lo = Analyzer().simplify(Max(lo, loop.min))
        body = _Piece(var, lo, end).visit(body)
        extent = (const(end.value - lo.value, dtype) if isinstance(lo, IntImm) and isinstance(end, IntImm)
                  else Analyzer().simplify(end - lo))
        piece = For(var, lo, extent, ForKind.SERIAL, body)
        pieces.append(BlockRealize((), const(True, "bool"),
                                   Block(name_hint=f"{block_name}{k}_partition", body=piece)))
        new_vars.append(var)
        lo = end
    common = BlockRealize((), const(True, "bool"), Block(name_hint=f"{block_name}_common", body=SeqStmt(tuple(pieces))))
    return replace_stmt(root, loop, common), new_vars


def _symbolic_partition(root: Stmt, loop: For, factors: list[int | None]) -> tuple[Stmt, list[Var]]:
    """A loop of symbolic extent (the tiles of a dynamic row count) cut as a constant one is:
    constant lengths and one None, which takes the rest -- ``[None, 1]`` peels the last tile,
    which may be partial, off the whole ones."""
    name = loop.loop_var.name
    if loop.annotations or loop.thread_binding is not None or loop.kind == ForKind.THREAD_BINDING:
        raise ScheduleError(f"cannot loop_partition loop {name}: it has an annotation or a thread binding")
    nones = [k for k, f in enumerate(factors) if f is None or f == -1]
    if len(nones) != 1 or any(not isinstance(f, int) or f <= 0 for k, f in enumerate(factors) if k not in nones):
        raise ScheduleError(f"cannot loop_partition loop {name} of symbolic extent {loop.extent} by {factors}: "
                            "give positive constant lengths and one None (the rest of the range)")
    dtype = loop.loop_var.dtype
    rest = loop.extent - const(sum(f for k, f in enumerate(factors) if k not in nones), dtype)
    ends, end, ana = [], loop.min, Analyzer()
    for k, f in enumerate(factors):
        end = ana.simplify(end + (rest if k in nones else const(f, dtype)))
        ends.append(end)
    # with fewer iterations than the constant pieces ask for (no rows at all), a piece's end may
    # be negative (an empty loop, as a serial loop's signed test and the parallel launch read it);
    # each piece starts at 0 at the earliest, so that no piece runs before the range
    return _assemble(root, loop, ends, loop.min, dtype, clamp_starts=True)


def _is_true(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and bool(e.value)

