"""cache_index: precompute a block's index arithmetic into small integer buffers.

For ``B[n, c, vi, vj] = A[n, c, vi // 4 + vj // 4, vj // 2]`` TVM's ``cache_index`` finds the
largest pure sub-expressions of the stored value (no buffer loads in them, more than one
node), computes each over the loops it depends on in its own block ``index_k`` writing
``index_var_k`` (placed before the block's loop nest), and reads the cached value instead:
``A[n, c, index_var_0[vi, vj], index_var_1[vj]]``.  With ``cse_thresh = t``, an expression
occurring fewer than ``t`` times is not cached itself; its largest pure parts are considered
instead (TVM's common-subexpression rule).  The block's read regions are left as they were,
as TVM leaves them.
"""

from __future__ import annotations

from typing import Any

from ...arith import Analyzer
from ...ir import replace
from ...ir.structural import structural_equal
from ..buffer import Buffer, BufferRegion
from ..expr import BufferLoad, Call, IterVar, PrimExpr, Range, Var, const
from ..functor import StmtExprMutator, post_order_visit, substitute
from ..stmt import Block, BlockRealize, BufferStore, For, ForKind, SeqStmt, Stmt
from .error import ScheduleError
from .tree import ancestors, block_realizes, replace_stmt, walk_stmts

__all__ = ["cache_index"]

_IMPURE_CALLS = ("tir.call_extern", "tir.call_packed", "tir.call_intrin")


def _complexity(e: PrimExpr) -> int:
    count = [0]
    post_order_visit(e, lambda n: count.__setitem__(0, count[0] + 1) if isinstance(n, PrimExpr) else None)
    return count[0]


def _pure(e: PrimExpr) -> bool:
    bad: list = []
    post_order_visit(e, lambda n: bad.append(n) if isinstance(n, BufferLoad) or (
        isinstance(n, Call) and str(getattr(n.op, "name", n.op)) in _IMPURE_CALLS) else None)
    return not bad


def _eligible(e: PrimExpr) -> bool:
    return _pure(e) and _complexity(e) > 1 and type(e).__name__ not in ("Ramp", "Broadcast")


def _children(e: PrimExpr) -> list[PrimExpr]:
    out = []
    for name in e._field_names:
        value = getattr(e, name)
        if isinstance(value, PrimExpr):
            out.append(value)
        elif isinstance(value, tuple):
            out += [x for x in value if isinstance(x, PrimExpr)]
    return out


def _computations(e: PrimExpr, table: list[list]) -> None:
    """The largest eligible sub-expressions of ``e`` with their counts (merged when equal)."""
    if _eligible(e):
        _add(table, e, 1)
        return
    for c in _children(e):
        _computations(c, table)


def _add(table: list[list], e: PrimExpr, n: int) -> None:
    for entry in table:
        if structural_equal(entry[0], e):
            entry[1] += n
            return
    table.append([e, n])


def cache_index(root: Stmt, realize: BlockRealize, storage_scope: str, cse_thresh: int) -> tuple[Stmt, list[str]]:
    """``root`` with ``realize``'s index computations cached; returns the new tree and the names
    of the new blocks.  Steps: choose the computations, build one stage per computation that
    fills a buffer with its values, read the buffers instead, and put the stages first."""
    if cse_thresh < 0:
        raise ScheduleError("cache_index: cse_thresh should not be a negative number")
    block = realize.block
    scope = next((s for s in reversed(ancestors(root, realize)) if isinstance(s, Block)), None)
    if scope is None:
        raise ScheduleError(f"cannot cache_index block {block.name_hint}: it is the root block")
    exprs = _chosen_computations(block.body, cse_thresh) if isinstance(block.body, BufferStore) else []
    if not exprs:
        return root, []
    bindings = {iv.var: v for iv, v in zip(block.iter_vars, realize.iter_values)}
    ranges = {id(s.loop_var): Range(s.min, s.extent) for s, _ in walk_stmts(scope.body) if isinstance(s, For)}
    ana = Analyzer()
    stages = [_index_stage(k, e, bindings, ranges, storage_scope, ana) for k, e in enumerate(exprs)]
    buffers = [buf for _, buf, _ in stages]

    class _Replace(StmtExprMutator):
        def visit(self, n: Any) -> Any:
            if isinstance(n, PrimExpr):
                for e, buf, in_vars in zip(exprs, buffers, vars_of):
                    if structural_equal(n, e):
                        return BufferLoad(buf, tuple(in_vars))
            return super().visit(n)

    vars_of = [_vars_in_order([e], lambda n: n in bindings) for e in exprs]
    out = replace_stmt(root, block.body, _Replace().visit(block.body))
    scope = next(s for s in reversed(ancestors(out, next(r for r, _ in _realizes(out) if r.block.name_hint
                                                         == block.name_hint))) if isinstance(s, Block))
    top = _top_of(scope, block.name_hint)
    nests = tuple(nest for nest, _, _ in stages)
    body = scope.body
    if isinstance(body, SeqStmt):
        k = next(i for i, x in enumerate(body.seq) if x is top)
        new_body = SeqStmt(body.seq[:k] + nests + body.seq[k:])
    else:
        new_body = SeqStmt(nests + (body,))
    new_scope = replace(scope, body=new_body, alloc_buffers=tuple(scope.alloc_buffers) + tuple(buffers))
    return replace_stmt(out, scope, new_scope), [name for _, _, name in stages]


def _chosen_computations(store: BufferStore, cse_thresh: int) -> list[PrimExpr]:
    """The index computations of ``store`` met at least ``cse_thresh`` times (a rarer one gives
    way to its parts), in order of appearance, the most complex first."""
    table: list[list] = []
    _computations(store.value, table)
    for c in store.indices:
        _computations(c, table)
    k = 0
    while k < len(table):  # rare expressions give way to their parts
        e, n = table[k]
        if n < cse_thresh:
            for child in _children(e):
                sub: list[list] = []
                _computations(child, sub)
                for s, _ in sub:
                    _add(table, s, n)
        k += 1
    chosen = [e for e, n in table if n >= cse_thresh]
    exprs: list[PrimExpr] = []

    def pick(node: Any) -> None:
        if isinstance(node, PrimExpr):
            for e in chosen:
                if structural_equal(node, e) and not any(x is e for x in exprs):
                    exprs.append(e)

    post_order_visit(store.value, pick)
    exprs.sort(key=lambda e: -_complexity(e))  # stable: ties keep their order
    return exprs


def _index_stage(k: int, e: PrimExpr, bindings: dict, ranges: dict[int, Range], storage_scope: str,
                 ana: Analyzer) -> tuple[Stmt, Buffer, str]:
    """Block ``index_<k>`` storing ``e`` for every value of the block iterators it uses, in
    loops over the loops those iterators are bound to; returns the nest, its buffer, its name."""
    block_vars = _vars_in_order([e], lambda n: n in bindings)
    loop_vars = _vars_in_order([bindings[bv] for bv in block_vars], lambda n: id(n) in ranges)
    for lv in loop_vars:
        ana.bind(lv, ranges[id(lv)], allow_override=True)
    shape = tuple(ana.simplify(const(ana.interval(bindings[bv])[1] + 1, bv.dtype)) for bv in block_vars)
    buf = Buffer(Var(f"index_var_{k}", "handle"), e.dtype, shape, (const(1, "int32"),), 0,
                 storage_scope, f"index_var_{k}")
    new_loops = {lv: Var(f"ax{j}", "int32") for j, lv in enumerate(loop_vars)}
    new_block_vars = [Var(f"v{j}", bv.dtype) for j, bv in enumerate(block_vars)]
    iter_vars = tuple(_iter_var(v, ranges[id(lv)].extent) for v, lv in zip(new_block_vars, loop_vars))
    body = BufferStore(buf, substitute(e, dict(zip(block_vars, new_block_vars))), tuple(new_block_vars))
    stage_block = Block(name_hint=f"index_{k}", iter_vars=iter_vars, reads=(),
                        writes=(BufferRegion(buf, tuple(Range(v, const(1, v.dtype)) for v in new_block_vars)),),
                        body=body)
    nest: Stmt = BlockRealize(tuple(substitute(bindings[bv], new_loops) for bv in block_vars),
                              const(True, "bool"), stage_block)
    for lv in reversed(loop_vars):
        nest = For(new_loops[lv], const(0, "int32"), ranges[id(lv)].extent, ForKind.SERIAL, nest)
    return nest, buf, stage_block.name_hint


def _vars_in_order(exprs: list[PrimExpr], keep: Any) -> list[Var]:
    """The variables of ``exprs`` that ``keep`` accepts, each once, in post-order."""
    found: list[Var] = []

    def visit(n: Any) -> None:
        if isinstance(n, Var) and keep(n) and not any(n is f for f in found):
            found.append(n)

    for e in exprs:
        post_order_visit(e, visit)
    return found


def _iter_var(v: Var, extent: PrimExpr) -> Any:
    return IterVar(Range(const(0, v.dtype), extent), v, "spatial")


def _realizes(root: Stmt) -> list:
    return block_realizes(root)


def _top_of(scope: Block, name: str) -> Stmt:
    """The statement directly in ``scope``'s body (sequence) that holds block ``name``."""
    body = scope.body
    items = body.seq if isinstance(body, SeqStmt) else (body,)
    for item in items:
        for s, _ in walk_stmts(item):
            if isinstance(s, BlockRealize) and s.block.name_hint == name:
                return item
    raise ScheduleError(f"cache_index: block {name} is not under its scope")

