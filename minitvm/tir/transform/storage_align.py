"""Storage alignment: turn ``buffer_dim_align`` block annotations into buffer strides.

``sch.storage_align(block, i, axis, factor, offset)`` records ``[i, axis, factor, offset]``
on the block that writes the buffer.  Here, after the buffer's allocation has been compacted
to its final shape (TVM does this inside CompactBufferAllocation too), the buffer gets
explicit strides: from the innermost dimension outwards, ``stride = product of the inner
extents``, then raised to the next value ``k * factor + offset``.  FlattenBuffer then
computes offsets from these strides, so the padding is real memory.
"""

from __future__ import annotations

from ...arith import Analyzer
from ...ir import replace
from ..buffer import Buffer
from ..expr import PrimExpr, const
from ..function import PrimFunc
from ..schedule.block_annotate import BufferReplacer
from ..stmt import Allocate, Block, Stmt
from ..stmt_functor import walk_stmts

__all__ = ["aligned_strides", "apply_storage_align"]

DIM_ALIGN_KEY = "buffer_dim_align"


def aligned_strides(shape: tuple, aligns: dict[int, tuple[int, int]]) -> tuple[PrimExpr, ...]:
    """Strides of a row-major buffer of ``shape`` whose axis ``a`` has stride ``k*factor+offset``."""

    ana = Analyzer()
    dtype = shape[0].dtype if shape else "int32"
    strides: list[PrimExpr] = [const(0, dtype)] * len(shape)
    stride: PrimExpr = const(1, dtype)
    for dim in reversed(range(len(shape))):
        if dim in aligns:
            factor, offset = aligns[dim]
            f, o = const(factor, dtype), const(offset, dtype)
            stride = ana.simplify(stride + (f + o - stride % f) % f)
        strides[dim] = stride
        stride = ana.simplify(stride * shape[dim])
    return tuple(strides)


def _collect(body: Stmt) -> dict[int, tuple[Buffer, dict[int, tuple[int, int]]]]:
    found: dict[int, tuple[Buffer, dict[int, tuple[int, int]]]] = {}
    for s, _ in walk_stmts(body):
        if isinstance(s, Block) and DIM_ALIGN_KEY in s.annotations:
            for index, axis, factor, offset in s.annotations[DIM_ALIGN_KEY]:
                buffer = s.writes[int(index)].buffer
                found.setdefault(id(buffer), (buffer, {}))[1][int(axis)] = (int(factor), int(offset))
    return found


def apply_storage_align(func: PrimFunc) -> PrimFunc:
    """``func`` with every storage-aligned buffer given padded strides."""

    found = _collect(func.body)
    if not found:
        return func
    mapping = {key: replace(buffer, strides=aligned_strides(buffer.shape, aligns))
               for key, (buffer, aligns) in found.items()}

    class _WithAllocate(BufferReplacer):
        def visit_allocate_(self, n: Allocate) -> Stmt:
            body = self.visit(n.body)
            buffer = self._new(n.buffer)
            return n if buffer is n.buffer and body is n.body else Allocate(buffer, body)

    return func.with_body(_WithAllocate(mapping).visit(func.body))
