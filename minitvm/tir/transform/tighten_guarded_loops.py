"""TightenGuardedLoops: a loop whose body is one guard bounding the loop variable runs only the
iterations the guard lets through.

A partial tile peeled off a tiled loop (``loop_partition``) keeps its split's guard:
``for j in T.vectorized(16): if j + 192 < 197: ...`` runs 16 iterations of which 5 do
anything, and the guard keeps the vector emitter from emitting it as one vector (LLVM then
unrolls, folds and re-vectorizes the scalar loop: most of a peeled matmul's compile time).
Here the loop itself runs ``j < 5`` -- the same iterations, in the same order -- and the
part of the guard that does not depend on the loop variable moves outside it::

    for i in T.unroll(6):                               if n > 0:
      for j in T.vectorized(16):                          for i in T.unroll(5):
        if i + 192 < 197 and j + 32 < 37 and n > 0:  ->     for j in T.vectorized(5):
          body                                                  body

A guard that depends on an outer loop as well -- the partial column of tiles of the partial
rows: ``for j0 in range(13): ... for j in T.vectorized(16): if j0 * 16 + j < 197`` -- first
splits that serial loop where the guard can first fail (TVM's LoopPartition): ``j0 < 12``,
where it always holds and goes, and ``j0 == 12``, where it depends on ``j`` alone and becomes
``j``'s extent (an unrolled ``j0`` splits the same way).  Only a guard that is a vectorized
loop's whole body splits a loop (there it keeps the loop scalar), or an unrolled loop's (there
it is a branch per unrolled copy: the rows of a row reduction taken 8 at a time, 197 of them).

Only serial, unrolled and vectorized loops of constant extent change; a guard reading memory
stays where it is (hoisted, it could read where no iteration reads).
"""

from __future__ import annotations

import contextlib
from typing import Any

from ...arith import Analyzer
from ...arith.stmt_simplify import StmtSimplifier, no_op
from ...ir.node import replace
from ..analysis import conjuncts, uses_var
from ..expr import GE, GT, LE, LT, BufferLoad, Call, IntImm, PrimExpr, Range, Var, const
from ..function import PrimFunc
from ..functor import StmtExprMutator, post_order_visit, substitute
from ..op import all as all_of
from ..stmt import For, ForKind, IfThenElse, Stmt, seq
from ..stmt_functor import child_stmts
from .function_pass import prim_func_pass

__all__ = ["TightenGuardedLoops", "tighten_guarded_loops"]

_KINDS = (ForKind.SERIAL, ForKind.UNROLLED, ForKind.VECTORIZED)


def _pure(e: PrimExpr) -> bool:
    """Arithmetic on variables and constants only (no memory read, no call)."""
    found: list = []
    post_order_visit(e, lambda x: found.append(x) if isinstance(x, (BufferLoad, Call)) else None)
    return not found


def _negative_when_true(e: PrimExpr) -> PrimExpr | None:
    """An integer expression that is negative exactly when the comparison ``e`` holds."""
    if not isinstance(e, (LT, LE, GT, GE)) or not str(e.a.dtype).startswith(("int", "uint")):
        return None
    lo, hi = (e.a, e.b) if isinstance(e, (LT, LE)) else (e.b, e.a)
    return lo - hi if isinstance(e, (LT, GT)) else lo - hi - 1


def _leading_trips(condition: PrimExpr, loop: For, analyzer: Analyzer) -> int | None:
    """How many iterations from the start ``condition`` holds for, when it holds on a leading
    run of them and then never (``a * v + c < b``, a > 0, with constant c and b); else None."""
    d = _negative_when_true(condition)
    if d is None or not _pure(d):
        return None
    first = analyzer.simplify(substitute(d, {loop.loop_var: loop.min}))
    step = analyzer.simplify(substitute(d, {loop.loop_var: loop.loop_var + 1}) - d)
    if not (isinstance(first, IntImm) and isinstance(step, IntImm)) or step.value <= 0:
        return None
    trips = -(first.value // step.value) if first.value < 0 else 0  # ceil(-first / step)
    return max(0, min(trips, loop.extent.value))


def _tighten(loop: For, analyzer: Analyzer) -> Stmt:
    """``loop`` (its body already tightened) with its guard turned into its extent."""
    guard = loop.body
    if (loop.kind not in _KINDS or not isinstance(loop.extent, IntImm) or not isinstance(guard, IfThenElse)
            or guard.else_case is not None):
        return loop
    extent, kept, hoisted = loop.extent.value, [], []
    for c in conjuncts(guard.condition):
        if not uses_var(c, loop.loop_var):
            (hoisted if _pure(c) else kept).append(c)
            continue
        trips = _leading_trips(c, loop, analyzer)
        if trips is None:
            kept.append(c)
        else:
            extent = min(extent, trips)
    if extent == loop.extent.value and not hoisted:
        return loop
    body = guard.then_case
    if kept:
        body = IfThenElse(all_of(*kept), body)
    if extent == 0:
        out: Stmt = no_op()
    elif extent == 1 and not loop.annotations:  # (as Simplify does: a one-trip loop is its body)
        out = substitute(body, {loop.loop_var: loop.min})
    else:
        out = replace(loop, extent=const(extent, loop.loop_var.dtype), body=body)
    if hoisted:
        out = IfThenElse(all_of(*hoisted), out)
    return out


def _vector_guards(body: Stmt, loops: tuple[For, ...] = ()) -> list[tuple[PrimExpr, tuple[For, ...]]]:
    """The guards that are a vectorized or unrolled loop's whole body under ``body``, each with
    the loops between ``body`` and it (that one last)."""
    out: list = []
    if isinstance(body, For):
        inner = loops + (body,)
        if (body.kind in (ForKind.VECTORIZED, ForKind.UNROLLED) and isinstance(body.body, IfThenElse)
                and body.body.else_case is None):
            out.append((body.body.condition, inner))
        return out + _vector_guards(body.body, inner)
    for child in child_stmts(body):
        out += _vector_guards(child, loops)
    return out


def _split_point(loop: For, analyzer: Analyzer) -> int | None:
    """The first value of ``loop``'s variable at which a vectorized or unrolled loop's guard under
    it may fail, when that guard holds for every earlier value whatever the inner loops' values
    (``a * x + (inner, bounded) < b``, a > 0); None when there is no such guard."""
    x, split = loop.loop_var, None
    for condition, inner in _vector_guards(loop.body):
        if any(not isinstance(f.min, IntImm) or not isinstance(f.extent, IntImm) for f in inner):
            continue
        for c in conjuncts(condition):
            d = _negative_when_true(c)
            if d is None or not uses_var(d, x) or not _pure(d):
                continue
            slope = analyzer.simplify(substitute(d, {x: x + 1}) - d)
            rest = analyzer.simplify(d - slope * x) if isinstance(slope, IntImm) and slope.value > 0 else None
            if rest is None or uses_var(rest, x):
                continue
            with contextlib.ExitStack() as scopes:
                for f in inner:
                    scopes.enter_context(analyzer.bound_scope(f.loop_var, Range(f.min, f.extent)))
                worst = analyzer.interval(rest)[1]
            if abs(worst) < 2**62:  # bounded by the inner loops alone
                first_failing = -(worst // slope.value) if worst < 0 else 0  # ceil(-worst / slope)
                split = first_failing if split is None else min(split, first_failing)
    return split


def _partition(loop: For, analyzer: Analyzer) -> Stmt | None:
    """``loop`` split where its vectorized guards may first fail (:func:`_split_point`), each
    piece simplified under its own range (the first loses the guards); None: no split.  An unrolled
    loop too: the vectors of a row of 56 on AVX-512 (3 x 16 + 8), whose guarded last vector was
    made scalar -- LLVM rebuilt it with gathers and kept the tile's accumulators on the stack:
    MobileNetV2's 144 x 56 x 56 depthwise conv at batch 8, alone, 2.0 -> 0.85 ms (Xeon, 2 threads)"""
    if loop.kind not in (ForKind.SERIAL, ForKind.UNROLLED) or not isinstance(loop.min, IntImm) \
            or not isinstance(loop.extent, IntImm):
        return None
    start, end = loop.min.value, loop.min.value + loop.extent.value
    split = _split_point(loop, analyzer)
    if split is None or not start < split < end:
        return None
    tail_var = Var(loop.loop_var.name, loop.loop_var.dtype)
    dtype = loop.loop_var.dtype
    whole = replace(loop, extent=const(split - start, dtype))
    tail = replace(loop, loop_var=tail_var, min=const(split, dtype), extent=const(end - split, dtype),
                   body=substitute(loop.body, {loop.loop_var: tail_var}))
    return seq(StmtSimplifier(analyzer).visit(whole), StmtSimplifier(analyzer).visit(tail))


class _Tightener(StmtExprMutator):
    def __init__(self) -> None:
        self.analyzer = Analyzer()

    def visit(self, n: Any) -> Any:
        return n if isinstance(n, PrimExpr) else super().visit(n)

    def visit_for_(self, n: For) -> Stmt:
        loop = _tighten(self.visit_children(n), self.analyzer)
        pieces = _partition(loop, self.analyzer) if isinstance(loop, For) else None
        return loop if pieces is None else self.visit(pieces)


def tighten_guarded_loops(body: Stmt) -> Stmt:
    """``body`` with every guarded loop tightened (see the module's docstring)."""
    return _Tightener().visit(body)


@prim_func_pass(opt_level=0, name="tir.TightenGuardedLoops")
class TightenGuardedLoops:
    """Turn each loop's guard on its own variable into its extent; hoist the rest of a pure guard."""

    def transform_function(self, func: PrimFunc, mod, ctx) -> PrimFunc:
        body = tighten_guarded_loops(func.body)
        return func if body is func.body else func.with_body(body)
