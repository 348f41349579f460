"""annotate_buffer_access: state the region a block reads or writes instead of inferring it.

``annotate_buffer_access(block, 0, "read", lambda vi, vj: ((vi - 1, vi + 1), (vj - 1, vj + 1)))``
sets the block's first read region to ``[vi - 1, vi + 1) x [vj - 1, vj + 1)`` and records the
index in the block's ``explicit_read_region`` annotation, so later primitives (compute_at's
region analysis) use the stated region.  As in TVM the function gets the block's iterators
and returns one entry per iterator: a ``(begin, end)`` pair or a single index ``x`` (meaning
``(x, x + 1)``).  The region is trusted, not checked.
"""

from __future__ import annotations

from typing import Any, Callable

from ...arith import Analyzer
from ...ir import replace
from ..buffer import BufferRegion
from ..expr import IntImm, PrimExpr, Range, convert
from ..index_map import IndexMap
from ..stmt import Block
from .error import ScheduleError

__all__ = ["RangesMap", "ranges_map", "annotate_buffer_access"]

READ_KEY, WRITE_KEY = "explicit_read_region", "explicit_write_region"


class RangesMap:
    """The ``gen_new_ranges`` function as TVM records it: an IndexMap from the block's
    iterators to ``begin0, end0, begin1, end1, ...``; prints back as a lambda of pairs."""

    def __init__(self, index_map: IndexMap):
        self.index_map = index_map

    def script(self, **kwargs: Any) -> str:
        m = self.index_map
        ends = m.final_indices
        pairs = ", ".join(f"({ends[k].script()}, {ends[k + 1].script()})" for k in range(0, len(ends), 2))
        return f"lambda {', '.join(v.name for v in m.initial_indices)}: [{pairs}]"

    __repr__ = script


def ranges_map(block: Block, gen_new_ranges: Callable | RangesMap) -> RangesMap:
    """Call ``gen_new_ranges`` on the block's iterators and check its shape, as TVM does."""
    if isinstance(gen_new_ranges, RangesMap):
        return gen_new_ranges
    iter_vars = [iv.var for iv in block.iter_vars]
    spec = gen_new_ranges(*iter_vars)
    if len(spec) != len(iter_vars):
        raise ValueError(f"Number of iter_vars ({len(iter_vars)}) must match number of new ranges "
                         f"({len(spec)}) returned by gen_new_ranges")
    ends: list[PrimExpr] = []
    for rng in spec:
        if isinstance(rng, (tuple, list)):
            if len(rng) != 2:
                raise ValueError("a range must be a (begin, end) pair")
            ends += [_expr(rng[0]), _expr(rng[1])]
        elif isinstance(rng, (PrimExpr, int)):
            ends += [_expr(rng), _expr(rng) + 1]
        else:
            raise TypeError(f"gen_new_ranges must return expressions or (begin, end) pairs, got {rng!r}")
    return RangesMap(IndexMap(tuple(iter_vars), tuple(ends)))


def _expr(x: Any) -> PrimExpr:
    return convert(x)


def annotate_buffer_access(block: Block, buffer_index: int, buf_type: str, ranges: RangesMap) -> Block:
    """``block`` with its ``buffer_index``-th read (write) region replaced and annotated."""
    if buf_type not in ("read", "write"):
        raise ScheduleError(f"annotate_buffer_access: buf_type must be 'read' or 'write', got {buf_type!r}")
    regions = list(block.reads if buf_type == "read" else block.writes)
    if not 0 <= buffer_index < len(regions):
        raise ScheduleError(f"annotate_buffer_access: block {block.name_hint} {buf_type}s {len(regions)} "
                            f"buffer(s); index {buffer_index} is out of range")
    buffer = regions[buffer_index].buffer
    ends = ranges.index_map.map_indices([iv.var for iv in block.iter_vars])
    ana = Analyzer()
    new_ranges = tuple(Range(ends[k], ana.simplify(ends[k + 1] - ends[k])) for k in range(0, len(ends), 2))
    if len(new_ranges) != buffer.ndim:
        raise ScheduleError(f"annotate_buffer_access: buffer {buffer.name} has {buffer.ndim} dimensions but "
                            f"{len(new_ranges)} ranges were given")
    regions[buffer_index] = BufferRegion(buffer, new_ranges)
    key = READ_KEY if buf_type == "read" else WRITE_KEY
    annotations = dict(block.annotations or {})
    indices = list(annotations.get(key, []))
    if not any(int(getattr(i, "value", i)) == buffer_index for i in indices):
        indices.append(IntImm("int32", buffer_index))
    annotations[key] = indices
    field = "reads" if buf_type == "read" else "writes"
    return replace(block, **{field: tuple(regions)}, annotations=annotations)
