"""A separable max pooling for the CPU (NCHW): the window's rows first, then its columns.

A max over a ``kh x kw`` window is the max over ``kw`` columns of the max over ``kh`` rows.
The generic kernel (``topi.nn.pool2d``, ``schedule_window_reduction``) takes all ``kh * kw``
window positions for every output, each a strided load (a load and a shuffle at stride 2);
here each group of output rows first reduces its input rows to ``pool_rows`` (contiguous loads
along the padded row, ``kh - 1`` max each), then each output takes ``kw`` strided loads of that:
ResNet's 3 x 3 stride-2 pool does 9 + 3 vector operations per vector of outputs instead of 27.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from ... import te
from ...tir import op as _op
from ...tir.schedule import Schedule
from ...tir.transform.default_schedule import (
    WINDOW_PARALLEL_WORK,
    WINDOW_ROWS,
    _blocks,
    _extents,
    _largest_divisor,
)
from ..utils import const_int

__all__ = ["max_pool2d_separable", "separable_max_pool2d", "schedule_max_pool2d_separable", "ROWS_NAME"]

#: the block of the window's rows' max (each output row's input rows reduced to one row)
ROWS_NAME = "pool_rows"
_OUT_NAME = "pool_max"
_PAD_NAME = "pad_temp"


def separable_max_pool2d(data_shape: Any, dtype: str, pool_size: Any, strides: Any, padding: Any, dilation: Any,
                         ceil_mode: bool, layout: str, out_layout: str) -> bool:
    """Whether :func:`max_pool2d_separable` computes this ``max_pool2d``: NCHW in and out, a float,
    static shape, no dilation, no ceil mode, windows that overlap along the rows (more rows than
    the stride: consecutive output rows share input rows).  Without the overlap each input row
    is reduced once either way: the MNIST model's 2 x 2 stride-2 pool, 1 x 32 x 26 x 26, measured
    5.6 -> 6.2 us on AVX2 code (level on AVX-512), so it keeps the generic kernel."""
    shape = [const_int(d) for d in data_shape or ()]
    return (layout == out_layout == "NCHW" and dtype in ("float32", "float64") and len(shape) == 4
            and None not in shape and not ceil_mode and all(int(d) == 1 for d in dilation)
            and len(pool_size) == 2 and len(strides) == 2 and int(pool_size[0]) > int(strides[0])
            and len(padding) == 4)


def max_pool2d_separable(data: te.Tensor, pool_size: Any, strides: Any, padding: Any) -> te.Tensor:
    """``out[n, c, y, x] = max_{j < kw} rows[n, c, y, x·sw + j]`` with ``rows[n, c, y, w] =
    max_{i < kh} pad(data)[n, c, y·sh + i, w]`` -- ``max_pool2d`` (NCHW, padding
    ``(top, left, bottom, right)`` by the lowest value) as two passes; equal to it exactly (a max
    is the same in any order)."""
    N, C, H, W = (int(d) for d in data.shape)
    kh, kw = (int(k) for k in pool_size)
    sh, sw = (int(s) for s in strides)
    pt, pl, pb, pr = (int(p) for p in padding)
    OH, OW = (H + pt + pb - kh) // sh + 1, (W + pl + pr - kw) // sw + 1
    PH, PW = (OH - 1) * sh + kh, (OW - 1) * sw + kw  # (the padded rows and columns a window reads)
    lowest = _op.min_value(data.dtype)
    pad = te.compute((N, C, PH, PW), lambda n, c, y, x: _op.if_then_else(
        _op.all(y >= pt, y < H + pt, x >= pl, x < W + pl), data[n, c, y - pt, x - pl], lowest), name=_PAD_NAME)

    def row_max(n: Any, c: Any, y: Any, w: Any) -> Any:
        return functools.reduce(_op.max, [pad[n, c, y * sh + i, w] for i in range(kh)])

    def column_max(n: Any, c: Any, y: Any, x: Any) -> Any:
        return functools.reduce(_op.max, [rows[n, c, y, x * sw + j] for j in range(kw)])

    rows = te.compute((N, C, OH, PW), row_max, name=ROWS_NAME)
    return te.compute((N, C, OH, OW), column_max, name=_OUT_NAME, tag="pool_max")


def schedule_max_pool2d_separable(sch: Schedule) -> bool:
    """The schedule of :func:`max_pool2d_separable` (a ``DefaultCPUSchedule`` rule; False for any
    other function): output rows in groups of WINDOW_ROWS, the groups (with the channels and
    images) on threads when large; each group row-reduces the input rows it reads (the padding a
    select there), then takes its outputs' columns from that cache-hot ``pool_rows`` -- both
    vectorized along the row."""
    names = [sch.get(b).name_hint for b in _blocks(sch)]
    if names != [_PAD_NAME, ROWS_NAME, _OUT_NAME]:
        return False
    out, rows, pad = (sch.get_block(n) for n in (_OUT_NAME, ROWS_NAME, _PAD_NAME))
    n, c, y, x = sch.get_loops(out)
    N, C, OH, OW = _extents(sch, [n, c, y, x])
    y0, _ = sch.split(y, [None, _largest_divisor(OH, WINDOW_ROWS)])
    group = sch.fuse(n, c, y0)
    func = sch.mod["main"]
    reads = math.prod(int(const_int(d)) for d in func.buffer_map[func.params[0]].shape)
    if reads + N * C * OH * OW > WINDOW_PARALLEL_WORK:
        sch.parallel(group)
    sch.vectorize(x)
    # the padding read in place (a select at the border) rather than copied first: in ResNet-18 at
    # batch 1 (one process, alternating, load 3.6-4) min 118 -> 96 us, median 225 -> 184
    sch.compute_inline(pad)
    sch.compute_at(rows, group)
    sch.vectorize(sch.get_loops(rows)[-1])
    return True
