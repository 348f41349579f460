"""FlattenBuffer: every buffer access becomes a one-dimensional access.

A ``float32[64, 128]`` buffer ``A`` is replaced in the body by a ``float32[8192]`` buffer
over the same memory (the same ``data`` variable), and ``A[i, j]`` becomes
``A[i * 128 + j]``: row-major order, or the buffer's explicit strides plus its element
offset.  Index expressions are simplified with the loop bounds in scope, so split and
fused loops give readable indices.  The function's ``buffer_map`` keeps the original
multi-dimensional buffers: callers still check argument shapes against them.
"""

from __future__ import annotations

import math
from typing import Any

from ...arith import Analyzer
from .. import op as _op
from ..buffer import Buffer
from ..expr import BufferLoad, IntImm, PrimExpr, Range
from ..function import PrimFunc
from ..functor import StmtExprMutator
from ..stmt import Allocate, BufferStore, For, Stmt
from .function_pass import prim_func_pass

__all__ = ["FlattenBuffer", "flatten_buffer", "flat_index"]

_INT32_MAX = 2**31 - 1


def _is_flat(buffer: Buffer) -> bool:
    return (buffer.ndim == 1 and not buffer.strides
            and isinstance(buffer.elem_offset, IntImm) and buffer.elem_offset.value == 0)


def _index_dtype(buffer: Buffer) -> str:
    """int64 if any dimension is int64 or the element count overflows int32."""
    if any(s.dtype == "int64" for s in buffer.shape):
        return "int64"
    if all(isinstance(s, IntImm) for s in buffer.shape):
        if math.prod(s.value for s in buffer.shape) > _INT32_MAX:
            return "int64"
    return "int32"


def _check_strides(buffer: Buffer) -> None:
    """A stride list must give one stride per dimension (TVM checks the same when flattening)."""
    if buffer.strides and len(buffer.strides) != buffer.ndim:
        raise ValueError(f"buffer {buffer.name} has {len(buffer.strides)} strides for {buffer.ndim} "
                         "dimensions; it cannot be flattened")


def flattened(buffer: Buffer) -> Buffer:
    """The 1-D buffer over ``buffer``'s memory: same data, dtype and name."""
    _check_strides(buffer)
    if _is_flat(buffer):
        return buffer
    dtype = _index_dtype(buffer)
    if buffer.strides:
        # the last element sits at offset sum((shape_k - 1) * stride_k)
        size = IntImm(dtype, 1)
        for extent, stride in zip(buffer.shape, buffer.strides):
            size = _op.add(size, _op.mul(_op.cast(extent, dtype) - 1, _op.cast(stride, dtype)))
    else:
        size = IntImm(dtype, 1)
        for extent in buffer.shape:
            size = _op.mul(size, _op.cast(extent, dtype))
    size = _op.add(size, _op.cast(buffer.elem_offset, dtype))
    return Buffer(buffer.data, buffer.dtype, (Analyzer().simplify(size),), (), 0, buffer.scope,
                  buffer.name)


def flat_index(buffer: Buffer, indices: tuple) -> PrimExpr:
    """The row-major (or strided) offset of ``buffer[indices]``, before simplification."""
    if not indices:
        return _op.cast(buffer.elem_offset, "int32")
    dtype = "int64" if (_index_dtype(buffer) == "int64"
                        or any(i.dtype == "int64" for i in indices)) else "int32"
    indices = [_op.cast(i, dtype) for i in indices]
    if buffer.strides:
        offset = IntImm(dtype, 0)
        for index, stride in zip(indices, buffer.strides):
            offset = _op.add(offset, _op.mul(index, _op.cast(stride, dtype)))
    else:
        offset = indices[0]
        for index, extent in zip(indices[1:], buffer.shape[1:]):
            offset = _op.add(_op.mul(offset, _op.cast(extent, dtype)), index)
    return _op.add(offset, _op.cast(buffer.elem_offset, dtype))


class _Flattener(StmtExprMutator):
    def __init__(self) -> None:
        self.flat: dict[int, Buffer] = {}
        self.analyzer = Analyzer()

    def _flat_buffer(self, buffer: Buffer) -> Buffer:
        known = self.flat.get(id(buffer))
        if known is None:
            known = self.flat[id(buffer)] = flattened(buffer)
        return known

    def _access(self, buffer: Buffer, indices: tuple) -> tuple[Buffer, tuple]:
        if _is_flat(buffer):
            return buffer, indices
        return self._flat_buffer(buffer), (self.analyzer.simplify(flat_index(buffer, indices)),)

    def visit_for_(self, n: For) -> Stmt:
        with self.analyzer.bound_scope(n.loop_var, Range(n.min, n.extent)):
            return self.visit_children(n)

    def visit_buffer_load_(self, n: BufferLoad) -> PrimExpr:
        buffer, indices = self._access(n.buffer, self.visit(n.indices))
        return n if buffer is n.buffer and indices is n.indices else BufferLoad(buffer, indices)

    def visit_buffer_store_(self, n: BufferStore) -> Stmt:
        value = self.visit(n.value)
        buffer, indices = self._access(n.buffer, self.visit(n.indices))
        if buffer is n.buffer and value is n.value and indices is n.indices:
            return n
        return BufferStore(buffer, value, indices, n.span)  # (the span names the line in errors)

    def visit_allocate_(self, n: Allocate) -> Stmt:
        buffer, body = self._flat_buffer(n.buffer), self.visit(n.body)
        return n if buffer is n.buffer and body is n.body else Allocate(buffer, body)

    def _refuse(self, n: Any) -> Any:
        raise ValueError("FlattenBuffer needs block-free TIR: run LowerOpaqueBlock first "
                         f"(found block {getattr(n, 'name_hint', None) or n.block.name_hint!r})")

    visit_block_ = visit_block_realize_ = _refuse


def flatten_buffer(body: Any) -> Any:
    return _Flattener().visit(body)


@prim_func_pass(opt_level=0, name="tir.FlattenBuffer")
class FlattenBuffer:
    """Rewrite every multi-dimensional access as a 1-D access on a flat buffer."""

    def transform_function(self, func: PrimFunc, mod, ctx) -> PrimFunc:
        body = flatten_buffer(func.body)
        return func if body is func.body else func.with_body(body)
