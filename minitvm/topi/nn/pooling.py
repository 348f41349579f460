"""Pooling over the spatial axes of data in any layout naming them (``NCHW``, ``NHWC``,
``NCHW16c``; the spatial axes themselves never split), as TVM's ``topi.nn``:
``pool1d``/``pool2d``/``pool3d`` (max or average over strided, dilated, padded windows, ceil
mode) and ``adaptive_pool``/``adaptive_pool1d``/``adaptive_pool3d`` (a fixed output size)."""

from __future__ import annotations

from typing import Any, Sequence

from ... import te
from ...arith import Analyzer
from ...tir import op as _op
from ...tir.expr import IntImm, const
from ..utils import const_int
from .pad import pad as _pad

_ANALYZER = Analyzer()


def _spatial_axes(layout: str, letters: str, who: str) -> list[int]:
    """Positions of ``letters`` among the axes of ``layout`` (a block's digits are not axes)."""
    axes = [ch for ch in layout if ch.isalpha()]
    if any(ch.lower() in axes for ch in letters) or any(axes.count(ch) != 1 for ch in letters):
        raise ValueError(f"topi.nn.{who}: layout {layout!r} must name {', '.join(letters)} once each "
                         f"and not split them")
    return [axes.index(ch) for ch in letters]


def _values(v: Any, n: int, dtype: str, what: str) -> list:
    """``v`` (an int or a sequence) as ``n`` integer expressions of ``dtype``."""
    t = [v] if isinstance(v, (int, IntImm)) else list(v)
    if len(t) == 1:
        t = t * n
    if len(t) != n:
        raise ValueError(f"{what} must have {n} values, got {v!r}")
    return [IntImm(dtype, int(x)) if const_int(x) is not None else x for x in t]


def _out_size(size: Any, head: Any, tail: Any, k: Any, s: Any, d: Any, ceil_mode: bool) -> Any:
    """Windows along one axis (``tail`` already holds ceil mode's extra ``s - 1``); in ceil
    mode a last window that would start in the trailing padding is dropped."""
    raw = _op.add(_op.floordiv(size - (k - 1) * d - 1 + head + tail, s), 1)
    if not ceil_mode:
        return _ANALYZER.simplify(raw)
    starts_in_pad = _op.greater_equal(_op.mul(_op.sub(raw, 1), s), _op.add(size, head))
    return _ANALYZER.simplify(_op.if_then_else(starts_in_pad, _op.sub(raw, 1), raw))


def pool_out_size(size: Any, lo: int, hi: int, k: int, s: int, d: int, ceil_mode: bool) -> Any:
    """Windows along one axis of ``size`` padded by ``lo``/``hi`` (TVM's and torch's rule)."""
    return _out_size(size, lo, hi + (s - 1 if ceil_mode else 0), k, s, d, ceil_mode)


class _Windows:
    """The windows of one pooling: for each pooled axis its kernel, stride, dilation and
    padding (ceil mode pads the tail by ``stride - 1`` more so the floor division rounds up,
    an ``offset`` that is no real padding), and the output shape."""

    def __init__(self, data: te.Tensor, kernel: Sequence[Any], stride: Sequence[Any], dilation: Sequence[Any],
                 padding: Sequence[Any], ceil_mode: bool, axes: Sequence[int]) -> None:
        n = len(axes)
        self.data, self.axes, self.n = data, list(axes), n
        self.dtype = dtype = data.shape[axes[0]].dtype
        self.kernel, self.stride, self.dilation = (
            _values(v, n, dtype, f"topi.nn.pool{n}d {w}")
            for v, w in ((kernel, "kernel"), (stride, "stride"), (dilation, "dilation")))
        padding = _values(padding, 2 * n, dtype, f"topi.nn.pool{n}d padding")
        self.head = padding[:n]
        self.offset = [_op.sub(s, 1) if ceil_mode else IntImm(dtype, 0) for s in self.stride]
        self.tail = [_ANALYZER.simplify(_op.add(t, o)) if ceil_mode else t for t, o in zip(padding[n:], self.offset)]
        self.out_shape = list(data.shape)
        for i, ax in enumerate(axes):
            self.out_shape[ax] = _out_size(data.shape[ax], self.head[i], self.tail[i], self.kernel[i],
                                           self.stride[i], self.dilation[i], ceil_mode)

    def padded(self, fill: Any) -> te.Tensor:
        if all(const_int(p) == 0 for p in self.head + self.tail):
            return self.data
        before, after = [0] * self.data.ndim, [0] * self.data.ndim
        for i, ax in enumerate(self.axes):
            before[ax], after[ax] = self.head[i], self.tail[i]
        return _pad(self.data, before, after, fill, name="pad_temp")

    def count(self, out: Sequence[Any], count_include_pad: bool) -> Any:
        """The divisor of the average at output position ``out``: the window's positions on
        the data (or the padded data), at least 1 (TVM's expression)."""
        count = None
        for i, ax in enumerate(self.axes):
            s, d, k = self.stride[i], self.dilation[i], self.kernel[i]
            start = _op.sub(_op.mul(out[ax], s), self.head[i])
            end = _op.add(start, _op.mul(_op.sub(k, 1), d))
            if count_include_pad:
                # the ceil-mode offset is no padding: windows stop at the real tail padding
                end = _op.min(end, _op.sub(_op.sub(_op.add(self.data.shape[ax], self.tail[i]), 1), self.offset[i]))
                positions = _op.add(_op.truncdiv(_op.sub(end, start), d), 1)
            else:
                skip = _op.max(_op.truncdiv(_op.sub(_op.sub(d, 1), start), d), IntImm(self.dtype, 0))
                end = _op.min(end, _op.sub(self.data.shape[ax], 1))
                positions = _op.add(_op.truncdiv(_op.sub(end, _op.add(start, _op.mul(d, skip))), d), 1)
            count = positions if count is None else _op.mul(count, positions)
        if not count_include_pad:
            count = _op.max(count, IntImm(count.dtype, 1))
        return _ANALYZER.simplify(count)


def pool_impl_nd(data: te.Tensor, kernel: Sequence[Any], stride: Sequence[Any], dilation: Sequence[Any],
                 padding: Sequence[Any], pool_type: str, ceil_mode: bool, axes: Sequence[int],
                 count_include_pad: bool) -> te.Tensor:
    """Max or average over windows of the ``axes``; ``padding`` is (heads..., tails...).  An
    average divides by the window's positions inside the data (or the padded data, with
    ``count_include_pad``), at least 1."""
    if pool_type not in ("max", "avg"):
        raise ValueError(f"topi.nn.pool: pool_type must be 'max' or 'avg', got {pool_type!r}")
    w = _Windows(data, kernel, stride, dilation, padding, ceil_mode, axes)
    padded = w.padded(_op.min_value(data.dtype) if pool_type == "max" else const(0, data.dtype))

    def reduce(reducer: Any) -> Any:
        def f(*out: Any) -> Any:
            rvs = [te.reduce_axis((0, w.kernel[i]), f"rv{i}") for i in range(w.n)]
            idx = list(out)
            for i, ax in enumerate(axes):
                idx[ax] = _op.add(_op.mul(out[ax], w.stride[i]), _op.mul(rvs[i].var, w.dilation[i]))
            return reducer(padded[tuple(idx)], axis=rvs)
        return f

    if pool_type == "max":
        return te.compute(w.out_shape, reduce(te.max), name="pool_max", tag="pool_max",
                          attrs={"schedule_rule": "meta_schedule.pool_max"})
    total = te.compute(w.out_shape, reduce(te.sum), name="pool_sum", tag="pool_sum")
    return te.compute(w.out_shape, lambda *out: _op.div(total[out], _op.cast(w.count(out, count_include_pad),
                                                                                    data.dtype)),
                      name="pool_avg", tag="elemwise", attrs={"schedule_rule": "meta_schedule.pool_avg"})


def pool_grad(grads: te.Tensor, data: te.Tensor, kernel: Any, stride: Any, padding: Any, pool_type: str,
              ceil_mode: bool = False, count_include_pad: bool = True, layout: str = "NCHW",
              dilation: Any = 1) -> te.Tensor:
    """The gradient of ``pool2d`` with respect to ``data``, given the output's ``grads``:
    each input position sums, over the windows covering it, the window's gradient -- divided
    by the window's count (avg), or where it equals the window's maximum (max; tied maxima
    each receive it)."""
    axes = _spatial_axes(layout, "HW", "pool_grad")
    w = _Windows(data, _listed(kernel), _listed(stride), _listed(dilation), _listed(padding, 2), ceil_mode, axes)
    pooled = pool_impl_nd(data, w.kernel, w.stride, w.dilation, w.head + [_op.sub(t, o) for t, o in
                                                                            zip(w.tail, w.offset)],
                          pool_type, ceil_mode, axes, count_include_pad)

    def grad(*idx: Any) -> Any:
        rvs = [te.reduce_axis((0, w.kernel[i]), f"rv{i}") for i in range(w.n)]
        out, inside = list(idx), []
        for i, ax in enumerate(axes):
            # the window o whose element rv lands on idx: o * s + rv * d == idx + head
            at = _op.sub(_op.add(idx[ax], w.head[i]), _op.mul(rvs[i].var, w.dilation[i]))
            o = _op.floordiv(at, w.stride[i])
            inside += [_op.equal(_op.floormod(at, w.stride[i]), 0), _op.less_equal(0, at),
                       _op.less(o, w.out_shape[ax])]
            out[ax] = _op.min(_op.max(o, 0), _op.sub(w.out_shape[ax], 1))  # a masked read stays in bounds
        g = grads[tuple(out)]
        if pool_type == "max":
            share = _op.Select(_op.equal(data[idx], pooled[tuple(out)]), g, const(0, g.dtype))
        else:
            share = _op.div(g, _op.cast(w.count(out, count_include_pad), g.dtype))
        return te.sum(share, axis=rvs, where=te.all(*inside))

    return te.compute(data.shape, grad, name="pool_grad")


def pool1d(data: te.Tensor, kernel: Any, stride: Any = 1, dilation: Any = 1, padding: Any = 0,
           pool_type: str = "max", ceil_mode: bool = False, layout: str = "NCW",
           count_include_pad: bool = True) -> te.Tensor:
    """Pooling along W; ``padding`` is an int or (left, right)."""
    return pool_impl_nd(data, _listed(kernel), _listed(stride), _listed(dilation), _listed(padding, 1),
                        pool_type, ceil_mode, _spatial_axes(layout, "W", "pool1d"), count_include_pad)


def pool2d(data: te.Tensor, kernel: Any, stride: Any = 1, dilation: Any = 1, padding: Any = 0,
           pool_type: str = "max", ceil_mode: bool = False, layout: str = "NCHW",
           count_include_pad: bool = True) -> te.Tensor:
    """Pooling over H and W; ``padding`` is an int, (h, w) or (top, left, bottom, right)."""
    return pool_impl_nd(data, _listed(kernel), _listed(stride), _listed(dilation), _listed(padding, 2),
                        pool_type, ceil_mode, _spatial_axes(layout, "HW", "pool2d"), count_include_pad)


def pool3d(data: te.Tensor, kernel: Any, stride: Any = 1, dilation: Any = 1, padding: Any = 0,
           pool_type: str = "max", ceil_mode: bool = False, layout: str = "NCDHW",
           count_include_pad: bool = True) -> te.Tensor:
    """Pooling over D, H and W; ``padding`` is an int, (d, h, w) or all six sides."""
    return pool_impl_nd(data, _listed(kernel), _listed(stride), _listed(dilation), _listed(padding, 3),
                        pool_type, ceil_mode, _spatial_axes(layout, "DHW", "pool3d"), count_include_pad)


def _listed(v: Any, n: int = 0) -> list:
    """``v`` as a list; given ``n`` (a padding of an n-D pool), one value per axis covers
    both sides of it (a single int is spread by :func:`_values`)."""
    t = [v] if isinstance(v, (int, IntImm)) else list(v)
    return t + t if n > 1 and len(t) == n else t


def _start(i: Any, out: Any, size: Any) -> Any:
    return _op.floordiv(_op.mul(i, size), out)


def adaptive_pool_impl(data: te.Tensor, output_size: Sequence[Any], pool_type: str,
                       axes: Sequence[int]) -> te.Tensor:
    """Pooling to a fixed ``output_size``: output cell ``i`` of an axis of size ``H`` covers
    ``[floor(i*H/OH), ceil((i+1)*H/OH))``.  When one size divides the other every window is
    as wide and the reduction rectangular (TVM's kernel, simplified); otherwise the widest
    window is reduced over, masked."""
    if pool_type not in ("max", "avg"):
        raise ValueError(f"topi.nn.adaptive_pool: pool_type must be 'max' or 'avg', got {pool_type!r}")
    out_shape = list(data.shape)
    sizes = [data.shape[ax] for ax in axes]
    outs = [IntImm(s.dtype, int(o)) if const_int(o) is not None else o for s, o in zip(sizes, output_size)]
    for ax, o in zip(axes, outs):
        out_shape[ax] = o
    widths = []
    for s, o in zip(sizes, outs):
        size, count = const_int(s), const_int(o)
        if size is None or count is None or (size % count and count % size):
            return _adaptive_masked(data, outs, pool_type, axes)
        widths.append(IntImm(s.dtype, max(size // count, 1)))

    def reduce(reducer: Any) -> Any:
        def f(*out: Any) -> Any:
            rvs = [te.reduce_axis((0, w), f"rv{i}") for i, w in enumerate(widths)]
            idx = list(out)
            for i, ax in enumerate(axes):
                idx[ax] = _op.add(_ANALYZER.simplify(_start(out[ax], outs[i], sizes[i])), rvs[i].var)
            return reducer(data[tuple(idx)], axis=rvs)
        return f

    if pool_type == "max":
        return te.compute(out_shape, reduce(te.max), name="adaptive_pool_max", tag="adaptive_pool_max",
                          attrs={"schedule_rule": "meta_schedule.adaptive_pool_max"})
    total = te.compute(out_shape, reduce(te.sum), name="adaptive_pool_sum", tag="adaptive_pool_sum")
    factor = 1
    for w in widths:
        factor *= int(w)

    def favg(*out: Any) -> Any:
        return total[out] if factor == 1 else _op.div(total[out], const(float(factor), data.dtype))

    return te.compute(out_shape, favg, name="adaptive_pool_avg", tag="elemwise",
                      attrs={"schedule_rule": "meta_schedule.adaptive_pool_avg"})


def _adaptive_masked(data: te.Tensor, outs: Sequence[Any], pool_type: str, axes: Sequence[int]) -> te.Tensor:
    """Adaptive pooling whose windows differ in width: reduce over the widest window and
    mask the positions past each window's end (sizes must be constants)."""
    sizes = [const_int(data.shape[ax]) for ax in axes]
    counts = [const_int(o) for o in outs]
    if None in sizes or None in counts:
        raise ValueError("topi.nn.adaptive_pool: windows of different widths need constant input and "
                         "output sizes")
    widest = [max(-(-(i + 1) * s // o) - (i * s // o) for i in range(o)) for s, o in zip(sizes, counts)]
    out_shape = list(data.shape)
    for ax, o in zip(axes, outs):
        out_shape[ax] = o

    def bounds(out: Sequence[Any], i: int) -> tuple:
        ax, s, o = axes[i], sizes[i], counts[i]
        return _start(out[ax], o, s), _op.floordiv(_op.add(_op.mul(_op.add(out[ax], 1), s), o - 1), o)

    def freduce(*out: Any) -> Any:
        rvs = [te.reduce_axis((0, w), f"rv{i}") for i, w in enumerate(widest)]
        idx, inside = list(out), []
        for i, ax in enumerate(axes):
            lo, hi = bounds(out, i)
            inside.append(_op.less(_op.add(lo, rvs[i].var), hi))
            idx[ax] = _op.min(_op.add(lo, rvs[i].var), sizes[i] - 1)  # a masked read stays in bounds
        reducer = te.max if pool_type == "max" else te.sum
        return reducer(data[tuple(idx)], axis=rvs, where=te.all(*inside))

    total = te.compute(out_shape, freduce, name=f"adaptive_pool_{'max' if pool_type == 'max' else 'sum'}")
    if pool_type == "max":
        return total

    def favg(*out: Any) -> Any:
        count = None
        for i in range(len(axes)):
            lo, hi = bounds(out, i)
            count = _op.sub(hi, lo) if count is None else _op.mul(count, _op.sub(hi, lo))
        return _op.div(total[out], _op.cast(count, data.dtype))

    return te.compute(out_shape, favg, name="adaptive_pool_avg")


def adaptive_pool(data: te.Tensor, output_size: Any, pool_type: str = "avg", layout: str = "NCHW") -> te.Tensor:
    """Adaptive pooling over H and W to ``output_size`` (an int: square)."""
    size = [output_size] * 2 if isinstance(output_size, (int, IntImm)) else list(output_size)
    return adaptive_pool_impl(data, size, pool_type, _spatial_axes(layout, "HW", "adaptive_pool"))


def adaptive_pool1d(data: te.Tensor, output_size: Any, pool_type: str = "avg", layout: str = "NCW") -> te.Tensor:
    """Adaptive pooling along W to ``output_size``."""
    size = [output_size] if isinstance(output_size, (int, IntImm)) else list(output_size)
    return adaptive_pool_impl(data, size, pool_type, _spatial_axes(layout, "W", "adaptive_pool1d"))


def adaptive_pool3d(data: te.Tensor, output_size: Any, pool_type: str = "avg", layout: str = "NCDHW") -> te.Tensor:
    """Adaptive pooling over D, H and W to ``output_size`` (an int: cubic)."""
    size = [output_size] * 3 if isinstance(output_size, (int, IntImm)) else list(output_size)
    return adaptive_pool_impl(data, size, pool_type, _spatial_axes(layout, "DHW", "adaptive_pool3d"))


__all__: Sequence[str] = ["pool1d", "pool2d", "pool3d", "pool_impl_nd", "pool_grad", "pool_out_size", "adaptive_pool",
                          "adaptive_pool1d", "adaptive_pool3d", "adaptive_pool_impl"]
