"""Is a block scope a *stage pipeline*?  (TVM's region-cover property.)

compute_at, reverse_compute_at and the two inlining primitives move or fold a block on the
promise that every element a consumer reads from an intermediate buffer was written before
by the blocks producing it.  A block whose loops do not run over its whole iteration domain
(``for i in range(8)`` over ``vi = T.axis.spatial(16, i)``) breaks that promise: its
consumer reads elements nobody wrote, and moving the producer next to the consumer would
silently compute them.  TVM refuses such a scope ("not a stage pipeline"); so does minitvm.

For each consumer and each buffer it reads, the producers are grouped by the innermost loop
they share with the consumer (their lowest common ancestor): under that loop, the region the
producers write (relaxed over their own loops) must cover the region the consumer reads
(relaxed over its loops), each clipped to the buffer's shape.  TVM refuses when it cannot
prove the cover; minitvm refuses when it can prove the gap (interval arithmetic is coarser
here, and a false refusal would block a legal schedule).
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from typing import Callable

from ...arith import Analyzer
from ..buffer import Buffer
from ..expr import IntImm, Max, Min, PrimExpr, Range, const
from ..stmt import Block, BlockRealize, For
from .error import ScheduleError
from .region_cover import loops_between
from .shared_analyses import int_range_bounds, is_const_true, range_bounds
from .tree import scope_blocks

__all__ = ["check_stage_pipeline"]


def check_stage_pipeline(scope: Block, scope_path: tuple, what: str) -> None:
    """Raise ScheduleError when a read in ``scope`` is provably not covered by its producers."""
    blocks = scope_blocks(scope, scope_path)
    @functools.cache
    def ana() -> Analyzer:
        """The scope's loops bound to their ranges, built when a read is first decided
        symbolically (most are decided in numbers, or remembered)."""
        analyzer = Analyzer()
        for _, path in blocks:
            for s in path:
                if isinstance(s, For):
                    analyzer.bind(s.loop_var, Range(s.min, s.extent))
        return analyzer

    writers: dict[int, list] = {}  # buffer id -> the blocks before this one that write it
    for consumer, cpath in blocks:
        if is_const_true(consumer.predicate):  # (a guarded consumer reads less than its loops say)
            for read in consumer.block.reads:
                producers = writers.get(id(read.buffer), [])
                for lca, group in _group_by_common_loop(cpath, producers).items():
                    gap = _gap_remembered(read, consumer, cpath, group, lca, ana)
                    if gap is not None:
                        raise ScheduleError(f"cannot {what}: its block scope is not a stage pipeline: {gap}")
        for buffer in {id(w.buffer): w.buffer for w in consumer.block.writes}.values():
            writers.setdefault(id(buffer), []).append((consumer, cpath))


def _group_by_common_loop(cpath: tuple, producers: list) -> dict:
    """Producers keyed by the innermost loop (or the scope, None) they share with the consumer."""
    groups: dict = {}
    for p, ppath in producers:
        shared = [s for s in cpath if isinstance(s, For) and any(s is q for q in ppath)]
        lca = shared[-1] if shared else None
        groups.setdefault(lca, []).append((p, ppath))
    return groups


def _bindings(realize: BlockRealize) -> dict:
    return {iv.var: v for iv, v in zip(realize.block.iter_vars, realize.iter_values)}


def _relaxed(region, realize: BlockRealize, path: tuple, lca: For | None) -> list | None:
    """Each dimension of ``region`` as (lo, hi) while the loops below ``lca`` run; None when unbounded."""
    inner, bind = loops_between(lca, path), _bindings(realize)
    dims = [range_bounds(r, inner, bind) for r in region.region]
    return None if any(d is None for d in dims) else dims


#: _gap's answers by the identity of its (immutable) arguments: a schedule that inlines the N
#: blocks of a fused elementwise chain one by one checks the scope N times, and all but one
#: consumer are the same objects each time (without this, 256 inlines took ~20 s)
_GAPS: OrderedDict = OrderedDict()
_GAPS_SIZE = 8192
_GAPS_LOCK = threading.Lock()


def _gap_remembered(read, consumer: BlockRealize, cpath: tuple, group: list, lca: For | None,
                    ana: Callable[[], Analyzer]) -> str | None:
    # only the loops of a path matter (the scope block and SeqStmt on it change with every
    # primitive); the analyzer binds each loop to its range, so the loops fix that too
    key = (id(read), id(consumer), _loop_ids(cpath), id(lca),
           tuple((id(p), _loop_ids(ppath)) for p, ppath in group))
    with _GAPS_LOCK:
        hit = _GAPS.get(key)
        if hit is not None:
            _GAPS.move_to_end(key)
            return hit[0]
    gap = _gap(read, consumer, cpath, group, lca, ana)
    with _GAPS_LOCK:
        _GAPS[key] = (gap, (read, consumer, cpath, lca, tuple(group)))  # alive: their ids stay theirs
        if len(_GAPS) > _GAPS_SIZE:
            _GAPS.popitem(last=False)
    return gap


def _loop_ids(path: tuple) -> tuple:
    return tuple(id(s) for s in path if isinstance(s, For))


def _gap(read, consumer: BlockRealize, cpath: tuple, group: list, lca: For | None,
         analyzer: Callable[[], Analyzer]) -> str | None:
    """Words for a dimension where the consumer provably reads outside what ``group`` writes
    (``analyzer``: the scope's analyzer, built when first asked)."""
    buffer: Buffer = read.buffer
    if _covered_in_ints(read, consumer, cpath, group, lca):
        return None
    consumed = _relaxed(read, consumer, cpath, lca)
    written = _written(buffer, group, lca, _relaxed)
    if consumed is None or not written:  # (None: a producer writes somewhere we cannot bound: assume covered)
        return None
    if _covered_by_numbers(buffer, consumed, written):
        return None
    ana = analyzer()
    for d, (c_lo, c_hi) in enumerate(consumed):
        top = buffer.shape[d] - 1
        zero = const(0, top.dtype)
        c_lo, c_hi = _clip(c_lo, zero, top), _clip(c_hi, zero, top)
        p_lo = _fold(min, [_clip(w[d][0], zero, top) for w in written], ana)
        p_hi = _fold(max, [_clip(w[d][1], zero, top) for w in written], ana)
        if p_lo is None or p_hi is None:
            continue
        if ana.can_prove(c_lo < p_lo) or ana.can_prove(p_hi < c_hi):
            return _describe(buffer, d, (c_lo, c_hi), (p_lo, p_hi), consumer, group, ana)
    return None


def _int_relaxed(region, realize: BlockRealize, path: tuple, lca: For | None) -> list | None:
    """:func:`_relaxed` in Python ints; None unless every bound is a number."""
    inner = loops_between(lca, path)
    bind = {id(iv.var): v for iv, v in zip(realize.block.iter_vars, realize.iter_values)}
    dims = []
    for r in region.region:
        b = int_range_bounds(r, inner, bind)
        if b is None:
            return None
        dims.append(b)
    return dims


def _covered_in_ints(read, consumer: BlockRealize, cpath: tuple, group: list, lca: For | None) -> bool:
    """True when the static case is covered, decided in Python ints before any expression is
    built (the bounds here are never narrower than :func:`_relaxed`'s, so a cover found here is a
    cover); False sends the caller to the symbolic check, which also words a gap."""
    buffer: Buffer = read.buffer
    if not all(isinstance(s, IntImm) for s in buffer.shape):
        return False
    consumed = _int_relaxed(read, consumer, cpath, lca)
    written = _written(buffer, group, lca, _int_relaxed)
    return consumed is not None and bool(written) and _hull_covers([s.value for s in buffer.shape], consumed, written)


def _written(buffer: Buffer, group: list, lca: For | None, relaxed) -> list | None:
    """What each producer of ``group`` writes of ``buffer`` (``relaxed``: :func:`_relaxed` or
    :func:`_int_relaxed`); None when one of those regions is unbounded."""
    written = []
    for p, ppath in group:
        for w in p.block.writes:
            if w.buffer is buffer:
                dims = relaxed(w, p, ppath, lca)
                if dims is None:
                    return None
                written.append(dims)
    return written


def _hull_covers(shape: list[int], consumed: list, written: list) -> bool:
    """Whether the hull of the ``written`` regions covers the ``consumed`` one, in each dimension
    of ``shape`` (int bounds, clipped to the buffer)."""
    for d, (c_lo, c_hi) in enumerate(consumed):
        top = shape[d] - 1
        lo, hi = min(max(c_lo, 0), top), min(max(c_hi, 0), top)
        p_lo = min(min(max(w[d][0], 0), top) for w in written)
        p_hi = max(min(max(w[d][1], 0), top) for w in written)
        if lo < p_lo or p_hi < hi:
            return False
    return True


def _covered_by_numbers(buffer: Buffer, consumed: list, written: list) -> bool:
    """True when every bound and the shape are numbers and the written hull covers the read one
    (the usual static case, decided without building Min/Max or asking the analyzer); False
    sends the caller to the symbolic check."""
    bounds = [b for dims in (consumed, *written) for lo_hi in dims for b in lo_hi]
    if not all(isinstance(b, IntImm) for b in [*bounds, *buffer.shape]):
        return False

    def ints(dims: list) -> list:
        return [(lo.value, hi.value) for lo, hi in dims]

    # a gap (False) is worded by the symbolic check
    return _hull_covers([s.value for s in buffer.shape], ints(consumed), [ints(w) for w in written])


def _clip(e: PrimExpr, lo: PrimExpr, hi: PrimExpr) -> PrimExpr:
    return Min(Max(e, lo), hi)


def _fold(pick, exprs: list, ana: Analyzer) -> PrimExpr | None:
    """The min (or max) of ``exprs`` when the analyzer can order them, else None."""
    best = exprs[0]
    for e in exprs[1:]:
        first_smaller = ana.can_prove(best <= e)
        if not first_smaller and not ana.can_prove(e <= best):
            return None
        best = (best if first_smaller else e) if pick is min else (e if first_smaller else best)
    return best


def _text(ana: Analyzer, e: PrimExpr) -> str:
    e = ana.simplify(e)
    return str(e.value) if isinstance(e, IntImm) else str(e)


def _describe(buffer: Buffer, dim: int, consumed: tuple, written: tuple, consumer: BlockRealize,
              group: list, ana: Analyzer) -> str:
    names = ", ".join(p.block.name_hint for p, _ in group)
    where = f" (dimension {dim})" if len(buffer.shape) > 1 else ""
    text = (f"block {consumer.block.name_hint} reads {buffer.name}[{_text(ana, consumed[0])}:"
            f"{_text(ana, consumed[1] + 1)}]{where}, but its producer {names} writes only "
            f"{buffer.name}[{_text(ana, written[0])}:{_text(ana, written[1] + 1)}]")
    short = [_short_binding(p, ppath, ana) for p, ppath in group]
    hint = next((s for s in short if s), None)
    if hint:
        text += f" ({hint})"
    return (text + ". compute_at, reverse_compute_at and inlining need every element a consumer "
            "reads to be written by its producers first")


def _short_binding(realize: BlockRealize, path: tuple, ana: Analyzer) -> str | None:
    """'its loops run vi over [0, 7] of its domain [0, 15]' when a binding falls short of its domain."""
    loops = loops_between(None, path)
    for iv, value in zip(realize.block.iter_vars, realize.iter_values):
        b = range_bounds(Range(value, const(1, value.dtype)), loops)
        lo, hi = iv.dom.min, iv.dom.min + iv.dom.extent - 1
        if b is not None and (ana.can_prove(lo < b[0]) or ana.can_prove(b[1] < hi)):
            return (f"the loops of block {realize.block.name_hint} run {iv.var.name} over "
                    f"[{_text(ana, b[0])}, {_text(ana, b[1])}] of its domain [{_text(ana, lo)}, {_text(ana, hi)}]")
    return None
