"""Data movement: transpose, reshape, expand/squeeze dims, concatenate, split, slices,
take, arange (``topi.transpose(A, [1, 0])``)."""

from __future__ import annotations

from typing import Any, Sequence

from .. import te
from ..arith import Analyzer
from ..ir.structural import structural_equal
from ..tir import op as _op
from ..tir.expr import IntImm, Mul, PrimExpr, const, convert
from ..tir.expr import Var as TirVar
from .utils import as_expr, const_int, normalize_axes, prod, unravel_index

__all__ = ["transpose", "reshape", "flatten", "expand_dims", "squeeze", "concatenate", "split", "split_pieces",
           "strided_slice", "take", "arange", "trilu", "repeat", "tile", "flip"]


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
    # Python ints take the index dtype of the data's shape (int64 under Relax, maybe int32 in TE)
    index_dtype = a.shape[0].dtype if a.ndim else "int64"
    newshape = [const(d, index_dtype) if isinstance(d, int) else convert(d) for d in newshape]
    holes = [k for k, d in enumerate(newshape) if const_int(d) == -1]
    if len(holes) > 1:
        raise ValueError(f"topi.reshape: the new shape {newshape} has more than one -1")
    if holes:
        rest = prod([d for k, d in enumerate(newshape) if k != holes[0]])
        newshape[holes[0]] = _op.floordiv(prod(a.shape), rest)
    def fcompute(*idx: Any) -> PrimExpr:
        return a[tuple(_unravel_simplified(_ravel_simplified(idx, newshape), a.shape))]

    return te.compute(newshape, fcompute, name="T_reshape")


def _ravel_simplified(idx: Sequence[Any], shape: Sequence[Any]) -> PrimExpr:
    """The row-major offset of ``idx``, simplified; a product dimension multiplies factor by
    factor (``i * b * 2`` for a dimension ``b * 2``), the canonical form TVM prints."""

    def factors(d: Any) -> list:
        return factors(d.a) + factors(d.b) if isinstance(d, Mul) else [d]

    flat: Any = None
    for i, d in zip(idx, shape):
        if flat is None:
            flat = i
            continue
        for f in factors(d):
            flat = _op.mul(flat, f)
        flat = _op.add(flat, i)
    return const(0, "int64") if flat is None else Analyzer().simplify(flat)


def _simplify(e: PrimExpr) -> PrimExpr:
    return Analyzer().simplify(e)


def _unravel_simplified(flat: PrimExpr, shape: Sequence[Any]) -> list[PrimExpr]:
    """The indices of the row-major offset ``flat`` in ``shape``, in the form TVM's kernels
    have: for constant shapes the simplifier's ``flat % (s * n) // s`` (stride ``s``, size
    ``n``; ``flat % n`` for the last, 0 for a size-1 dimension), for symbolic ones the plain
    ``flat // c // b % a``."""
    if not all(const_int(d) is not None for d in shape):
        return unravel_index(flat, shape)
    out: list[PrimExpr] = []
    stride = 1
    for d in reversed(list(shape)):
        n = const_int(d)
        if n == 1:
            out.append(const(0, flat.dtype))
        elif stride == 1:  # (simplified: a multiple of n in flat drops out of flat % n)
            out.append(_simplify(_op.floormod(flat, d)))
        else:
            out.append(_op.floordiv(_op.floormod(flat, const(n * stride, flat.dtype)), const(stride, flat.dtype)))
        stride *= n
    return list(reversed(out))


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
        # TVM's form: the first tensor is the default; from the last one down, each claims
        # the indices from its offset on (a symbolic offset is subtracted size by size and
        # tested as 0 <= i - b0 - b1, a constant one as 5 <= i)
        def position(k: int) -> PrimExpr:
            sizes = [t.shape[axis] for t in tensors[:k]]
            if all(const_int(d) is not None for d in sizes):
                return _op.sub(idx[axis], const(sum(const_int(d) for d in sizes), idx[axis].dtype))
            out = idx[axis]
            for d in sizes:
                out = _op.sub(out, d)
            return out

        def read(k: int) -> PrimExpr:
            src = list(idx)
            if k:
                src[axis] = position(k)
            return tensors[k][tuple(src)]

        value = read(0)
        for k in range(1, len(tensors)):
            off = const_int(offsets[k])
            cond = (_op.less_equal(const(off, idx[axis].dtype), idx[axis]) if off is not None
                    else _op.less_equal(const(0, idx[axis].dtype), position(k)))
            value = _op.if_then_else(cond, read(k), value)
        return value

    return te.compute(shape, fcompute, name="T_concat")


def slice_extent(dim: Any, begin: Any, end: Any, stride: int, assume_inbound: bool) -> tuple | None:
    """(start, length) of ``begin:end:stride`` along an axis of length ``dim``, or None
    when that needs a symbolic clamp: constants follow Python's slicing, a symbolic axis is
    sliced whole (0 to its own length) or, with ``assume_inbound``, between constant bounds."""
    n, b, e = const_int(dim), _int_or_none(begin), _int_or_none(end)
    if n is not None and b is not None and e is not None:
        start, stop, step = slice(b, e, stride).indices(n)
        return const(start, "int64"), const(len(range(start, stop, step)), "int64")
    if stride == 1 and b == 0 and not isinstance(end, int) and structural_equal(end, dim):
        return const(0, "int64"), dim
    if assume_inbound and b is not None and e is not None:
        return const(b, "int64"), const(len(range(b, e, stride)), "int64")
    return None


def slice_length(dim: PrimExpr, begin: Any, end: Any, stride: int, assume_inbound: bool) -> PrimExpr:
    """The length of ``begin:end:stride`` along an axis of length ``dim`` as a symbolic
    expression (TVM's ``topi::GetLength``): in-bound bounds give ``ceildiv(end - begin,
    stride)``; otherwise each bound is first wrapped (a negative one counts from the end) and
    clamped into the axis."""
    b, e = (convert(v) if isinstance(v, int) else v for v in (begin, end))
    b, e = (_op.cast(v, "int64") if v.dtype != "int64" else v for v in (b, e))
    if assume_inbound:
        return _op.ceildiv(e - b, const(stride, "int64"))
    b, e = (_canonical_index(v, dim, stride) for v in (b, e))
    if stride < 0:
        return _op.ceildiv(b - e, const(-stride, "int64"))
    return _op.ceildiv(e - b, const(stride, "int64"))


def _canonical_index(index: PrimExpr, dim: PrimExpr, stride: int) -> PrimExpr:
    if isinstance(index, TirVar) and isinstance(dim, TirVar) and index.name == dim.name:
        return index  # the axis's own length (x[1:n] of an axis of n): already in range
    low, high = (const(-1, "int64"), dim - 1) if stride < 0 else (const(0, "int64"), dim)
    if not (isinstance(index, IntImm) and index.value >= 0):
        index = _op.if_then_else(index < 0, index + dim, index)
    return _op.min(_op.max(index, low), high)


def _int_or_none(v: Any) -> int | None:
    if isinstance(v, int):
        return v
    return v.value if isinstance(v, IntImm) else None


def strided_slice(a: te.Tensor, begin: Sequence[Any], end: Sequence[Any],
                  strides: Sequence[int] | None = None, axes: Sequence[int] | None = None,
                  assume_inbound: bool = False) -> te.Tensor:
    """``a[begin:end:strides]`` along ``axes`` (default: the first len(begin) axes), with
    numpy's clamping of out-of-range bounds.  A symbolic axis is sliced whole (0 to its
    length) or, with ``assume_inbound``, between constant bounds."""
    explicit_axes = axes is not None
    axes = list(range(len(begin))) if axes is None else [int(x) % a.ndim for x in axes]
    strides = [1] * len(axes) if strides is None else list(strides)
    shape = list(a.shape)
    starts = [const(0, d.dtype) for d in a.shape]
    steps = [1] * a.ndim
    dynamic = False
    for ax, b, e, s in zip(axes, begin, end, strides):
        found = slice_extent(a.shape[ax], b, e, int(s), assume_inbound)
        if found is None:
            raise ValueError(f"topi.strided_slice: cannot slice axis {ax} of length {a.shape[ax]} from {b} to {e}")
        starts[ax], shape[ax] = found
        steps[ax] = int(s)
        dynamic |= const_int(a.shape[ax]) is None and assume_inbound
    if dynamic:
        name = "T_dynamic_strided_slice_with_axes"
    else:
        name = "T_strided_slice_with_axes" if explicit_axes else "T_strided_slice"

    def position(k: int, i: PrimExpr) -> PrimExpr:
        # TVM's forms: i, i + start, i * step + start, start - i * |step|
        start, step = starts[k], steps[k]
        if step < 0:
            return _op.sub(start, _op.mul(i, const(-step, i.dtype)))
        scaled = i if step == 1 else _op.mul(i, const(step, i.dtype))
        return scaled if const_int(start) == 0 else _op.add(scaled, start)

    def fcompute(*idx: Any) -> PrimExpr:
        return a[tuple(position(k, i) for k, i in enumerate(idx))]

    return te.compute(shape, fcompute, name=name)


def split_pieces(n: int, indices_or_sections: int | Sequence[int]) -> list[tuple[int, int]]:
    """Each piece's (begin, length) when an axis of length ``n`` is split, as TVM splits it:
    ``sections`` pieces of ``ceil(n / sections)`` (the last what remains, maybe nothing), or cut
    at indices clamped to [0, n] (a piece between two out-of-order indices is empty)."""
    if isinstance(indices_or_sections, int):
        size = -(-n // indices_or_sections)
        return [(k * size, max(0, min(size, n - k * size))) for k in range(indices_or_sections)]
    cuts = [0, *(min(max(int(c), 0), n) for c in indices_or_sections), n]
    return [(b, max(0, e - b)) for b, e in zip(cuts, cuts[1:])]


def split(a: te.Tensor, indices_or_sections: int | Sequence[int], axis: int = 0) -> list[te.Tensor]:
    """``a`` cut along ``axis`` into sections of ``ceil(n / sections)`` (an int; the last
    takes what remains; a symbolic length is assumed to divide) or at the given constant
    indices (each piece the Python slice between two of them)."""
    axis = normalize_axes(axis, a.ndim, "topi.split")[0]
    dim = a.shape[axis]
    n = const_int(dim)
    prefix = "T_split_sections" if isinstance(indices_or_sections, int) else "T_split"
    if n is not None:
        pieces = [(const(b, dim.dtype), const(length, dim.dtype))
                  for b, length in split_pieces(n, indices_or_sections)]
    elif isinstance(indices_or_sections, int):
        size_e = _op.floordiv(dim, indices_or_sections)
        pieces = [(_op.mul(size_e, k), size_e) for k in range(indices_or_sections)]
    else:
        raise ValueError(f"topi.split: splitting the symbolic axis {axis} at indices needs a constant length")
    outs = []
    for k, (begin, length) in enumerate(pieces):
        shape = list(a.shape)
        shape[axis] = length

        def fcompute(*idx: Any, begin: PrimExpr = begin) -> PrimExpr:
            src = list(idx)
            if const_int(begin) != 0:  # TVM's kernels read x[i + begin] (x[i] for the first piece)
                src[axis] = _op.add(idx[axis], begin)
            return a[tuple(src)]

        outs.append(te.compute(shape, fcompute, name=f"{prefix}_{k}" if k else prefix))
    return outs


def take(a: te.Tensor, indices: Any, axis: int | None = None, mode: str = "fast") -> te.Tensor:
    """Elements of ``a`` at ``indices`` (a tensor, or one scalar index) along ``axis``
    (None: of the flattened ``a``).  An out-of-range index is undefined in "fast" mode (the
    default, TVM's), clamped in "clip" mode, wrapped (negatives from the end) in "wrap"."""
    if mode not in ("fast", "clip", "wrap"):
        raise ValueError(f"topi.take: mode must be fast, clip or wrap, got {mode!r}")
    if axis is None:
        a = reshape(a, [prod(a.shape)])
        axis = 0
    axis = normalize_axes(axis, a.ndim, "topi.take")[0]
    dim = a.shape[axis]
    scalar = not isinstance(indices, te.Tensor)
    ishape = [] if scalar else list(indices.shape)
    shape = list(a.shape[:axis]) + ishape + list(a.shape[axis + 1:])
    m = len(ishape)

    def fcompute(*idx: Any) -> PrimExpr:
        i = convert(indices) if scalar else indices[tuple(idx[axis:axis + m])]
        if mode == "wrap":
            i = _op.floormod(_op.cast(i, dim.dtype), dim)
        elif mode == "clip":
            i = _op.min(_op.max(_op.cast(i, dim.dtype), const(0, dim.dtype)), _op.sub(dim, const(1, dim.dtype)))
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


def repeat(a: te.Tensor, repeats: int, axis: int) -> te.Tensor:
    """Each element of ``a`` repeated ``repeats`` times along ``axis`` (numpy.repeat)."""
    if int(repeats) < 1:
        raise ValueError(f"topi.repeat: repeats must be positive, got {repeats}")
    axis = normalize_axes(axis, a.ndim, "topi.repeat")[0]
    reps = const(int(repeats), a.shape[axis].dtype)
    shape = list(a.shape)
    shape[axis] = _fold_mul(reps, shape[axis])

    def fcompute(*idx: Any) -> PrimExpr:
        src = list(idx)
        src[axis] = _op.floordiv(idx[axis], reps)
        return a[tuple(src)]

    return te.compute(shape, fcompute, name="T_repeat")


def _fold_mul(x: Any, y: Any) -> PrimExpr:
    cx, cy = const_int(x), const_int(y)
    if cx is not None and cy is not None:
        return const(cx * cy, "int64")
    return _op.mul(x, y)


def tile(a: te.Tensor, reps: Sequence[int]) -> te.Tensor:
    """``a`` repeated ``reps[k]`` times along each dimension (numpy.tile: the shorter of
    ``reps`` and the shape is padded with 1s in front)."""
    reps = [int(r) for r in reps]
    if any(r < 1 for r in reps):
        raise ValueError(f"topi.tile: repeats must be positive, got {reps}")
    ndim = max(a.ndim, len(reps))
    reps = [1] * (ndim - len(reps)) + reps
    offset = ndim - a.ndim
    dims = [const(1, "int64")] * offset + list(a.shape)
    shape = [_fold_mul(d, const(r, "int64")) if r != 1 else d for d, r in zip(dims, reps)]

    def fcompute(*idx: Any) -> PrimExpr:
        return a[tuple(_op.floormod(idx[offset + k], a.shape[k]) for k in range(a.ndim))]

    return te.compute(shape, fcompute, name="T_tile")


def flip(a: te.Tensor, axis: int = 0) -> te.Tensor:
    """``a`` with the order of ``axis`` reversed."""
    axis = normalize_axes(axis, a.ndim, "topi.flip")[0]
    n = a.shape[axis]

    def fcompute(*idx: Any) -> PrimExpr:
        src = list(idx)
        i = idx[axis]
        cn = const_int(n)
        # TVM's kernels read x[n - 1 - i] as (n - 1) - i for a constant n, n - i - 1 otherwise
        src[axis] = _op.sub(const(cn - 1, i.dtype), i) if cn is not None else _op.sub(_op.sub(n, i), const(1, i.dtype))
        return a[tuple(src)]

    return te.compute(a.shape, fcompute, name="T_reverse_sequence")


def _canonical_bound(index: PrimExpr, extent: PrimExpr, stride: PrimExpr) -> PrimExpr:
    """A run-time slice bound counted from the start and clamped as numpy does: into
    [0, extent] for a positive stride, [-1, extent - 1] for a negative one."""
    zero, one = const(0, "int64"), const(1, "int64")
    extent = _op.cast(extent, "int64")
    negative = _op.less(stride, zero)
    index = _op.Select(_op.less(index, zero), _op.add(index, extent), index)
    low = _op.Select(negative, const(-1, "int64"), zero)
    high = _op.Select(negative, _op.sub(extent, one), extent)
    return _op.min(_op.max(index, low), high)


def dynamic_strided_slice_shape(data: te.Tensor, begin: te.Tensor, end: te.Tensor, strides: te.Tensor) -> te.Tensor:
    """The extents of ``data[begin:end:strides]`` (all three 1-d int64 tensors, one value per
    axis), computed at run time: the shape function of ``dynamic_strided_slice``."""
    def fcompute(i: PrimExpr) -> PrimExpr:
        extent = const(-1, "int64")
        for k in range(data.ndim):
            extent = _op.Select(_op.equal(i, const(k, i.dtype)), _op.cast(data.shape[k], "int64"), extent)
        s = strides[i]
        b, e = _canonical_bound(begin[i], extent, s), _canonical_bound(end[i], extent, s)
        forward = _op.ceildiv(_op.sub(e, b), s)
        backward = _op.ceildiv(_op.sub(b, e), _op.neg(s))
        return _op.max(_op.Select(_op.less(s, const(0, "int64")), backward, forward), const(0, "int64"))
    return te.compute((begin.shape[0],), fcompute, name="T_shape_func_strided_slice_dynamic")


def dynamic_strided_slice(a: te.Tensor, begin: te.Tensor, end: te.Tensor, strides: te.Tensor,
                          output_shape: Sequence[Any]) -> te.Tensor:
    """``a[begin:end:strides]`` with the bounds in 1-d int64 tensors read at run time; the
    output's extents (``output_shape``, symbolic) come from ``dynamic_strided_slice_shape``."""
    if len(output_shape) != a.ndim:
        raise ValueError(f"topi.dynamic_strided_slice: output_shape has {len(output_shape)} extents "
                         f"but the data has {a.ndim} axes")

    def fcompute(*idx: Any) -> PrimExpr:
        src = []
        for k, i in enumerate(idx):
            kk = const(k, "int64")
            start = _canonical_bound(begin[kk], a.shape[k], strides[kk])
            src.append(_op.add(start, _op.mul(_op.cast(i, "int64"), strides[kk])))
        return a[tuple(src)]

    return te.compute(list(output_shape), fcompute, name="T_strided_slice_dynamic")
