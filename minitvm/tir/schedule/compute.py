"""Compute-location primitives: compute_at, reverse_compute_at, compute_inline,
reverse_compute_inline and decompose_reduction.

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
    BufferLoad,
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
from ..functor import StmtExprMutator, post_order_visit, substitute
from ..op import logical_and
from ..stmt import Block, BlockRealize, BufferStore, For, ForKind, SeqStmt, Stmt, seq
from .error import ScheduleError
from .loops import simplify
from .tree import replace_stmt, walk_stmts

__all__ = ["compute_at", "compute_inline", "reverse_compute_inline", "decompose_reduction"]


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


def compute_at(root: Stmt, realize: BlockRealize, loop: For, reverse: bool,
               preserve_unit_loops: bool, output_buffers: set[int] = frozenset(), index: int = -1) -> Stmt:
    """Move ``realize``'s block under ``loop`` (see the module docstring)."""
    from . import region_cover as rc

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
    from .checks import check_complete_or_reduction, loop_var_ids

    check_complete_or_reduction(realize, scope, loop_var_ids(block_path), here)
    if not _only_padding_guards(realize):
        raise ScheduleError(f"cannot {here}: the block has a predicate ({realize.predicate}) that is "
                            "more than a guard against split padding")

    # the blocks of the scope (not those nested in them) that produce for / consume from it
    siblings = _scope_blocks(scope)
    reads = {id(r.buffer) for r in block.reads}
    writes = {id(w.buffer) for w in block.writes}
    producers = {id(r.block) for r, _ in siblings if r is not realize
                 and any(id(w.buffer) in reads for w in r.block.writes)}
    consumers = {id(r.block) for r, _ in siblings if r is not realize
                 and any(id(x.buffer) in writes for x in r.block.reads)}
    if reverse:
        linked = {id(r.buffer): r.buffer for r in block.reads}
        partner_kind, own_kind, role, partner_ids = "writes", "reads", "producer", producers
    else:
        linked = {id(w.buffer): w.buffer for w in block.writes}
        partner_kind, own_kind, role, partner_ids = "reads", "writes", "consumer", consumers
    under = {id(r.block): (r, p) for r, p in _scope_blocks(loop, loop_path)}
    partners = [under[b] for b in partner_ids if b in under]
    if not partners:
        raise ScheduleError(f"cannot {here}: loop {loop.loop_var.name} is not an ancestor of any "
                            f"{role} of block {block.name_hint}")
    # every consumer (producer) must be under the loop, or one outside would miss data
    outside = [r.block.name_hint for r, _ in siblings if id(r.block) in partner_ids and id(r.block) not in under]
    if outside:
        raise ScheduleError(f"cannot {here}: {what} requires all the {role}s of block {block.name_hint} "
                            f"to be under loop {loop.loop_var.name}; {', '.join(outside)} is not")
    # a partner writing the same buffer would interleave with the moved block's writes
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
                    raise ScheduleError(f"cannot {here}: loop {loop.loop_var.name} drives the reduction "
                                        f"of producer {r.block.name_hint}, whose result is not complete "
                                        "inside it")

    # the range each block variable must cover, solved from the regions the partners need
    ana = rc.analyzer_for(loop, loop_path)
    var_doms = rc.block_var_domains(block, own_kind, partners, partner_kind, loop, linked, ana, here)

    # new loops covering those ranges, in the order of the block's iteration variables
    from ...arith import Analyzer

    new_loops: list[tuple[Var, PrimExpr]] = []
    values: list[PrimExpr] = []
    predicate: PrimExpr = const(True, "bool")
    for iv, info in zip(block.iter_vars, var_doms):
        if info.dom is rc.NOTHING or rc.has_inf(info.dom):
            lo, extent = iv.dom.min, iv.dom.extent
        else:
            lo = Analyzer().simplify(info.dom[0])
            extent = Analyzer().simplify(info.dom[1] + 1 - info.dom[0])
        if preserve_unit_loops or not _is_int(extent, 1):
            var = Var(f"ax{len(new_loops)}", f"int{max(_bits(lo.dtype), _bits(extent.dtype))}")
            extent = ana.simplify(extent)
            new_loops.append((var, extent))
            value = var if _is_int(lo, 0) else lo + var
            # a unit loop's variable is 0 to the simplifier (TVM folds single-point ranges)
            ana.bind(var, const(0, var.dtype) if _is_int(extent, 1) else Range(const(0, var.dtype), extent))
        else:
            value = lo
        values.append(value)
        if info.bound is not rc.NOTHING:
            for cond in ((None if info.bound[0] is None else value >= info.bound[0]),
                         (None if info.bound[1] is None else value < info.bound[1] + 1)):
                if cond is not None and not ana.can_prove(cond):
                    cond = rc.constant_on_one_side(cond, ana)
                    predicate = cond if _is_true(predicate) else logical_and(predicate, cond)
    predicate = ana.simplify(predicate)
    if reverse:
        _check_consumer_covered(block, var_doms, ana, here)
        rc.check_reads_inside(block, own_kind, linked, partners, partner_kind, loop, var_doms, ana, here)

    nest: Stmt = BlockRealize(tuple(values), predicate, block)
    for var, extent in reversed(new_loops):
        nest = For(var, const(0, var.dtype), extent, ForKind.SERIAL, nest)

    # take the block (and loops that held only it) out, then insert the nest under `loop`
    removed = _remove_block_with_loops(root, realize, block_path)
    new_loop = next(s for s, _ in walk_stmts(removed) if isinstance(s, For) and s.loop_var is loop.loop_var)
    body_items = list(new_loop.body.seq) if isinstance(new_loop.body, SeqStmt) else [new_loop.body]
    at = rc.insertion_point(body_items, producers, consumers, index, here)
    body_items.insert(at, nest)
    return replace_stmt(removed, new_loop, replace(new_loop, body=seq(*body_items)))


def _scope_blocks(s: Stmt, path: tuple = ()) -> list[tuple[BlockRealize, tuple]]:
    """The block realizes directly in ``s``'s block scope (not those nested inside them),
    each with its ancestors (``path`` is ``s``'s own)."""
    out = []

    def walk(x: Stmt, p: tuple) -> None:
        if isinstance(x, BlockRealize):
            out.append((x, p))
            return
        from .tree import child_stmts

        for c in child_stmts(x):
            walk(c, p + (x,))

    start = s.body if isinstance(s, Block) else s
    walk(start, path + ((s,) if isinstance(s, Block) else ()))
    return out


def _bits(dtype: str) -> int:
    digits = "".join(ch for ch in dtype if ch.isdigit())
    return int(digits) if digits else 32


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


def _check_consumer_covered(block: Block, var_doms: list, ana: Any, here: str) -> None:
    """Under the loop a consumer only runs where its producer wrote; over all iterations that
    must still be its whole domain (a padded consumer has points no producer tile reaches,
    and they would never be computed)."""
    for iv, info in zip(block.iter_vars, var_doms):
        if info.dom is None or info.dom[0] is None or info.dom[1] is None:
            continue
        lo, hi = info.dom
        dom_lo, dom_hi = iv.dom.min, iv.dom.min + iv.dom.extent - 1
        if not (isinstance(dom_lo, IntImm) and isinstance(iv.dom.extent, IntImm)):
            continue
        if ana.const_int_bound(lo).min_value > dom_lo.value or ana.const_int_bound(hi).max_value < dom_hi.value:
            raise ScheduleError(f"cannot {here}: block {block.name_hint} iterates {iv.var.name} over "
                                f"[{dom_lo.value}, {dom_hi.value}], beyond what its producers write "
                                "under the loop, so some of its points would never run")


def _remove_block_with_loops(root: Stmt, realize: BlockRealize, path: tuple) -> Stmt:
    """Remove ``realize`` together with the loops around it that hold nothing else."""
    victim: Stmt = realize
    for s in reversed(path):
        if isinstance(s, For) and s.body is victim:
            victim = s
        else:
            break
    return replace_stmt(root, victim, None)


# -- inlining ------------------------------------------------------------------------------


def _single_store(block: Block, what: str) -> BufferStore:
    store = block.body
    if block.init is not None or not isinstance(store, BufferStore):
        raise ScheduleError(f"cannot {what} block {block.name_hint}: its body must be a single "
                            "buffer store without T.init")
    if any(iv.iter_type != "spatial" for iv in block.iter_vars):
        raise ScheduleError(f"cannot {what} block {block.name_hint}: it has reduction iterators")
    return store


def _refresh_regions(block: Block) -> Block:
    reads, writes = get_block_read_write_region(block)
    return replace(block, reads=tuple(reads), writes=tuple(writes))


def _accesses(node: Any, buffer: Buffer) -> list[BufferLoad | BufferStore]:
    """Every load and store of ``buffer`` inside ``node``."""
    found: list = []
    post_order_visit(node, lambda x: found.append(x)
                     if isinstance(x, (BufferLoad, BufferStore)) and x.buffer is buffer else None)
    return found


def _remove_alloc(root: Stmt, buffer: Buffer) -> Stmt:
    for s, _ in walk_stmts(root):
        if isinstance(s, Block) and any(b is buffer for b in s.alloc_buffers):
            if _accesses(s.body, buffer):
                return root
            allocs = tuple(b for b in s.alloc_buffers if b is not buffer)
            return replace_stmt(root, s, replace(s, alloc_buffers=allocs))
    return root


class _InlineLoads(StmtExprMutator):
    def __init__(self, buffer: Buffer, params: list[Var], value: PrimExpr):
        self.buffer, self.params, self.value = buffer, params, value

    def visit_buffer_load_(self, n: BufferLoad) -> PrimExpr:
        indices = self.visit(n.indices)
        if n.buffer is not self.buffer:
            return n if indices is n.indices else BufferLoad(n.buffer, indices)
        # substituted indices are folded (0 * 16 + i -> i), as the same text would be when parsed
        return _SimplifyIndices().visit(substitute(self.value, dict(zip(self.params, indices))))


class _SimplifyIndices(StmtExprMutator):
    def __init__(self) -> None:
        from ...arith import Analyzer

        self.ana = Analyzer()

    def visit_buffer_load_(self, n: BufferLoad) -> PrimExpr:
        indices = tuple(self.ana.simplify(i) for i in self.visit(n.indices))
        return BufferLoad(n.buffer, indices)


def compute_inline(root: Stmt, realize: BlockRealize, param_buffers: set[int]) -> Stmt:
    """Replace reads of the block's output by the expression the block computes."""
    block = realize.block
    store = _single_store(block, "compute_inline")
    buffer = store.buffer
    if id(buffer) in param_buffers:
        raise ScheduleError(f"cannot compute_inline block {block.name_hint}: its output {buffer.name} "
                            "is a parameter of the function, which must still be written")
    params = []
    for idx in store.indices:
        if not isinstance(idx, Var) or not any(iv.var is idx for iv in block.iter_vars) or idx in params:
            raise ScheduleError(f"cannot compute_inline block {block.name_hint}: it must store to "
                                f"{buffer.name} at distinct iteration variables, not {list(store.indices)}")
        params.append(idx)
    if uses_var(store.value, buffer):
        raise ScheduleError(f"cannot compute_inline block {block.name_hint}: it reads its own output")
    _check_plain_accesses(root, block, buffer, "compute_inline")
    other_writers = [r.block.name_hint for r, _ in walk_stmts(root) if isinstance(r, BlockRealize)
                     and r is not realize and any(w.buffer is buffer for w in r.block.writes)]
    if other_writers:
        raise ScheduleError(f"cannot compute_inline block {block.name_hint}: it is not the only block "
                            f"writing {buffer.name} ({', '.join(other_writers)} also do)")
    path = _path(root, realize)
    out = _remove_block_with_loops(root, realize, path)
    inliner = _InlineLoads(buffer, params, store.value)
    for r, _ in [(r, p) for r, p in walk_stmts(out) if isinstance(r, Block)]:
        if r.name_hint == "root":
            continue
        reads_it = [x for x in r.reads if x.buffer is buffer]
        if not reads_it:
            continue
        new_block = replace(r, body=inliner.visit(r.body),
                            init=None if r.init is None else inliner.visit(r.init))
        out = replace_stmt(out, r, _refresh_regions(new_block))
    return _remove_alloc(out, buffer)


def _check_plain_accesses(root: Stmt, block: Block, buffer: Buffer, what: str) -> None:
    """Inlining rewrites loads and stores of ``buffer``; a block that views it through
    ``T.match_buffer`` or touches its data pointer (an opaque access) cannot be rewritten."""
    opaque = []
    for other, _ in walk_stmts(root):
        if not isinstance(other, Block) or other is block:
            continue
        if any(mb.source.buffer is buffer for mb in other.match_buffers):
            raise ScheduleError(f"cannot {what} block {block.name_hint}: block {other.name_hint} views "
                                f"{buffer.name} through T.match_buffer, which inlining cannot rewrite")
        if uses_var(other.body, buffer.data):
            opaque.append(other)  # the innermost such block comes last (outer blocks contain it)
    if opaque:
        raise ScheduleError(f"cannot {what} block {block.name_hint}: block {opaque[-1].name_hint} accesses "
                            f"{buffer.name} opaquely (through its data pointer), not by loads and stores")


def reverse_compute_inline(root: Stmt, realize: BlockRealize, param_buffers: set[int] = frozenset()) -> Stmt:
    """Fold an elementwise consumer into its producer's store."""
    block = realize.block
    store = _single_store(block, "reverse_compute_inline")
    reads = [r for r in block.reads]
    producers = []
    for r, _ in walk_stmts(root):
        if isinstance(r, BlockRealize) and r is not realize and r.block.name_hint != "root":
            if any(w.buffer is x.buffer for w in r.block.writes for x in reads):
                producers.append(r)
    if len(producers) != 1:
        raise ScheduleError(f"cannot reverse_compute_inline block {block.name_hint}: it needs exactly "
                            f"one producer block, found {len(producers)}")
    producer = producers[0]
    pstore = producer.block.body
    if not isinstance(pstore, BufferStore) or producer.block.init is not None:
        raise ScheduleError(f"cannot reverse_compute_inline block {block.name_hint}: its producer "
                            f"{producer.block.name_hint} must be a single store without T.init")
    buffer = pstore.buffer
    if id(buffer) in param_buffers:
        raise ScheduleError(f"cannot reverse_compute_inline block {block.name_hint}: its producer "
                            f"{producer.block.name_hint} writes {buffer.name}, a parameter of the function, "
                            "which must still be written")
    _check_plain_accesses(root, block, buffer, "reverse_compute_inline")
    loads = _accesses(store.value, buffer)
    if not loads or any(not structural_equal(ld.indices, loads[0].indices) for ld in loads):
        raise ScheduleError(f"cannot reverse_compute_inline block {block.name_hint}: it must read "
                            f"{buffer.name} at one place only")
    vmap = {}
    for idx, pidx in zip(loads[0].indices, pstore.indices):
        if not isinstance(idx, Var) or idx in vmap:
            raise ScheduleError(f"cannot reverse_compute_inline block {block.name_hint}: it must read "
                                f"{buffer.name} at distinct iteration variables")
        vmap[idx] = pidx
    if len(vmap) != len(block.iter_vars):
        raise ScheduleError(f"cannot reverse_compute_inline block {block.name_hint}: every iteration "
                            f"variable must index {buffer.name}")
    _check_covers(block, realize, loads[0].indices, buffer)
    value = _InlineLoads(buffer, list(loads[0].indices), pstore.value).visit(store.value)
    new_store = BufferStore(store.buffer, substitute(value, vmap), tuple(substitute(i, vmap) for i in store.indices))
    new_producer = _refresh_regions(replace(producer.block, body=new_store))
    out = _remove_block_with_loops(root, realize, _path(root, realize))
    out = replace_stmt(out, producer.block, new_producer)
    return _remove_alloc(out, buffer)


def _is_int(e: Any, value: int) -> bool:
    return isinstance(e, IntImm) and e.value == value


def _same_extent(a: Any, b: Any) -> bool:
    """Equal extents (constants compare by value, whatever their int dtype)."""
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return a.value == b.value
    return structural_equal(a, b)


def _check_covers(block: Block, realize: BlockRealize, indices: tuple, buffer: Any) -> None:
    """The consumer must visit every element of ``buffer`` exactly once: its store moves into
    the producer, which runs for every element (a consumer reading a part would be widened
    to write out of its bounds; a predicated one would lose its predicate)."""
    doms = {id(iv.var): iv.dom for iv in block.iter_vars}
    for d, idx in enumerate(indices):
        dom = doms[id(idx)]
        if not (_is_int(dom.min, 0) and _same_extent(dom.extent, buffer.shape[d])):
            raise ScheduleError(f"cannot reverse_compute_inline block {block.name_hint}: it reads only part of "
                                f"{buffer.name} (dim {d}: {dom.extent} of {buffer.shape[d]} elements)")
    if not _is_int(realize.predicate, 1):
        raise ScheduleError(f"cannot reverse_compute_inline block {block.name_hint}: it has a predicate")


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

