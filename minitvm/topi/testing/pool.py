"""Pooling references: windowed max/avg pooling in 1-3 spatial dimensions, adaptive pooling."""

import itertools
import math

import numpy as np

_CHANNEL_FIRST = {3: "NCW", 4: "NCHW", 5: "NCDHW"}


def _to_channel_first(data, layout):
    """Transpose ``layout`` (e.g. NHWC) to N, C, spatial...; returns (array, inverse perm)."""
    first = _CHANNEL_FIRST[data.ndim]
    if layout is None or layout == first:
        return data, None
    perm = [layout.index(c) for c in first]
    return data.transpose(perm), list(np.argsort(perm))


def _lowest(dtype):
    dtype = np.dtype(dtype)
    return np.finfo(dtype).min if dtype.kind == "f" else np.iinfo(dtype).min


def poolnd_python(np_data, kernel, strides, dilation, padding_before, padding_after, pool_type,
                  count_include_pad=True, ceil_mode=False, dtype="float32", layout=None):
    """Max or average pooling of an NC<spatial> array (or ``layout``), as TVM's reference.

    Padding is 0 except for max pooling without ``count_include_pad`` (then the dtype's
    lowest value); ``ceil_mode`` windows running past the padded input are cut short; an
    average divides by the window's size (padding included when ``count_include_pad``) and
    an all-padding window averages to 0.
    """
    data, back = _to_channel_first(np_data, layout)
    spatial = data.ndim - 2
    rounding = math.ceil if ceil_mode else math.floor
    out_sizes = [rounding((data.shape[d + 2] - (kernel[d] - 1) * dilation[d] - 1 + padding_before[d]
                           + padding_after[d]) / strides[d]) + 1 for d in range(spatial)]
    pads = [(0, 0), (0, 0)] + list(zip(padding_before, padding_after))
    fill = _lowest(dtype) if pool_type == "max" and not count_include_pad else 0
    padded = np.pad(data.astype(dtype), pads, constant_values=fill)
    real = np.pad(np.ones(data.shape, bool), pads, constant_values=False)
    out = np.zeros(list(data.shape[:2]) + out_sizes, dtype=dtype)
    for coord in itertools.product(*(range(n) for n in out_sizes)):
        window = (slice(None), slice(None)) + tuple(
            slice(c * strides[d], c * strides[d] + (kernel[d] - 1) * dilation[d] + 1, dilation[d])
            for d, c in enumerate(coord))
        values = padded[window].reshape(data.shape[0], data.shape[1], -1)
        if pool_type == "max":
            out[(Ellipsis, *coord)] = values.max(axis=-1)
        elif pool_type == "avg":
            count = values.shape[-1] if count_include_pad else int(real[window][0, 0].sum())
            out[(Ellipsis, *coord)] = values.sum(axis=-1) / count if count else 0
        else:
            raise ValueError(f"poolnd_python: pool_type {pool_type!r} is not 'max' or 'avg'")
    return out if back is None else out.transpose(back)


def adaptive_pool(np_data, out_size, pool_type, layout):
    """Adaptive max/avg pooling: output cell i of a dimension covers input
    [floor(i * in / out), ceil((i + 1) * in / out))."""
    out_size = (out_size,) if isinstance(out_size, int) else tuple(out_size)
    data, back = _to_channel_first(np_data, layout)
    reduce = np.mean if pool_type == "avg" else np.max
    in_sizes = data.shape[2:]
    out = np.zeros(data.shape[:2] + out_size, dtype=data.dtype)
    for coord in itertools.product(*(range(n) for n in out_size)):
        window = tuple(slice(math.floor(c * i / o), math.ceil((c + 1) * i / o))
                       for c, i, o in zip(coord, in_sizes, out_size))
        out[(Ellipsis, *coord)] = reduce(data[(Ellipsis, *window)], axis=tuple(range(2, data.ndim)))
    return out if back is None else out.transpose(back)
