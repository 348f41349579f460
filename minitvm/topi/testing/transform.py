"""Indexing references: strided slice/set, gather, gather_nd, one_hot."""

import numpy as np


def _spread_over_axes(shape, begin, end, strides, axes):
    """Per-axis begin/end/strides for every dimension when only ``axes`` are given."""
    full_begin, full_end, full_strides = [0] * len(shape), list(shape), [1] * len(shape)
    for i, ax in enumerate(axes):
        full_begin[ax], full_end[ax] = begin[i], end[i]
        if i < len(strides):
            full_strides[ax] = strides[i]
    return full_begin, full_end, full_strides


def strided_slice_python(data, begin, end, strides, slice_mode="end", axes=None):
    """numpy slicing data[begin:end:stride, ...]; dimensions past the lists are taken whole.

    ``slice_mode="size"``: ``end`` holds sizes from ``begin`` (a negative size means "to the
    end") and strides are ignored.  ``axes`` names the dimensions the lists refer to.
    """
    strides = list(strides) if strides is not None else []
    if axes is not None:
        begin, end, strides = _spread_over_axes(data.shape, begin, end, strides, axes)
    index = []
    for i in range(data.ndim):
        lo = begin[i] if i < len(begin) else None
        step = strides[i] if slice_mode == "end" and i < len(strides) else None
        if i >= len(end):
            hi = None
        elif slice_mode == "size":
            hi = None if end[i] < 0 else lo + end[i]
        else:
            hi = end[i]
        index.append(slice(lo, hi, step))
    return data[tuple(index)]


def strided_set_python(data, v, begin, end, strides):
    """A copy of ``data`` with data[begin:end:strides] replaced by ``v``."""
    strides = list(strides) if strides is not None else []
    index = tuple(slice(begin[i] if i < len(begin) else None, end[i] if i < len(end) else None,
                        strides[i] if i < len(strides) else None) for i in range(data.ndim))
    out = data.copy()
    out[index] = v
    return out


def gather_python(data, axis, indices):
    """out[i..., j, k...] = data[i..., indices[i..., j, k...], k...] (ONNX GatherElements)."""
    return np.take_along_axis(data, indices.astype("int64"), axis=axis)


def gather_nd_python(a_np, indices_np):
    """indices [M, Y...] index the first M dimensions of ``a_np``: out shape Y + a.shape[M:]."""
    indices = indices_np.astype("int64")
    if indices.ndim < 2 or indices.shape[0] > a_np.ndim:
        raise ValueError(f"gather_nd_python: indices of shape {indices.shape} cannot index data "
                         f"of shape {a_np.shape} (need [M, ...] with M <= {a_np.ndim})")
    return a_np[tuple(indices[i] for i in range(indices.shape[0]))]


def one_hot(indices, on_value, off_value, depth, axis, dtype):
    """``on_value`` where the new ``axis`` (of size ``depth``) equals the index, else ``off_value``."""
    axis = indices.ndim if axis == -1 else axis
    positions = np.arange(depth).reshape([depth] + [1] * (indices.ndim - axis))
    hit = np.expand_dims(indices, axis) == positions
    return np.where(hit, on_value, off_value).astype(dtype)


def depth_to_space_python(data, block_size, mode="DCR"):
    """NCHW [n, c * b * b, h, w] -> [n, c, h * b, w * b]; DCR reads the channel as
    (row offset, column offset, channel), CRD as (channel, row offset, column offset)."""
    n, c, h, w = data.shape
    b = block_size
    if mode == "DCR":
        x = data.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        x = data.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return x.reshape(n, c // (b * b), h * b, w * b)


def space_to_depth_python(data, block_size):
    """NCHW [n, c, h * b, w * b] -> [n, b * b * c, h, w], channel = (row offset, column offset, c)."""
    n, c, h, w = data.shape
    b = block_size
    x = data.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    return x.reshape(n, c * b * b, h // b, w // b)


def dilate_python(input_np, strides, dilation_value=0.0, out_dtype=None):
    """Insert stride - 1 copies of ``dilation_value`` between neighbours along each dimension."""
    if len(strides) != input_np.ndim:
        raise ValueError(f"dilate_python: {len(strides)} strides for a {input_np.ndim}-D input")
    shape = [(d - 1) * s + 1 for d, s in zip(input_np.shape, strides)]
    out = np.full(shape, dilation_value, dtype=out_dtype or input_np.dtype)
    out[tuple(slice(None, None, s) for s in strides)] = input_np
    return out


def searchsorted_ref(sorted_sequence, values, right, out_dtype):
    """np.searchsorted per innermost row; a 1-D ``sorted_sequence`` serves every row."""
    side = "right" if right else "left"
    rows = values.reshape(-1, values.shape[-1])
    seqs = sorted_sequence.reshape(-1, sorted_sequence.shape[-1])
    out = np.stack([np.searchsorted(seqs[0 if len(seqs) == 1 else i], row, side=side)
                    for i, row in enumerate(rows)])
    return out.astype(out_dtype).reshape(values.shape)
