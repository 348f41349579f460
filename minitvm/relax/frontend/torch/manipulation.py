"""Shape and layout operators, tuple access and symbolic sizes."""

from __future__ import annotations

import operator
import sys

import numpy as np

from .... import tir
from ... import op as _op
from ...expr import TupleGetItem, const, struct_info_of
from ._common import arg_or, norm_dim


def permute(node, conv):
    return conv.bb.emit(_op.permute_dims(conv.arg(node.args[0]), [int(d) for d in node.args[1]]))


def t(node, conv):
    x = conv.arg(node.args[0])
    ndim = len(conv.shape_of(node.args[0]))
    return x if ndim < 2 else conv.bb.emit(_op.permute_dims(x, [1, 0]))


def transpose(node, conv):
    ndim = len(conv.shape_of(node.args[0]))
    axes = list(range(ndim))
    d0, d1 = int(node.args[1]) % ndim, int(node.args[2]) % ndim
    axes[d0], axes[d1] = axes[d1], axes[d0]
    return conv.bb.emit(_op.permute_dims(conv.arg(node.args[0]), axes))


def reshape_to_output(node, conv):
    """view / reshape / flatten / unsqueeze / squeeze: a reshape to the shape torch recorded
    for the result (so symbolic sizes need no arithmetic on the arguments)."""
    return conv.bb.emit(_op.reshape(conv.arg(node.args[0]), conv.shape_of(node)))


def unsqueeze(node, conv):
    """``x.unsqueeze(dim)``: ``expand_dims`` at torch's (possibly negative) axis, as TVM."""
    return conv.bb.emit(_op.expand_dims(conv.arg(node.args[0]), [int(arg_or(node, 1, "dim", 0))]))


def squeeze(node, conv):
    """``x.squeeze(dims)``: ``relax.squeeze`` of the listed axes as TVM emits it (a listed axis
    of another length stays, in both); a listed axis of symbolic length, which Relax would drop
    and torch keeps unless it is 1, takes a reshape to torch's recorded shape instead."""
    dims = arg_or(node, 1, "dim", None)
    shape = conv.shape_of(node.args[0])
    if dims is not None:
        dims = [int(dims)] if isinstance(dims, int) else [int(d) for d in dims]
    if any(not isinstance(shape[d], int) for d in (range(len(shape)) if dims is None else dims)):
        return reshape_to_output(node, conv)
    return conv.bb.emit(_op.squeeze(conv.arg(node.args[0]), dims))


def expand(node, conv):
    return conv.bb.emit(_op.broadcast_to(conv.arg(node.args[0]), conv.shape_of(node)))


def cat(node, conv):
    """``torch.cat(xs, dim)``; empty tensors (a 1-D ``(0,)`` one too, which torch allows beside
    any shape) add nothing and are left out."""
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
    ndim = len(conv.shape_of(node))
    xs = [a for a in node.args[0] if not any(isinstance(d, int) and d == 0 for d in conv.shape_of(a))]
    dtype = conv.dtype_of(node)
    parts = [conv.as_dtype(conv.arg(a), dtype) for a in xs]
    if len(parts) == 1:
        return parts[0]
    norm_dim(int(dim), max(ndim, 1), "aten.cat")  # (refuses an axis out of range)
    return conv.bb.emit(_op.concat(parts, axis=int(dim)))  # torch's axis, as TVM


def _split_at(conv, node, sizes, dim):
    """``x`` cut along ``dim`` into pieces of the given lengths (constants), as a list."""
    ndim = len(conv.shape_of(node.args[0]))
    dim = norm_dim(dim, ndim, str(node.target))
    cuts, total = [], 0
    for size in sizes[:-1]:
        total += int(size)
        cuts.append(total)
    out = conv.bb.emit(_op.split(conv.arg(node.args[0]), cuts if cuts else 1, axis=dim))
    return [conv.bb.emit(TupleGetItem(out, k)) for k in range(len(sizes))]


def split_with_sizes(node, conv):
    """``torch.split(x, [a, b, c], dim)``."""
    return _split_at(conv, node, list(node.args[1]), arg_or(node, 2, "dim", 0))


def _pieces_to_output(node, conv):
    """split / chunk with one size or a count: the piece lengths torch recorded."""
    dim = arg_or(node, 2, "dim", 0)
    ndim = len(conv.shape_of(node.args[0]))
    axis = norm_dim(dim, ndim, str(node.target))
    sizes = [conv._prim(v.shape[axis]) for v in node.meta["val"]]
    for size in sizes:
        if not isinstance(size, int):
            raise ValueError(f"from_exported_program: {node.target} along the symbolic dim {axis} is not supported")
    return _split_at(conv, node, sizes, axis)


def slice_tensor(node, conv):
    """``x[start:end:step]`` along ``dim``: TVM's strided slice of torch's bounds where they are
    constants, else a strided slice of the length torch recorded (``end`` may be symbolic; a
    slice of the whole axis is ``x`` itself)."""
    x = conv.arg(node.args[0])
    in_shape, out_shape = conv.shape_of(node.args[0]), conv.shape_of(node)
    dim = norm_dim(arg_or(node, 1, "dim", 0), len(in_shape), "aten.slice.Tensor")
    start = conv.arg(arg_or(node, 2, "start", None))
    start = 0 if start is None else start
    step = int(arg_or(node, 4, "step", 1))
    in_len, out_len = in_shape[dim], out_shape[dim]
    raw = _raw_slice(node, conv, x, start, step, out_len)
    if raw is not None:
        return raw
    if isinstance(start, int) and start == 0 and step == 1 and (
            out_len is in_len or (isinstance(out_len, int) and out_len == in_len)):
        return x
    if isinstance(start, int) and start < 0 and isinstance(in_len, int):
        start = max(start + in_len, 0)
    if not (isinstance(start, int) and start >= 0 and isinstance(out_len, int)):
        raise ValueError(f"from_exported_program: slicing dim {dim} of {node.args[0]} from {start} "
                         f"to a length of {out_len} is not supported (a constant start and length are)")
    end = start + (out_len - 1) * step + 1 if out_len else start
    return conv.bb.emit(_op.strided_slice(x, [dim], [start], [end], [step]))


def _raw_slice(node, conv, x, start, step, out_len):
    """TVM's form of a slice of constant bounds: ``strided_slice`` with torch's own axis, start
    and end (``sys.maxsize`` for none), a whole-axis slice included; None where Relax's clamping
    would not give the length torch recorded (then the caller works the bounds out)."""
    end = conv.arg(arg_or(node, 3, "end", None))
    end = sys.maxsize if end is None else end
    if not all(isinstance(v, int) for v in (start, end, out_len)):
        return None
    call = conv.bb.normalize(_op.strided_slice(x, [int(arg_or(node, 1, "dim", 0))], [start], [end], [step]))
    vals = struct_info_of(call).shape_values
    if vals is None or getattr(vals[int(arg_or(node, 1, "dim", 0))], "value", None) != out_len:
        return None
    return conv.bb.emit(call)


def select(node, conv):
    """``x.select(dim, i)`` (``x[:, i]``): a take of one index, which drops the dim."""
    shape = conv.shape_of(node.args[0])
    dim = norm_dim(node.args[1], len(shape), "aten.select.int")
    index = int(conv.arg(node.args[2]))
    if index < 0:
        if not isinstance(shape[dim], int):
            raise ValueError(f"from_exported_program: a negative index into the symbolic dim {dim} is not supported")
        index += shape[dim]
    return conv.bb.emit(_op.take(conv.arg(node.args[0]), const(np.array(index, "int64")), axis=dim))


def _wrapped(conv, index, size):
    """An index tensor as int64 with negatives counted from the end of a dim of ``size``."""
    index = conv.as_dtype(index, "int64")
    if isinstance(size, int):
        size = conv.scalar_of(size, "int64")
    else:
        return index
    return conv.bb.emit(_op.where(_op.less(index, conv.scalar_of(0, "int64")), _op.add(index, size), index))


def _advanced(node, conv, indices):
    """``x`` and the int64 flat index of torch's advanced indexing ``x[indices]`` (a list with
    None for the untouched dims): the indexed dims moved to the front when not adjacent and
    merged into one, so one ``take`` along ``axis`` reads every element.  Returns
    ``(x, flat, axis, permutation or None)``."""
    x = conv.arg(node.args[0])
    shape = conv.shape_of(node.args[0])
    used = [k for k, idx in enumerate(indices) if idx is not None]
    perm = None
    if used != list(range(used[0], used[-1] + 1)):  # torch puts the index dims first
        perm = used + [k for k in range(len(shape)) if k not in used]
        x = conv.bb.emit(_op.permute_dims(x, perm))
        shape = [shape[k] for k in perm]
        indices = [indices[k] for k in used] + [None] * (len(shape) - len(used))
        used = list(range(len(used)))
    first, m = used[0], len(used)
    dims = shape[first:first + m]
    flat = None
    stride = 1
    for k in reversed(range(m)):
        idx = _wrapped(conv, conv.arg(indices[first + k]), dims[k])
        term = idx if stride == 1 else _op.multiply(idx, conv.scalar_of(stride, "int64"))
        flat = term if flat is None else _op.add(term, flat)
        if k:
            stride = stride * dims[k] if isinstance(dims[k], int) and isinstance(stride, int) else None
            if stride is None:
                raise ValueError("from_exported_program: aten.index.Tensor over symbolic dims is not supported")
    flat = conv.bb.emit(flat) if m > 1 else flat
    if m > 1:
        size = 1
        for d in dims:
            size *= d
        x = conv.bb.emit(_op.reshape(x, list(shape[:first]) + [size] + list(shape[first + m:])))
    return x, flat, first, perm


def index_tensor(node, conv):
    """``x[i]``, ``x[:, i, j]``, ``x[i, :, j]``: torch's advanced indexing by integer tensors
    (broadcast together; negatives count from the end), as one ``take``."""
    x, flat, axis, _ = _advanced(node, conv, list(node.args[1]))
    return conv.bb.emit(_op.take(x, flat, axis=axis))


def _check_index(node, conv):
    indices = list(node.args[1])
    for idx in indices:
        if idx is not None and conv.dtype_of(idx) == "bool":
            return "indexing with a bool mask (a result shape that depends on the data) is not supported"
    return None


def index_put(node, conv):
    """``x[indices] = values`` (``accumulate``: ``+=``): by integer tensors as a scatter into the
    merged index dims, or by one bool mask as a ``where``."""
    x0 = conv.arg(node.args[0])
    indices = list(node.args[1])
    values = conv.as_dtype(conv.arg(node.args[2]), conv.dtype_of(node))
    accumulate = bool(arg_or(node, 3, "accumulate", False))
    shape = conv.shape_of(node.args[0])
    used = [k for k, idx in enumerate(indices) if idx is not None]
    if len(used) == 1 and conv.dtype_of(indices[used[0]]) == "bool":
        return _masked_put(conv, node, x0, indices[used[0]], used[0], values, accumulate)
    x, flat, axis, perm = _advanced(node, conv, indices)
    xshape = struct_info_of(x).shape_values
    ishape = struct_info_of(flat).shape_values
    count = 1
    for d in ishape:
        count *= int(d)
    target = list(xshape[:axis]) + list(ishape) + list(xshape[axis + 1:])
    values = _op.broadcast_to(values, target)
    flat_shape = list(xshape[:axis]) + [count] + list(xshape[axis + 1:])
    values = conv.bb.emit(_op.reshape(values, flat_shape))
    where = _op.reshape(flat, [1] * axis + [count] + [1] * (len(xshape) - axis - 1))
    where = conv.bb.emit(_op.broadcast_to(where, flat_shape))
    out = conv.bb.emit(_op.scatter_elements(x, where, values, axis=axis,
                                            reduction="add" if accumulate else "update"))
    if struct_info_of(out).shape_values is not None and len(xshape) != len(shape) or perm is not None:
        pshape = [shape[k] for k in perm] if perm is not None else list(shape)
        out = conv.bb.emit(_op.reshape(out, pshape))
        if perm is not None:
            inverse = [perm.index(k) for k in range(len(perm))]
            out = conv.bb.emit(_op.permute_dims(out, inverse))
    return out


def _masked_put(conv, node, x, mask_node, first, values, accumulate):
    """``x[mask] = values``: the k-th true position of the mask (counted by a running sum)
    takes ``values[k]``; a single value goes everywhere the mask is true."""
    shape = conv.shape_of(node.args[0])
    mshape = conv.shape_of(mask_node)
    if first != 0:
        raise ValueError("from_exported_program: index_put with a bool mask after other dims is not supported")
    mask = conv.arg(mask_node)
    k = len(mshape)
    rest = list(shape[k:])
    vshape = struct_info_of(values).shape_values
    count = 1
    for d in mshape:
        count *= d
    mask_b = conv.bb.emit(_op.reshape(mask, list(mshape) + [1] * len(rest)))
    if vshape is None or len(vshape) <= len(rest) or int(vshape[0]) == 1 and len(vshape) == len(rest) + 1:
        put = conv.bb.emit(_op.broadcast_to(values, shape))  # one value (per trailing position) for all
    else:
        flat_mask = _op.astype(_op.reshape(mask, [count]), "int64")
        pos = conv.bb.emit(_op.subtract(_op.cumsum(flat_mask, axis=0), conv.scalar_of(1, "int64")))
        pos = conv.bb.emit(_op.maximum(pos, conv.scalar_of(0, "int64")))
        values = conv.bb.emit(_op.broadcast_to(values, [vshape[0]] + rest))
        put = conv.bb.emit(_op.reshape(_op.take(values, pos, axis=0), shape))
    if accumulate:
        return conv.bb.emit(_op.where(mask_b, _op.add(x, put), x))
    return conv.bb.emit(_op.where(mask_b, put, x))


def gather(node, conv):
    """``torch.gather(x, dim, index)``."""
    ndim = len(conv.shape_of(node.args[0]))
    norm_dim(node.args[1], max(ndim, 1), "aten.gather")  # (refuses an axis out of range)
    x, index = conv.arg(node.args[0]), conv.arg(node.args[2])
    if ndim == 0:
        return x
    return conv.bb.emit(_op.gather_elements(x, index, axis=int(node.args[1])))  # torch's axis, as TVM


def take_along_dim(node, conv):
    """``torch.take_along_dim(x, index, dim)``: a gather after broadcasting ``x`` and ``index``
    to each other except along ``dim`` (no dim: of the flattened x)."""
    dim = arg_or(node, 2, "dim", None)
    x, index = conv.arg(node.args[0]), conv.arg(node.args[1])
    if dim is None:
        return conv.bb.emit(_op.take(_op.reshape(x, [-1]), _op.reshape(index, [-1]), axis=0))
    xs, ishape = conv.shape_of(node.args[0]), conv.shape_of(node.args[1])
    dim = norm_dim(dim, len(xs), "aten.take_along_dim")
    out = conv.shape_of(node)
    xt, it = list(out), list(out)
    xt[dim], it[dim] = xs[dim], ishape[dim]
    x = conv.bb.emit(_op.broadcast_to(x, xt))
    index = conv.bb.emit(_op.broadcast_to(index, it))
    return conv.bb.emit(_op.gather_elements(x, _wrapped(conv, index, xs[dim]), axis=dim))


def _scatter(reduction: str | None):
    """scatter (a tensor or a number of source) / scatter_add / scatter_reduce (sum, prod,
    amax, amin; ``include_self`` only)."""
    def convert(node, conv):
        x = conv.arg(node.args[0])
        ndim = len(conv.shape_of(node.args[0]))
        dim = norm_dim(node.args[1], max(ndim, 1), str(node.target))
        index = conv.arg(node.args[2])
        src = conv.arg(node.args[3])
        mode = reduction
        if mode is None:  # scatter_reduce.two(x, dim, index, src, reduce, include_self=True)
            mode = {"sum": "add", "prod": "mul", "amax": "max", "amin": "min"}[node.args[4]]
        elif str(node.target).startswith("aten.scatter.") and arg_or(node, 4, "reduce", None) is not None:
            mode = {"add": "add", "multiply": "mul"}[arg_or(node, 4, "reduce", None)]
        src = conv.as_dtype(src, conv.dtype_of(node))
        if ndim == 0:
            x, index = conv.bb.emit(_op.reshape(x, [1])), conv.bb.emit(_op.reshape(index, [1]))
            if struct_info_of(src).ndim == 0:
                src = conv.bb.emit(_op.reshape(src, [1]))
        if struct_info_of(src).ndim == 0:
            src = conv.bb.emit(_op.broadcast_to(src, conv.shape_of(node.args[2]) or [1]))
        out = conv.bb.emit(_op.scatter_elements(x, index, src, axis=dim if ndim else 0, reduction=mode))
        return conv.bb.emit(_op.reshape(out, [])) if ndim == 0 else out
    return convert


def _is_number(a):
    return isinstance(a, (int, float, bool))


def _check_scatter_reduce(node, conv):
    if str(node.target) == "aten.scatter_reduce.two":
        if node.args[4] not in ("sum", "prod", "amax", "amin"):
            return f"scatter_reduce with reduce={node.args[4]!r} is not supported (sum, prod, amax, amin are)"
        if not node.kwargs.get("include_self", node.args[5] if len(node.args) > 5 else True):
            return "scatter_reduce with include_self=False is not supported"
    return None


def take(node, conv):
    """``torch.take(x, index)``: elements of the flattened ``x``."""
    x = conv.arg(node.args[0])
    size = 1
    for d in conv.shape_of(node.args[0]):
        size = size * d if isinstance(d, int) and isinstance(size, int) else None
    return conv.bb.emit(_op.take(x, _wrapped(conv, conv.arg(node.args[1]), size), axis=None))


def narrow(node, conv):
    """``x.narrow(dim, start, length)``."""
    shape = conv.shape_of(node.args[0])
    dim = norm_dim(node.args[1], len(shape), "aten.narrow")
    start = int(conv.arg(node.args[2]))
    if start < 0:
        start += shape[dim]
    length = int(conv.arg(node.args[3]))
    return conv.bb.emit(_op.strided_slice(conv.arg(node.args[0]), [dim], [start], [start + length]))


def roll(node, conv):
    """``torch.roll(x, shifts, dims)``: two slices swapped per dim (no dims: of the flattened x)."""
    x = conv.arg(node.args[0])
    shape = conv.shape_of(node.args[0])
    shifts = arg_or(node, 1, "shifts", 0)
    dims = arg_or(node, 2, "dims", [])
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    dims = [dims] if isinstance(dims, int) else list(dims)
    flat = not dims
    if flat:
        size = 1
        for d in shape:
            size *= d
        x, sizes, dims = conv.bb.emit(_op.reshape(x, [size])), [size], [0]
    else:
        sizes = [shape[norm_dim(d, len(shape), "aten.roll")] for d in dims]
        dims = [norm_dim(d, len(shape), "aten.roll") for d in dims]
    for shift, dim, n in zip(shifts, dims, sizes):
        if not n:
            continue
        k = int(shift) % n
        if k:
            tail = _op.strided_slice(x, [dim], [n - k], [n])
            head = _op.strided_slice(x, [dim], [0], [n - k])
            x = conv.bb.emit(_op.concat([tail, head], axis=dim))
    return conv.bb.emit(_op.reshape(x, shape)) if flat else x


def flip(node, conv):
    x = conv.arg(node.args[0])
    ndim = len(conv.shape_of(node.args[0]))
    for d in node.args[1]:
        x = conv.bb.emit(_op.flip(x, norm_dim(d, ndim, "aten.flip")))
    return x


def _diagonal_of(conv, x, shape, offset, dim1, dim2):
    """The diagonal of ``x`` over ``dim1``/``dim2`` as its last axis (torch.diagonal): those two
    axes moved last and flattened, then the diagonal's flat positions taken."""
    ndim = len(shape)
    d1, d2 = norm_dim(dim1, ndim, "aten.diagonal"), norm_dim(dim2, ndim, "aten.diagonal")
    if d1 == d2:
        raise ValueError(f"aten.diagonal: dim1 and dim2 are the same axis ({dim1}, {dim2})")
    n, m = shape[d1], shape[d2]
    if not isinstance(n, int) or not isinstance(m, int):
        raise NotImplementedError("aten.diagonal: the two axes need static sizes, got "
                                  f"{n} and {m}")
    rows = range(max(0, -offset), max(0, -offset) + max(0, min(n + min(offset, 0), m - max(offset, 0))))
    flat = np.array([r * m + r + offset for r in rows], dtype="int64")
    rest = [d for d in range(ndim) if d not in (d1, d2)]
    moved = conv.bb.emit(_op.permute_dims(x, rest + [d1, d2]))
    folded = conv.bb.emit(_op.reshape(moved, [shape[d] for d in rest] + [n * m]))
    return conv.bb.emit(_op.take(folded, const(flat), axis=len(rest)))


def diagonal(node, conv):
    """``torch.diagonal(x, offset, dim1, dim2)``: the diagonal as a new last axis."""
    return _diagonal_of(conv, conv.arg(node.args[0]), conv.shape_of(node.args[0]),
                        int(arg_or(node, 1, "offset", 0)), arg_or(node, 2, "dim1", 0), arg_or(node, 3, "dim2", 1))


def trace(node, conv):
    """``torch.trace(x)`` of a matrix: the sum of its diagonal, in the dtype torch sums in."""
    diag = _diagonal_of(conv, conv.arg(node.args[0]), conv.shape_of(node.args[0]), 0, 0, 1)
    return conv.bb.emit(_op.sum(conv.as_dtype(diag, conv.dtype_of(node))))


def broadcast_tensors(node, conv):
    """``torch.broadcast_tensors(*xs)``: each broadcast to the common shape torch recorded."""
    return [conv.bb.emit(_op.broadcast_to(conv.arg(x), [conv._prim(d) for d in v.shape]))
            for x, v in zip(node.args[0], node.meta["val"])]


def _flip_axis(axis: int):
    def convert(node, conv):
        return conv.bb.emit(_op.flip(conv.arg(node.args[0]), axis))
    return convert


def _trilu(fn):
    def convert(node, conv):
        return conv.bb.emit(fn(conv.arg(node.args[0]), int(arg_or(node, 1, "diagonal", 0))))
    return convert


def one_hot(node, conv):
    """``F.one_hot(x, num_classes)``: int64 ``x[..., None] == arange(num_classes)``."""
    classes = conv.shape_of(node)[-1]
    x = conv.arg(node.args[0])
    hot = _op.equal(_op.expand_dims(x, [-1]) if conv.shape_of(node.args[0]) else _op.reshape(x, [1]),
                    const(np.arange(classes, dtype=conv.dtype_of(node.args[0]))))
    return conv.bb.emit(_op.astype(hot, "int64"))


def _pad_pairs(pad, ndim):
    """torch's flat pad list (last dim first) as (before, after) per dim, first dim first."""
    pairs = [(0, 0)] * ndim
    for k in range(len(pad) // 2):
        pairs[ndim - 1 - k] = (int(pad[2 * k]), int(pad[2 * k + 1]))
    return pairs


def _pad_indices(n: int, before: int, after: int, mode: str) -> np.ndarray:
    """The source position of each output position of a reflect / replicate / circular pad
    (negative pads crop first, as torch's circular pad does)."""
    start, stop = max(-before, 0), n - max(-after, 0)
    if start or stop != n:
        return _pad_indices(stop - start, max(before, 0), max(after, 0), mode) + start
    i = np.arange(-before, n + after)
    if mode == "reflect":
        period = 2 * (n - 1)
        i = np.abs(i) % period if period else np.zeros_like(i)
        return np.where(i >= n, period - i, i).astype("int64")
    if mode == "replicate":
        return np.clip(i, 0, n - 1).astype("int64")
    return (i % n).astype("int64")  # circular


def _padded(conv, node, x, pad, mode: str, value=0.0):
    shape = conv.shape_of(node.args[0])
    pairs = _pad_pairs(pad, len(shape))
    if mode == "constant":
        grow = [(max(b, 0), max(a, 0)) for b, a in pairs]
        if any(b or a for b, a in grow):
            value = 0.0 if value is None else value
            x = conv.bb.emit(_op.nn.pad(x, [v for p in grow for v in p], pad_value=float(value)))
        for dim, (b, a) in enumerate(pairs):  # negative pads crop
            if b < 0 or a < 0:
                n = struct_info_of(x).shape_values[dim]
                x = conv.bb.emit(_op.strided_slice(x, [dim], [max(-b, 0)], [n - max(-a, 0)]))
        return x
    for dim, (b, a) in enumerate(pairs):
        if b or a:
            n = shape[dim]
            x = conv.bb.emit(_op.take(x, const(_pad_indices(n, b, a, mode)), axis=dim))
    return x


def constant_pad_nd(node, conv):
    return _padded(conv, node, conv.arg(node.args[0]), node.args[1], "constant", arg_or(node, 2, "value", 0.0))


def pad(node, conv):
    """``F.pad(x, pad, mode, value)``: constant, reflect, replicate or circular."""
    mode = arg_or(node, 2, "mode", "constant")
    return _padded(conv, node, conv.arg(node.args[0]), node.args[1], mode, arg_or(node, 3, "value", None))


def _mode_pad(mode: str):
    def convert(node, conv):
        return _padded(conv, node, conv.arg(node.args[0]), node.args[1], mode)
    return convert


def tile(node, conv):
    """``torch.tile(x, dims)``: fewer dims than ``x`` has are padded with leading ones."""
    reps = [int(r) for r in node.args[1]]
    ndim = len(conv.shape_of(node.args[0]))
    reps = [1] * (ndim - len(reps)) + reps
    x = conv.arg(node.args[0])
    if len(reps) > ndim:
        x = conv.bb.emit(_op.reshape(x, [1] * (len(reps) - ndim) + list(conv.shape_of(node.args[0]))))
    return conv.bb.emit(_op.tile(x, reps))


def repeat(node, conv):
    """``x.repeat(*sizes)`` (more sizes than dims add leading ones) as a tile."""
    reps = [int(r) for r in node.args[1]]
    x = conv.arg(node.args[0])
    shape = conv.shape_of(node.args[0])
    if len(reps) > len(shape):
        x = conv.bb.emit(_op.reshape(x, [1] * (len(reps) - len(shape)) + list(shape)))
    return conv.bb.emit(_op.tile(x, reps))


def repeat_interleave(node, conv):
    """``x.repeat_interleave(r, dim)`` with an int ``r`` (no dim: of the flattened x)."""
    dim = arg_or(node, 2, "dim", None)
    x = conv.arg(node.args[0])
    ndim = len(conv.shape_of(node.args[0]))
    axis = None if dim is None else norm_dim(dim, max(ndim, 1), "aten.repeat_interleave")
    return conv.bb.emit(_op.repeat(x, int(node.args[1]), axis=axis))


def unbind(node, conv):
    """``x.unbind(dim)``: the slices along ``dim``, that dim dropped."""
    shape = conv.shape_of(node.args[0])
    dim = norm_dim(arg_or(node, 1, "dim", 0), len(shape), "aten.unbind")
    n = shape[dim]
    if not isinstance(n, int):
        raise ValueError("from_exported_program: unbind along a symbolic dim is not supported")
    x = conv.arg(node.args[0])
    if n == 1:
        return [conv.bb.emit(_op.squeeze(x, [dim]))]
    parts = conv.bb.emit(_op.split(x, n, axis=dim))
    return [conv.bb.emit(_op.squeeze(TupleGetItem(parts, k), [dim])) for k in range(n)]


def meshgrid(node, conv):
    """``torch.meshgrid(*xs, indexing)``: each 1-D tensor broadcast along its own dim ("xy"
    swaps the first two)."""
    xs = list(node.args[0])
    indexing = node.kwargs.get("indexing", node.args[1] if len(node.args) > 1 else "ij")
    sizes = [(conv.shape_of(t) or [1])[0] for t in xs]
    axes = list(range(len(xs)))
    if indexing == "xy" and len(xs) > 1:
        axes[0], axes[1] = 1, 0
    out_shape = [None] * len(xs)
    for k, ax in enumerate(axes):
        out_shape[ax] = sizes[k]
    out = []
    for k, t in enumerate(xs):
        view = [1] * len(xs)
        view[axes[k]] = sizes[k]
        out.append(conv.bb.emit(_op.broadcast_to(_op.reshape(conv.arg(t), view), out_shape)))
    return out


def slice_scatter(node, conv):
    """``x`` with ``x[start:end:step]`` along ``dim`` replaced by ``src``."""
    shape = conv.shape_of(node.args[0])
    dim = norm_dim(arg_or(node, 2, "dim", 0), len(shape), str(node.target))
    n = shape[dim]
    start, end, step = (conv.arg(arg_or(node, k, name, d)) for k, name, d in
                        ((3, "start", None), (4, "end", None), (5, "step", 1)))
    positions = np.arange(*slice(start, end, step).indices(n), dtype="int64")
    return _scatter_positions(conv, node, dim, positions, conv.arg(node.args[1]))


def select_scatter(node, conv):
    """``x`` with ``x.select(dim, index)`` replaced by ``src``."""
    shape = conv.shape_of(node.args[0])
    dim = norm_dim(node.args[2], len(shape), "aten.select_scatter")
    index = int(node.args[3]) % shape[dim]
    src = conv.bb.emit(_op.expand_dims(conv.arg(node.args[1]), [dim]))
    return _scatter_positions(conv, node, dim, np.array([index], dtype="int64"), src)


def _scatter_positions(conv, node, dim, positions, src):
    shape = conv.shape_of(node.args[0])
    x = conv.arg(node.args[0])
    if len(positions) == 0:
        return x
    src_shape = list(shape)
    src_shape[dim] = len(positions)
    where = const(positions.reshape([len(positions)] + [1] * (len(shape) - dim - 1)))
    where = conv.bb.emit(_op.broadcast_to(where, src_shape))
    src = conv.as_dtype(src, conv.dtype_of(node))
    return conv.bb.emit(_op.scatter_elements(x, where, src, axis=dim))


def index_select(node, conv):
    ndim = len(conv.shape_of(node.args[0]))
    dim = norm_dim(node.args[1], ndim, "aten.index_select")
    return conv.bb.emit(_op.take(conv.arg(node.args[0]), conv.arg(node.args[2]), axis=dim))


def stack(node, conv):
    """``torch.stack(xs, dim)``: each tensor given a new axis, then joined along it."""
    xs = node.args[0]
    ndim = len(conv.shape_of(xs[0])) + 1
    dim = norm_dim(arg_or(node, 1, "dim", 0), ndim, "aten.stack")
    return conv.bb.emit(_op.concat([_op.expand_dims(conv.arg(x), dim) for x in xs], axis=dim))


def getitem(node, conv):
    src, index = conv.arg(node.args[0]), int(node.args[1])
    if isinstance(src, (tuple, list)):
        value = src[index]
        if value is None:
            raise ValueError(f"from_exported_program: output {index} of {node.args[0].target} is not supported "
                             "(only its first output is)")
        return value
    return conv.bb.emit(TupleGetItem(src, index))


def sym_size(node, conv):
    """``aten.sym_size.int``: the size as a tir expression (used by other converters' arguments)."""
    return conv.shape_of(node.args[0])[int(node.args[1])]


def _sym_arith(fn):
    """Python arithmetic on symbolic sizes (``operator.mul`` of two ``sym_size`` results ...)."""
    def convert(node, conv):
        return fn(*(conv.arg(a) for a in node.args))
    return convert


def no_op(node, conv):
    """Runtime assertions torch records about sizes: nothing to compute."""
    return None


CONVERTERS = {
    "aten.permute.default": permute,
    "aten.t.default": t,
    "aten.transpose.int": transpose,
    "aten.view.default": reshape_to_output,
    "aten.reshape.default": reshape_to_output,
    "aten._unsafe_view.default": reshape_to_output,
    "aten.flatten.using_ints": reshape_to_output,
    "aten.unsqueeze.default": unsqueeze,
    "aten.squeeze.dim": squeeze,
    "aten.squeeze.dims": squeeze,
    "aten.expand.default": expand,
    "aten.cat.default": cat,
    "aten.squeeze.default": squeeze,
    "aten.split_with_sizes.default": split_with_sizes,
    "aten.split.Tensor": _pieces_to_output,
    "aten.chunk.default": _pieces_to_output,
    "aten.slice.Tensor": slice_tensor,
    "aten.select.int": select,
    "aten.index.Tensor": index_tensor,
    "aten._unsafe_index.Tensor": index_tensor,
    "aten.index_put.default": index_put,
    "aten.index_put_.default": index_put,
    "aten._unsafe_index_put.default": index_put,
    "aten.gather.default": gather,
    "aten.take_along_dim.default": take_along_dim,
    "aten.scatter.src": _scatter("update"),
    "aten.scatter.value": _scatter("update"),
    "aten.scatter.reduce": _scatter("update"),
    "aten.scatter.value_reduce": _scatter("update"),
    "aten.scatter_add.default": _scatter("add"),
    "aten.scatter_reduce.two": _scatter(None),
    "aten.take.default": take,
    "aten.narrow.default": narrow,
    "aten.roll.default": roll,
    "aten.flip.default": flip,
    "aten.diagonal.default": diagonal,
    "aten.trace.default": trace,
    "aten.flipud.default": _flip_axis(0),
    "aten.fliplr.default": _flip_axis(1),
    "aten.broadcast_tensors.default": broadcast_tensors,
    "aten.expand_copy.default": expand,
    "aten.tril.default": _trilu(_op.tril),
    "aten.triu.default": _trilu(_op.triu),
    "aten.one_hot.default": one_hot,
    "aten.constant_pad_nd.default": constant_pad_nd,
    "aten.pad.default": pad,
    **{f"aten.{kind}_pad{d}d.default": _mode_pad(mode) for kind, mode in (
        ("reflection", "reflect"), ("replication", "replicate")) for d in (1, 2, 3)},
    "aten.repeat.default": repeat,
    "aten.tile.default": tile,
    "aten.repeat_interleave.self_int": repeat_interleave,
    "aten.expand_as.default": expand,
    "aten.broadcast_to.default": expand,
    "aten.reshape_as.default": reshape_to_output,
    "aten.view_as.default": reshape_to_output,
    "aten.unflatten.int": reshape_to_output,
    "aten.unbind.int": unbind,
    "aten.meshgrid.default": meshgrid,
    "aten.meshgrid.indexing": meshgrid,
    "aten.concat.default": cat,
    "aten.concatenate.default": cat,
    "aten.slice_scatter.default": slice_scatter,
    "aten.select_scatter.default": select_scatter,
    "aten._assert_async.msg": no_op,
    "aten._assert_async.default": no_op,
    "aten.index_select.default": index_select,
    "aten.stack.default": stack,
    "getitem": getitem,
    "aten.sym_size.int": sym_size,
    "mul": _sym_arith(operator.mul),
    "add": _sym_arith(operator.add),
    "sub": _sym_arith(operator.sub),
    **{name: _sym_arith(getattr(operator, name)) for name in ("ge", "gt", "le", "lt", "eq", "ne")},
    "floordiv": _sym_arith(lambda a, b: a // b if isinstance(a, int) and isinstance(b, int) else tir.floordiv(a, b)),
    "mod": _sym_arith(lambda a, b: a % b if isinstance(a, int) and isinstance(b, int) else tir.floormod(a, b)),
    "aten._assert_scalar.default": no_op,
    "aten.sym_constrain_range_for_size.default": no_op,
    "aten._assert_tensor_metadata.default": no_op,
}


#: ops whose converters give only some outputs: op -> the outputs available
_PARTIAL_OUTPUTS = {
    **{f"aten.max_pool{d}d_with_indices.default": (0,) for d in (1, 2, 3)},
    "aten.native_layer_norm.default": (0,), "aten.native_group_norm.default": (0,),
    "aten._native_batch_norm_legit_no_training.default": (0,), "aten._native_batch_norm_legit.no_stats": (0,),
}


def _check_getitem(node, conv):
    """A use of an output a converter does not produce (max pooling's indices, a norm's saved
    statistics)."""
    src = node.args[0]
    target = str(getattr(src, "target", ""))
    kept = _PARTIAL_OUTPUTS.get(target)
    if kept is not None and int(node.args[1]) not in kept:
        what = "the indices" if "max_pool" in target else "the saved statistics"
        return f"output {node.args[1]} of {target} ({what}) is not supported, only output 0"
    return None


CHECKS = {
    "getitem": _check_getitem,
    "aten.index.Tensor": _check_index,
    "aten.scatter_reduce.two": _check_scatter_reduce,
}
