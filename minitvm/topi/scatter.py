"""Index-driven data movement along one axis: ``gather`` (read at the indices) and
``scatter_elements`` (write or accumulate at the indices), as torch's ``gather`` / ``scatter``
/ ``scatter_add`` / ``scatter_reduce``."""

from __future__ import annotations

from typing import Any

from .. import te
from ..tir import op as _op
from ..tir.expr import IntImm, PrimExpr, const
from .utils import normalize_axes, prod, unravel_index

__all__ = ["gather", "scatter_elements", "scatter_nd"]


def gather(data: te.Tensor, axis: int, indices: te.Tensor) -> te.Tensor:
    """``out[i] = data[i with i[axis] replaced by indices[i]]``; the output has the indices'
    shape (negative indices count from the end)."""
    axis = normalize_axes(axis, data.ndim, "topi.gather")[0]
    dim = data.shape[axis]

    def fcompute(*idx: Any) -> PrimExpr:
        i = _op.cast(indices[idx], dim.dtype)
        i = _op.Select(_op.less(i, const(0, dim.dtype)), _op.add(i, dim), i)
        return data[tuple(idx[:axis]) + (i,) + tuple(idx[axis + 1:])]

    return te.compute(indices.shape, fcompute, name="T_gather")


def scatter_elements(data: te.Tensor, indices: te.Tensor, updates: te.Tensor, axis: int = 0,
                     reduction: str = "update") -> te.Tensor:
    """``data`` with ``updates[j]`` written (``update``) or added / multiplied / maxed / mined
    (``add``, ``mul``, ``max``, ``min``) at position ``j`` with ``j[axis]`` replaced by
    ``indices[j]``, for every ``j`` in the indices' shape.  Written as a reduction over the
    indices along ``axis`` (where two indices collide, ``update`` keeps the last)."""
    if reduction not in ("update", "add", "mul", "max", "min", "mean"):
        raise ValueError(f"topi.scatter_elements: reduction {reduction!r} is not supported")
    if reduction == "mean":
        raise NotImplementedError("topi.scatter_elements: reduction 'mean' is not supported")
    axis = normalize_axes(axis, data.ndim, "topi.scatter_elements")[0]
    dim = data.shape[axis]
    extent = indices.shape[axis]
    idtype = dim.dtype

    def source(idx: tuple, j: Any) -> tuple:
        return tuple(idx[:axis]) + (j,) + tuple(idx[axis + 1:])

    def inside(idx: tuple) -> Any:
        """The output position lies within the indices' extent on every other axis."""
        conds = [_op.less(_op.cast(idx[k], idtype), _op.cast(indices.shape[k], idtype))
                 for k in range(data.ndim) if k != axis]
        return te.all(*conds) if conds else const(True, "bool")

    def clamped(idx: tuple) -> tuple:
        return tuple(i if k == axis else _op.min(_op.cast(i, idtype), _op.sub(_op.cast(indices.shape[k], idtype),
                                                                              const(1, idtype)))
                     for k, i in enumerate(idx))

    def hits(idx: tuple, j: Any) -> Any:
        src = source(clamped(idx), j)
        target = _op.cast(indices[src], idtype)
        target = _op.Select(_op.less(target, const(0, idtype)), _op.add(target, dim), target)
        return _op.logical_and(inside(idx), _op.equal(target, _op.cast(idx[axis], idtype))), src

    return _scatter(data, updates, extent, idtype, hits, reduction,
                    ("T_scatter_last", "T_scatter_acc", "T_scatter_elements"))


def _scatter(data: te.Tensor, updates: te.Tensor, extent: Any, idtype: str, hits: Any, reduction: str,
             names: tuple) -> te.Tensor:
    """The scatter of ``updates`` into ``data`` as a reduction over ``extent`` source positions:
    ``hits(idx, j)`` says whether source ``j`` lands on output ``idx`` and where in ``updates``
    it reads.  ``update`` finds the last source landing there (a max over ``j + 1``), the
    others combine every landing source; ``names`` name the two stages and the output."""
    if reduction == "update":
        def flast(*idx: Any) -> PrimExpr:
            r = te.reduce_axis((0, extent), "j")
            match, _ = hits(idx, r.var)
            return te.max(_op.Select(match, _op.add(_op.cast(r.var, idtype), const(1, idtype)),
                                     const(0, idtype)), axis=[r])
        last = te.compute(data.shape, flast, name=names[0])

        def fupdate(*idx: Any) -> PrimExpr:
            j = last[idx]
            _, src = hits(idx, _op.max(_op.sub(j, const(1, idtype)), const(0, idtype)))
            return _op.Select(_op.less(const(0, idtype), j), updates[src], data[idx])
        return te.compute(data.shape, fupdate, name=names[2])

    identity = {"add": const(0, data.dtype), "mul": const(1, data.dtype),
                "max": _op.min_value(data.dtype), "min": _op.max_value(data.dtype)}[reduction]
    reducer = {"add": te.sum, "max": te.max, "min": te.min}.get(reduction) or te.comm_reducer(
        lambda x, y: _op.mul(x, y), lambda dtype: const(1, dtype), name="prod")

    def facc(*idx: Any) -> PrimExpr:
        r = te.reduce_axis((0, extent), "j")
        match, src = hits(idx, r.var)
        return reducer(_op.Select(match, updates[src], identity), axis=[r])
    acc = te.compute(data.shape, facc, name=names[1])
    combine = {"add": _op.add, "mul": _op.mul, "max": _op.max, "min": _op.min}[reduction]
    return te.compute(data.shape, lambda *idx: combine(data[idx], acc[idx]), name=names[2])


def scatter_nd(data: te.Tensor, indices: te.Tensor, updates: te.Tensor, mode: str = "update") -> te.Tensor:
    """``data`` with ``updates[j]`` written (or added / multiplied / maxed / mined) at
    ``data[indices[:, j]]``, TVM's layout: ``indices`` is ``(K, M...)``, ``updates`` is
    ``(M..., data.shape[K:])``.  Written as a reduction over the ``M`` index positions (where
    two positions collide, ``update`` keeps the last, as a sequential loop would)."""
    if mode not in ("update", "add", "mul", "max", "min"):
        raise ValueError(f"topi.scatter_nd: mode must be update, add, mul, max or min, got {mode!r}")
    k_dim = indices.shape[0]
    if not isinstance(k_dim, IntImm) and not isinstance(k_dim, int):
        raise ValueError(f"topi.scatter_nd: the index length (indices.shape[0]) must be constant, got {k_dim}")
    k_dim = int(k_dim.value if isinstance(k_dim, IntImm) else k_dim)
    if k_dim > data.ndim:
        raise ValueError(f"topi.scatter_nd: indices address {k_dim} axes but data has {data.ndim}")
    m_shape = list(indices.shape[1:])
    count = prod(m_shape)
    idtype = count.dtype

    def hits(idx: tuple, j: Any) -> tuple:
        pos = unravel_index(j, m_shape)
        conds = [_op.equal(_op.cast(indices[(const(k, idtype), *pos)], idtype), _op.cast(idx[k], idtype))
                 for k in range(k_dim)]
        return (te.all(*conds) if conds else const(True, "bool")), tuple(pos) + tuple(idx[k_dim:])

    return _scatter(data, updates, count, idtype, hits, mode, ("T_scatter_nd_last", "T_scatter_nd_acc", "T_scatter_nd"))
