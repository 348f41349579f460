"""rfactor: split one reduction into a partial reduction and a final one.

``Y[i] += X[i, k]`` over ``k = k0 * 4 + k1``, rfactored at ``k1``, becomes
``Y_rf[i, k1] += X[i, k0 * 4 + k1]`` (the loop ``k1`` now spatial, so it can be
vectorized or parallelized) followed by ``Y[i] += Y_rf[i, k1]``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...arith import Analyzer
from ...ir import replace
from ...ir.structural import structural_equal
from ..analysis import uses_var, vars_used
from ..buffer import Buffer, BufferRegion
from ..expr import Add, BufferLoad, FloatImm, IntImm, IterVar, Max, Min, PrimExpr, Range, Var, const
from ..functor import pre_order_visit, substitute
from ..op import max_value, min_value
from ..stmt import Block, BlockRealize, BufferStore, For, ForKind, LetStmt, SeqStmt, Stmt, seq
from .checks import child_blocks, loop_var_ids, reduction_block_problem
from .error import ScheduleError
from .tree import ancestors, blocks_under, replace_stmt, unique_block_name, walk_stmts

__all__ = ["rfactor", "match_reduction", "single_child_block"]


def match_reduction(block: Block) -> tuple[type, BufferStore, PrimExpr]:
    """Recognise ``Y[idx] = Y[idx] + rhs`` (or T.max / T.min): the combiner, the store, and rhs."""
    store = block.body
    what = f"block {block.name_hint}"
    if block.init is None or not isinstance(store, BufferStore):
        raise ScheduleError(f"cannot rfactor {what}: it must be a reduction with T.init and a single store")
    value = store.value
    if isinstance(value, (Add, Max, Min)):
        for acc, rhs in ((value.a, value.b), (value.b, value.a)):
            if (isinstance(acc, BufferLoad) and acc.buffer is store.buffer
                    and all(x is y for x, y in zip(acc.indices, store.indices))):
                return type(value), store, rhs
    raise ScheduleError(f"cannot rfactor {what}: its update is not `Y = Y + x`, `T.max(Y, x)` or "
                        f"`T.min(Y, x)`")


@dataclass
class _Part:
    """One output of a reduction: ``buffer[indices] = kind(buffer[indices], rhs)``, zeroed to
    ``init_value``; ``let`` the variable a tuple reduction binds the combined value to."""

    kind: type
    store: BufferStore
    rhs: PrimExpr
    init_value: PrimExpr
    let: Var | None = None


def match_tuple_reduction(block: Block) -> list[_Part] | None:
    """A tuple reduction of independent parts -- topi's layer norm sums x and x² in one block::

        v0 = Y0[idx] + rhs0; v1 = Y1[idx] + rhs1; Y0[idx] = v0; Y1[idx] = v1

    with ``T.init`` storing each ``Yi[idx]`` -- as its parts, when no part reads another's
    buffer (an argmax's index, chosen by the value part, is not independent); else None."""
    body, lets = block.body, []
    while isinstance(body, LetStmt):
        lets.append(body)
        body = body.body
    stores = body.seq if isinstance(body, SeqStmt) else ()
    inits = block.init.seq if isinstance(block.init, SeqStmt) else ()
    if not lets or len(lets) != len(stores) or len(inits) != len(stores):
        return None
    parts, buffers = [], [st.buffer for st in stores]
    for let, st, init in zip(lets, stores, inits):
        if not (isinstance(st, BufferStore) and isinstance(init, BufferStore) and st.value is let.var
                and init.buffer is st.buffer and isinstance(let.value, (Add, Max, Min))):
            return None
        if not all(structural_equal(a, b) for a, b in zip(init.indices, st.indices)) or not all(
                structural_equal(a, b) for a, b in zip(st.indices, stores[0].indices)):
            return None
        rhs = _accumulated(let.value, st)
        if rhs is None or _reads_any(rhs, buffers, [other.var for other in lets]):
            return None
        parts.append(_Part(type(let.value), st, rhs, init.value, let.var))
    return parts


def _accumulated(value: PrimExpr, store: BufferStore) -> PrimExpr | None:
    """``x`` when ``value`` is ``store``'s element combined with ``x`` (``Y[idx] + x``), else None."""
    for acc, rhs in ((value.a, value.b), (value.b, value.a)):
        if (isinstance(acc, BufferLoad) and acc.buffer is store.buffer
                and all(x is y for x, y in zip(acc.indices, store.indices))):
            return rhs
    return None


def _reads_any(e: PrimExpr, buffers: list[Buffer], variables: list[Var]) -> bool:
    """Whether ``e`` loads from one of ``buffers`` or uses one of ``variables``."""
    found: list = []
    pre_order_visit(e, lambda x: found.append(x) if isinstance(x, (BufferLoad, Var)) else None)
    return any(isinstance(x, BufferLoad) and any(x.buffer is b for b in buffers) for x in found) or any(
        any(x is v for v in variables) for x in found)


def _reduction_parts(block: Block) -> list[_Part]:
    """The parts of ``block``'s reduction: one for ``Y = Y + x`` (or max / min), several for a
    tuple reduction of independent parts (:func:`match_tuple_reduction`)."""
    if isinstance(block.body, LetStmt) and block.init is not None:
        parts = match_tuple_reduction(block)
        if parts is not None:
            return parts
        raise ScheduleError(f"cannot rfactor block {block.name_hint}: a tuple reduction whose parts read "
                            "each other's results (as an argmax does) cannot be split")
    kind, store, rhs = match_reduction(block)
    init = block.init.value if isinstance(block.init, BufferStore) else None
    return [_Part(kind, store, rhs, init)]


def _body(parts: list[_Part], buffers: list[Buffer], index: tuple, values: list[PrimExpr], tuple_form: bool) -> Stmt:
    """Store ``values[i]`` into ``buffers[i][index]``: a store each, or a tuple reduction's form
    (each value bound first, then stored) so that no part sees another's new value."""
    if not tuple_form:
        return seq(*[BufferStore(b, v, index) for b, v in zip(buffers, values)])
    lets = [Var(p.let.name, p.let.dtype) for p in parts]
    body: Stmt = SeqStmt(tuple(BufferStore(b, v, index) for b, v in zip(buffers, lets)))
    for var, value in reversed(list(zip(lets, values))):
        body = LetStmt(var, value, body)
    return body


def single_child_block(loop: For) -> BlockRealize:
    """The one block under ``loop`` (blocks nested in it aside), as TVM's rfactor requires:
    rfactor rebuilds the loop nest around one reduction, so a sibling block sharing the loop
    would be left in a nest whose iterations no longer mean what they did."""
    children = child_blocks(loop)
    where = f"cannot rfactor at loop {loop.loop_var.name}"
    if not children:
        raise ScheduleError(f"{where}: the loop holds no block to rfactor")
    if len(children) > 1:
        names = ", ".join(r.block.name_hint for r in children)
        raise ScheduleError(f"{where}: the loop is required to have only one child block (as in TVM), but it "
                            f"holds {len(children)}: {names}. rfactor rebuilds the loop nest of one reduction "
                            "block; the other blocks under the loop cannot be split with it")
    return children[0]


def _check_reduction(realize: BlockRealize, path: tuple, name: str) -> None:
    """TVM's conditions: a reduction block of its scope, T.init storing where the update stores,
    and T.init giving the combiner's identity (0 for +, the lowest value for max ...)."""
    block = realize.block
    scope = next(s for s in reversed(path) if isinstance(s, Block))
    why = reduction_block_problem(realize, scope, loop_var_ids(path))
    if why:
        raise ScheduleError(f"cannot {name}: block {block.name_hint} is not a reduction block ({why})")
    parts = _reduction_parts(block)
    init = block.init
    if len(parts) == 1 and (not isinstance(init, BufferStore) or init.buffer is not parts[0].store.buffer or not all(
            structural_equal(a, b) for a, b in zip(init.indices, parts[0].store.indices))):
        raise ScheduleError(f"cannot {name}: the T.init of block {block.name_hint} must store to the "
                            "element its update stores to")
    for part in parts:
        value, kind = part.init_value, part.kind
        if isinstance(value, (IntImm, FloatImm)):
            dtype = value.dtype
            identity = {Add: 0, Max: min_value(dtype).value, Min: max_value(dtype).value}[kind]
            if value.value != identity and not (kind is not Add and abs(value.value) == float("inf")):
                raise ScheduleError(f"cannot {name}: T.init of block {block.name_hint} sets {value.value}, not "
                                    f"the identity {identity} of its reduction, so the partial results "
                                    "cannot be combined")


def _combine(kind: type, acc: PrimExpr, rhs: PrimExpr) -> PrimExpr:
    return acc + rhs if kind is Add else kind(acc, rhs)


def _check_loops(loops: list[For], rf_loop: For, realize: BlockRealize, spatial_vars: set[int],
                 reduce_vars: set[int], name: str) -> None:
    """TVM's loop conditions: no loop drives both kinds of iterators, the rfactor loop drives no
    spatial one, the outermost loop starts with the block, the outermost reduction loop holds
    only the block, and no unbound loop (extent > 1) sits under a reduction loop; and, beyond
    TVM, an rfactor loop of extent > 1 drives a reduction iterator."""
    block = realize.block
    first = blocks_under(loops[0])
    if not first or first[0] is not realize:
        raise ScheduleError(f"cannot {name}: block {block.name_hint} is not the first block under the "
                            f"outermost loop {loops[0].loop_var.name}")
    met_reduction = False
    for lp in loops:
        var = id(lp.loop_var)
        if var in spatial_vars and var in reduce_vars:
            raise ScheduleError(f"cannot {name}: loop {lp.loop_var.name} drives both spatial and "
                                f"reduction iterators of block {block.name_hint} (fused across them)")
        if var in spatial_vars:
            if lp is rf_loop:
                raise ScheduleError(f"cannot {name}: {lp.loop_var.name} is bound to a spatial iterator of "
                                    f"block {block.name_hint}, not a reduction one")
        elif var in reduce_vars:
            if not met_reduction and len(blocks_under(lp)) != 1:
                raise ScheduleError(f"cannot {name}: the outermost reduction loop {lp.loop_var.name} holds "
                                    f"more than block {block.name_hint}")
            met_reduction = True
        elif lp is rf_loop and not _is_one(lp.extent):
            # TVM accepts this and counts the whole reduction once per iteration of the loop
            raise ScheduleError(f"cannot {name}: the loop binds no reduction iterator of block "
                                f"{block.name_hint}, so each of its {lp.extent} partial results would be "
                                "the whole reduction and combining them would count it that many times")
        elif met_reduction and not _is_one(lp.extent):
            raise ScheduleError(f"cannot {name}: loop {lp.loop_var.name} binds no iterator of block "
                                f"{block.name_hint} yet sits under a reduction loop")


def _is_one(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 1


@dataclass
class _Reduction:
    """What rfactor learns about the reduction while checking it."""

    realize: BlockRealize
    parts: list[_Part]  # each output: its combiner (Add, Max or Min), store, rhs and T.init value
    path: tuple  # the block's ancestors
    loops: list[For]  # the loops of the block's scope around it, outer to inner
    reduce_vars: set[int]  # ids of the loop variables reduction bindings use
    factor_axis: int  # where the rfactor loop's dimension goes in the new buffer (normalized)
    write_back_predicate: PrimExpr  # the guard the write-back block keeps


def rfactor(root: Stmt, realize: BlockRealize, loop: For, factor_axis: int) -> tuple[Stmt, str]:
    """TVM's rfactor: a copy of the whole loop nest computes partial results into ``<Y>_rf``
    (the rfactor loop a spatial iterator there), then the original loops without the other
    reduction loops combine them into ``Y`` (the rfactor loop its reduction iterator)."""
    name = f"rfactor at loop {loop.loop_var.name}"
    red = _check_rfactor(root, realize, loop, factor_axis, name)
    rf_bufs = []
    for part in red.parts:
        out = part.store.buffer
        rf_shape = list(out.shape)
        rf_shape.insert(red.factor_axis, loop.extent)
        rf_bufs.append(replace(out, shape=tuple(rf_shape), name=f"{out.name}_rf", data=Var(f"{out.name}_rf", "handle")))
    rf_nest, rf_block, rf_index = _rfactor_nest(root, red, loop, rf_bufs)
    write_back = _write_back_block(red, loop, rf_bufs, rf_index)
    result = _replace_reduction(root, red, loop, rf_nest, write_back)
    # the partial results live in the block scope around the rfactor block
    rf_path = ancestors(result, next(r for r, _ in walk_stmts(result)
                                     if isinstance(r, BlockRealize) and r.block is rf_block))
    scope = next(s for s in reversed(rf_path) if isinstance(s, Block))
    result = replace_stmt(result, scope, replace(scope, alloc_buffers=scope.alloc_buffers + tuple(rf_bufs)))
    return result, rf_block.name_hint


def _check_rfactor(root: Stmt, realize: BlockRealize, loop: For, factor_axis: int, name: str) -> _Reduction:
    """The block is a reduction rfactor can split at ``loop`` (see :func:`_check_reduction`
    and :func:`_check_loops`), ``factor_axis`` fits the output, and no predicate uses a loop
    the final reduction drops (the write-back block keeps the predicate)."""
    block = realize.block
    parts = _reduction_parts(block)
    store = parts[0].store
    lv = loop.loop_var
    path = ancestors(root, realize)
    if not any(s is loop for s in path):
        raise ScheduleError(f"cannot {name}: the loop is not around block {block.name_hint}")
    _check_reduction(realize, path, name)
    if loop.kind != ForKind.SERIAL:
        raise ScheduleError(f"cannot {name}: reduction loop {lv.name} is {loop.kind}, not serial")
    used_by = {"spatial": set(), "reduce": set()}  # loop variable ids each kind of binding uses
    for iv, v in zip(block.iter_vars, realize.iter_values):
        used_by.get(iv.iter_type, set()).update(vars_used(v))
    spatial_vars, reduce_vars = used_by["spatial"], used_by["reduce"]
    scope_at = max(i for i, s in enumerate(path) if isinstance(s, Block))
    loops = [s for s in path[scope_at:] if isinstance(s, For)]
    _check_loops(loops, loop, realize, spatial_vars, reduce_vars, name)
    ndim = len(store.buffer.shape)
    if not -(ndim + 1) <= factor_axis <= ndim:
        raise ScheduleError(f"cannot {name}: factor_axis {factor_axis} is out of range for the "
                            f"{ndim}-D buffer {store.buffer.name} (it must be in [{-(ndim + 1)}, {ndim}])")
    dropped = [lp for lp in loops if lp is not loop and id(lp.loop_var) in reduce_vars]
    write_back_predicate = realize.predicate
    if vars_used(realize.predicate) & {id(lp.loop_var) for lp in dropped}:
        write_back_predicate = _guard_at_first_iteration(realize.predicate, loops, dropped)
    if write_back_predicate is None:
        # TVM accepts it, yet a partial result no iteration passes the guard for is never written
        # (a [None, 4, 4] split of 10 gives NaN there)
        raise ScheduleError(f"cannot {name}: block {block.name_hint} has a predicate ({realize.predicate}, "
                            "left by a split that does not divide its loop) over reduction loops the final "
                            "reduction would not keep, so some partial results could be left unwritten")
    if len(parts) == 1 and not isinstance(block.init, BufferStore):
        raise ScheduleError(f"cannot {name}: the T.init of block {block.name_hint} must be one store")
    return _Reduction(realize, parts, path, loops, reduce_vars,
                      factor_axis + ndim + 1 if factor_axis < 0 else factor_axis, write_back_predicate)


def _guard_at_first_iteration(predicate: PrimExpr, loops: list[For], dropped: list[For]) -> PrimExpr | None:
    """A guard over reduction loops the write-back drops is safe when it lets every partial result
    through at those loops' first iteration: each partial is then initialized (``T.init`` runs
    there) and the write-back may combine them all.  The usual case: a row of 197 reduced in 8
    partial sums, ``k_0 * 8 + k_1 < 197`` true for every ``k_1`` at ``k_0 = 0``.  Returns ``True``
    then (the write-back needs no guard), else None."""
    analyzer = Analyzer()
    for lp in loops:
        analyzer.bind(lp.loop_var, Range(lp.min, lp.extent))
    first = substitute(predicate, {lp.loop_var: lp.min for lp in dropped})
    return const(True, "bool") if analyzer.can_prove(first) else None


def _rfactor_nest(root: Stmt, red: _Reduction, loop: For, rf_bufs: list[Buffer]) -> tuple[Stmt, Block, tuple]:
    """The rfactor block in a copy of the whole loop nest: the rfactor loop a new spatial
    iterator, every loop in a reduction binding that uses it a reduction iterator of its own.
    Returns the nest, the block and its index into ``rf_buf``."""
    realize, lv = red.realize, loop.loop_var
    block = realize.block
    loop_of = {id(lp.loop_var): lp for lp in red.loops}
    v_rf = IterVar(Range(const(0, loop.extent.dtype), loop.extent), Var(f"v{lv.name}", lv.dtype), "spatial")
    as_iter: dict[Var, Var] = {lv: v_rf.var}
    rf_ivs, rf_values, var_map = [v_rf], [lv], {}
    for iv, value in zip(block.iter_vars, realize.iter_values):
        if iv.iter_type == "spatial" or not uses_var(value, lv):
            rf_ivs.append(iv)
            rf_values.append(value)
            continue
        for var in _vars_in_order(value):
            lp = loop_of.get(id(var))
            if lp is None or var in as_iter:
                continue
            new = IterVar(Range(const(0, lp.extent.dtype), lp.extent), Var(f"v{var.name}", var.dtype), "reduce")
            as_iter[var] = new.var
            rf_ivs.append(new)
            rf_values.append(var)
        var_map[iv.var] = substitute(value, as_iter)
    rf_of = {id(p.store.buffer): b for p, b in zip(red.parts, rf_bufs)}
    rf_index = list(red.parts[0].store.indices)
    rf_index.insert(red.factor_axis, v_rf.var)
    rf_index = tuple(rf_index)
    rf_reads = tuple(BufferRegion(r.buffer, substitute(r.region, var_map)) for r in block.reads)
    rf_writes = []
    for w in block.writes:
        region = list(w.region)
        region.insert(red.factor_axis, Range(v_rf.var, const(1, v_rf.var.dtype)))
        rf_writes.append(BufferRegion(rf_of.get(id(w.buffer), w.buffer), substitute(tuple(region), var_map)))
    # without a reduction iterator left, each partial result is one value: stored, not reduced
    reduces = any(iv.iter_type == "reduce" for iv in rf_ivs)
    values = [_combine(p.kind, BufferLoad(b, rf_index), p.rhs) if reduces else p.rhs
              for p, b in zip(red.parts, rf_bufs)]
    init = seq(*[BufferStore(b, p.init_value, rf_index) for p, b in zip(red.parts, rf_bufs)])
    # (stored, not reduced, the parts of a tuple read none of each other's buffers: one store each)
    body = _body(red.parts, rf_bufs, rf_index, values, len(red.parts) > 1 and reduces)
    rf_block = Block(
        name_hint=unique_block_name(root, f"{block.name_hint}_rf"),  # a second rfactor gets _rf_1
        iter_vars=tuple(rf_ivs), reads=rf_reads, writes=tuple(rf_writes),
        init=substitute(init, var_map) if reduces else None,
        body=substitute(body, var_map),
        annotations=dict(block.annotations),
    )
    copies = {lp.loop_var: Var(lp.loop_var.name, lp.loop_var.dtype) for lp in red.loops}
    rf_block = substitute(rf_block, copies)  # a body naming a loop variable follows the copy
    nest: Stmt = BlockRealize(tuple(substitute(v, copies) for v in rf_values),
                              substitute(realize.predicate, copies), rf_block)
    for lp in reversed(red.loops):
        nest = replace(lp, loop_var=copies[lp.loop_var], body=nest)
    return nest, rf_block, rf_index


def _write_back_block(red: _Reduction, loop: For, rf_bufs: list[Buffer], rf_index: tuple) -> BlockRealize:
    """The block combining the partial results into the output: the rfactor loop its
    reduction iterator, the original spatial iterators kept."""
    lv, block = loop.loop_var, red.realize.block
    v_wb = IterVar(Range(const(0, loop.extent.dtype), loop.extent), Var(f"v{lv.name}", lv.dtype), "reduce")
    wb_map: dict[Var, PrimExpr] = {rf_index[red.factor_axis]: v_wb.var}
    wb_ivs, wb_values = [v_wb], [lv]
    for iv, value in zip(block.iter_vars, red.realize.iter_values):
        if iv.iter_type == "spatial":
            nv = Var(iv.var.name, iv.var.dtype)
            wb_map[iv.var] = nv
            wb_ivs.append(IterVar(iv.dom, nv, "spatial"))
            wb_values.append(value)
    out_index = tuple(substitute(i, wb_map) for i in red.parts[0].store.indices)
    wb_rf_index = tuple(substitute(i, wb_map) for i in rf_index)
    outs = [p.store.buffer for p in red.parts]
    values = [_combine(p.kind, BufferLoad(out, out_index), BufferLoad(b, wb_rf_index))
              for p, out, b in zip(red.parts, outs, rf_bufs)]
    wb_block = Block(
        name_hint=block.name_hint, iter_vars=tuple(wb_ivs),
        reads=tuple(BufferRegion(b, tuple(Range(i, const(1, i.dtype)) for i in wb_rf_index))
                    for b in rf_bufs),
        writes=tuple(BufferRegion(out, tuple(Range(i, const(1, i.dtype)) for i in out_index)) for out in outs),
        init=seq(*[BufferStore(out, p.init_value, out_index) for p, out in zip(red.parts, outs)]),
        body=_body(red.parts, outs, out_index, values, len(red.parts) > 1),
        annotations=dict(block.annotations),
    )
    # the guard of a split that does not divide (over the loops the write-back keeps, see
    # _check_rfactor) stays: without it the write-back reads and writes past the buffers' ends
    # (TVM drops it and writes out of bounds)
    return BlockRealize(tuple(wb_values), red.write_back_predicate, wb_block)


def _replace_reduction(root: Stmt, red: _Reduction, loop: For, rf_nest: Stmt, write_back: BlockRealize) -> Stmt:
    """``rf_nest`` before the old nest, where the write-back block replaces the reduction and
    the loops only reduction iterators use are gone (the rfactor loop stays: it is reduced over)."""
    path, outermost = red.path, red.loops[0]

    def rebuild(s: Stmt) -> Stmt:
        if s is red.realize:
            return write_back
        if isinstance(s, SeqStmt):
            return seq(*[rebuild(x) if any(x is p for p in path) else x for x in s.seq])
        assert isinstance(s, For)
        body = rebuild(s.body)
        return replace(s, body=body) if s is loop or id(s.loop_var) not in red.reduce_vars else body

    parent = path[path.index(outermost) - 1]
    if isinstance(parent, SeqStmt):  # splice into the enclosing sequence (no nested sequences)
        items = []
        for x in parent.seq:
            items += [rf_nest, rebuild(x)] if x is outermost else [x]
        return replace_stmt(root, parent, SeqStmt(tuple(items)))
    return replace_stmt(root, outermost, seq(rf_nest, rebuild(outermost)))


def _vars_in_order(e: PrimExpr) -> list[Var]:
    """The variables of ``e`` in order of first appearance."""
    seen: list[Var] = []
    pre_order_visit(e, lambda x: seen.append(x) if isinstance(x, Var) and all(x is not s for s in seen) else None)
    return seen
