"""Compute-location primitives: compute_at, reverse_compute_at and decompose_reduction
(compute_inline and reverse_compute_inline are in :mod:`.compute_inline`).

The idea behind compute_at: a consumer under loop ``L`` needs only a *region* of the
producer's output per iteration of ``L``.  Express that region in the variables of
``L`` and the loops above it (relaxing the loops below ``L`` over their ranges), then
give the producer new loops that cover exactly that region, placed inside ``L``.
"""

from __future__ import annotations

from typing import Any

from ...ir import replace
from ...ir.structural import structural_equal
from ..analysis import get_block_read_write_region, uses_var, vars_used
from ..buffer import Buffer
from ..expr import (
    Add,
    FloorDiv,
    FloorMod,
    IntImm,
    IterVar,
    Max,
    Min,
    Mul,
    PrimExpr,
    Range,
    Sub,
    Var,
    const,
)
from ..functor import substitute
from ..op import logical_and
from ..stmt import Block, BlockRealize, For, ForKind, SeqStmt, Stmt, seq
from .error import ScheduleError
from .loops import loop_bounds, simplify
from .tree import blocks_under, replace_stmt, walk_stmts

__all__ = ["compute_at", "decompose_reduction"]


# -- bounds of index expressions ----------------------------------------------------------


def relax(e: PrimExpr, dom: dict[int, tuple[PrimExpr, PrimExpr]]) -> tuple[PrimExpr, PrimExpr] | None:
    """Inclusive bounds [lo, hi] of ``e`` when the variables in ``dom`` range over theirs."""
    if isinstance(e, Var):
        return dom.get(id(e), (e, e))
    if isinstance(e, IntImm):
        return e, e
    if isinstance(e, (Add, Sub)):
        a, b = relax(e.a, dom), relax(e.b, dom)
        if a is None or b is None:
            return None
        return (a[0] + b[0], a[1] + b[1]) if isinstance(e, Add) else (a[0] - b[1], a[1] - b[0])
    if isinstance(e, Mul):
        for x, c in ((e.a, e.b), (e.b, e.a)):
            if isinstance(c, IntImm):
                r = relax(x, dom)
                if r is None:
                    return None
                return (r[0] * c, r[1] * c) if c.value >= 0 else (r[1] * c, r[0] * c)
        return None
    if isinstance(e, FloorDiv) and isinstance(e.b, IntImm) and e.b.value > 0:
        r = relax(e.a, dom)
        return None if r is None else (r[0] // e.b, r[1] // e.b)
    if isinstance(e, FloorMod) and isinstance(e.b, IntImm) and e.b.value > 0:
        r = relax(e.a, dom)
        if r is None:
            return None
        if r[0] is r[1] or structural_equal(r[0], r[1]):
            return e, e
        return const(0, e.dtype), e.b - 1
    if isinstance(e, (Min, Max)):
        a, b = relax(e.a, dom), relax(e.b, dom)
        if a is None or b is None:
            return None
        f = type(e)
        return f(a[0], b[0]), f(a[1], b[1])
    if not _mentions_any(e, dom):
        return e, e
    return None


def _mentions_any(e: Any, dom: dict) -> bool:
    return bool(vars_used(e) & set(dom))




# -- compute_at ---------------------------------------------------------------------------


def _path(root: Stmt, target: Stmt) -> tuple:
    for s, p in walk_stmts(root):
        if s is target:
            return p
    raise ScheduleError("internal: statement not found in the function")


def _block_region_under(loop: For, realize: BlockRealize, path: tuple, buffer: Buffer, kind: str,
                        bounds: dict) -> list[tuple[PrimExpr, PrimExpr]] | None:
    """Region of ``buffer`` that ``realize`` reads/writes, over the loops below ``loop``."""
    block = realize.block
    regions = [r for r in getattr(block, kind) if r.buffer is buffer]
    if not regions:
        return None
    # loops strictly between `loop` and the block range over their domain
    inner = {}
    below = False
    for s in path:
        if s is loop:
            below = True
            continue
        if below and isinstance(s, For):
            inner[id(s.loop_var)] = (s.min, s.min + s.extent - 1)
    bind = {iv.var: v for iv, v in zip(block.iter_vars, realize.iter_values)}
    result: list[tuple[PrimExpr, PrimExpr]] | None = None
    for region in regions:
        dims = []
        for r in region.region:
            lo = relax(substitute(r.min, bind), inner)
            hi = relax(substitute(r.min + r.extent - 1, bind), inner)
            if lo is None or hi is None:
                dims.append((const(0, r.min.dtype), buffer.shape[len(dims)] - 1))
            else:
                dims.append((simplify(lo[0], bounds), simplify(hi[1], bounds)))
        result = dims if result is None else _hull(result, dims, bounds)
    return result


def _hull(a: list, b: list, bounds: dict) -> list:
    out = []
    for (lo0, hi0), (lo1, hi1) in zip(a, b):
        lo = lo0 if structural_equal(lo0, lo1) else simplify(Min(lo0, lo1), bounds)
        hi = hi0 if structural_equal(hi0, hi1) else simplify(Max(hi0, hi1), bounds)
        out.append((lo, hi))
    return out


def compute_at(root: Stmt, realize: BlockRealize, loop: For, reverse: bool,
               preserve_unit_loops: bool, output_buffers: set[int] = frozenset()) -> Stmt:
    """Move ``realize``'s block under ``loop`` (see the module docstring)."""
    block = realize.block
    what = "reverse_compute_at" if reverse else "compute_at"
    here = f"{what}: block {block.name_hint}, loop {loop.loop_var.name}"
    block_path = _path(root, realize)
    if any(s is loop for s in block_path):
        raise ScheduleError(f"cannot {here}: loop {loop.loop_var.name} is an ancestor of block "
                            f"{block.name_hint} (the block is already inside it)")
    loop_path = _path(root, loop)
    scope = next((s for s in reversed(block_path) if isinstance(s, Block)), None)
    loop_scope = next((s for s in reversed(loop_path) if isinstance(s, Block)), None)
    if scope is None or loop_scope is not scope:
        raise ScheduleError(f"cannot {here}: the block and the loop are not in the same block scope "
                            f"(the loop is inside block {getattr(loop_scope, 'name_hint', '?')})")
    if not reverse:
        written = [w.buffer.name for w in block.writes if id(w.buffer) in output_buffers]
        if written:
            raise ScheduleError(f"cannot {here}: block {block.name_hint} is an output block (it writes "
                                f"the function's parameter {written[0]}); compute_at moves only blocks "
                                "whose result is consumed inside the function")
    updated = {id(w.buffer) for w in block.writes} & {id(r.buffer) for r in block.reads}
    if updated and block.init is None:
        raise ScheduleError(f"cannot {here}: the block updates a buffer in place (it reads what it "
                            "writes, without T.init, as after decompose_reduction), so recomputing it "
                            "would repeat the update")
    if block.init is not None and reverse:
        raise ScheduleError(f"cannot {here}: a reduction block cannot be moved after its producers")
    from .checks import check_complete_or_reduction, loop_var_ids

    check_complete_or_reduction(realize, scope, loop_var_ids(block_path), here)
    if not _only_padding_guards(realize):
        raise ScheduleError(f"cannot {here}: the block has a predicate ({realize.predicate}) that is "
                            "more than a guard against split padding")
    bounds = loop_bounds(root)

    # the buffers linking the block to the blocks under `loop`
    if reverse:
        linked = {id(r.buffer): r.buffer for r in block.reads}
        partner_kind, own_kind, role = "writes", "reads", "producer"
    else:
        linked = {id(w.buffer): w.buffer for w in block.writes}
        partner_kind, own_kind, role = "reads", "writes", "consumer"
    partners = []
    for r, p in walk_stmts(loop):
        if isinstance(r, BlockRealize) and r is not realize:
            if any(id(x.buffer) in linked for x in getattr(r.block, partner_kind)):
                partners.append((r, loop_path + p))
    if not partners:
        raise ScheduleError(f"cannot {here}: loop {loop.loop_var.name} is not an ancestor of any "
                            f"{role} of block {block.name_hint}")
    # a partner writing the same buffer would interleave with the moved block's writes
    mine = {id(w.buffer) for w in block.writes}
    for r, _ in partners:
        touched = r.block.writes if not reverse else r.block.writes + r.block.reads
        clash = [x.buffer.name for x in touched if id(x.buffer) in mine]
        if clash:
            raise ScheduleError(f"cannot {here}: block {r.block.name_hint} under the loop also "
                                f"{'writes' if not reverse else 'uses'} {clash[0]}, which the block writes")
    if reverse:  # the consumer must not see a reduction half done
        for r, _ in partners:
            for iv, value in zip(r.block.iter_vars, r.iter_values):
                if iv.iter_type == "reduce" and uses_var(value, loop.loop_var):
                    raise ScheduleError(f"cannot {here}: loop {loop.loop_var.name} drives the reduction "
                                        f"of producer {r.block.name_hint}, whose result is not complete "
                                        "inside it")
    # every consumer (producer) must be under the loop, or one outside would miss data
    under = {id(r) for r, _ in partners}
    outside = [r.block.name_hint for r, _ in walk_stmts(scope.body) if isinstance(r, BlockRealize)
               and r is not realize and id(r) not in under
               and any(id(x.buffer) in linked for x in getattr(r.block, partner_kind))]
    if outside:
        raise ScheduleError(f"cannot {here}: {what} requires all the {role}s of block {block.name_hint} "
                            f"to be under loop {loop.loop_var.name}; {', '.join(outside)} is not")

    # region needed per buffer, in the variables of `loop` and above
    needed: dict[int, list] = {}
    for r, p in partners:
        for buf in linked.values():
            region = _block_region_under(loop, r, p, buf, partner_kind, bounds)
            if region is not None:
                needed[id(buf)] = region if id(buf) not in needed else _hull(needed[id(buf)], region, bounds)

    # which range each iteration variable of the moved block must cover
    ranges: dict[int, tuple[PrimExpr, PrimExpr]] = {}
    for region in getattr(block, own_kind):
        if id(region.buffer) not in needed:
            continue
        for dim, (r, (lo, hi)) in enumerate(zip(region.region, needed[id(region.buffer)])):
            iv = next((iv for iv in block.iter_vars if r.min is iv.var), None)
            if iv is None or not (isinstance(r.extent, IntImm) and r.extent.value == 1):
                raise ScheduleError(
                    f"cannot {here}: the block must access {region.buffer.name} at its iteration "
                    f"variables (dimension {dim} is indexed by {r.min})")
            if id(iv.var) in ranges:
                old = ranges[id(iv.var)]
                lo, hi = simplify(Min(old[0], lo), bounds), simplify(Max(old[1], hi), bounds)
            ranges[id(iv.var)] = (lo, hi)

    if reverse:
        _check_consumer_covered(block, ranges, bounds, here)

    # new loops covering those ranges, in the order of the block's iteration variables
    new_loops: list[tuple[Var, PrimExpr]] = []
    values: list[PrimExpr] = []
    predicates: list[PrimExpr] = []
    for iv in block.iter_vars:
        dom_lo, dom_hi = iv.dom.min, iv.dom.min + iv.dom.extent - 1
        lo, hi = ranges.get(id(iv.var), (dom_lo, dom_hi))
        extent = simplify(hi - lo + 1, bounds)
        if not isinstance(extent, IntImm):
            raise ScheduleError(f"cannot {here}: the range of {iv.var.name} needed under the loop has "
                                f"a size that is not constant ({extent})")
        if extent.value == 1 and not preserve_unit_loops:
            value = simplify(lo, bounds)
        else:
            var = Var(f"ax{len(new_loops)}", iv.var.dtype)
            new_loops.append((var, extent))
            bounds[var] = extent
            value = simplify(lo + var, bounds)
        values.append(value)
        # consumers may ask for padding iterations (a non-dividing split): guard them
        if not _provably_in(value, iv.dom, bounds):
            predicates.append(value < iv.dom.min + iv.dom.extent)

    # the old predicate spoke of the old loops; only padding guards may be dropped with them
    predicate: PrimExpr = const(True, "bool")
    for p in predicates:
        predicate = p if _is_true(predicate) else logical_and(predicate, p)
    nest: Stmt = BlockRealize(tuple(values), predicate, block)
    for var, extent in reversed(new_loops):
        nest = For(var, const(0, var.dtype), extent, ForKind.SERIAL, nest)

    # take the block (and loops that held only it) out, then insert the nest under `loop`
    removed = _remove_block_with_loops(root, realize, block_path)
    new_loop = next(s for s, _ in walk_stmts(removed) if isinstance(s, For) and s.loop_var is loop.loop_var)
    body_items = list(new_loop.body.seq) if isinstance(new_loop.body, SeqStmt) else [new_loop.body]
    partner_ids = {id(r.block) for r, _ in partners}

    def holds_partner(s: Stmt) -> bool:
        return any(id(r.block) in partner_ids for r in ([s] if isinstance(s, BlockRealize) else blocks_under(s)))

    positions = [i for i, s in enumerate(body_items) if holds_partner(s)]
    at = positions[-1] + 1 if reverse else positions[0]
    body_items.insert(at, nest)
    return replace_stmt(removed, new_loop, replace(new_loop, body=seq(*body_items)))


def _only_padding_guards(realize: BlockRealize) -> bool:
    """True when the predicate only says "binding < domain end" for some iterators."""
    from ..expr import LT, And

    def conjuncts(e: PrimExpr) -> list[PrimExpr]:
        return conjuncts(e.a) + conjuncts(e.b) if isinstance(e, And) else [e]

    if _is_true(realize.predicate):
        return True
    for c in conjuncts(realize.predicate):
        if not isinstance(c, LT):
            return False
        if not any(structural_equal(c.a, v) and structural_equal(simplify(c.b), simplify(iv.dom.min + iv.dom.extent))
                   for iv, v in zip(realize.block.iter_vars, realize.iter_values)):
            return False
    return True


def _is_true(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.dtype == "bool" and e.value == 1


def _check_consumer_covered(block: Block, ranges: dict, bounds: dict, here: str) -> None:
    """Under the loop a consumer only runs where its producer wrote; over all iterations that
    must still be its whole domain (a padded consumer has points no producer tile reaches,
    and they would never be computed)."""
    from ...arith import Analyzer

    ana = Analyzer()
    for var, extent in bounds.items():
        ana.bind(var, Range(const(0, extent.dtype), extent))
    for iv in block.iter_vars:
        if id(iv.var) not in ranges:
            continue
        lo, hi = ranges[id(iv.var)]
        dom_lo, dom_hi = iv.dom.min, iv.dom.min + iv.dom.extent - 1
        if not (isinstance(dom_lo, IntImm) and isinstance(iv.dom.extent, IntImm)):
            continue
        if ana.const_int_bound(lo).min_value > dom_lo.value or ana.const_int_bound(hi).max_value < dom_hi.value:
            raise ScheduleError(f"cannot {here}: block {block.name_hint} iterates {iv.var.name} over "
                                f"[{dom_lo.value}, {dom_hi.value}], beyond what its producers write "
                                "under the loop, so some of its points would never run")


def _provably_in(value: PrimExpr, dom: Range, bounds: dict) -> bool:
    from ...arith import Analyzer

    ana = Analyzer()
    for var, extent in bounds.items():
        ana.bind(var, Range(const(0, extent.dtype), extent))
    return bool(ana.can_prove(value >= dom.min) and ana.can_prove(value < dom.min + dom.extent))


def _remove_block_with_loops(root: Stmt, realize: BlockRealize, path: tuple) -> Stmt:
    """Remove ``realize`` together with the loops around it that hold nothing else."""
    victim: Stmt = realize
    for s in reversed(path):
        if isinstance(s, For) and s.body is victim:
            victim = s
        else:
            break
    return replace_stmt(root, victim, None)


def _refresh_regions(block: Block) -> Block:
    reads, writes = get_block_read_write_region(block)
    return replace(block, reads=tuple(reads), writes=tuple(writes))


# -- decompose_reduction --------------------------------------------------------------------


def decompose_reduction(root: Stmt, realize: BlockRealize, loop: For) -> tuple[Stmt, str]:
    """Move the block's ``T.init`` into a new block ``<name>_init`` placed before ``loop``."""
    block = realize.block
    if block.init is None:
        raise ScheduleError(f"cannot decompose_reduction of block {block.name_hint}: it has no T.init")
    path = _path(root, realize)
    if not any(s is loop for s in path):
        raise ScheduleError(f"cannot decompose_reduction of block {block.name_hint}: loop "
                            f"{loop.loop_var.name} is not an ancestor of the block")
    start = next(i for i, s in enumerate(path) if s is loop)
    loops = [s for s in path[start:] if isinstance(s, For)]
    spatial = [(iv, v) for iv, v in zip(block.iter_vars, realize.iter_values) if iv.iter_type == "spatial"]
    for lp in loops:
        if not any(uses_var(v, lp.loop_var) for v in realize.iter_values):
            raise ScheduleError(
                f"cannot decompose_reduction of block {block.name_hint} at loop {loop.loop_var.name}: loop "
                f"{lp.loop_var.name} binds none of the block's iterators, so it repeats the whole reduction "
                "and a single init before it would not reset each repetition")
    reduce_values = [v for iv, v in zip(block.iter_vars, realize.iter_values) if iv.iter_type != "spatial"]
    for above in path[:start]:
        if isinstance(above, For) and any(uses_var(v, above.loop_var) for v in reduce_values):
            raise ScheduleError(
                f"cannot decompose_reduction of block {block.name_hint} at loop {loop.loop_var.name}: "
                f"the reduction loop {above.loop_var.name} is outside it, so the init would run on every "
                f"{above.loop_var.name} iteration; pick a loop above all reduction loops")
    # keep the loops that spatial bindings use; the reduction-only loops are not needed to initialise
    kept = [lp for lp in loops if any(uses_var(v, lp.loop_var) for _, v in spatial)]
    new_vars = {lp.loop_var: Var(f"{lp.loop_var.name}_init", lp.loop_var.dtype) for lp in kept}
    new_ivs = {iv.var: Var(iv.var.name, iv.var.dtype) for iv, _ in spatial}
    init_block = Block(
        name_hint=f"{block.name_hint}_init",
        iter_vars=tuple(IterVar(iv.dom, new_ivs[iv.var], "spatial") for iv, _ in spatial),
        body=substitute(block.init, new_ivs),
        annotations=dict(block.annotations),  # the init block keeps the block's annotations, as in TVM
    )
    init_block = _refresh_regions(init_block)
    pred = realize.predicate
    if not _is_true(pred) and any(uses_var(pred, lp.loop_var) for lp in loops if lp not in kept):
        pred = const(True, "bool")
    init_realize = BlockRealize(tuple(substitute(v, new_vars) for _, v in spatial),
                                substitute(pred, new_vars), init_block)
    nest: Stmt = init_realize
    for lp in reversed(kept):
        nest = For(new_vars[lp.loop_var], lp.min, lp.extent, lp.kind, nest, None, dict(lp.annotations))
    update = _refresh_regions(replace(block, init=None, name_hint=f"{block.name_hint}_update"))
    out = replace_stmt(root, block, update)
    new_loop = next(s for s, _ in walk_stmts(out) if isinstance(s, For) and s.loop_var is loop.loop_var)
    parent = _path(out, new_loop)[-1]
    if isinstance(parent, SeqStmt):
        items = list(parent.seq)
        i = next(k for k, s in enumerate(items) if s is new_loop)
        items.insert(i, nest)
        out = replace_stmt(out, parent, SeqStmt(tuple(items)))
    else:
        out = replace_stmt(out, new_loop, SeqStmt((nest, new_loop)))
    return out, init_block.name_hint

