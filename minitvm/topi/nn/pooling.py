"""2-D pooling over the H and W axes of NCHW data: ``pool2d`` (max/avg with window,
strides, dilation, padding, ceil mode) and ``adaptive_pool`` (a fixed output size)."""

from __future__ import annotations

from typing import Any, Sequence

from ... import te
from ...tir import op as _op
from ...tir.expr import const
from ..utils import const_int
from .conv2d import _pair, conv2d_padding
from .pad import pad as _pad


def pool_out_size(size: Any, lo: int, hi: int, k: int, s: int, d: int, ceil_mode: bool) -> Any:
    """Windows along one axis.  With ``ceil_mode`` a last, partial window counts, but only
    when it starts inside the data or the leading padding (torch's and TVM's rule: a
    window that would start in the trailing padding is dropped)."""
    span = _op.sub(_op.add(size, lo + hi), (k - 1) * d + 1)
    if not ceil_mode:
        return _op.add(_op.floordiv(span, s), 1)
    out = _op.add(_op.floordiv(_op.add(span, s - 1), s), 1)
    starts_in_trailing_pad = _op.greater_equal(_op.mul(_op.sub(out, 1), s), _op.add(size, lo))
    known = const_int(starts_in_trailing_pad)
    if known is not None:
        return _op.sub(out, 1) if known else out
    return _op.if_then_else(starts_in_trailing_pad, _op.sub(out, 1), out)


def pool2d(data: te.Tensor, kernel: Any, stride: Any = 1, dilation: Any = 1, padding: Any = 0,
           pool_type: str = "max", ceil_mode: bool = False, layout: str = "NCHW",
           count_include_pad: bool = True) -> te.Tensor:
    """Max or average over each window; ``padding`` is (top, left, bottom, right) or
    shorter.  The average divides by the window size, or, when ``count_include_pad`` is
    False, by the number of non-padding elements in it."""
    if layout != "NCHW":
        raise NotImplementedError(f"topi.nn.pool2d: layout {layout!r} is not supported (only NCHW)")
    if pool_type not in ("max", "avg"):
        raise ValueError(f"topi.nn.pool2d: pool_type must be 'max' or 'avg', got {pool_type!r}")
    kh, kw = (int(v) for v in _pair(kernel))
    sh, sw = (int(v) for v in _pair(stride))
    dh, dw = (int(v) for v in _pair(dilation))
    top, left, bottom, right = (int(v) for v in conv2d_padding(padding))
    n, c, h, w = data.shape
    out_h = pool_out_size(h, top, bottom, kh, sh, dh, ceil_mode)
    out_w = pool_out_size(w, left, right, kw, sw, dw, ceil_mode)
    # ceil mode may let the last window run past the bottom/right padding: pad that too
    extra_h = _op.sub(_op.add(_op.mul(_op.sub(out_h, 1), sh), (kh - 1) * dh + 1), _op.add(h, top + bottom))
    extra_w = _op.sub(_op.add(_op.mul(_op.sub(out_w, 1), sw), (kw - 1) * dw + 1), _op.add(w, left + right))
    pad_b = bottom + max(const_int(extra_h) or 0, 0) if ceil_mode else bottom
    pad_r = right + max(const_int(extra_w) or 0, 0) if ceil_mode else right
    fill = _op.min_value(data.dtype) if pool_type == "max" else const(0, data.dtype)
    padded = data
    if top or left or pad_b or pad_r:
        padded = _pad(data, [0, 0, top, left], [0, 0, pad_b, pad_r], fill, name="pad_temp")

    def window(b: Any, ch: Any, y: Any, x: Any, ry: Any, rx: Any) -> Any:
        return padded[b, ch, _op.add(_op.mul(y, sh), _op.mul(ry, dh)), _op.add(_op.mul(x, sw), _op.mul(rx, dw))]

    if pool_type == "max":
        def fmax(b: Any, ch: Any, y: Any, x: Any) -> Any:
            ry, rx = te.reduce_axis((0, kh), "ry"), te.reduce_axis((0, kw), "rx")
            return te.max(window(b, ch, y, x, ry.var, rx.var), axis=[ry, rx])
        return te.compute((n, c, out_h, out_w), fmax, name="pool_max")

    def fsum(b: Any, ch: Any, y: Any, x: Any) -> Any:
        ry, rx = te.reduce_axis((0, kh), "ry"), te.reduce_axis((0, kw), "rx")
        return te.sum(window(b, ch, y, x, ry.var, rx.var), axis=[ry, rx])

    total = te.compute((n, c, out_h, out_w), fsum, name="pool_sum")

    def count(y: Any, size: Any, lo: int, hi: int, k: int, s: int, d: int) -> Any:
        """The divisor along one axis (torch's rule): window positions on the data, or with
        ``count_include_pad`` on the data or its padding; positions a ceil-mode window
        reaches past the trailing padding never count."""
        start = _op.sub(_op.mul(y, s), lo)
        lo_bound = -lo if count_include_pad else 0
        hi_bound = _op.add(size, hi) if count_include_pad else size
        # positions start + t·d for t < k that land in [lo_bound, hi_bound)
        first = _op.max(const(0, "int64"), _op.floordiv(_op.add(_op.sub(lo_bound, start), d - 1), d))
        last = _op.min(const(k, "int64"), _op.floordiv(_op.add(_op.sub(hi_bound, start), d - 1), d))
        return _op.max(_op.sub(last, first), const(1, "int64"))

    def favg(b: Any, ch: Any, y: Any, x: Any) -> Any:
        cnt = _op.mul(count(_op.cast(y, "int64"), _op.cast(h, "int64"), top, bottom, kh, sh, dh),
                      count(_op.cast(x, "int64"), _op.cast(w, "int64"), left, right, kw, sw, dw))
        return total[b, ch, y, x] / _op.cast(cnt, data.dtype)

    return te.compute((n, c, out_h, out_w), favg, name="pool_avg")


def adaptive_pool(data: te.Tensor, output_size: Any, pool_type: str = "avg",
                  layout: str = "NCHW") -> te.Tensor:
    """Pooling to a fixed ``output_size``: output cell ``i`` of ``H`` covers rows
    ``[⌊i·H/OH⌋, ⌈(i+1)·H/OH⌉)`` (H and W must be constants)."""
    if layout != "NCHW":
        raise NotImplementedError(f"topi.nn.adaptive_pool: layout {layout!r} is not supported")
    n, c, h, w = data.shape
    oh, ow = (int(v) for v in _pair(output_size))
    H, W = const_int(h), const_int(w)
    if H is None or W is None:
        raise ValueError("topi.nn.adaptive_pool: the spatial dimensions must be constants")

    def max_window(size: int, out: int) -> int:
        return max(-(-(i + 1) * size // out) - (i * size // out) for i in range(out))

    kh, kw = max_window(H, oh), max_window(W, ow)

    def bounds(i: Any, size: int, out: int) -> tuple:
        start = _op.floordiv(_op.mul(i, size), out)
        end = _op.floordiv(_op.add(_op.mul(_op.add(i, 1), size), out - 1), out)
        return start, end

    def freduce(b: Any, ch: Any, y: Any, x: Any) -> Any:
        ry, rx = te.reduce_axis((0, kh), "ry"), te.reduce_axis((0, kw), "rx")
        y0, y1 = bounds(y, H, oh)
        x0, x1 = bounds(x, W, ow)
        inside = te.all(_op.less(_op.add(y0, ry.var), y1), _op.less(_op.add(x0, rx.var), x1))
        # clamp so a masked-out read stays in bounds
        yy = _op.min(_op.add(y0, ry.var), H - 1)
        xx = _op.min(_op.add(x0, rx.var), W - 1)
        value = data[b, ch, yy, xx]
        reducer = te.max if pool_type == "max" else te.sum
        return reducer(value, axis=[ry, rx], where=inside)

    total = te.compute((n, c, oh, ow), freduce, name=f"adaptive_pool_{pool_type}")
    if pool_type == "max":
        return total

    def favg(b: Any, ch: Any, y: Any, x: Any) -> Any:
        y0, y1 = bounds(y, H, oh)
        x0, x1 = bounds(x, W, ow)
        return total[b, ch, y, x] / _op.cast(_op.mul(_op.sub(y1, y0), _op.sub(x1, x0)), data.dtype)

    return te.compute((n, c, oh, ow), favg, name="adaptive_pool_avg")


__all__: Sequence[str] = ["pool2d", "pool_out_size", "adaptive_pool"]
