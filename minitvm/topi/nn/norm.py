"""Normalization at inference: ``layer_norm`` over trailing axes, ``batch_norm`` with
the moving statistics."""

from __future__ import annotations

from typing import Any, Sequence

from ... import te
from ...tir import op as _op
from ...tir.expr import Cast, FloatImm, IntImm, const
from ..broadcast import add, divide, multiply, subtract
from ..elemwise import sqrt
from ..reduction import sum as _sum
from ..transform import reshape
from ..utils import const_int, normalize_axes, prod


def _split_axes(idx: Sequence[Any], axes: list[int]) -> tuple[list, list]:
    """The indices on the reduced axes and the others, in order."""
    return [v for k, v in enumerate(idx) if k in axes], [v for k, v in enumerate(idx) if k not in axes]


def _reduce_extent(data: te.Tensor, axes: list[int], dtype: str) -> Any:
    """The number of reduced elements as a ``dtype`` value, folded as TVM folds it (float32
    constants multiply out; float16 ones do not; symbolic sizes are cast)."""
    out: Any = None
    for k in axes:
        d = data.shape[k]
        d = FloatImm(dtype, float(d.value)) if isinstance(d, IntImm) else _op.cast(d, dtype)
        if out is None:
            out = d
        elif isinstance(out, FloatImm) and isinstance(d, FloatImm):
            out = FloatImm(dtype, out.value * d.value)
        else:
            out = _op.mul(out, d)
    return out


def _sum_and_squares(data: te.Tensor, axes: list[int], as_float32: bool) -> tuple[te.Tensor, te.Tensor]:
    """One two-output reduction: the sum and the sum of squares over ``axes`` ("A_red_temp")."""
    reducer = te.comm_reducer(lambda x, y: (_op.add(x[0], y[0]), _op.add(x[1], y[1])),
                              lambda t0, t1: (const(0, t0), const(0, t1)), name="tuple_sum")
    shape = [d for k, d in enumerate(data.shape) if k not in axes]

    def fcompute(*i: Any) -> Any:
        raxes = [te.reduce_axis((0, data.shape[k]), f"k{k}") for k in axes]
        idx, pos, r = [], 0, 0
        for k in range(data.ndim):
            if k in axes:
                idx.append(raxes[r].var)
                r += 1
            else:
                idx.append(i[pos])
                pos += 1
        v = data[tuple(idx)]
        if as_float32:
            v = _op.cast(v, "float32")
        sq = _op.mul(_op.cast(data[tuple(idx)], "float32"), _op.cast(data[tuple(idx)], "float32")) \
            if as_float32 else _op.mul(v, v)
        return reducer((v, sq), axis=raxes)

    temp = te.compute(shape, fcompute, name=f"{data.op.name}_red_temp")
    return temp[0], temp[1]


def layer_norm(data: te.Tensor, gamma: te.Tensor, beta: te.Tensor | None, axis: Any = -1,
               epsilon: float = 1e-5) -> te.Tensor:
    """``(x - mean) / sqrt(var + eps) * gamma + beta`` with mean and (biased) variance over
    ``axis`` from one pass summing x and x² (float16 data accumulates in float32); gamma and
    beta have the shape of those axes."""
    axes = normalize_axes(axis, data.ndim, "topi.nn.layer_norm")
    fp16 = data.dtype == "float16"
    temp_x, temp_x2 = _sum_and_squares(data, axes, fp16)
    extent = _reduce_extent(data, axes, data.dtype)
    if fp16:  # the float16 count, widened (kept as a Cast node, as TVM prints it)
        extent = Cast("float32", extent)

    def fcompute(*i: Any) -> Any:
        red, rest = _split_axes(i, axes)
        mean = temp_x[tuple(rest)] / extent
        var = temp_x2[tuple(rest)] / extent - mean * mean
        x = _op.cast(data(*i), "float32") if fp16 else data(*i)
        out = (x - mean) * _op.rsqrt(var + const(epsilon, var.dtype))
        if fp16:
            out = _op.cast(out, "float16")
        out = out * gamma[tuple(red)]
        if beta is not None:
            out = out + beta[tuple(red)]
        return out

    return te.compute(data.shape, fcompute, name="T_layer_norm")


def _cast_t(x: te.Tensor, dtype: str) -> te.Tensor:
    # the cast TVM's C++ TOPI inserts inside its kernels: always a compute, named T_cast
    return te.compute(x.shape, lambda *i: _op.cast(x(*i), dtype), name="T_cast")


def rms_norm(data: te.Tensor, weight: te.Tensor, axis: Any = -1, epsilon: float = 1e-5) -> te.Tensor:
    """``x / sqrt(mean(x²) + eps) * weight`` over ``axis``, computed in float32 and cast
    back to the data's dtype."""
    axes = normalize_axes(axis, data.ndim, "topi.nn.rms_norm")
    data32 = _cast_t(data, "float32")
    square_sum = _sum(multiply(data32, data32), axes, False)
    extent = _reduce_extent(data32, axes, "float32")
    rest_shape = [d for k, d in enumerate(data.shape) if k not in axes]
    eps = const(epsilon, "float32")
    rsqrt = te.compute(rest_shape, lambda *i: _op.rsqrt(square_sum(*i) / extent + eps),
                       name="rsqrt")
    weight32 = _cast_t(weight, "float32")

    def fcompute(*i: Any) -> Any:
        red, rest = _split_axes(i, axes)
        return rsqrt[tuple(rest)] * data32(*i) * weight32[tuple(red)]

    return _cast_t(te.compute(data.shape, fcompute, name="T_rms_norm"), data.dtype)


def batch_norm(data: te.Tensor, gamma: te.Tensor, beta: te.Tensor, moving_mean: te.Tensor,
               moving_var: te.Tensor, axis: int = 1, epsilon: float = 1e-5, center: bool = True,
               scale: bool = True, training: bool = False, momentum: float = 0.1) -> list[te.Tensor]:
    """Batch norm along channel ``axis``: ``(x - mean) / sqrt(var + eps) * gamma + beta``.

    In training the mean and (biased) variance are the batch's, and the moving statistics
    come back updated (``(1 - momentum) * moving + momentum * batch``); at inference they
    are used as they are and come back unchanged.  Returns [output, mean, var], built from
    TOPI's reshape / broadcast ops as TVM's is."""
    axis = normalize_axes(axis, data.ndim, "topi.nn.batch_norm")[0]
    shape = [1] * data.ndim
    shape[axis] = data.shape[axis]
    eps = const(epsilon, data.dtype)
    if training:
        if not 0 <= momentum <= 1:
            raise ValueError(f"topi.nn.batch_norm: momentum must be in [0, 1], got {momentum}")
        reduce_axes = [k for k in range(data.ndim) if k != axis]
        count = prod([data.shape[k] for k in reduce_axes])
        count = const(float(count.value), data.dtype) if isinstance(count, IntImm) else _op.cast(count, data.dtype)
        data_mean = divide(_sum(data, reduce_axes), count)
        mean_rs = reshape(data_mean, shape)
        centered = subtract(data, mean_rs)
        data_var = divide(_sum(multiply(subtract(data, mean_rs), subtract(data, mean_rs)), reduce_axes), count)
        out = divide(centered, sqrt(add(reshape(data_var, shape), eps)))
    else:
        out = divide(subtract(data, reshape(moving_mean, shape)), sqrt(add(reshape(moving_var, shape), eps)))
    if scale:
        out = multiply(out, reshape(gamma, shape))
    if center:
        out = add(out, reshape(beta, shape))
    if training:
        keep, take = const(1 - momentum, data.dtype), const(momentum, data.dtype)
        return [out, add(multiply(keep, moving_mean), multiply(take, data_mean)),
                add(multiply(keep, moving_var), multiply(take, data_var))]
    one = const(1, data.dtype)  # copies, so no output is an input
    return [out, multiply(moving_mean, one), multiply(moving_var, one)]




def group_norm(data: te.Tensor, gamma: te.Tensor | None, beta: te.Tensor | None, num_groups: int,
               channel_axis: int, axes: Sequence[int], epsilon: float = 1e-5) -> te.Tensor:
    """Normalize each group of ``C / num_groups`` channels over itself and ``axes``, then
    scale and shift per channel.  The channels are reshaped into (groups, group size), the
    statistics come from one sum / sum-of-squares pass (in float32 for float16 data)."""
    ndim = data.ndim
    channel_axis = normalize_axes(channel_axis, ndim, "topi.nn.group_norm")[0]
    c = data.shape[channel_axis]
    group_size = _op.floordiv(c, num_groups) if const_int(c) is None else const(const_int(c) // num_groups, "int64")
    new_shape = []
    for k, d in enumerate(data.shape):
        new_shape += [const(num_groups, "int64"), group_size] if k == channel_axis else [d]
    fp16 = data.dtype == "float16"
    grouped = reshape(data, new_shape)
    if fp16:
        grouped = _cast_t(grouped, "float32")
    new_axes = [channel_axis + 1]
    for a in normalize_axes(list(axes), ndim, "topi.nn.group_norm"):
        if a == channel_axis:
            raise ValueError("topi.nn.group_norm: axes must not contain the channel axis")
        new_axes.append(a if a < channel_axis else a + 1)
    new_axes.sort()
    temp_x, temp_x2 = _sum_and_squares(grouped, new_axes, False)
    extent = _reduce_extent(grouped, new_axes, "float32")
    g = None if gamma is None else reshape(gamma, [const(num_groups, "int64"), group_size])
    b = None if beta is None else reshape(beta, [const(num_groups, "int64"), group_size])

    def fcompute(*i: Any) -> Any:
        _, rest = _split_axes(i, new_axes)
        mean = temp_x[tuple(rest)] / extent
        var = temp_x2[tuple(rest)] / extent - mean * mean
        out = (grouped(*i) - mean) * _op.rsqrt(var + const(epsilon, var.dtype))
        if fp16:
            out = _op.cast(out, "float16")
        gi = (i[channel_axis], i[channel_axis + 1])
        if g is not None:
            out = out * g[gi]
        if b is not None:
            out = out + b[gi]
        return out

    return reshape(te.compute(grouped.shape, fcompute, name="T_group_norm"), data.shape)


__all__: Sequence[str] = ["layer_norm", "rms_norm", "batch_norm", "group_norm"]
