"""ONNX operators that move, select or create data: shapes, slices, gathers, constants, padding.
Where every input is known while importing (shape arithmetic), the result is computed here as a
numpy array; otherwise a Relax op is emitted."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import op as _op
from ...expr import TupleGetItem, const
from .elementwise import _onnx_dtype, _plain_array
from .importer import FOLD_LIMIT, OnnxImporter, OnnxNode, _is_symbolic

#: ONNX writes "to the end" as a huge int64
_BIG = 2 ** 31


def _list_arg(node: OnnxNode, imp: OnnxImporter, attr: str, k: int, since: int, what: str) -> list | None:
    """A list ONNX gave as attribute ``attr`` before opset ``since`` and as input ``k`` from it on."""
    if node.opset >= since:
        return imp.ints(node, k, what)
    value = node.attr(attr)
    return None if value is None else [int(v) for v in value]


def _small_known(node: OnnxNode, imp: OnnxImporter, k: int = 0) -> np.ndarray | None:
    value = imp.known(node, k)
    return value if value is not None and value.size <= FOLD_LIMIT else None


def _prod(values: list) -> Any:
    out: Any = 1
    for v in values:
        out = out * v
    return out


# -- shapes -------------------------------------------------------------------------------------------

def shape(node: OnnxNode, imp: OnnxImporter):
    """The input's shape as a known int64 vector (symbolic sizes as tir expressions);
    ``start`` / ``end`` (opset 15) slice it."""
    dims = imp.shape(node, 0)
    dims = dims[node.attr("start", 0):node.attr("end", len(dims))]
    if any(_is_symbolic(d) for d in dims):
        out = np.empty(len(dims), dtype=object)
        out[:] = dims
        return out
    return np.array(dims, dtype="int64")


def size(node: OnnxNode, imp: OnnxImporter):
    total = _prod(imp.shape(node, 0))
    return np.array(total, dtype=object) if _is_symbolic(total) else np.array(total, dtype="int64")


def _reshape_target(node: OnnxNode, in_shape: list, target: list) -> list:
    """ONNX's target shape: 0 copies the input's size there (unless ``allowzero``); -1 stays."""
    allowzero = node.attr("allowzero", 0)
    return [in_shape[i] if (not _is_symbolic(t) and t == 0 and not allowzero) else t for i, t in enumerate(target)]


def reshape(node: OnnxNode, imp: OnnxImporter):
    target = _list_arg(node, imp, "shape", 1, 5, "the target shape")
    in_shape = imp.shape(node, 0)
    target = _reshape_target(node, in_shape, target)
    data = _small_known(node, imp)
    if data is not None and not any(_is_symbolic(t) for t in target):
        return data.reshape([int(t) for t in target])
    return imp.emit(_op.reshape(imp.tensor(node, 0), target))


def flatten(node: OnnxNode, imp: OnnxImporter):
    shape_ = imp.shape(node, 0)
    axis = int(node.attr("axis", 1))
    axis = axis + len(shape_) if axis < 0 else axis
    return imp.emit(_op.reshape(imp.tensor(node, 0), [_prod(shape_[:axis]), _prod(shape_[axis:])]))


def transpose(node: OnnxNode, imp: OnnxImporter):
    rank = len(imp.shape(node, 0))
    perm = [int(p) for p in node.attr("perm", list(range(rank))[::-1])]
    data = _small_known(node, imp)
    if data is not None:
        return np.transpose(data, perm)
    return imp.emit(_op.permute_dims(imp.tensor(node, 0), perm))


def squeeze(node: OnnxNode, imp: OnnxImporter):
    """Axes: an attribute before opset 13, an optional input from it; none means every 1."""
    axes = _list_arg(node, imp, "axes", 1, 13, "the axes")
    shape_ = imp.shape(node, 0)
    if axes is None:
        axes = [i for i, d in enumerate(shape_) if not _is_symbolic(d) and d == 1]
    axes = [int(a) % len(shape_) for a in axes]
    data = _small_known(node, imp)
    if data is not None:
        return np.squeeze(data, tuple(axes))
    return imp.emit(_op.squeeze(imp.tensor(node, 0), axes))


def unsqueeze(node: OnnxNode, imp: OnnxImporter):
    """New size-1 axes at ``axes`` of the result (an attribute before opset 13, an input from it)."""
    axes = _list_arg(node, imp, "axes", 1, 13, "the axes")
    out_rank = len(imp.shape(node, 0)) + len(axes)
    axes = sorted(int(a) % out_rank for a in axes)
    data = _small_known(node, imp)
    if data is not None:
        for a in axes:
            data = np.expand_dims(data, a)
        return data
    return imp.emit(_op.expand_dims(imp.tensor(node, 0), axes))


def concat(node: OnnxNode, imp: OnnxImporter):
    axis = int(node.attr("axis"))
    ks = [k for k in range(len(node.inputs)) if node.has_input(k)]
    if imp.all_known(node):
        vals = [imp.known(node, k) for k in ks]
        if any(v.dtype == object for v in vals):
            vals = [v.astype(object) for v in vals]
        return _plain_array(np.concatenate(vals, axis=axis))
    # an empty shape piece (exporters write them) adds nothing
    parts = [imp.tensor(node, k) for k in ks if 0 not in imp.shape(node, k)]
    return imp.emit(_op.concat(parts, axis=axis)) if len(parts) > 1 else parts[0]


def expand(node: OnnxNode, imp: OnnxImporter):
    """Broadcast both ways: a 1 in the target keeps the input's size."""
    target = imp.ints(node, 1, "the target shape")
    in_shape = imp.shape(node, 0)
    rank = max(len(target), len(in_shape))
    a = [1] * (rank - len(in_shape)) + list(in_shape)
    b = [1] * (rank - len(target)) + list(target)
    out = [x if (not _is_symbolic(y) and y == 1) else y for x, y in zip(a, b)]
    data = _small_known(node, imp)
    if data is not None and not any(_is_symbolic(d) for d in out):
        return np.broadcast_to(data, out).copy()
    if list(in_shape) == out:
        return imp.tensor(node, 0)
    return imp.emit(_op.broadcast_to(imp.tensor(node, 0), out))


def tile(node: OnnxNode, imp: OnnxImporter):
    return imp.emit(_op.tile(imp.tensor(node, 0), imp.ints(node, 1, "the repeats")))


# -- selecting ----------------------------------------------------------------------------------------

def _slice_range(start: int, end: int, step: int, dim: int) -> range:
    """The indices ONNX's Slice takes along one axis of static size ``dim``."""
    if step == 0:
        raise ValueError("a slice step of 0")
    start = start + dim if start < 0 else start
    end = end + dim if end < 0 else end
    if step > 0:
        return range(min(max(start, 0), dim), min(max(end, 0), dim), step)
    return range(min(max(start, 0), dim - 1), min(max(end, -1), dim - 1), step)


def slice_(node: OnnxNode, imp: OnnxImporter):
    """Starts, ends, axes, steps: attributes before opset 10, inputs from it on."""
    if node.opset >= 10:
        starts, ends = imp.ints(node, 1, "the starts"), imp.ints(node, 2, "the ends")
        axes, steps = imp.ints(node, 3, "the axes"), imp.ints(node, 4, "the steps")
    else:
        starts, ends, axes, steps = node.attr("starts"), node.attr("ends"), node.attr("axes"), None
    shape_ = imp.shape(node, 0)
    axes = list(range(len(starts))) if axes is None else [int(a) % len(shape_) for a in axes]
    steps = [1] * len(starts) if steps is None else steps
    data = _small_known(node, imp)
    x = imp.tensor(node, 0) if data is None else None
    index: list[Any] = [slice(None)] * len(shape_)
    for axis, start, end, step in zip(axes, starts, ends, steps):
        dim = shape_[axis]
        if _is_symbolic(dim):  # only "from start (>= 0) to the end" over a symbolic size
            if not (step == 1 and 0 <= start and end >= _BIG):
                raise node.error(f"slicing [{start}:{end}:{step}] along a symbolic axis {axis} is not supported")
            if data is None:
                x = _op.strided_slice(x, [axis], [start], [dim])
            index[axis] = slice(start, None)
            continue
        r = _slice_range(int(start), int(end), int(step), int(dim))
        if data is not None:
            index[axis] = list(r)
        elif step > 0:
            x = _op.strided_slice(x, [axis], [r.start], [max(r.stop, r.start)], [step])
        else:
            x = _op.take(x, const(np.array(list(r), dtype="int64")), axis=axis)
    if data is not None:
        out = data
        for axis, ix in enumerate(index):  # one axis at a time: numpy fancy indexing per axis
            out = out[tuple([slice(None)] * axis + [ix])]
        return out
    return imp.emit(x)


def gather(node: OnnxNode, imp: OnnxImporter):
    """``take`` along ``axis``; negative indices count from the end (as ONNX allows)."""
    shape_ = imp.shape(node, 0)
    axis = int(node.attr("axis", 0)) % len(shape_)
    data, idx = _small_known(node, imp, 0), imp.known(node, 1)
    if data is not None and idx is not None:
        out = np.take(data, idx.astype("int64"), axis=axis)
        if isinstance(out, np.ndarray):
            return out
        picked = np.empty((), data.dtype)  # numpy gives a scalar index's pick as the bare element
        picked[()] = out
        return picked
    dim = shape_[axis]
    if idx is not None and not _is_symbolic(dim):
        return imp.emit(_op.take(imp.tensor(node, 0), const(np.where(idx < 0, idx + dim, idx).astype(idx.dtype)),
                                 axis=axis))
    indices = imp.tensor(node, 1)
    dtype = imp.dtype(node, 1)
    fixed = _op.where(_op.less(indices, imp.scalar_of(0, dtype)),
                      _op.add(indices, _op.astype(_op.sum(_op.ones([dim], dtype)), dtype)), indices)
    return imp.emit(_op.take(imp.tensor(node, 0), fixed, axis=axis))


def gather_elements(node: OnnxNode, imp: OnnxImporter):
    return imp.emit(_op.gather_elements(imp.tensor(node, 0), imp.tensor(node, 1), int(node.attr("axis", 0))))


def split(node: OnnxNode, imp: OnnxImporter):
    """Sizes: attribute ``split`` before opset 13, an optional input from it; without them equal
    parts, one per output (opset 18's ``num_outputs``: the last part may be smaller)."""
    sizes = _list_arg(node, imp, "split", 1, 13, "the split sizes")
    shape_ = imp.shape(node, 0)
    axis = int(node.attr("axis", 0)) % len(shape_)
    dim = shape_[axis]
    n = len(node.outputs)
    x = imp.tensor(node, 0)
    if _is_symbolic(dim):  # sections of a symbolic axis (TVM's split: equal ones), or a slice each
        if sizes is None:
            out = imp.emit(_op.split(x, n, axis=axis))
            return [imp.emit(TupleGetItem(out, i)) for i in range(n)]
        starts = [0] + [int(c) for c in np.cumsum(sizes)]
        # ONNX's sizes add up to the axis: every slice is in bounds
        return [imp.emit(_op.strided_slice(x, [axis], [starts[i]], [starts[i + 1]], assume_inbound=True))
                for i in range(len(sizes))]
    if sizes is None:
        part = -(-int(dim) // n)
        sizes = [min(part, int(dim) - part * i) for i in range(n)]
    cuts = list(np.cumsum(sizes)[:-1])
    out = imp.emit(_op.split(x, [int(c) for c in cuts], axis=axis))
    return [imp.emit(TupleGetItem(out, i)) for i in range(len(sizes))]


# -- creating -----------------------------------------------------------------------------------------

def constant(node: OnnxNode, imp: OnnxImporter):
    for name, dtype in (("value_float", "float32"), ("value_floats", "float32"), ("value_int", "int64"),
                        ("value_ints", "int64")):
        if name in node.attrs:
            return np.array(node.attrs[name], dtype=dtype)
    if "value" in node.attrs:
        return np.asarray(node.attrs["value"])
    raise node.error(f"a constant given as {sorted(node.attrs)} is not supported (value, value_float(s), "
                     "value_int(s) are)")


def constant_of_shape(node: OnnxNode, imp: OnnxImporter):
    dims = imp.ints(node, 0, "the shape")
    value = node.attr("value")
    value = np.zeros(1, "float32") if value is None else np.asarray(value).reshape(-1)
    symbolic = any(_is_symbolic(d) for d in dims)
    if not symbolic and int(np.prod(dims)) <= FOLD_LIMIT:
        return np.full(dims, value[0], dtype=value.dtype)
    return imp.emit(_op.full(dims, const(value.reshape(())), str(value.dtype)))


def range_(node: OnnxNode, imp: OnnxImporter):
    start, limit, delta = (imp.scalar_input(node, k, what) for k, what in enumerate(("start", "limit", "delta")))
    dtype = imp.dtype(node, 0)
    if not any(_is_symbolic(v) for v in (start, limit, delta)):
        out = np.arange(start, limit, delta, dtype=dtype)
        if out.size <= FOLD_LIMIT:
            return out
    return imp.emit(_op.arange(start, limit, delta, dtype=dtype))


def trilu(node: OnnxNode, imp: OnnxImporter):
    k = imp.scalar_input(node, 1, "k") or 0
    fn = _op.triu if node.attr("upper", 1) else _op.tril
    return imp.emit(fn(imp.tensor(node, 0), int(k)))


def _cumulative(fn):
    """CumSum / CumProd along the axis input; ``exclusive`` leaves each element out, ``reverse``
    runs from the end (the axis flipped before and after)."""
    def along(node: OnnxNode, x, axis: int):
        reverse = node.attr("reverse", 0)
        out = fn(_op.flip(x, axis) if reverse else x, axis=axis, exclusive=bool(node.attr("exclusive", 0)))
        return _op.flip(out, axis) if reverse else out

    def convert(node: OnnxNode, imp: OnnxImporter):
        x = imp.tensor(node, 0)
        if imp.known(node, 1) is not None:
            return imp.emit(along(node, x, int(imp.scalar_input(node, 1, "the axis"))))
        # an axis given at run time: the result along each axis, the one it names picked then
        rank = len(imp.shape(node, 0))
        axis = imp.emit(_op.reshape(imp.tensor(node, 1), []))
        out = imp.emit(along(node, x, rank - 1))
        for k in range(rank - 1):
            hit = _op.logical_or(_op.equal(axis, imp.scalar_of(k, imp.dtype(node, 1))),
                                 _op.equal(axis, imp.scalar_of(k - rank, imp.dtype(node, 1))))
            out = imp.emit(_op.where(hit, along(node, x, k), out))
        return out
    return convert


def one_hot(node: OnnxNode, imp: OnnxImporter):
    """``values[1]`` where the (possibly negative) index equals the position along the new axis
    ``axis``, ``values[0]`` elsewhere."""
    depth = int(imp.scalar_input(node, 1, "the depth"))
    rank = len(imp.shape(node, 0)) + 1
    axis = int(node.attr("axis", -1)) % rank
    idx = _op.astype(imp.tensor(node, 0), "int64")
    idx = _op.where(_op.less(idx, imp.scalar_of(0, "int64")), _op.add(idx, imp.scalar_of(depth, "int64")), idx)
    positions = const(np.arange(depth, dtype="int64").reshape([-1] + [1] * (rank - axis - 1)))
    hit = _op.equal(_op.expand_dims(idx, [axis]), positions)
    values = imp.tensor(node, 2)
    off = _op.take(values, const(np.array(0, "int64")), axis=0)
    on = _op.take(values, const(np.array(1, "int64")), axis=0)
    return imp.emit(_op.where(hit, on, off))


def scatter_elements(node: OnnxNode, imp: OnnxImporter):
    """``reduction`` none (a plain write), add, mul, max or min."""
    reduction = node.attr("reduction", "none")
    reduction = {"none": "update"}.get(reduction, reduction)
    return imp.emit(_op.scatter_elements(imp.tensor(node, 0), imp.tensor(node, 1), imp.tensor(node, 2),
                                         int(node.attr("axis", 0)), reduction))


def _pad_indices(mode: str, n: int, before: int, after: int) -> np.ndarray:
    """Source positions along an axis of size ``n`` padded by ``mode`` (edge, reflect, wrap)."""
    pos = np.arange(-before, n + after)
    if mode == "edge":
        return np.clip(pos, 0, n - 1)
    if mode == "wrap":
        return pos % n
    period = 2 * (n - 1) if n > 1 else 1  # reflect: ... 2 1 [0 1 2 ... n-1] n-2 ...
    pos = np.abs(pos) % period
    return np.where(pos >= n, period - pos, pos)


def pad(node: OnnxNode, imp: OnnxImporter):
    """Pads: attribute before opset 11, input after (with ``constant_value`` and, from 18, ``axes``);
    modes constant, edge, reflect, wrap; negative pads crop."""
    rank = len(imp.shape(node, 0))
    if node.opset >= 11:
        pads = imp.ints(node, 1, "the pads")
        value = imp.known(node, 2)
        if node.has_input(2) and value is None:
            raise node.error("a constant_value computed at run time is not supported")
        value = 0.0 if value is None else value.item()
        axes = imp.ints(node, 3, "the axes") if node.opset >= 18 else None
    else:
        pads, value, axes = [int(p) for p in node.attr("pads")], float(node.attr("value", 0.0)), None
    axes = list(range(rank)) if axes is None else [int(a) % rank for a in axes]
    before, after = [0] * rank, [0] * rank
    for i, a in enumerate(axes):
        before[a], after[a] = int(pads[i]), int(pads[i + len(axes)])
    x = imp.tensor(node, 0)
    shape_ = imp.shape(node, 0)
    if any(b < 0 or e < 0 for b, e in zip(before, after)):  # crop first
        x = _op.strided_slice(x, list(range(rank)), [max(-b, 0) for b in before],
                              [d - max(-e, 0) for d, e in zip(shape_, after)])
        shape_ = [d - max(-b, 0) - max(-e, 0) for d, b, e in zip(shape_, before, after)]
        before, after = [max(b, 0) for b in before], [max(e, 0) for e in after]
    mode = node.attr("mode", "constant")
    if mode == "constant":
        width = [w for b, e in zip(before, after) for w in (b, e)]
        return imp.emit(_op.nn.pad(x, width, pad_value=value))
    if mode not in ("edge", "reflect", "wrap"):
        raise node.error(f"pad mode {mode!r} is not supported")
    for axis, (b, e) in enumerate(zip(before, after)):
        if b or e:
            if _is_symbolic(shape_[axis]):
                raise node.error(f"{mode} padding along a symbolic axis is not supported")
            x = _op.take(x, const(_pad_indices(mode, int(shape_[axis]), b, e)), axis=axis)
    return imp.emit(x)


def depth_to_space(node: OnnxNode, imp: OnnxImporter):
    """(N, C b², H, W) -> (N, C, H b, W b); ``mode`` DCR (depth-column-row) or CRD."""
    b = int(node.attr("blocksize"))
    n, c, h, w = imp.shape(node, 0)
    x = imp.tensor(node, 0)
    if node.attr("mode", "DCR") == "DCR":
        x = _op.permute_dims(_op.reshape(x, [n, b, b, c // (b * b), h, w]), [0, 3, 4, 1, 5, 2])
    else:
        x = _op.permute_dims(_op.reshape(x, [n, c // (b * b), b, b, h, w]), [0, 1, 4, 2, 5, 3])
    return imp.emit(_op.reshape(x, [n, c // (b * b), h * b, w * b]))


def space_to_depth(node: OnnxNode, imp: OnnxImporter):
    """(N, C, H b, W b) -> (N, C b², H, W); ``mode`` (opset 25) DCR, the default, or CRD."""
    b = int(node.attr("blocksize"))
    n, c, h, w = imp.shape(node, 0)
    x = _op.reshape(imp.tensor(node, 0), [n, c, h // b, b, w // b, b])
    x = _op.permute_dims(x, [0, 3, 5, 1, 2, 4] if node.attr("mode", "DCR") == "DCR" else [0, 1, 3, 5, 2, 4])
    return imp.emit(_op.reshape(x, [n, c * b * b, h // b, w // b]))


def eye_like(node: OnnxNode, imp: OnnxImporter):
    rows, cols = (int(d) for d in imp.shape(node, 0))
    dtype = _onnx_dtype(node.attr("dtype")) if node.attr("dtype") is not None else imp.dtype(node, 0)
    return np.eye(rows, cols, int(node.attr("k", 0)), dtype=dtype)


CONVERTERS = {
    "Shape": shape, "Size": size, "Reshape": reshape, "Flatten": flatten, "Transpose": transpose,
    "Squeeze": squeeze, "Unsqueeze": unsqueeze, "Concat": concat, "Expand": expand, "Tile": tile,
    "Slice": slice_, "Gather": gather, "GatherElements": gather_elements, "Split": split,
    "Constant": constant, "ConstantOfShape": constant_of_shape, "Range": range_, "Trilu": trilu,
    "CumSum": _cumulative(_op.cumsum), "CumProd": _cumulative(_op.cumprod), "OneHot": one_hot,
    "ScatterElements": scatter_elements,
    "Pad": pad, "DepthToSpace": depth_to_space, "SpaceToDepth": space_to_depth,
    "EyeLike": eye_like,
}


# -- added for ONNX's backend cases ---------------------------------------------------------------------

def top_k(node: OnnxNode, imp: OnnxImporter):
    """The ``k`` largest (``largest=0``: smallest) along ``axis``, sorted, and their int64
    indices; ``k`` an attribute before opset 10, an input from it."""
    k = int(node.attr("k")) if node.opset < 10 else int(imp.scalar_input(node, 1, "k"))
    out = imp.emit(_op.topk(imp.tensor(node, 0), k=k, axis=int(node.attr("axis", -1)), ret_type="both",
                            largest=bool(node.attr("largest", 1)), dtype="int64"))
    return [imp.emit(TupleGetItem(out, 0)), imp.emit(TupleGetItem(out, 1))]


def scatter_nd(node: OnnxNode, imp: OnnxImporter):
    """``reduction`` none (a plain write), add, mul, max or min (opset 16, 18)."""
    reduction = {"none": "update"}.get(node.attr("reduction", "none"), node.attr("reduction", "none"))
    return imp.emit(_op.scatter_nd(imp.tensor(node, 0), imp.tensor(node, 1), imp.tensor(node, 2), reduction))


def gather_nd(node: OnnxNode, imp: OnnxImporter):
    """``data[batch..., indices[..., :m]]``: the first ``batch_dims`` axes shared, the last axis of
    ``indices`` the ``m`` coordinates after them (negative ones counted from the end); computed
    as one ``take`` of ``data`` flattened over those axes at the row-major position."""
    d_shape, i_shape = imp.shape(node, 0), imp.shape(node, 1)
    b = int(node.attr("batch_dims", 0))
    m = int(i_shape[-1])
    if any(_is_symbolic(d) for d in d_shape[:b + m] + i_shape):
        raise node.error("GatherND over symbolic sizes is not supported")
    lead = [int(d) for d in d_shape[:b + m]]
    idx = _op.astype(imp.tensor(node, 1), "int64")
    sizes = const(np.array(lead[b:], dtype="int64"))
    idx = _op.where(_op.less(idx, imp.scalar_of(0, "int64")), _op.add(idx, sizes), idx)
    strides = np.array([int(np.prod(lead[b + j + 1:b + m], dtype="int64")) for j in range(m)], dtype="int64")
    flat = _op.sum(_op.multiply(idx, const(strides)), axis=[-1])  # (batch..., rest of indices)
    inner = int(np.prod(lead[b:], dtype="int64"))
    if b:  # each batch's positions start after the earlier batches'
        base = np.arange(int(np.prod(lead[:b], dtype="int64")), dtype="int64").reshape(
            lead[:b] + [1] * (len(i_shape) - 1 - b)) * inner
        flat = _op.add(flat, const(base))
    data = _op.reshape(imp.tensor(node, 0), [int(np.prod(lead, dtype="int64"))] + list(d_shape[b + m:]))
    return imp.emit(_op.take(data, flat, axis=0))


def center_crop_pad(node: OnnxNode, imp: OnnxImporter):
    """Each axis of ``axes`` (default all) cropped or zero-padded to the given size, centred
    (an odd difference: the extra element cropped at the end, padded at the end)."""
    shape_ = imp.shape(node, 0)
    target = imp.ints(node, 1, "the shape")
    rank = len(shape_)
    axes = [int(a) % rank for a in node.attr("axes", list(range(rank)))]
    x = imp.tensor(node, 0)
    width = [0] * (2 * rank)
    for axis, size in zip(axes, target):
        dim = shape_[axis]
        if _is_symbolic(dim) or _is_symbolic(size):
            raise node.error("CenterCropPad over symbolic sizes is not supported")
        if size < dim:
            start = (dim - size) // 2
            x = _op.strided_slice(x, [axis], [start], [start + size])
        elif size > dim:
            width[2 * axis], width[2 * axis + 1] = (size - dim) // 2, size - dim - (size - dim) // 2
    return imp.emit(_op.nn.pad(x, width) if any(width) else x)


def _window(kind: str):
    """Hann / Hamming / Blackman windows of a ``size`` known while importing: computed here
    (``periodic``, the default, divides by ``size``, else by ``size - 1``)."""
    def convert(node: OnnxNode, imp: OnnxImporter):
        size = int(imp.scalar_input(node, 0, "the window size"))
        n = np.arange(size, dtype="float64")
        period = size if node.attr("periodic", 1) else size - 1
        angle = 2 * np.pi * n / period
        if kind == "hann":
            out = np.sin(np.pi * n / period) ** 2
        elif kind == "hamming":
            out = 25 / 46 - (21 / 46) * np.cos(angle)
        else:
            out = 0.42 - 0.5 * np.cos(angle) + 0.08 * np.cos(2 * angle)
        return out.astype(_onnx_dtype(node.attr("output_datatype", 1)))
    convert.__name__ = f"convert_{kind}_window"
    return convert


CONVERTERS.update({"HannWindow": _window("hann"), "HammingWindow": _window("hamming"),
                   "BlackmanWindow": _window("blackman"), "Scatter": scatter_elements})  # Scatter: opset 9-10's name
CONVERTERS.update({"TopK": top_k, "ScatterND": scatter_nd, "GatherND": gather_nd, "CenterCropPad": center_crop_pad})
