"""Sorting along one axis in TE: ``sort``, ``argsort`` and ``topk`` (TVM's ``topi`` names
and arguments).

TVM's CPU kernels call a C++ ``std::stable_sort``.  Here the sort is data-parallel, as TE
is: each element's rank counts the elements that order before it (smaller, or equal and
earlier -- so the sort is stable; NaN orders as the largest value, as in numpy and torch),
and output position ``p`` gathers the one element whose rank is ``p``.  Both steps reduce
over the axis: O(n^2) work per row, fine for the sizes the tests and chapters use.
"""

from __future__ import annotations

from typing import Any, Sequence

from .. import te
from ..ir import dtype as _dt
from ..tir import op as _op
from ..tir.expr import Select, const
from .utils import normalize_axes

__all__ = ["sort", "argsort", "topk"]


def _before(xj: Any, xi: Any, j: Any, i: Any, ascend: bool, is_float: bool) -> Any:
    """Whether element ``j`` comes before element ``i`` in the sorted order."""
    strictly = _op.less(xj, xi) if ascend else _op.greater(xj, xi)
    same = _op.equal(xj, xi)
    if is_float:
        nan_i, nan_j = _op.isnan(xi), _op.isnan(xj)
        first, last = (nan_i, nan_j) if ascend else (nan_j, nan_i)
        strictly = _op.logical_or(strictly, _op.logical_and(first, _op.logical_not(last)))
        same = _op.logical_or(same, _op.logical_and(nan_i, nan_j))
    return _op.logical_or(strictly, _op.logical_and(same, _op.less(j, i)))


def _ranks(data: te.Tensor, axis: int, ascend: bool) -> te.Tensor:
    n = data.shape[axis]
    is_float = _dt.is_float(data.dtype)

    def rank(*idx: Any) -> Any:
        j = te.reduce_axis((0, n), "j")
        other = list(idx)
        other[axis] = j.var
        before = _before(data[tuple(other)], data[idx], j.var, idx[axis], ascend, is_float)
        return te.sum(_op.cast(before, "int32"), axis=[j])

    return te.compute(data.shape, rank, name="rank")


def _gather_by_rank(data: te.Tensor, ranks: te.Tensor, axis: int, length: Any, what: str,
                    dtype: str) -> te.Tensor:
    """Position ``p < length`` along ``axis``: the element of rank ``p`` (``what`` "values")
    or its index (``what`` "indices", as ``dtype``)."""
    shape = list(data.shape)
    shape[axis] = length
    out_dtype = data.dtype if what == "values" else dtype
    # a bool has no sum: gather its int8 value
    acc_dtype = "int8" if out_dtype == "bool" else out_dtype

    def gather(*idx: Any) -> Any:
        i = te.reduce_axis((0, data.shape[axis]), "i")
        src = list(idx)
        src[axis] = i.var
        value = data[tuple(src)] if what == "values" else i.var
        hit = _op.equal(ranks[tuple(src)], _op.cast(idx[axis], "int32"))
        return te.sum(Select(hit, _op.cast(value, acc_dtype), const(0, acc_dtype)), axis=[i])

    out = te.compute(shape, gather, name=f"sorted_{what}")
    if acc_dtype == out_dtype:
        return out
    return te.compute(shape, lambda *idx: _op.cast(out[idx], out_dtype), name=f"sorted_{what}_cast")


def _axis(data: te.Tensor, axis: int, who: str) -> int:
    return normalize_axes(axis, data.ndim, who)[0]


def sort(data: te.Tensor, axis: int = -1, is_ascend: bool = True) -> te.Tensor:
    """``data`` sorted along ``axis`` (stable; NaN last when ascending)."""
    axis = _axis(data, axis, "topi.sort")
    return _gather_by_rank(data, _ranks(data, axis, bool(is_ascend)), axis, data.shape[axis], "values", data.dtype)


def argsort(data: te.Tensor, valid_count: Any = None, axis: int = -1, is_ascend: bool = True,
            dtype: str = "float32") -> te.Tensor:
    """The indices that sort ``data`` along ``axis``, as ``dtype`` (TVM's default float32)."""
    if valid_count is not None:
        raise NotImplementedError("topi.argsort: valid_count is not supported (sort the valid prefix instead)")
    axis = _axis(data, axis, "topi.argsort")
    return _gather_by_rank(data, _ranks(data, axis, bool(is_ascend)), axis, data.shape[axis], "indices", dtype)


def topk(data: te.Tensor, k: Any = 1, axis: int = -1, ret_type: str = "both", is_ascend: bool = False,
         dtype: str = "int64") -> te.Tensor | Sequence[te.Tensor]:
    """The ``k`` largest (smallest with ``is_ascend``) elements along ``axis``, in order:
    ``[values, indices]``, or one of them (``ret_type`` "values"/"indices"); ``k < 1``
    takes the whole axis."""
    if ret_type not in ("both", "values", "indices"):
        raise ValueError(f"topi.topk: ret_type must be 'both', 'values' or 'indices', got {ret_type!r}")
    axis = _axis(data, axis, "topi.topk")
    n = data.shape[axis]
    k = int(k)
    length = n if k < 1 or (isinstance(getattr(n, "value", None), int) and k >= n.value) else const(k, n.dtype)
    ranks = _ranks(data, axis, bool(is_ascend))
    outs = [_gather_by_rank(data, ranks, axis, length, what, dtype)
            for what in ("values", "indices") if ret_type in (what, "both")]
    return outs if ret_type == "both" else outs[0]
