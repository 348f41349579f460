"""pad_einsum: round a block's iteration domain up to multiples of given factors.

For an *Einsum* block — every buffer it touches is accessed at one point whose indices are
block iterators or constants, e.g. ``C[i, j] += A[i, k] * B[k, j]`` — a padded domain
(127 -> 128 for a factor of 32) would read and write outside the buffers.  So each buffer
indexed by a padded iterator gets a padded copy ``X_pad``: an input is copied in before the
block's loop nest with zeros in the padding (zero is what keeps a padded reduction's sum
exact), an output is written to ``X_pad`` and copied back, cropped, after it.  As in TVM, the
stages sit at the top level of the block's scope.
"""

from __future__ import annotations

from typing import Any

from ...arith import Analyzer
from ...ir import replace
from ..buffer import Buffer, BufferRegion, decl_buffer
from ..expr import Add, BufferLoad, FloatImm, IntImm, IterVar, PrimExpr, Range, Var, const
from ..functor import StmtExprMutator
from ..functor import post_order_visit as _visit
from ..op import floordiv, if_then_else, logical_and
from ..stmt import Block, BlockRealize, BufferStore, For, ForKind, SeqStmt, Stmt
from .error import ScheduleError
from .tree import blocks_under, replace_stmt, unique_block_name, walk_stmts

__all__ = ["pad_einsum"]


def _padded(extent: PrimExpr, factor: int) -> PrimExpr | None:
    """``ceil(extent / factor) * factor``, or None when that is ``extent`` itself."""
    if isinstance(extent, IntImm):
        value = -(-extent.value // factor) * factor
        return None if value == extent.value else const(value, extent.dtype)
    if factor == 1:
        return None
    f = const(factor, extent.dtype)
    return floordiv(extent + const(factor - 1, extent.dtype), f) * f


def _point_vars(region: BufferRegion, block: Block) -> list[Var | IntImm]:
    """The region's indices when each is one block iterator or a constant (Einsum pattern)."""
    iters = {id(iv.var) for iv in block.iter_vars}
    out = []
    for r in region.region:
        if not (isinstance(r.extent, IntImm) and r.extent.value == 1):
            break
        if isinstance(r.min, IntImm) or (isinstance(r.min, Var) and id(r.min) in iters):
            out.append(r.min)
    if len(out) != len(region.region):
        raise ScheduleError(f"pad_einsum: block {block.name_hint} is not an Einsum computation: it accesses "
                            f"{region.buffer.name} at {[str(r.min) for r in region.region]}, not at block "
                            "iterators or constants, one point at a time")
    return out


class _Pad(StmtExprMutator):
    """Padded loop extents and iterator domains; accesses of the padded buffers redirected."""

    def __init__(self, iter_extents: dict[int, PrimExpr], loop_extents: dict[int, PrimExpr],
                 buffers: dict[int, Buffer]):
        self.iter_extents, self.loop_extents, self.buffers = iter_extents, loop_extents, buffers

    def visit_for_(self, n: For) -> Stmt:
        new = self.visit_children(n)
        extent = self.loop_extents.get(id(n.loop_var))
        return new if extent is None else replace(new, extent=extent)

    def visit_block_(self, n: Block) -> Stmt:
        new = self.visit_children(n)
        iters = tuple(IterVar(Range(iv.dom.min, self.iter_extents[id(iv.var)]), iv.var, iv.iter_type)
                      if id(iv.var) in self.iter_extents else iv for iv in new.iter_vars)
        return replace(new, iter_vars=iters)

    def visit_buffer_load_(self, n: BufferLoad) -> PrimExpr:
        indices = self.visit(n.indices)
        buffer = self.buffers.get(id(n.buffer), n.buffer)
        return n if buffer is n.buffer and indices is n.indices else BufferLoad(buffer, indices)

    def visit_buffer_store_(self, n: BufferStore) -> Stmt:
        value, indices = self.visit(n.value), self.visit(n.indices)
        buffer = self.buffers.get(id(n.buffer), n.buffer)
        if buffer is n.buffer and value is n.value and indices is n.indices:
            return n
        return BufferStore(buffer, value, indices)

    def visit_buffer_region_(self, n: BufferRegion) -> BufferRegion:
        buffer = self.buffers.get(id(n.buffer), n.buffer)
        return n if buffer is n.buffer else BufferRegion(buffer, n.region)


def _copy_stage(name: str, src: Buffer, dst: Buffer, shape: tuple, guard_shape: tuple | None) -> Stmt:
    """``dst[v] = src[v]`` over ``shape``; with ``guard_shape``, zero where ``v`` is outside it."""
    loop_vars = [Var(f"i{d}", s.dtype) for d, s in enumerate(shape)]
    iter_vars = [Var(f"v{d}", s.dtype) for d, s in enumerate(shape)]
    idx = tuple(iter_vars)
    value: PrimExpr = BufferLoad(src, idx)
    if guard_shape is not None:
        cond = None
        ana = Analyzer()
        for v, full, small in zip(iter_vars, shape, guard_shape):
            if not ana.can_prove_equal(full, small):
                cond = v < small if cond is None else logical_and(cond, v < small)
        if cond is not None:
            value = if_then_else(cond, value, const(0, src.dtype))

    def point(b: Buffer) -> BufferRegion:
        return BufferRegion(b, tuple(Range(v, const(1, v.dtype)) for v in iter_vars))

    block = Block(name_hint=name, iter_vars=tuple(IterVar(Range(const(0, s.dtype), s), v, "spatial")
                                                 for v, s in zip(iter_vars, shape)),
                  reads=(point(src),), writes=(point(dst),), body=BufferStore(dst, value, idx))
    out: Stmt = BlockRealize(tuple(loop_vars), const(True, "bool"), block)
    for lv, s in reversed(list(zip(loop_vars, shape))):
        out = For(lv, const(0, s.dtype), s, ForKind.SERIAL, out)
    return out


def _check_zero_padding_is_neutral(block: Block, reductions: list[Var]) -> None:
    """Padded reduction steps read zeros; they must add nothing: the update is ``Y = Y + rhs``
    and ``rhs`` is zero when every load indexed by a padded reduction iterator is zero.
    (TVM pads a ``T.max`` or ``exp`` reduction the same way and gets wrong numbers; here
    that is refused.)"""
    store = block.body
    why = None
    rhs = None
    if isinstance(store, BufferStore) and isinstance(store.value, Add):
        for acc, other in ((store.value.a, store.value.b), (store.value.b, store.value.a)):
            if isinstance(acc, BufferLoad) and acc.buffer is store.buffer:
                rhs = other
    if rhs is None:
        why = "its update is not `Y = Y + x`"
    else:
        ids = {id(v) for v in reductions}

        class _Zero(StmtExprMutator):
            def visit_buffer_load_(self, n: BufferLoad) -> PrimExpr:
                hit: list = []
                _visit(n.indices, lambda x: hit.append(x) if isinstance(x, Var) and id(x) in ids else None)
                return const(0, n.dtype) if hit else n

        value = Analyzer().simplify(_Zero().visit(rhs))
        if not (isinstance(value, (IntImm, FloatImm)) and value.value == 0):
            why = f"its summand {rhs} is not zero where the padded inputs are zero"
    if why is not None:
        names = ", ".join(v.name for v in reductions)
        raise ScheduleError(f"pad_einsum: padding the reduction iterator(s) {names} of block "
                            f"{block.name_hint} would change its result: {why}")


def pad_einsum(root: Stmt, realize: BlockRealize, path: tuple, padding: Any) -> Stmt:
    block = realize.block
    name = block.name_hint
    padding = list(padding)
    if len(padding) != len(block.iter_vars) or any(int(p) <= 0 for p in padding):
        raise ScheduleError(f"pad_einsum: the padding of block {name} must be {len(block.iter_vars)} positive "
                            f"integers (one per block iterator), got {padding}")
    scopes = [s for s in path if isinstance(s, Block)]
    if not scopes:
        raise ScheduleError(f"pad_einsum: block {name} is the root block")
    scope = scopes[-1]
    seen: set[int] = set()
    for region in block.reads + block.writes:
        if id(region.buffer) in seen:
            raise ScheduleError(f"pad_einsum: block {name} is not an Einsum computation: it accesses "
                                f"{region.buffer.name} more than once")
        seen.add(id(region.buffer))
        _point_vars(region, block)

    iter_extents: dict[int, PrimExpr] = {}
    loop_extents: dict[int, PrimExpr] = {}
    for iv, value, p in zip(block.iter_vars, realize.iter_values, padding):
        new = _padded(iv.dom.extent, int(p))
        if new is not None:
            iter_extents[id(iv.var)] = new
            if isinstance(value, Var):
                loop_extents[id(value)] = new

    for lp in (s for s in path if isinstance(s, For) and id(s.loop_var) in loop_extents):
        others = [r.block.name_hint for r in blocks_under(lp) if r is not realize]
        if others:
            raise ScheduleError(f"pad_einsum: loop {lp.loop_var.name} of block {name} also runs block(s) "
                                f"{others}; padding it would run them out of bounds")

    padded_reductions = [iv.var for iv in block.iter_vars
                         if id(iv.var) in iter_extents and iv.iter_type != "spatial"]
    if padded_reductions:
        _check_zero_padding_is_neutral(block, padded_reductions)

    reads_before, writes_after, allocs, mapping = [], [], [], {}
    taken = root
    for region, is_read in [(r, True) for r in block.reads] + [(w, False) for w in block.writes]:
        points = _point_vars(region, block)
        if not any(isinstance(p, Var) and id(p) in iter_extents for p in points):
            continue
        buffer = region.buffer
        shape = []
        for p, dim in zip(points, buffer.shape):
            if isinstance(p, IntImm):
                shape.append(const(1, dim.dtype) if p.value == 0 else dim)  # in bounds either way
            else:
                shape.append(iter_extents.get(id(p), dim))
        padded = decl_buffer(tuple(shape), buffer.dtype, f"{buffer.name}_pad", scope=buffer.scope)
        stage_name = unique_block_name(taken, padded.name)
        if is_read:
            stage = _copy_stage(stage_name, buffer, padded, tuple(shape), tuple(buffer.shape))
            reads_before.append(stage)
        else:
            stage = _copy_stage(stage_name, padded, buffer, tuple(buffer.shape), None)
            writes_after.append(stage)
        taken = SeqStmt((taken, stage))  # later stages see this name as taken
        mapping[id(buffer)] = padded
        allocs.append(padded)

    items = list(scope.body.seq) if isinstance(scope.body, SeqStmt) else [scope.body]
    pos = next(k for k, s in enumerate(items) if any(x is realize for x, _ in walk_stmts(s)))
    padded_nest = _Pad(iter_extents, loop_extents, mapping).visit(items[pos])
    items[pos:pos + 1] = reads_before + [padded_nest] + writes_after
    new_scope = replace(scope, body=SeqStmt(tuple(items)) if len(items) > 1 else items[0],
                        alloc_buffers=scope.alloc_buffers + tuple(allocs))
    return replace_stmt(root, scope, new_scope)
