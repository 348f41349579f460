"""Data movement: transpose, reshape, expand/squeeze dims, concatenate, split, slices,
take, arange (``topi.transpose(A, [1, 0])``)."""

from __future__ import annotations

from typing import Any, Sequence

from .. import te
from ..tir import op as _op
from ..tir.expr import IntImm, PrimExpr, const, convert
from .utils import as_expr, const_int, normalize_axes, prod, ravel_index, unravel_index

__all__ = ["transpose", "reshape", "flatten", "expand_dims", "squeeze", "concatenate", "split",
           "strided_slice", "take", "arange", "trilu"]


def transpose(a: te.Tensor, axes: Sequence[int] | None = None) -> te.Tensor:
    """``a`` with its dimensions permuted: output dimension k is input dimension axes[k]
    (None: reversed)."""
    axes = list(reversed(range(a.ndim))) if axes is None else [int(x) % max(a.ndim, 1) for x in axes]
    if sorted(axes) != list(range(a.ndim)):
        raise ValueError(f"topi.transpose: axes {axes} are not a permutation of {a.ndim} dimensions")

    def fcompute(*idx: Any) -> PrimExpr:
        src = [None] * a.ndim
        for k, ax in enumerate(axes):
            src[ax] = idx[k]
        return a[tuple(src)]

    return te.compute([a.shape[ax] for ax in axes], fcompute, name="T_transpose")


def reshape(a: te.Tensor, newshape: Sequence[Any]) -> te.Tensor:
    """``a``'s elements in row-major order, in ``newshape`` (one -1 is inferred)."""
    newshape = [convert(d) for d in newshape]
    holes = [k for k, d in enumerate(newshape) if const_int(d) == -1]
    if len(holes) > 1:
        raise ValueError(f"topi.reshape: the new shape {newshape} has more than one -1")
    if holes:
        rest = prod([d for k, d in enumerate(newshape) if k != holes[0]])
        newshape[holes[0]] = _op.floordiv(prod(a.shape), rest)
    return te.compute(newshape, lambda *idx: a[tuple(unravel_index(ravel_index(idx, newshape), a.shape))],
                      name="T_reshape")


def flatten(data: te.Tensor) -> te.Tensor:
    """``(N, d1, d2 ...)`` to ``(N, d1 * d2 * ...)``."""
    return reshape(data, [data.shape[0], prod(data.shape[1:])])


def expand_dims(a: te.Tensor, axis: int | Sequence[int], num_newaxis: int = 1) -> te.Tensor:
    """``a`` with new dimensions of size 1: at ``axis`` (an int, ``num_newaxis`` of them) or
    at each position of the output listed in ``axis``."""
    if isinstance(axis, int):
        start = axis % (a.ndim + 1)
        positions = list(range(start, start + num_newaxis))
    else:
        out_ndim = a.ndim + len(axis)
        positions = normalize_axes(axis, out_ndim, "topi.expand_dims")
    out_ndim = a.ndim + len(positions)
    shape, src = [], iter(a.shape)
    for k in range(out_ndim):
        shape.append(const(1, "int64") if k in positions else next(src))

    def fcompute(*idx: Any) -> PrimExpr:
        return a[tuple(i for k, i in enumerate(idx) if k not in positions)]

    return te.compute(shape, fcompute, name="T_expand_dims")


def squeeze(a: te.Tensor, axis: Sequence[int] | int | None = None) -> te.Tensor:
    """``a`` without its dimensions of size 1 (all of them, or those in ``axis``)."""
    if axis is None:
        axes = [k for k, d in enumerate(a.shape) if const_int(d) == 1]
    else:
        axes = normalize_axes(axis, a.ndim, "topi.squeeze")
    shape = [d for k, d in enumerate(a.shape) if k not in axes]

    def fcompute(*idx: Any) -> PrimExpr:
        it = iter(idx)
        return a[tuple(const(0, d.dtype) if k in axes else next(it) for k, d in enumerate(a.shape))]

    return te.compute(shape, fcompute, name="T_squeeze")


def concatenate(tensors: Sequence[te.Tensor], axis: int = 0) -> te.Tensor:
    """The tensors joined along ``axis`` (other dimensions equal)."""
    tensors = list(tensors)
    if not tensors:
        raise ValueError("topi.concatenate: no tensors given")
    ndim = tensors[0].ndim
    axis = normalize_axes(axis, ndim, "topi.concatenate")[0]
    offsets = [const(0, "int64")]
    for t in tensors:
        offsets.append(_op.add(offsets[-1], t.shape[axis]))
    shape = list(tensors[0].shape)
    shape[axis] = offsets[-1]

    def fcompute(*idx: Any) -> PrimExpr:
        # the last tensor is the default; each earlier one claims the indices below its end
        def read(k: int) -> PrimExpr:
            src = list(idx)
            src[axis] = _op.sub(idx[axis], offsets[k])
            return tensors[k][tuple(src)]
        value = read(len(tensors) - 1)
        for k in range(len(tensors) - 2, -1, -1):
            value = _op.if_then_else(_op.less(idx[axis], offsets[k + 1]), read(k), value)
        return value

    return te.compute(shape, fcompute, name="T_concat")


def strided_slice(a: te.Tensor, begin: Sequence[int], end: Sequence[int],
                  strides: Sequence[int] | None = None, axes: Sequence[int] | None = None) -> te.Tensor:
    """``a[begin:end:strides]`` along ``axes`` (default: the first len(begin) axes), with
    numpy's clamping of out-of-range bounds; constant dimensions only along sliced axes."""
    axes = list(range(len(begin))) if axes is None else [int(x) % a.ndim for x in axes]
    strides = [1] * len(axes) if strides is None else list(strides)
    shape = list(a.shape)
    starts = [const(0, d.dtype) for d in a.shape]
    steps = [1] * a.ndim
    for ax, b, e, s in zip(axes, begin, end, strides):
        dim = const_int(a.shape[ax])
        if dim is None:
            raise ValueError(f"topi.strided_slice: axis {ax} has symbolic length {a.shape[ax]}")
        start, stop, step = slice(int(b), int(e), int(s)).indices(dim)
        n = len(range(start, stop, step))
        shape[ax] = const(n, "int64")
        starts[ax] = const(start, "int64")
        steps[ax] = step

    def fcompute(*idx: Any) -> PrimExpr:
        return a[tuple(_op.add(starts[k], _op.mul(i, steps[k])) if steps[k] != 1 else _op.add(starts[k], i)
                       for k, i in enumerate(idx))]

    return te.compute(shape, fcompute, name="T_strided_slice")


def split(a: te.Tensor, indices_or_sections: int | Sequence[int], axis: int = 0) -> list[te.Tensor]:
    """``a`` cut along ``axis`` into equal sections (an int; a symbolic length is assumed
    to divide) or at the given constant indices."""
    axis = normalize_axes(axis, a.ndim, "topi.split")[0]
    dim = a.shape[axis]
    if isinstance(indices_or_sections, int):
        sections = indices_or_sections
        n = const_int(dim)
        if n is not None and n % sections:
            raise ValueError(f"topi.split: axis {axis} of length {n} does not split into "
                             f"{sections} equal sections")
        size = _op.floordiv(dim, sections)
        pieces = [(_op.mul(size, k), size) for k in range(sections)]
    else:
        cuts = [0, *(int(c) for c in indices_or_sections)]
        pieces = [(const(b, dim.dtype), const(e - b, dim.dtype)) for b, e in zip(cuts, cuts[1:])]
        pieces.append((const(cuts[-1], dim.dtype), _op.sub(dim, cuts[-1])))
    outs = []
    for k, (begin, length) in enumerate(pieces):
        shape = list(a.shape)
        shape[axis] = length

        def fcompute(*idx: Any, begin: PrimExpr = begin) -> PrimExpr:
            src = list(idx)
            src[axis] = _op.add(begin, idx[axis])
            return a[tuple(src)]

        outs.append(te.compute(shape, fcompute, name=f"T_split_{k}" if k else "T_split"))
    return outs


def take(a: te.Tensor, indices: te.Tensor, axis: int | None = None, mode: str = "clip") -> te.Tensor:
    """Elements of ``a`` at ``indices`` along ``axis`` (None: of the flattened ``a``);
    out-of-range indices are clipped ("clip") or wrapped ("wrap"); negative ones count
    from the end in "wrap" mode."""
    if axis is None:
        a = reshape(a, [prod(a.shape)])
        axis = 0
    axis = normalize_axes(axis, a.ndim, "topi.take")[0]
    dim = a.shape[axis]
    shape = list(a.shape[:axis]) + list(indices.shape) + list(a.shape[axis + 1:])
    m = indices.ndim

    def fcompute(*idx: Any) -> PrimExpr:
        i = _op.cast(indices[tuple(idx[axis:axis + m])], dim.dtype)
        if mode == "wrap":
            i = _op.floormod(i, dim)
        else:
            i = _op.min(_op.max(i, const(0, dim.dtype)), _op.sub(dim, const(1, dim.dtype)))
        return a[tuple(idx[:axis]) + (i,) + tuple(idx[axis + m:])]

    return te.compute(shape, fcompute, name="T_take")


def arange(start: Any, stop: Any = None, step: Any = 1, dtype: str = "float32") -> te.Tensor:
    """``start, start + step, ...`` below ``stop``; element ``i`` is ``i * step + start``.

    Constant bounds give a constant length; integer bounds may be symbolic (the length is
    then ``ceil((stop - start) / step)`` written as a floor division, simplified)."""
    if stop is None:
        start, stop = 0, start
    vals = [const_int(v) if isinstance(v, (int, IntImm)) else v for v in (start, stop, step)]
    if all(isinstance(v, (int, float)) for v in vals):
        import math
        length: Any = const(max(0, math.ceil((vals[1] - vals[0]) / vals[2])), "int64")
    else:
        exprs = [v if isinstance(v, PrimExpr) else const(v, "int64") for v in vals]
        if not all(e.dtype.startswith("int") for e in exprs):
            raise ValueError("topi.arange: symbolic start, stop and step must be integers")
        lo, hi, st = (_op.cast(e, "int64") for e in exprs)
        if const_int(st) is None or const_int(st) <= 0:
            raise ValueError("topi.arange: a symbolic range needs a constant positive step")
        from ..arith import Analyzer
        length = Analyzer().simplify(_op.floordiv(_op.sub(_op.add(_op.sub(hi, lo), st), const(1, "int64")), st))
    first = as_expr(vals[0], dtype)
    step_c = as_expr(vals[2], dtype)
    return te.compute([length], lambda i: _op.add(_op.mul(_op.cast(i, dtype), step_c), first), name="T_arange")

def trilu(data: te.Tensor, k: Any, upper: bool) -> te.Tensor:
    """``data`` with the elements below (``upper``) or above diagonal ``k`` of its last two
    dimensions set to 0."""
    if data.ndim < 2:
        raise ValueError(f"topi.trilu needs at least 2 dimensions, got shape {list(data.shape)}")
    def keep(row: PrimExpr, col: PrimExpr) -> PrimExpr:
        # the element is on diagonal col - row; the comparison is written in the
        # simplified form TVM's kernels print (col <= row + 1, row < col, col + 2 <= row)
        kc = const_int(k)
        if kc is None:
            off = _op.cast(convert(k), row.dtype)
            return _op.less_equal(_op.add(row, off), col) if upper else _op.less_equal(col, _op.add(row, off))
        shift = const(abs(kc), row.dtype)
        if upper:
            if kc == 1:
                return _op.less(row, col)
            return (_op.less_equal(row, col) if kc == 0 else _op.less_equal(_op.add(row, shift), col) if kc > 0
                    else _op.less_equal(row, _op.add(col, shift)))
        return (_op.less_equal(col, row) if kc == 0 else _op.less_equal(col, _op.add(row, shift)) if kc > 0
                else _op.less_equal(_op.add(col, shift), row))

    def fcompute(*idx: Any) -> PrimExpr:
        return _op.Select(keep(idx[-2], idx[-1]), data[idx], const(0, data.dtype))

    return te.compute(data.shape, fcompute, name="trilu")
