"""Loop primitives: split, fuse, reorder, and changing a loop's kind.

Each function takes a PrimFunc body and returns a new one; the Schedule class
wraps them with lookups, checks and the trace.
"""

from __future__ import annotations

from typing import Any

from ... import ir
from ..analysis import uses_var
from ..expr import IntImm, PrimExpr, Var, const, is_const_int
from ..functor import substitute
from ..op import floordiv, floormod, logical_and
from ..stmt import BlockRealize, For, ForKind, Stmt
from ..thread_scope import THREAD_TAGS, is_thread_tag
from .checks import check_compact_dataflow, is_affine_binding
from .error import ScheduleError
from .shared_analyses import is_const_true, loop_bounds, simplifier, simplify
from .tree import blocks_under, replace_stmt, walk_stmts

__all__ = ["split", "fuse", "reorder", "set_loop_kind"]


def _const_extent(loop: For) -> int:
    if not isinstance(loop.extent, IntImm):
        raise ScheduleError(f"loop {loop.loop_var.name} has a symbolic extent {loop.extent}; "
                            "this primitive needs a constant one")
    return loop.extent.value


def _rebind(root: Stmt, vmap: dict[Var, PrimExpr], bounds: dict, extra_predicate: PrimExpr | None,
            scope: Stmt, preserve_unit_iters: bool = True) -> Stmt:
    """Substitute loop variables inside ``scope`` and simplify the block bindings.

    Without ``preserve_unit_iters`` a unit loop's variable is its only value, 0, in the
    bindings (TVM's IterMapSimplify with ``simplify_trivial_iterators``); the loop stays.
    """
    new = substitute(scope, vmap)
    unit = {} if preserve_unit_iters else \
        {v: const(0, v.dtype) for v, extent in bounds.items() if is_const_int(extent, 1)}
    simp = simplifier(bounds)
    for realize in blocks_under(new):
        values = tuple(simp(substitute(v, unit) if unit else v) for v in realize.iter_values)
        pred = realize.predicate  # substituted, not re-simplified (TVM leaves predicates as built)
        if extra_predicate is not None:
            # every block under a split loop sees its padding guard, appended unsimplified
            # (``(i0 * 2 + i1) * 3 + i2 < 128``) after what it had, as TVM appends it
            pred = logical_and(pred, extra_predicate) if not is_const_true(pred) else extra_predicate
        if values != realize.iter_values or pred is not realize.predicate:
            new = replace_stmt(new, realize, BlockRealize(values, pred, realize.block))
    return new


def _check_plain_loop(loop: For, what: str) -> None:
    """split and fuse make new loops: an annotation or a thread binding would have no owner."""
    name = loop.loop_var.name
    if loop.annotations:
        raise ScheduleError(f"cannot {what} loop {name}: it has annotations {sorted(loop.annotations)}; "
                            "remove them (sch.unannotate) first")
    if loop.thread_binding is not None:
        raise ScheduleError(f"cannot {what} loop {name}: it is bound to thread {loop.thread_binding}")


def split(root: Stmt, loop: For, factors: list[Any], preserve_unit_iters: bool = True,
          disable_predication: bool = False) -> tuple[Stmt, list[Var]]:
    """Split ``loop`` into nested loops whose extents are ``factors`` (one may be None).

    ``preserve_unit_iters=False`` binds unit loops as 0 (see :func:`_rebind`);
    ``disable_predication`` leaves out the guard of a non-dividing split (the caller promises
    the padding iterations are harmless), as TVM does.  A loop of symbolic extent ``n`` splits
    too: the inferred factor is ``(n + k - 1) // k`` and the guard is always added.
    """
    name = loop.loop_var.name
    _check_plain_loop(loop, "split")
    if not (isinstance(loop.min, IntImm) and loop.min.value == 0):
        raise ScheduleError(f"cannot split loop {name}: it does not start at 0")
    if not factors:
        raise ScheduleError(f"cannot split loop {name}: factors must not be empty")
    nones = [i for i, f in enumerate(factors) if f is None or (isinstance(f, int) and f == -1)]
    if len(nones) > 1:
        raise ScheduleError(f"cannot split loop {name}: at most one factor may be None, got {factors}")
    ints = []
    for f in factors:
        if f is None or f == -1:
            ints.append(None)
            continue
        value = int(f)
        if value <= 0:
            raise ScheduleError(f"cannot split loop {name}: factor {value} is not positive")
        ints.append(value)
    known = 1
    for f in ints:
        if f is not None:
            known *= f
    dtype = loop.loop_var.dtype
    symbolic = not isinstance(loop.extent, IntImm)
    extent_expr = loop.extent if loop.extent.dtype == dtype else const(loop.extent.value, dtype)
    sizes: list[PrimExpr] = [const(f, dtype) if f is not None else None for f in ints]
    if nones:
        if symbolic:
            sizes[nones[0]] = simplify(floordiv(extent_expr + const(known - 1, dtype), const(known, dtype)))
        else:
            sizes[nones[0]] = const(-(-extent_expr.value // known), dtype)
    elif symbolic:
        raise ScheduleError(f"cannot split loop {name} of extent {loop.extent} by factors {factors}: "
                            "the product of factors is not larger than or equal to the extent of the "
                            "loop (it cannot be proven for a symbolic extent; make one factor None)")
    elif known < extent_expr.value:
        raise ScheduleError(f"cannot split loop {name} of extent {extent_expr.value} by factors {factors}: "
                            f"their product {known} is smaller than the extent")
    exact = not symbolic and all(isinstance(f, IntImm) for f in sizes) and \
        _product(f.value for f in sizes) == extent_expr.value
    new_vars = [Var(f"{name}_{i}", dtype) for i in range(len(sizes))]
    fused: PrimExpr = new_vars[0]
    for v, f in zip(new_vars[1:], sizes[1:]):
        fused = fused * f + v
    bounds = loop_bounds(root)
    bounds.update({v: f for v, f in zip(new_vars, sizes)})
    predicate = (fused < extent_expr) if not exact and not disable_predication else None
    body = _rebind(root, {loop.loop_var: fused}, bounds, predicate, loop.body, preserve_unit_iters)
    for v, f in reversed(list(zip(new_vars, sizes))):
        body = For(v, const(0, dtype), f, ForKind.SERIAL, body)
    return replace_stmt(root, loop, body), new_vars


def _product(values: Any) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def _chain(outer: For, inner: For) -> list[For] | None:
    """Loops from ``outer`` down to ``inner`` when each directly contains the next."""
    chain = [outer]
    cur: Stmt = outer
    while cur is not inner:
        body = cur.body
        if not isinstance(body, For):
            return None
        chain.append(body)
        cur = body
    return chain


def fuse(root: Stmt, loops: list[For], preserve_unit_iters: bool = True) -> tuple[Stmt, Var]:
    """Fuse perfectly nested ``loops`` (outer to inner) into one loop (``preserve_unit_iters``:
    see :func:`_rebind`)."""
    names = ", ".join(lp.loop_var.name for lp in loops)
    if len(loops) < 2:
        raise ScheduleError(f"cannot fuse {names}: need at least two loops")
    for outer, inner in zip(loops, loops[1:]):
        if outer.body is not inner:
            raise ScheduleError(f"cannot fuse {names}: {inner.loop_var.name} is not the only statement "
                                f"directly inside {outer.loop_var.name}")
    dtype = loops[0].loop_var.dtype
    extents: list[PrimExpr] = []
    for lp in loops:
        _check_plain_loop(lp, "fuse")
        if not (isinstance(lp.min, IntImm) and lp.min.value == 0):
            raise ScheduleError(f"cannot fuse {names}: loop {lp.loop_var.name} does not start at 0")
        extents.append(lp.extent if lp.extent.dtype == dtype or not isinstance(lp.extent, IntImm)
                       else const(lp.extent.value, dtype))
    for lp, e in zip(loops, extents):  # an extent may use outer loops, not the fused ones
        if any(uses_var(e, other.loop_var) for other in loops if other is not lp):
            raise ScheduleError(f"cannot fuse {names}: the extent {e} of loop {lp.loop_var.name} "
                                "depends on another of the fused loops")
    fused = Var("_".join(lp.loop_var.name for lp in loops) + "_fused", dtype)
    total: PrimExpr = extents[0]
    for e in extents[1:]:
        total = total * e
    total = simplify(total)
    vmap: dict[Var, PrimExpr] = {}
    stride: PrimExpr | None = None  # None: 1
    for k in range(len(loops) - 1, -1, -1):
        lp, e = loops[k], extents[k]
        span = e if stride is None else simplify(stride * e)
        # TVM's form: outermost fused // s, middle fused % (s * e) // s, innermost fused % e
        value = floormod(fused, span) if k > 0 else fused
        vmap[lp.loop_var] = floordiv(value, stride) if stride is not None else value
        stride = span
    bounds = loop_bounds(root)
    bounds[fused] = total
    body = _rebind(root, vmap, bounds, None, loops[-1].body, preserve_unit_iters)
    new_loop = For(fused, const(0, dtype), total, ForKind.SERIAL, body)
    return replace_stmt(root, loops[0], new_loop), fused


def reorder(root: Stmt, loops: list[For], path_of: Any) -> Stmt:
    """Put ``loops`` in the given order (outer to inner) inside their nest."""
    names = [lp.loop_var.name for lp in loops]
    if len({id(lp) for lp in loops}) != len(loops):
        raise ScheduleError(f"cannot reorder {', '.join(names)}: a loop appears twice")
    depth = {id(lp): len(path_of(lp)) for lp in loops}
    by_depth = sorted(loops, key=lambda lp: depth[id(lp)])
    outer, inner = by_depth[0], by_depth[-1]
    chain = _chain(outer, inner)
    if chain is None:
        for lp in by_depth[1:]:
            if not any(a is outer for a in path_of(lp)):
                raise ScheduleError(f"cannot reorder {', '.join(names)}: {lp.loop_var.name} is not "
                                    f"nested under {outer.loop_var.name}")
        raise ScheduleError(f"cannot reorder {', '.join(names)}: the loops from {outer.loop_var.name} to "
                            f"{inner.loop_var.name} are not perfectly nested (another statement sits "
                            "between them)")
    _check_reorderable(outer, names)
    chosen = {id(lp) for lp in loops}
    order = iter(loops)
    new_order = [next(order) if id(lp) in chosen else lp for lp in chain]
    for k, lp in enumerate(new_order):  # a loop's range may only use loops still outside it
        later = [x.loop_var for x in new_order[k + 1:]]
        dep = [v.name for v in later if uses_var(lp.min, v) or uses_var(lp.extent, v)]
        if dep:
            raise ScheduleError(f"cannot reorder {', '.join(names)}: the range of loop {lp.loop_var.name} "
                                f"depends on loop {dep[0]}, which would be inside it")
    body = inner.body
    for lp in reversed(new_order):
        body = ir.replace(lp, body=body)
    return replace_stmt(root, outer, body)


def _check_reorderable(outer: For, names: list[str]) -> None:
    """Blocks under the reordered loops: spatial or reduction iterators only, and bindings
    affine in the loops from ``outer`` down (TVM's conditions)."""
    for realize, path in walk_stmts(outer):
        if not isinstance(realize, BlockRealize):
            continue
        block = realize.block
        odd = [iv.var.name for iv in block.iter_vars if iv.iter_type not in ("spatial", "reduce")]
        if odd:
            raise ScheduleError(f"cannot reorder {', '.join(names)}: block {block.name_hint} under them has "
                                f"iterator {odd[0]} that is neither data parallel nor a reduction")
        loops = [s for s in path if isinstance(s, For)]
        iters = {id(lp.loop_var): (lp.extent.value if isinstance(lp.extent, IntImm) else None) for lp in loops}
        if not is_affine_binding(realize, iters):
            raise ScheduleError(f"cannot reorder {', '.join(names)}: block {block.name_hint} under them does not "
                                "have an affine binding of the loops (a non-linear index, a scaled loop, or a "
                                "predicate other than a split's padding guard)")


def set_loop_kind(root: Stmt, loop: For, kind: str, path: tuple, thread_axis: str | None = None) -> Stmt:
    """Mark ``loop`` parallel / vectorized / unrolled / thread-bound after checking it is legal."""
    name = loop.loop_var.name
    if kind == ForKind.THREAD_BINDING and not is_thread_tag(thread_axis):
        raise ScheduleError(f"cannot bind loop {name} to {thread_axis!r}: not a GPU thread axis; use one of "
                            f"{', '.join(THREAD_TAGS)}")
    verb = {ForKind.PARALLEL: "parallelize", ForKind.VECTORIZED: "vectorize",
            ForKind.THREAD_BINDING: f"bind to {thread_axis}"}.get(kind)
    if verb is not None:
        check_compact_dataflow(loop, path, f"{verb} loop {name}")
        # a reduction may be split over threads of one block (cross-thread reduction), nothing else
        cross_thread = thread_axis is not None and thread_axis.startswith("threadIdx.")
        for realize in blocks_under(loop):
            for iv, value in zip(realize.block.iter_vars, realize.iter_values):
                if not uses_var(value, loop.loop_var) or iv.iter_type == "spatial":
                    continue
                if iv.iter_type == "reduce" and cross_thread:
                    continue
                kind_word = "reduction" if iv.iter_type == "reduce" else iv.iter_type
                raise ScheduleError(
                    f"cannot {verb} loop {name}: it is bound to the {kind_word} iterator "
                    f"{iv.var.name} of block {realize.block.name_hint}, which is not data parallel; "
                    "iterations would race on the same output element")
        if kind == ForKind.PARALLEL:
            for s in path:
                if isinstance(s, For) and s.kind == ForKind.VECTORIZED:
                    raise ScheduleError(f"cannot parallelize loop {name}: it is inside the vectorized "
                                        f"loop {s.loop_var.name}")
    if thread_axis is not None:
        return replace_stmt(root, loop, ir.replace(loop, kind=kind, thread_binding=thread_axis))
    # a new kind replaces a thread binding (TVM: unroll after bind leaves a plain unrolled loop)
    return replace_stmt(root, loop, ir.replace(loop, kind=kind, thread_binding=None))
