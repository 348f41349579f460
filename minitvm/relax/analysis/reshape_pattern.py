"""``has_reshape_pattern(prim_func)`` (TVM's ``relax.analysis.has_reshape_pattern``): whether a
PrimFunc only reshapes -- copies every element of its first buffer to the same row-major
position of its last, through a nest of loops and data-parallel blocks.  RewriteDataflowReshape
turns calls of such kernels back into ``R.reshape``."""

from __future__ import annotations

from typing import Any

from ...arith.analyzer import Analyzer
from ...tir.expr import BufferLoad, IntImm, IterVar, Range
from ...tir.function import PrimFunc
from ...tir.op import floordiv, floormod
from ...tir.stmt import Block, BlockRealize, BufferStore, For

__all__ = ["has_reshape_pattern"]


def _flat_index(shape: tuple, indices: tuple) -> Any:
    # in the indices' own dtype: an int64 start would cast int32 loop variables, and the casts
    # hide the index arithmetic from the simplifier
    flat: Any = IntImm(indices[0].dtype if indices else "int64", 0)
    for extent, index in zip(shape, indices):
        flat = flat * extent + index
    return flat


def _innermost_store(stmt: Any, analyzer: Analyzer) -> BufferStore | None:
    """The single BufferStore at the bottom of a nest of loops and data-parallel blocks, its
    loop and block variables bound in ``analyzer``; None for any other structure."""
    while True:
        if isinstance(stmt, For):
            analyzer.bind(stmt.loop_var, Range.from_min_extent(stmt.min, stmt.extent), allow_override=True)
            stmt = stmt.body
        elif isinstance(stmt, BlockRealize):
            stmt = stmt.block
        elif isinstance(stmt, Block):
            if stmt.init is not None or any(iv.iter_type != IterVar.DataPar for iv in stmt.iter_vars):
                return None
            for iv in stmt.iter_vars:
                analyzer.bind(iv.var, iv.dom, allow_override=True)
            stmt = stmt.body
        else:
            return stmt if isinstance(stmt, BufferStore) else None


def has_reshape_pattern(func: PrimFunc) -> bool:
    """True when ``func`` copies its first buffer into its last, every element to the same
    row-major position (what a legalized ``reshape`` does)."""
    buffers = func.buffers
    if len(buffers) < 2:
        return False
    src, dst = buffers[0], buffers[-1]
    analyzer = Analyzer()
    store = _innermost_store(func.body, analyzer)
    if store is None or store.buffer is not dst or not isinstance(store.value, BufferLoad) \
            or store.value.buffer is not src:
        return False
    if len(store.indices) != len(dst.shape) or len(store.value.indices) != len(src.shape):
        return False
    dst_index = _flat_index(dst.shape, store.indices)
    return _is_unravel(analyzer, store.value.indices, src.shape, dst_index)


def _is_unravel(analyzer: Analyzer, indices: tuple, shape: tuple, flat: Any) -> bool:
    """True when ``indices`` are the row-major position of ``flat`` in ``shape``: index ``k`` is
    ``flat // stride_k % shape[k]`` or ``flat % (stride_k * shape[k]) // stride_k`` (the first
    may omit the ``%``, as ``flat`` stays below the
    total size).  Comparing index by index keeps each proof within what the simplifier does;
    the flattened sum of the indices is beyond it once divisions nest."""
    stride: Any = IntImm(flat.dtype, 1)
    for k in reversed(range(len(shape))):
        quotient = floordiv(flat, stride) if k < len(shape) - 1 else flat
        # TOPI's reshape writes the other order, flat % (stride * n) // stride
        forms = [floormod(quotient, shape[k]), floordiv(floormod(flat, stride * shape[k]), stride)] + \
            ([quotient] if k == 0 else [])
        if not any(analyzer.can_prove_equal(indices[k], form) for form in forms):
            return False
        stride = stride * shape[k]
    return True
