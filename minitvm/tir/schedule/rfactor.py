"""rfactor: split one reduction into a partial reduction and a final one.

``Y[i] += X[i, k]`` over ``k = k0 * 4 + k1``, rfactored at ``k1``, becomes
``Y_rf[i, k1] += X[i, k0 * 4 + k1]`` (the loop ``k1`` now spatial, so it can be
vectorized or parallelized) followed by ``Y[i] += Y_rf[i, k1]``.
"""

from __future__ import annotations

from ...ir import replace
from ...ir.structural import structural_equal
from ..analysis import uses_var
from ..buffer import decl_buffer
from ..expr import Add, BufferLoad, FloatImm, IntImm, IterVar, Max, Min, PrimExpr, Range, Var, const
from ..functor import substitute
from ..op import max_value, min_value
from ..stmt import Block, BlockRealize, BufferStore, For, ForKind, SeqStmt, Stmt, seq
from .compute import _path, _refresh_regions
from .error import ScheduleError
from .tree import replace_stmt, unique_block_name, walk_stmts

__all__ = ["rfactor", "match_reduction"]


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


def _check_reduction(realize: BlockRealize, path: tuple, name: str) -> None:
    """TVM's conditions: a reduction block of its scope, T.init storing where the update stores,
    and T.init giving the combiner's identity (0 for +, the lowest value for max ...)."""
    from .checks import loop_var_ids, reduction_block_problem

    block = realize.block
    scope = next(s for s in reversed(path) if isinstance(s, Block))
    why = reduction_block_problem(realize, scope, loop_var_ids(path))
    if why:
        raise ScheduleError(f"cannot {name}: block {block.name_hint} is not a reduction block ({why})")
    kind, store, _ = match_reduction(block)
    init = block.init
    if not isinstance(init, BufferStore) or init.buffer is not store.buffer or not all(
            structural_equal(a, b) for a, b in zip(init.indices, store.indices)):
        raise ScheduleError(f"cannot {name}: the T.init of block {block.name_hint} must store to the "
                            "element its update stores to")
    value = init.value
    if isinstance(value, (IntImm, FloatImm)):
        dtype = value.dtype
        identity = {Add: 0, Max: min_value(dtype).value, Min: max_value(dtype).value}[kind]
        if value.value != identity and not (kind is not Add and abs(value.value) == float("inf")):
            raise ScheduleError(f"cannot {name}: T.init of block {block.name_hint} sets {value.value}, not "
                                f"the identity {identity} of its reduction, so the partial results "
                                "cannot be combined")


def _combine(kind: type, acc: PrimExpr, rhs: PrimExpr) -> PrimExpr:
    return acc + rhs if kind is Add else kind(acc, rhs)


def rfactor(root: Stmt, realize: BlockRealize, loop: For, factor_axis: int) -> tuple[Stmt, str]:
    block = realize.block
    kind, store, rhs = match_reduction(block)
    lv = loop.loop_var
    name = f"rfactor at loop {lv.name}"
    path = _path(root, realize)
    if not any(s is loop for s in path):
        raise ScheduleError(f"cannot {name}: the loop is not around block {block.name_hint}")
    _check_reduction(realize, path, name)
    spatial = [(iv, v) for iv, v in zip(block.iter_vars, realize.iter_values) if iv.iter_type == "spatial"]
    reduce = [(iv, v) for iv, v in zip(block.iter_vars, realize.iter_values) if iv.iter_type == "reduce"]
    if any(uses_var(v, lv) for _, v in spatial):
        raise ScheduleError(f"cannot {name}: {lv.name} is bound to a spatial iterator of block "
                            f"{block.name_hint}, not a reduction one")
    if not any(uses_var(v, lv) for _, v in reduce):
        raise ScheduleError(f"cannot {name}: {lv.name} does not take part in the reduction of block "
                            f"{block.name_hint}")
    if not isinstance(loop.extent, IntImm) or not (isinstance(loop.min, IntImm) and loop.min.value == 0):
        raise ScheduleError(f"cannot {name}: the loop must start at 0 and have a constant extent")
    out = store.buffer
    ndim = len(out.shape)
    if not 0 <= factor_axis <= ndim:
        raise ScheduleError(f"cannot {name}: factor_axis {factor_axis} is out of range for the "
                            f"{ndim}-D buffer {out.name}")
    rf_shape = list(out.shape)
    rf_shape.insert(factor_axis, loop.extent)
    rf_buf = decl_buffer(tuple(rf_shape), out.dtype, f"{out.name}_rf")

    # the partial reduction: every loop in the reduction bindings gets its own iterator —
    # the rfactored loop a spatial one, the others reduction ones — so that T.init runs
    # once per partial result
    red_loops = [s for s in path if isinstance(s, For) and any(uses_var(v, s.loop_var) for _, v in reduce)]
    loop_iters: dict[Var, IterVar] = {}
    for lp in red_loops:
        if any(uses_var(v, lp.loop_var) for _, v in spatial):
            raise ScheduleError(f"cannot {name}: loop {lp.loop_var.name} drives both spatial and "
                                f"reduction iterators of block {block.name_hint} (fused across them)")
        if lp.kind != ForKind.SERIAL:
            raise ScheduleError(f"cannot {name}: reduction loop {lp.loop_var.name} is {lp.kind}, not serial")
        if not (isinstance(lp.min, IntImm) and lp.min.value == 0 and isinstance(lp.extent, IntImm)):
            raise ScheduleError(f"cannot {name}: reduction loop {lp.loop_var.name} must start at 0 "
                                "and have a constant extent")
        kind_of = "spatial" if lp is loop else "reduce"
        loop_iters[lp.loop_var] = IterVar(Range(const(0, lp.extent.dtype), lp.extent),
                                          Var(f"v{lp.loop_var.name}", lp.loop_var.dtype), kind_of)
    as_iters = {lv_: iv.var for lv_, iv in loop_iters.items()}
    old_reduce = {iv.var: substitute(v, as_iters) for iv, v in reduce}
    v_rf = loop_iters[lv].var
    rf_index = list(store.indices)
    rf_index.insert(factor_axis, v_rf)
    rf_index = tuple(rf_index)
    init_value = block.init.value if isinstance(block.init, BufferStore) else None
    if init_value is None:
        raise ScheduleError(f"cannot {name}: the T.init of block {block.name_hint} must be one store")
    rf_spatial = tuple(iv for iv, _ in spatial) + (loop_iters[lv],)
    rf_reduce = tuple(iv for lp_var, iv in loop_iters.items() if lp_var is not lv)
    rf_block = Block(
        name_hint=unique_block_name(root, f"{block.name_hint}_rf"),  # a second rfactor gets _rf_1
        iter_vars=rf_spatial + rf_reduce,
        init=BufferStore(rf_buf, init_value, rf_index),
        body=BufferStore(rf_buf, _combine(kind, BufferLoad(rf_buf, rf_index), substitute(rhs, old_reduce)),
                         rf_index),
    )
    rf_values = tuple(v for _, v in spatial) + (lv,) + tuple(
        lp_var for lp_var in loop_iters if lp_var is not lv)
    rf_realize = BlockRealize(rf_values, realize.predicate, _refresh_regions(rf_block))

    # the final reduction over the rfactored axis, in its own loops after the partial one
    outer = next(i for i, s in enumerate(path) if isinstance(s, For) and any(
        uses_var(v, s.loop_var) for _, v in reduce))
    anchor = path[outer]
    above = {id(s.loop_var) for s in path[:outer] if isinstance(s, For)}
    # spatial loops between the anchor and the block (j1 in j0, k0, j1, k1) get a copy each,
    # so the final reduction covers the same tile as the partial one (not the whole axis)
    inner_spatial = [s for s in path[outer + 1:] if isinstance(s, For) and s.loop_var not in loop_iters
                     and any(uses_var(v, s.loop_var) for _, v in spatial)]
    copies = {s.loop_var: Var(f"ax{n}", s.loop_var.dtype) for n, s in enumerate(inner_spatial)}
    new_loops: list[tuple[Var, PrimExpr]] = [(copies[s.loop_var], s.extent) for s in inner_spatial]
    allowed = above | {id(v) for v in copies}
    wb_ivs, wb_values = [], []
    vmap = {}
    for iv, v in spatial:
        nv = Var(iv.var.name, iv.var.dtype)
        vmap[iv.var] = nv
        wb_ivs.append(IterVar(iv.dom, nv, "spatial"))
        if _only_uses(v, allowed):
            wb_values.append(substitute(v, copies) if copies else v)
        else:
            loop_var = Var(f"ax{len(new_loops)}", iv.var.dtype)
            new_loops.append((loop_var, iv.dom.extent))
            wb_values.append(iv.dom.min + loop_var if not _is_zero(iv.dom.min) else loop_var)
    red_loop = Var(f"{lv.name}_rf", lv.dtype)
    new_loops.append((red_loop, loop.extent))
    v_red = Var(f"v{lv.name}", lv.dtype)
    wb_ivs.append(IterVar(Range(const(0, lv.dtype), loop.extent), v_red, "reduce"))
    wb_values.append(red_loop)
    out_index = tuple(substitute(i, vmap) for i in store.indices)
    rf_read = list(out_index)
    rf_read.insert(factor_axis, v_red)
    wb_block = Block(
        name_hint=block.name_hint,
        iter_vars=tuple(wb_ivs),
        init=BufferStore(out, init_value, out_index),
        body=BufferStore(out, _combine(kind, BufferLoad(out, out_index), BufferLoad(rf_buf, tuple(rf_read))),
                         out_index),
    )
    # a predicate (from a non-dividing split) must hold for the final reduction too
    predicate = realize.predicate
    if not (isinstance(predicate, IntImm) and predicate.value == 1) and not _only_uses(predicate, above):
        raise ScheduleError(f"cannot {name}: block {block.name_hint} has a predicate ({predicate}) over "
                            "loops inside the reduction")
    nest: Stmt = BlockRealize(tuple(wb_values), predicate, _refresh_regions(wb_block))
    for var, extent in reversed(new_loops):
        nest = For(var, const(0, var.dtype), extent, ForKind.SERIAL, nest)

    result = replace_stmt(root, realize, rf_realize)
    new_anchor = next(s for s, _ in walk_stmts(result) if isinstance(s, For) and s.loop_var is anchor.loop_var)
    parent = _path(result, new_anchor)[-1]
    if isinstance(parent, SeqStmt):
        items = list(parent.seq)
        i = next(k for k, s in enumerate(items) if s is new_anchor)
        items.insert(i + 1, nest)
        result = replace_stmt(result, parent, SeqStmt(tuple(items)))
    else:
        result = replace_stmt(result, new_anchor, seq(new_anchor, nest))
    # the new buffer lives in the enclosing block
    scope = next(s for s in reversed(_path(result, next(
        r for r, _ in walk_stmts(result) if isinstance(r, BlockRealize) and r.block.name_hint == rf_block.name_hint)))
        if isinstance(s, Block))
    result = replace_stmt(result, scope, replace(scope, alloc_buffers=scope.alloc_buffers + (rf_buf,)))
    return result, rf_block.name_hint


def _only_uses(e: PrimExpr, allowed: set[int]) -> bool:
    from ..functor import post_order_visit

    bad: list = []
    post_order_visit(e, lambda x: bad.append(x) if isinstance(x, Var) and id(x) not in allowed else None)
    return not bad


def _is_zero(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 0
