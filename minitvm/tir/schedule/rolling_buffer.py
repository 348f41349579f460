"""rolling_buffer: keep only a sliding window of an intermediate buffer, reused tile to tile.

After ``compute_at`` a producer computes, for each tile of an outer loop ``t``, the rows
``t * stride .. t * stride + extent`` of its buffer; consecutive tiles overlap by
``extent - stride`` rows.  ``rolling_buffer`` (as TVM) shrinks that axis of the buffer to
``extent``, addresses it modulo ``extent`` (a circular buffer), and adds a block predicate so
a tile after the first skips the overlapping rows the previous tile already computed.

As in TVM: the rolling axis is the outermost loop of the block that appears in the window's
start (``t``, ``t * stride`` or ``(t * stride) // d``); the block iterator at the same
position as that buffer axis becomes opaque in every block of the scope; the block may have
only read-after-write dependencies and must not write a function parameter; and the lowest
common ancestor of the block and its consumers must be a loop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ...arith import Analyzer
from ...ir import replace
from ..analysis import get_block_read_write_region
from ..buffer import Buffer, BufferRegion
from ..expr import LE, FloorDiv, FloorMod, IntImm, Mul, Or, PrimExpr, Range, Var, const
from ..functor import StmtExprMutator, substitute
from ..op import logical_and
from ..stmt import Block, BlockRealize, BufferStore, For, Stmt
from .error import ScheduleError
from .shared_analyses import index_bounds
from .tree import ancestors, replace_stmt, scope_blocks

__all__ = ["rolling_buffer"]


@dataclass
class _Info:
    old: Buffer
    new: Buffer
    axis: int
    extent: PrimExpr
    overlaps: list[int]
    iter_vars: list[Var | None]


def _check_only_raw(block: Block, scope: Block, name: str) -> None:
    """Refuse write-after-write and write-after-read dependencies with ``block``."""
    blocks = [r.block for r, _ in scope_blocks(scope)]
    me = next(k for k, b in enumerate(blocks) if b is block)
    writes = {id(w.buffer) for w in block.writes}
    reads = {id(r.buffer) for r in block.reads}
    for k, other in enumerate(blocks):
        if k == me:
            continue
        o_writes = {id(w.buffer) for w in other.writes}
        o_reads = {id(r.buffer) for r in other.reads}
        waw = writes & o_writes
        war = (reads & o_writes) if k > me else (writes & o_reads)
        if waw or war:
            raise ScheduleError(f"cannot rolling_buffer block {name}: it must have only read-after-write "
                                f"dependencies, but it has a {'write-after-write' if waw else 'write-after-read'} "
                                f"dependency with block {other.name_hint}")


def _match_start(e: PrimExpr) -> tuple[Var | None, int] | None:
    """``(t, stride)`` when a window starts at ``t``, ``t * c`` or ``(t * c) // d``; ``(None, 0)``
    for a constant start; None otherwise."""
    if isinstance(e, FloorDiv) and isinstance(e.b, IntImm):
        inner = _match_start(e.a)
        if inner is not None and inner[0] is not None and isinstance(e.a, Mul):
            return inner[0], math.ceil(inner[1] / e.b.value)
        return None
    if isinstance(e, Mul) and isinstance(e.a, Var) and isinstance(e.b, IntImm):
        return e.a, e.b.value
    if isinstance(e, Var):
        return e, 1
    if isinstance(e, IntImm):
        return None, 0
    return None


def _relaxed_region(realize: BlockRealize, region: BufferRegion, loops: list[For],
                    outer: list[For]) -> list[Range]:
    """The region the block writes over all iterations of ``loops`` (clipped to the buffer);
    the ``outer`` loops stay symbolic but known to their ranges (a unit loop's var folds to 0)."""
    ana = Analyzer()
    for lp in outer:
        ana.bind(lp.loop_var, Range(lp.min, lp.extent))
    unit = {lp.loop_var: lp.min for lp in outer + loops
            if isinstance(lp.extent, IntImm) and lp.extent.value == 1}
    bindings = {iv.var: substitute(v, unit) for iv, v in zip(realize.block.iter_vars, realize.iter_values)}
    dom = {id(lp.loop_var): (lp.min, lp.min + lp.extent - 1) for lp in loops}
    out = []
    for rng, dim in zip(region.region, region.buffer.shape):
        lo_e = substitute(rng.min, bindings)
        hi_e = substitute(rng.min + rng.extent - 1, bindings)
        lo, hi = index_bounds(lo_e, dom), index_bounds(hi_e, dom)
        if lo is None or hi is None:
            out.append(Range(const(0, dim.dtype), dim))
            continue
        lo, hi = ana.simplify(lo[0]), ana.simplify(hi[1])
        out.append(Range(lo, ana.simplify(hi - lo + 1)))
    return out


def _collect_info(realize: BlockRealize, buffer: Buffer, region: list[Range], loops: list[For]) -> _Info | None:
    iter_vars: list[Var | None] = []
    overlaps: list[int] = []
    for rng in region:
        matched = _match_start(rng.min)
        if matched is None:
            return None
        var, stride = matched
        overlap = 0
        if var is not None:
            if not isinstance(rng.extent, IntImm):
                return None
            overlap = rng.extent.value - stride
            if overlap <= 0:
                var = None
        iter_vars.append(var)
        overlaps.append(overlap)
    for lp in loops:  # the outermost loop that starts a window
        hits = [k for k, v in enumerate(iter_vars) if v is lp.loop_var]
        if hits:
            axis = hits[0]
            shape = list(buffer.shape)
            shape[axis] = region[axis].extent
            return _Info(buffer, replace(buffer, shape=tuple(shape)), axis, region[axis].extent, overlaps,
                         iter_vars)
    return None


class _Rewriter(StmtExprMutator):
    def __init__(self, info: _Info, scope: Block):
        self.info, self.scope = info, scope
        self.stored = False

    def _indices(self, indices: tuple) -> tuple:
        a = self.info.axis
        return tuple(FloorMod(i, self.info.extent) if k == a else i for k, i in enumerate(indices))

    def visit_buffer_store_(self, n: BufferStore) -> Stmt:
        value, indices = self.visit(n.value), self.visit(n.indices)
        if n.buffer is self.info.old:
            self.stored = True
            return BufferStore(self.info.new, value, self._indices(indices))
        return n if value is n.value and indices is n.indices else BufferStore(n.buffer, value, indices)

    def visit_buffer_load_(self, n: Any) -> Any:
        indices = self.visit(n.indices)
        if n.buffer is self.info.old:
            return type(n)(self.info.new, self._indices(indices))
        return n if indices is n.indices else type(n)(n.buffer, indices)

    def visit_block_(self, n: Block) -> Stmt:
        new = self.visit_children(n)
        if n is self.scope:
            allocs = tuple(self.info.new if b is self.info.old else b for b in new.alloc_buffers)
            return replace(new, alloc_buffers=allocs)
        a = self.info.axis
        iter_vars = tuple(replace(iv, iter_type="opaque") if k == a else iv
                          for k, iv in enumerate(new.iter_vars))
        new = replace(new, iter_vars=iter_vars)
        reads, writes = get_block_read_write_region(new)

        def fix(regions: tuple, inferred: list) -> tuple:
            found = [r for r in inferred if r.buffer is self.info.new]
            return tuple(found[0] if r.buffer is self.info.old and found else r for r in regions)

        return replace(new, reads=fix(new.reads, reads), writes=fix(new.writes, writes))

    def visit_block_realize_(self, n: BlockRealize) -> Stmt:
        outer = self.stored
        self.stored = False
        new = self.visit_children(n)
        if self.stored:
            new = replace(new, predicate=self._predicate(n, new.predicate))
        self.stored = outer
        return new

    def _predicate(self, realize: BlockRealize, cond: PrimExpr) -> PrimExpr:
        ana = Analyzer()
        for k, var in enumerate(self.info.iter_vars):
            if var is None or self.info.overlaps[k] <= 0 or k >= len(realize.iter_values):
                continue
            first_tile = ana.simplify(substitute(realize.iter_values[k], {var: const(0, var.dtype)}))
            # written as TVM's simplifier leaves it: i_0 < 1 or 2 <= ax0
            skip = Or(var < 1, LE(const(self.info.overlaps[k], first_tile.dtype), first_tile))
            cond = skip if isinstance(cond, IntImm) and cond.value == 1 else logical_and(cond, skip)
        return cond


def rolling_buffer(root: Stmt, realize: BlockRealize, index: int, param_buffers: set[int]) -> Stmt:
    """``root`` with the ``index``-th buffer ``realize`` writes made a rolling buffer."""
    block = realize.block
    name = block.name_hint
    if not 0 <= index < len(block.writes):
        raise ScheduleError(f"cannot rolling_buffer block {name}: it writes {len(block.writes)} "
                            f"buffer(s); write index {index} is out of range")
    region = block.writes[index]
    path = ancestors(root, realize)
    scope = next((s for s in reversed(path) if isinstance(s, Block)), None)
    if scope is None:
        raise ScheduleError(f"cannot rolling_buffer block {name}: it is the root block")
    if any(id(w.buffer) in param_buffers for w in block.writes):
        raise ScheduleError(f"cannot rolling_buffer block {name}: it is an output block (it writes a "
                            "parameter of the function)")
    _check_only_raw(block, scope, name)

    written = {id(w.buffer) for w in block.writes}
    paths = [path] + [ancestors(root, r) for r, _ in scope_blocks(scope)
                      if r is not realize and any(id(x.buffer) in written for x in r.block.reads)]
    lca: Stmt = scope
    for depth in range(min(len(p) for p in paths)):
        if all(p[depth] is paths[0][depth] for p in paths):
            if isinstance(paths[0][depth], (For, Block)):  # loops and blocks only, as TVM's srefs
                lca = paths[0][depth]
        else:
            break
    if not isinstance(lca, For):
        raise ScheduleError(f"cannot rolling_buffer block {name}: the lowest common ancestor of the "
                            f"accesses to {region.buffer.name} is not a loop; tile the block (e.g. "
                            "compute_at under a tile loop of its consumer) first")
    loops = [s for s in path if isinstance(s, For)]
    cut = loops.index(lca) + 1
    relaxed = _relaxed_region(realize, region, loops[cut:], loops[:cut])
    info = _collect_info(realize, region.buffer, relaxed, loops)
    if info is None:
        text = ", ".join(f"{r.min}:{r.min + r.extent}" for r in relaxed)
        raise ScheduleError(f"cannot rolling_buffer block {name}: the region [{text}] of "
                            f"{region.buffer.name} it writes per tile has no axis matching a rolling "
                            "pattern such as tile * stride + offset with overlapping tiles")
    new_scope = _Rewriter(info, scope).visit(scope)
    return replace_stmt(root, scope, new_scope)
