"""Compute-location primitives: compute_at, reverse_compute_at and decompose_reduction
(compute_inline and reverse_compute_inline are in :mod:`.compute_inline`).

The idea behind compute_at: a consumer under loop ``L`` needs only a *region* of the
producer's output per iteration of ``L``.  Express that region in the variables of
``L`` and the loops above it (relaxing the loops below ``L`` over their ranges), then
give the producer new loops that cover exactly that region, placed inside ``L``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...arith import Analyzer
from ...ir import replace
from ..analysis import uses_var
from ..buffer import Buffer
from ..expr import IntImm, IterVar, PrimExpr, Range, Var, const, is_const_int
from ..functor import substitute
from ..op import logical_and
from ..stmt import Block, BlockRealize, For, ForKind, SeqStmt, Stmt, seq
from . import region_cover as rc
from .checks import check_complete_or_reduction, loop_var_ids
from .error import ScheduleError
from .shared_analyses import is_const_true, is_padding_guard_only, predicate_of_iterators, recompute_access_regions
from .stage_pipeline import check_stage_pipeline
from .tree import ancestors, remove_block_with_empty_loops, replace_stmt, scope_blocks, walk_stmts

__all__ = ["compute_at", "decompose_reduction"]


# -- compute_at ---------------------------------------------------------------------------


def compute_at(root: Stmt, realize: BlockRealize, loop: For, reverse: bool,
               preserve_unit_loops: bool, output_buffers: set[int] = frozenset(), index: int = -1) -> Stmt:
    """Move ``realize``'s block under ``loop`` (see the module docstring), in four steps:
    check the move is legal, find the partners under the loop and the region they link
    through, build loops covering exactly that region, and put them under the loop."""
    what = "reverse_compute_at" if reverse else "compute_at"
    here = f"{what}: block {realize.block.name_hint}, loop {loop.loop_var.name}"
    block_path, loop_path, scope, own_guard = _check_movable(root, realize, loop, reverse, output_buffers, here)
    link = _find_partners(realize, loop, loop_path, scope, reverse, here)
    ana = rc.analyzer_for(loop, loop_path)
    var_doms = rc.block_var_domains(realize.block, link.own_kind, link.under_loop, link.partner_kind, loop,
                                    link.buffers, ana, here, relax_threads=not reverse)
    nest = _covering_loop_nest(realize.block, var_doms, ana, preserve_unit_loops, own_guard)
    if reverse:
        _check_consumer_covered(realize, block_path, var_doms, ana, here)
        rc.check_reads_inside(realize.block, link.own_kind, link.buffers, link.under_loop, link.partner_kind,
                              loop, var_doms, ana, here)
    return _move_under_loop(root, realize, block_path, loop, nest, link, index, here)


def _check_movable(root: Stmt, realize: BlockRealize, loop: For, reverse: bool, output_buffers: set[int],
                   here: str) -> tuple[tuple, tuple, Block, PrimExpr | None]:
    """TVM's conditions on the block alone: not already under the loop, in the loop's block
    scope, not an output block (compute_at), not an in-place update, complete (or a
    reduction), and without a predicate other than a split's padding guard or a guard on its own
    iterators.  Returns the block's and the loop's ancestors, their common scope block, and that
    own guard (None for a padding guard, which the new loops' ranges replace)."""
    block = realize.block
    block_path = ancestors(root, realize)
    if any(s is loop for s in block_path):
        raise ScheduleError(f"cannot {here}: loop {loop.loop_var.name} is an ancestor of block "
                            f"{block.name_hint} (the block is already inside it)")
    loop_path = ancestors(root, loop)
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
    check_complete_or_reduction(realize, scope, loop_var_ids(block_path), here)
    check_stage_pipeline(scope, _scope_path(block_path, scope), here)
    padding_only = is_padding_guard_only(realize)
    own_guard = None if padding_only else predicate_of_iterators(realize)
    if not padding_only and own_guard is None:
        raise ScheduleError(f"cannot {here}: the block has a predicate ({realize.predicate}) that is "
                            "more than a guard against split padding")
    return block_path, loop_path, scope, own_guard


def _scope_path(path: tuple, scope: Block) -> tuple:
    """The part of ``path`` above ``scope`` (the ancestors of the scope block)."""
    k = next(i for i, s in enumerate(path) if s is scope)
    return path[:k]


@dataclass
class _Partners:
    """The blocks a moved block is linked to: for compute_at its consumers (it provides what
    they read), for reverse_compute_at its producers (it needs what they write)."""

    producers: set[int]  # ids of the scope's blocks that write what the block reads
    consumers: set[int]  # ... that read what the block writes
    under_loop: list[tuple[BlockRealize, tuple]]  # the partners under the loop, with ancestors
    buffers: dict[int, Buffer]  # the buffers linking the block and its partners, by id
    own_kind: str  # "writes" (compute_at) or "reads": the block's regions on those buffers
    partner_kind: str  # "reads" or "writes": the partners' regions on them


def _find_partners(realize: BlockRealize, loop: For, loop_path: tuple, scope: Block, reverse: bool,
                   here: str) -> _Partners:
    """The partners of the block, checked: at least one under the loop, none outside it (it
    would miss data), none under it touching what the block writes (the writes would
    interleave) and, for reverse_compute_at, no producer whose reduction the loop drives."""
    block = realize.block
    what, role = ("reverse_compute_at", "producer") if reverse else ("compute_at", "consumer")
    lv = loop.loop_var.name
    siblings = scope_blocks(scope)  # the scope's blocks, not those nested in them
    reads = {id(r.buffer) for r in block.reads}
    writes = {id(w.buffer) for w in block.writes}
    producers = {id(r.block) for r, _ in siblings if r is not realize
                 and any(id(w.buffer) in reads for w in r.block.writes)}
    consumers = {id(r.block) for r, _ in siblings if r is not realize
                 and any(id(x.buffer) in writes for x in r.block.reads)}
    partner_ids = producers if reverse else consumers
    under = {id(r.block): (r, p) for r, p in scope_blocks(loop, loop_path)}
    partners = [under[b] for b in partner_ids if b in under]
    if not partners:
        raise ScheduleError(f"cannot {here}: loop {lv} is not an ancestor of any {role} of block "
                            f"{block.name_hint}")
    outside = [r.block.name_hint for r, _ in siblings if id(r.block) in partner_ids and id(r.block) not in under]
    if outside:
        raise ScheduleError(f"cannot {here}: {what} requires all the {role}s of block {block.name_hint} "
                            f"to be under loop {lv}; {', '.join(outside)} is not")
    for r, _ in partners:
        touched = r.block.writes if not reverse else r.block.writes + r.block.reads
        clash = [x.buffer.name for x in touched if id(x.buffer) in writes]
        if clash:
            raise ScheduleError(f"cannot {here}: block {r.block.name_hint} under the loop also "
                                f"{'writes' if not reverse else 'uses'} {clash[0]}, which the block writes")
    if reverse:  # the consumer must not see a reduction half done
        for r, _ in partners:
            for iv, value in zip(r.block.iter_vars, r.iter_values):
                if iv.iter_type == "reduce" and uses_var(value, loop.loop_var):
                    raise ScheduleError(f"cannot {here}: loop {lv} drives the reduction of producer "
                                        f"{r.block.name_hint}, whose result is not complete inside it")
    regions = block.reads if reverse else block.writes
    return _Partners(producers, consumers, partners, {id(x.buffer): x.buffer for x in regions},
                     own_kind="reads" if reverse else "writes", partner_kind="writes" if reverse else "reads")


def _covering_loop_nest(block: Block, var_doms: list, ana: Any, preserve_unit_loops: bool,
                        own_guard: PrimExpr | None = None) -> Stmt:
    """New loops over the range each block variable must cover, in the order of the block's
    iterators (a unit range gets no loop unless ``preserve_unit_loops``), with a predicate
    where the range reaches past the values the variable may take, and the block's own guard
    (:func:`predicate_of_iterators`) said of the new bindings."""
    new_loops: list[tuple[Var, PrimExpr]] = []
    values: list[PrimExpr] = []
    predicate: PrimExpr = const(True, "bool")
    for iv, info in zip(block.iter_vars, var_doms):
        if info.dom is rc.NOTHING or rc.has_inf(info.dom):
            lo, extent = iv.dom.min, iv.dom.extent
        else:
            lo = Analyzer().simplify(info.dom[0])
            extent = Analyzer().simplify(info.dom[1] + 1 - info.dom[0])
        if preserve_unit_loops or not is_const_int(extent, 1):
            var = Var(f"ax{len(new_loops)}", f"int{max(_bits(lo.dtype), _bits(extent.dtype))}")
            extent = ana.simplify(extent)
            new_loops.append((var, extent))
            value = var if is_const_int(lo, 0) else lo + var
            # a unit loop's variable is 0 to the simplifier (TVM folds single-point ranges)
            ana.bind(var, const(0, var.dtype) if is_const_int(extent, 1) else Range(const(0, var.dtype), extent))
        else:
            value = lo
        values.append(value)
        if info.bound is not rc.NOTHING:
            for cond in ((None if info.bound[0] is None else value >= info.bound[0]),
                         (None if info.bound[1] is None else value < info.bound[1] + 1)):
                if cond is not None and not ana.can_prove(cond):
                    cond = rc.constant_on_one_side(cond, ana)
                    predicate = cond if is_const_true(predicate) else logical_and(predicate, cond)
    if own_guard is not None:
        cond = substitute(own_guard, {iv.var: v for iv, v in zip(block.iter_vars, values)})
        predicate = cond if is_const_true(predicate) else logical_and(predicate, cond)
    nest: Stmt = BlockRealize(tuple(values), ana.simplify(predicate), block)
    for var, extent in reversed(new_loops):
        nest = For(var, const(0, var.dtype), extent, ForKind.SERIAL, nest)
    return nest


def _move_under_loop(root: Stmt, realize: BlockRealize, block_path: tuple, loop: For, nest: Stmt,
                     link: _Partners, index: int, here: str) -> Stmt:
    """Take the block (and the loops that held only it) out, then insert ``nest`` in the
    loop's body at ``index`` (-1: between the producers and the consumers, see
    :func:`region_cover.insertion_point`)."""
    removed = remove_block_with_empty_loops(root, realize, block_path)
    new_loop = next(s for s, _ in walk_stmts(removed) if isinstance(s, For) and s.loop_var is loop.loop_var)
    body_items = list(new_loop.body.seq) if isinstance(new_loop.body, SeqStmt) else [new_loop.body]
    at = rc.insertion_point(body_items, link.producers, link.consumers, index, here)
    body_items.insert(at, nest)
    return replace_stmt(removed, new_loop, replace(new_loop, body=seq(*body_items)))


def _bits(dtype: str) -> int:
    digits = "".join(ch for ch in dtype if ch.isdigit())
    return int(digits) if digits else 32


def _check_consumer_covered(realize: BlockRealize, block_path: tuple, var_doms: list, ana: Any, here: str) -> None:
    """Under the loop a consumer only runs where its producer wrote; over all iterations that
    must still be every point it ran before (a padded consumer has points no producer tile
    reaches, and they would never be computed).  The points it ran are its iterators' domains
    narrowed to what its bindings reach under its current loops: one piece of a
    ``loop_partition`` (the whole tiles of 197 rows) binds only its own rows."""
    block = realize.block
    reach = Analyzer()
    for s in block_path:
        if isinstance(s, For):
            reach.bind(s.loop_var, Range.from_min_extent(s.min, s.extent))
    for iv, value, info in zip(block.iter_vars, realize.iter_values, var_doms):
        if info.dom is None or info.dom[0] is None or info.dom[1] is None:
            continue
        lo, hi = info.dom
        dom_lo, dom_hi = iv.dom.min, iv.dom.min + iv.dom.extent - 1
        if not (isinstance(dom_lo, IntImm) and isinstance(iv.dom.extent, IntImm)):
            continue
        bound = reach.const_int_bound(value)
        ran_lo, ran_hi = max(dom_lo.value, bound.min_value), min(dom_hi.value, bound.max_value)
        if ana.const_int_bound(lo).min_value > ran_lo or ana.const_int_bound(hi).max_value < ran_hi:
            raise ScheduleError(f"cannot {here}: block {block.name_hint} iterates {iv.var.name} over "
                                f"[{ran_lo}, {ran_hi}], beyond what its producers write "
                                "under the loop, so some of its points would never run")


# -- decompose_reduction --------------------------------------------------------------------


def decompose_reduction(root: Stmt, realize: BlockRealize, loop: For) -> tuple[Stmt, str]:
    """Move the block's ``T.init`` into a new block ``<name>_init`` placed before ``loop``."""
    block = realize.block
    if block.init is None:
        raise ScheduleError(f"cannot decompose_reduction of block {block.name_hint}: it has no T.init")
    path = ancestors(root, realize)
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
    init_block = recompute_access_regions(init_block)
    pred = realize.predicate
    if not is_const_true(pred) and any(uses_var(pred, lp.loop_var) for lp in loops if lp not in kept):
        pred = const(True, "bool")
    init_realize = BlockRealize(tuple(substitute(v, new_vars) for _, v in spatial),
                                substitute(pred, new_vars), init_block)
    nest: Stmt = init_realize
    for lp in reversed(kept):
        nest = For(new_vars[lp.loop_var], lp.min, lp.extent, lp.kind, nest, lp.thread_binding, dict(lp.annotations))
    # the update block reads what it writes too (TVM: writes not already read, then the reads)
    read_buffers = {id(r.buffer) for r in block.reads}
    reads = tuple(w for w in block.writes if id(w.buffer) not in read_buffers) + tuple(block.reads)
    update = replace(block, init=None, name_hint=f"{block.name_hint}_update", reads=reads)
    out = replace_stmt(root, block, update)
    new_loop = next(s for s, _ in walk_stmts(out) if isinstance(s, For) and s.loop_var is loop.loop_var)
    parent = ancestors(out, new_loop)[-1]
    if isinstance(parent, SeqStmt):
        items = list(parent.seq)
        i = next(k for k, s in enumerate(items) if s is new_loop)
        items.insert(i, nest)
        out = replace_stmt(out, parent, SeqStmt(tuple(items)))
    else:
        out = replace_stmt(out, new_loop, SeqStmt((nest, new_loop)))
    return out, init_block.name_hint

