"""Convolutions near the machine (x86 with AVX-512): output channels in blocks of a vector.

The plain ``conv2d_nchw`` kernel vectorizes along the output row: for a stride-2 convolution
that row is read with holes (a gather), and the 3-channel stem of a vision model does almost
no work per load.  This kernel does what ONNX Runtime's MLAS and TVM's ``conv2d_NCHWc``
schedules do instead -- it works in *blocks of ``ob`` output channels* (NCHW[x]c for the
output side):

* the weight is stored once, at compile time, as ``W_packed[o // ob, c, kh, kw, o % ob]``
  (:func:`pack_conv2d_weight`, done by ``relax.transform.AlterOpLayout`` on a constant): the
  ``ob`` weights of one input position are one contiguous vector;
* the micro-kernel keeps a register tile of ``ow_t`` output columns x ``ob`` channels (ob = a
  vector: 16 float32 lanes on AVX-512, 8 on AVX2; one register per column) and, for every input channel and window
  position, loads one weight vector and multiplies it by ``ow_t`` broadcast input values --
  ``ow_t`` independent fused multiply-adds per load, whatever the stride;
* a stride-1 or stride-2 convolution whose output rows are whole pairs of vectors turns the tile
  around (:func:`_row_tile`): a few channels x two vectors of columns, the input row loaded as
  vectors (stride 2: from a padding copy that stores even and odd columns apart) and each weight
  broadcast -- its accumulators are rows of the NCHW output, written back without the transpose
  the tile of channel vectors needs; a stride-2 row of whole vectors that are not pairs (AVX-512:
  MobileNetV2's stem onto 112 columns) takes one vector of columns by 16 channels
  (:func:`_strided_row_of_vectors`), an image stem with a long reduction (ResNet's 7x7, packed in
  blocks of one vector for it: :func:`stem_block`) 8 channels by two rows;
* with two vectors of channels (:func:`pixel_tile`: AVX2 16, AVX-512 32, when they divide the
  channels) the tile runs over the output plane's pixels flattened instead (y * W + x: 6 of them
  on AVX2, 8 on AVX-512, or a divisor of the row near that: 7 on ResNet's 28, 14 and 7
  columns), rounded up to whole tiles -- a pixel past the plane recomputes the last one and is
  not written back; two weight loads feed 12 (16) broadcast FMAs;
* the activations stay NCHW between kernels (no layout change in the graph); the padding is
  the usual ``pad_temp`` copy -- on threads, per block of output rows inside its chunk, or per
  image -- and the write-back of each tile goes through the fused epilogue (bias, ReLU,
  residual add) into the NCHW output.

A 1x1 convolution is then exactly a matmul of the packed ``[O/ob, C, ob]`` weight panel with
the ``[C, H*W]`` activations, tiled the same way.

:func:`schedule_conv2d_nchw_packed` is the schedule (a ``DefaultCPUSchedule`` rule; the default
pipeline puts it before the generic rules).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import te
from ...arith import Analyzer
from ...ir import dtype as _dt
from ...runtime.cpu import parallel_threads
from ...tir import op as _op
from ...tir.expr import BufferLoad, PrimExpr
from ...tir.functor import pre_order_visit, substitute
from ...tir.schedule import Schedule, ScheduleError
from ...tir.transform.default_schedule import (
    CONV_PARALLEL_WORK,
    _blocks,
    _column_stride,
    _extents,
    _extents_or_none,
    _flatten_pixels,
    _local_accumulator,
    _peeled_tile_rows,
    _single_epilogue,
    prefetch_at_top,
    vectorize_rows,
)
from ...tir.vector_unit import VectorUnit
from ..nn.conv2d import conv_out_size, conv_padding
from ..nn.pad import pad as _pad
from ..utils import const_int

__all__ = ["conv1d_ncw_packed", "conv2d_nchw_packed", "pack_conv1d_weight", "pack_conv2d_weight", "packed_block",
           "schedule_conv2d_nchw_packed", "stem_block", "PACKED_CONV_NAME", "OUT_BLOCK", "MAX_COLUMN_TILE"]

#: name of the kernel's compute block (the schedule rule finds it by this name)
PACKED_CONV_NAME = "conv2d_nchw_packed"
#: name of the padding copy before the convolution (``topi.nn.pad``'s block)
PAD_NAME = "pad_temp"
#: name of the copy of a strided 1x1 convolution's input rows and columns it reads
#: (:func:`_strided_pointwise_rows`)
SUBSAMPLE_NAME = "strided_rows"
#: name of the block that writes a flat-pixel result (:func:`pixel_tile`) back into NCHW rows
PIXELS_TO_ROWS_NAME = "conv2d_nchw_packed_rows"
#: name of a 1-d convolution's view of its NCW input as one NCHW row (:func:`conv1d_ncw_packed`;
#: the schedule inlines it: the kernel reads the input in place)
AS_ROW_NAME = "conv1d_as_row"
#: name of the block that writes that row back as NCW, without the columns added to fill tiles
ROW_TO_NCW_NAME = "conv1d_ncw_packed"
#: name of the block that writes back an output row without the columns added to make it whole
#: register tiles (:func:`_tile_columns_added`)
CROP_NAME = "conv2d_nchw_packed_crop"
#: one vector of float32 on AVX-512, the block of narrow or short convolutions (:func:`packed_block`)
OUT_BLOCK = 16
#: at most this many output columns per register tile (fewer when the vector unit has fewer
#: registers than AVX-512's: :func:`_column_tile`)
MAX_COLUMN_TILE = 16
#: parallelize when the kernel does more multiply-adds than this: DefaultCPUSchedule's threshold
#: (below it a parallel region costs more than it saves, and on a busy machine it can stall)
PARALLEL_WORK = CONV_PARALLEL_WORK
#: what writing back one output costs, in multiply-adds, counted with them against PARALLEL_WORK:
#: a short reduction's kernel is mostly its write-back.  Measured on Zen 4 (AVX2), one thread,
#: resnet_small's 16 -> 32 1x1 stride-2 projection at batch 8 (1M multiply-adds, 64K outputs)
#: took 56 us where its multiply-adds alone, at its 3x3 convs' rate, take 26; on 2 threads 37 us
WRITE_BACK_WORK = 16
#: a batch with at least this many images per thread (a whole number of them) runs a row-tiled
#: convolution image by image on each thread (:func:`_whole_images_per_thread`)
IMAGES_PER_THREAD = 2
#: a flat-pixel convolution of a static batch runs one image after another (:class:`_Threads`)
#: from this many multiply-adds per image on: a parallel region per image (two, with the padding)
#: costs more than it saves on smaller ones -- resnet_small's 2.4M-MAC convs at batch 8 ran
#: 1.2-2.3x slower by image (2 threads); ResNet-18's (115M and more) 0.36-0.8x
BY_IMAGE_WORK = 16 * 1024 * 1024


def packed_block(out_channels: int, reduction: int | None = None) -> int:
    """The output-channel block ``ob`` for ``out_channels`` (``reduction``: multiply-adds per
    output, in channels x window): two vectors of the unit in scope when they divide, the
    reduction is at least ``PIXEL_TILE_MIN_REDUCTION`` and there are ``PIXEL_TILE_MIN_CHANNELS``
    channels or more (AVX2: 16, AVX-512: 32; the tile then runs
    over pixels, :func:`pixel_tile`), else one (AVX-512: 16, AVX2: 8), else 8, else all of them (a
    short vector).  On AVX2 a block of one vector is one ymm per column, so the tile holds 8
    columns (8 accumulators, one weight load and 8 broadcasts per step) where 16 channels held 4
    columns of two ymm: measured on Zen 4 (AVX2), one thread, resnet_small 285 -> 250 us at
    batch 1, 2.29 -> 2.03 ms at batch 8."""
    lanes = VectorUnit.current().lanes
    long_enough = reduction is None or reduction >= PIXEL_TILE_MIN_REDUCTION
    two = (2 * lanes,) if long_enough and out_channels >= PIXEL_TILE_MIN_CHANNELS else ()
    for b in (*two, max(lanes, 8), 8):
        if out_channels % b == 0:
            return b
    return out_channels


#: a convolution with fewer multiply-adds per output keeps blocks of one vector (columns of a
#: row): its tiles' write-back outweighs the reduction.  Measured on AVX2, 2 threads, against
#: one vector: MNIST's 1 -> 32 3x3 (9) 1.1x the time at batch 8, resnet_small's 3 -> 16 stem
#: (27) 1.0-1.17x; ResNet-18's 1x1 stride-2 projections (64 and more) 0.85x
PIXEL_TILE_MIN_REDUCTION = 32
#: and with fewer output channels: resnet_small's 16 and 32-channel convs (2-5M multiply-adds)
#: ran 1.05-1.18x their one-vector time at batch 1 (2 threads), level at batch 8
PIXEL_TILE_MIN_CHANNELS = 64


#: a convolution with at most this many input channels (an image's) that reads its input at
#: stride 2 along the row is a stem: see :func:`stem_block`
STEM_MAX_CHANNELS = 4
#: output rows side by side in the tile of a stem along the row (:func:`_strided_row_of_vectors`)
STEM_ROWS = 2


def stem_block(weight_shape: tuple, strides: Any, padding: Any, dilation: Any, data_width: Any,
               groups: int = 1) -> int | None:
    """The packed block of an image stem on AVX-512 -- at most STEM_MAX_CHANNELS input channels,
    stride 2 along the row, a reduction of at least PIXEL_TILE_MIN_REDUCTION (so
    :func:`packed_block` would take two vectors and flat pixels) onto output rows that are whole
    vectors but not pairs (ResNet-18's 3 -> 64 7x7 onto 112 columns): one vector of channels,
    whose tile runs along the output row (:func:`_strided_row_of_vectors`, STEM_ROWS rows of it)
    and writes rows back without the transpose of the flat-pixel tile (8 pixels x 32 channels
    gathered lane by lane through the stack: 256 shuffles per 2352 FMAs, on AVX-512's FMA port 5).
    Measured on a Xeon (AVX-512), ResNet-18's stem, the kernel alone against the flat-pixel tile,
    alternating in one process, busy machine (load 3.5-4.3): b1 one thread min 1355 vs 1380 us
    (median 1488 vs 1634), 1517 vs 1496 (1679 vs 1637); two threads 703 vs 736, 762 vs 743; b8
    one thread 11.5 vs 12.3 ms (median 13.7 vs 16.8), two threads 12.5 vs 14.3 (median level).  The
    whole model at b1, same process, alternating (load 3.9-4.3): min 12.05 vs 12.38 ms and 17.28 vs
    18.47 (medians 37.5 vs 33.2 and 39.5 vs 40.9).  None: :func:`packed_block` decides."""
    unit = VectorUnit.current()
    o, c, kh, kw = (int(d) for d in weight_shape)
    sw = int(strides) if isinstance(strides, int) else int(strides[-1])
    dw = int(dilation) if isinstance(dilation, int) else int(dilation[-1])
    before, after = conv_padding(padding, 2)
    width = const_int(data_width)
    if unit.lanes < STRIDED_ROW_MIN_LANES or groups != 1 or c > STEM_MAX_CHANNELS or sw != 2 or width is None:
        return None
    ow = const_int(conv_out_size(width, kw, before[1], after[1], sw, dw))
    if c * kh * kw < PIXEL_TILE_MIN_REDUCTION or (width + before[1] + after[1]) % 2 or o % unit.lanes \
            or ow is None or ow % unit.lanes or ow % (2 * unit.lanes) == 0:
        return None
    return unit.lanes


def pack_conv2d_weight(weight: np.ndarray, block: int | None = None, groups: int = 1) -> np.ndarray:
    """``W[o, c, kh, kw]`` (OIHW) -> ``W_packed[o // ob, c, kh, kw, o % ob]``: the ``ob``
    weights a tile multiplies by one input value become one contiguous vector.  In ``groups``
    (``c``: the channels of one group) a block lies within a group."""
    o, c, kh, kw = weight.shape
    ob = block or packed_block(o // groups, c * kh * kw)
    if (o // groups) % ob:
        raise ValueError(f"pack_conv2d_weight: {o // groups} output channels (a group's) are not a multiple of the "
                         f"block {ob}")
    return np.ascontiguousarray(weight.reshape(o // ob, ob, c, kh, kw).transpose(0, 2, 3, 4, 1))


def conv2d_nchw_packed(data: te.Tensor, kernel: te.Tensor, strides: Any = 1, padding: Any = 0,
                       dilation: Any = 1, out_dtype: str | None = None, groups: int = 1) -> te.Tensor:
    """``out[n, o, y, x] = Σ_{c, ry, rx} pad(data)[n, g·C + c, y·sh + ry·dh, x·sw + rx·dw]
    · kernel[o // ob, c, ry, rx, o % ob]`` -- an NCHW convolution whose weight is packed by
    :func:`pack_conv2d_weight` (``ob`` = the kernel's last dimension; in ``groups``, ``g`` the
    group of output channel ``o`` and ``C`` the kernel's channels, a group's: a block of ``ob``
    lies in one group).  With a block of two vectors (:func:`pixel_tile`) over a static plane
    the sum is computed over flat pixels, rounded up to whole tiles, and copied back into rows by
    a second stage; with one, a static row may be rounded up to whole tiles of columns
    (:func:`_tile_columns_added`), computed over zeros added to the padding and not written back."""
    if data.ndim != 4 or kernel.ndim != 5:
        raise ValueError(f"topi.x86.conv2d_nchw_packed: expected 4-d NCHW data and a 5-d packed kernel, got "
                         f"{data.ndim}-d and {kernel.ndim}-d")
    out_dtype = out_dtype or data.dtype
    sh, sw = (strides, strides) if isinstance(strides, int) else (int(strides[0]), int(strides[1]))
    dh, dw = (dilation, dilation) if isinstance(dilation, int) else (int(dilation[0]), int(dilation[1]))
    before, after = conv_padding(padding, 2)
    n, c, h, w = data.shape
    oblocks, kc, kh, kw, ob = kernel.shape
    if const_int(c) is not None and const_int(kc) is not None and const_int(c) != groups * const_int(kc):
        raise ValueError(f"topi.x86.conv2d_nchw_packed: data has {c} channels, the kernel {kc} in {groups} groups")
    ob_int = const_int(ob)
    if groups != 1 and (ob_int is None or const_int(oblocks) is None or const_int(oblocks) % groups):
        raise ValueError(f"topi.x86.conv2d_nchw_packed: {groups} groups need a static number of blocks of output "
                         f"channels that they divide, got {oblocks} of {ob}")
    group_blocks = 1 if groups == 1 else const_int(oblocks) // groups  # blocks of ob per group
    out_c = _op.mul(oblocks, ob)
    width = const_int(conv_out_size(w, kw, before[1], after[1], sw, dw))
    added = 0
    if None not in (ob_int, width) and pixel_tile(ob_int) is None and \
            not _strided_pointwise_rows(kh, kw, (sh, sw), before + after, width, ob_int):
        # (the added columns are computed over zeros and not written back)
        window = [const_int(v) for v in (kc, kh, kw)]
        added = _tile_columns_added(width, ob_int, sw, None if None in window else math.prod(window))
        after = [after[0], after[1] + added * sw]
    padded = data
    if any(before) or any(after):
        padded = _pad(data, [0, 0, *before], [0, 0, *after], 0.0, name=PAD_NAME)
    oh = conv_out_size(h, kh, before[0], after[0], sh, dh)
    ow = conv_out_size(w, kw, before[1], after[1], sw, dw)
    if _strided_pointwise_rows(kh, kw, (sh, sw), before + after, ow, ob_int):
        # only every sh-th row and sw-th column is read: gather them first, into rows the tile
        # along the row loads as vectors (:func:`_rows_of`)
        padded = te.compute((n, c, oh, ow), lambda nn, cc, yy, xx: data[nn, cc, yy * sh, xx * sw], name=SUBSAMPLE_NAME)
        sh = sw = 1
    rc = te.reduce_axis((0, kc), "rc")
    ry = te.reduce_axis((0, kh), "ry")
    rx = te.reduce_axis((0, kw), "rx")

    def fcompute(nn: Any, oo: Any, yy: Any, xx: Any) -> PrimExpr:
        cc = rc if groups == 1 else _op.add(_op.mul(_op.floordiv(_op.floordiv(oo, ob_int), group_blocks), kc), rc)
        v = padded[nn, cc, _op.add(_op.mul(yy, sh), _op.mul(ry.var, dh)), _op.add(_op.mul(xx, sw), _op.mul(rx.var, dw))]
        wgt = kernel[_op.floordiv(oo, ob_int), rc, ry, rx, _op.floormod(oo, ob_int)]
        return te.sum(_op.cast(v, out_dtype) * _op.cast(wgt, out_dtype), axis=[rc, ry, rx])

    plane = [const_int(oh), const_int(ow)]
    tile = None if ob_int is None else pixel_tile(ob_int, plane[1])
    if tile is None or None in plane or const_int(n) is None:  # (a symbolic batch: the rows, as before)
        out = te.compute((n, out_c, oh, ow), fcompute, name=PACKED_CONV_NAME)
        return te.compute((n, out_c, oh, width), lambda *i: out(*i), name=CROP_NAME) if added else out
    # the output plane as whole tiles of flat pixels, then back into rows (the write-back)
    pixels, width = plane[0] * plane[1], plane[1]

    def row_and_column(pp: Any) -> tuple[Any, Any]:
        p = _op.min(pp, pixels - 1) if pixels % tile else pp  # past the plane: the last pixel again
        return _op.floordiv(p, width), _op.floormod(p, width)

    flat = te.compute((n, out_c, -(-pixels // tile) * tile),
                      lambda nn, oo, pp: fcompute(nn, oo, *row_and_column(pp)), name=PACKED_CONV_NAME)
    return te.compute((n, out_c, oh, ow), lambda nn, oo, yy, xx: flat[nn, oo, yy * width + xx],
                      name=PIXELS_TO_ROWS_NAME)


def pack_conv1d_weight(weight: np.ndarray, groups: int = 1) -> np.ndarray:
    """``W[o, c, k]`` (OIW) -> the packed weight of its one-row 2-d convolution
    (:func:`conv1d_ncw_packed`), in blocks of one vector of channels: the block of two
    (:func:`pixel_tile`) tiles flat pixels, whose write-back into rows has no row to drop."""
    o, c, k = weight.shape
    ob = packed_block(o // groups, c * k)
    return pack_conv2d_weight(weight[:, :, None, :], ob // 2 if pixel_tile(ob) else ob, groups)


def conv1d_ncw_packed(data: te.Tensor, kernel: te.Tensor, strides: Any = 1, padding: Any = 0,
                      dilation: Any = 1, out_dtype: str | None = None, groups: int = 1) -> te.Tensor:
    """``out[n, o, x] = Σ_{c, rx} pad(data)[n, c, x·s + rx·d] · kernel[o // ob, c, 0, rx, o % ob]``
    -- an NCW convolution (in ``groups`` as there) as :func:`conv2d_nchw_packed` over one row,
    its weight packed by :func:`pack_conv1d_weight`."""
    if data.ndim != 3 or kernel.ndim != 5 or const_int(kernel.shape[2]) != 1:
        raise ValueError(f"topi.x86.conv1d_ncw_packed: expected 3-d NCW data and a 5-d packed kernel of one row, got "
                         f"{data.ndim}-d and {kernel.ndim}-d {list(kernel.shape)}")
    if pixel_tile(const_int(kernel.shape[4]) or 0) is not None:
        raise ValueError(f"topi.x86.conv1d_ncw_packed: a block of two vectors ({kernel.shape[4]}) tiles flat pixels, "
                         "which a row does not have: pack the weight with pack_conv1d_weight (in the same unit)")
    (s,), (d,) = ([int(v)] if isinstance(v, int) else [int(e) for e in v] for v in (strides, dilation))
    (before,), (after,) = conv_padding(padding, 1)
    n, c, w = data.shape
    ow = conv_out_size(w, kernel.shape[3], before, after, s, d)
    row = te.compute((n, c, 1, w), lambda nn, cc, _, xx: data[nn, cc, xx], name=AS_ROW_NAME)
    out = conv2d_nchw_packed(row, kernel, (1, s), (0, before, 0, after), (1, d), out_dtype, groups)
    return te.compute((n, out.shape[1], ow), lambda nn, oo, xx: out[nn, oo, 0, xx], name=ROW_TO_NCW_NAME)


def _tile_columns_added(width: int, ob: int, stride: int, reduction: int | None) -> int:
    """Columns to add to an output row of ``width`` (``reduction``: multiply-adds per output) so
    that it is whole register tiles: at stride 1, two vectors of the unit in scope
    (:func:`_row_tile`, no transpose on the way back) when that adds at most a quarter of
    ``width``; else, with a reduction of PIXEL_TILE_MIN_REDUCTION or more, a multiple of the
    accumulators when :func:`_column_tile` finds no tile of at least half of them (a prime
    width); else 0.  Measured on Zen 4 (AVX2), 2 threads, batch 8, each kernel alone against no
    columns added: MNIST's 1 -> 32 3x3 conv, 26 -> 32 columns (rows) 0.73x (51 vs 70 us);
    wav2vec2's 16 -> 16 stride-2 conv1d, 19 -> 24 columns (tiles of 8, not of 1) 0.30x; not
    added: the same conv at 39 columns as rows of 48 (stride 2: through the deinterleaving
    padding copy) 1.97x, its 1-channel stride-5 first layer, 79 -> 80 columns 1.36x."""
    unit = VectorUnit.current()
    to_rows = -width % (2 * unit.lanes)
    if stride == 1 and 4 * to_rows <= width and _row_tile(width + to_rows, ob) is not None:
        return to_rows
    if reduction is None or reduction < PIXEL_TILE_MIN_REDUCTION:
        return 0
    full = unit.accumulators // -(-ob // unit.lanes)
    return 0 if 2 * _column_tile(width, ob) >= full else -width % full


def _strided_pointwise_rows(kh: Any, kw: Any, strides: tuple, padding: list, ow: Any, ob: int | None) -> bool:
    """A strided, unpadded 1x1 convolution whose output rows the tile along the row covers
    (:func:`_row_tile`): it reads a strided subsample of its input, copied into rows first.
    Measured on Zen 4 (AVX2), 2 threads, resnet_small's 16 -> 32 stride-2 projection at batch 8
    (16 output columns), the kernel alone: 0.81x (25 vs 31 us), at batch 1 0.69x; one thread 0.59x."""
    if (const_int(kh), const_int(kw)) != (1, 1) or strides == (1, 1) or any(padding) or ob is None:
        return False
    width = const_int(ow)
    return width is not None and pixel_tile(ob) is None and _row_tile(width, ob) is not None


# -- the schedule ---------------------------------------------------------------------------------


def _column_tile(ow: int, ob: int) -> int:
    """The widest divisor of the output width whose tile of ``ob``-channel columns fits the
    accumulators of the vector unit in scope (AVX-512, ob = 16: 16 columns of one zmm each;
    AVX2, ob = 8: 8 of one ymm), and at most MAX_COLUMN_TILE.  When that divisor is less than
    half of them (26 columns: 2 = 26 / 13), the widest that fits the registers beside a weight
    vector, a broadcast and a spare (AVX2: 13).  Measured on Zen 4 (AVX2), one thread, MNIST's
    1 -> 32 conv (26 columns): 13 columns 96 us, 2 columns 141 us; LeNet's 10 columns ran
    slower as one tile of 10 than as two of 5."""
    unit = VectorUnit.current()
    vectors = -(-ob // unit.lanes)  # registers per column

    def widest_divisor(most: int) -> int:
        return max(d for d in range(1, min(ow, MAX_COLUMN_TILE, max(1, most)) + 1) if ow % d == 0)

    tile = widest_divisor(unit.accumulators // vectors)
    if 2 * tile < unit.accumulators // vectors:
        tile = widest_divisor((unit.registers - vectors - 2) // vectors)
    return tile


def pixel_tile(ob: int, width: int | None = None) -> int | None:
    """Flat output pixels per register tile of a block of ``ob`` channels, when the block is two
    vectors of the unit in scope: as many as leave registers for the two weight vectors and a
    broadcast (AVX2: 16 x 6, 12 accumulators: 2 weight loads and 6 broadcasts per 12 FMAs;
    AVX-512: 32 x 8), as the pointwise rule's tiles -- or, for output rows of ``width``, the
    widest divisor of the width down to ROW_PIXEL_TILE_SHARE of that (AVX-512: 7 on ResNet's
    28, 14 and 7 columns): a tile within one row reads its pixels at one address plus constants
    (one register where a tile across rows keeps a pointer per pixel) and the plane is whole tiles.
    None: one vector of channels, tiled over the columns of a row (:func:`_column_tile`)."""
    unit = VectorUnit.current()
    if ob != 2 * unit.lanes:
        return None
    most = _peeled_tile_rows(unit, ob)
    if width is not None and width % most:
        within = max(d for d in range(1, most + 1) if width % d == 0)
        if within >= ROW_PIXEL_TILE_SHARE * most:
            return within
    return most


#: a pixel tile that divides the output width (:func:`pixel_tile`) may be this share of the
#: registers' tile and no less.  Measured on a Xeon (AVX-512), one thread, ResNet-18's 3x3 convs
#: (+ bias, residual, ReLU) at batch 1, 7-pixel tiles against 8 (min of 30 rounds alternating in
#: one process, load ~6): 512 channels on 7 x 7 0.71x, 256 on 14 x 14 0.78x, 128 on 28 x 28
#: 0.91x, the stride-2 ones onto 7 x 7 0.79x and 14 x 14 0.90x; 256 channels on 12 x 12 (6 a
#: tile) 0.69x, 64 on 30 x 30 (6) 1.04x.  AVX2 (-mcpu=znver3 on that Xeon): 5 against 6 on 20
#: and 10 columns 0.95x and 0.86x; ResNet's widths keep 6 there (divisors 4 and 2 are too few)
ROW_PIXEL_TILE_SHARE = 0.75


def schedule_conv2d_nchw_packed(sch: Schedule) -> bool:
    """The register-tiled micro-kernel for :func:`conv2d_nchw_packed` (with its padding before
    and elementwise epilogue after it); False when the function has no such block.

    1. The padding copy is vectorized along its rows; the epilogue blocks are inlined into the last.
    2. Split the output channels by ``ob`` and the columns by ``ow_t``; order the loops
       (n, o0, y, x0, c, ry, rx, x1, o1): the reduction runs outside an ``ow_t x ob`` tile.
    3. Accumulate the tile in a ``cache_write("local")`` buffer (registers) stored channels-last
       (``transform_layout``: a vector of ``o1`` is contiguous there), vectorize ``o1``
       (one weight vector per step), unroll ``x1`` (``ow_t`` broadcast FMAs), and write the tile
       back through the epilogue after each (y, x0).
    4. Parallel over (n, o0, y) when the kernel is large (even one image has a row per thread),
       and then the padding copy too (else the serial part of the kernel) -- a padded one over
       blocks of rows (n, y0), each padding the rows it reads (:meth:`_Threads.apply_rows`);
       zero the tile before ``c``.

    A convolution over flat pixels (two vectors of channels, :func:`pixel_tile`) splits the pixels
    instead of the columns, (n, o0, p0, c, ry, rx, p1, o1), and writes each tile back through the
    epilogue, turned over the flat pixels too (:func:`_tile_pixels`); on threads, padded, groups
    of whole output rows, each padding its rows (:func:`_pixel_row_groups`).
    """
    names = [sch.get(b).name_hint for b in _blocks(sch)]
    if PACKED_CONV_NAME not in names:
        return False
    conv = sch.get_block(PACKED_CONV_NAME)
    ok, epilogue = _single_epilogue(sch, conv, allow_prologue=True)
    if not ok:
        return False
    if AS_ROW_NAME in names:  # (a 1-d convolution: its input is read in place, as one row)
        sch.compute_inline(sch.get_block(AS_ROW_NAME))
    loops = sch.get_loops(conv)
    flat = len(loops) == 6  # (n, o, pixel, c, ry, rx): :func:`pixel_tile`'s form
    if len(loops) != 7 and not flat:
        raise ScheduleError(f"{PACKED_CONV_NAME}: expected 3-4 spatial and 3 reduction loops, got {len(loops)}")
    ext = _extents_or_none(sch, loops)
    if None in ext[1:]:
        raise ScheduleError(f"{PACKED_CONV_NAME}: needs static channels, sizes and window (the batch may vary)")
    N = ext[0]
    per_image = math.prod(ext[1:])  # multiply-adds per image
    work = per_image + WRITE_BACK_WORK * math.prod(ext[1:-3])  # (the outputs: all but n and the window)
    parallel = work > PARALLEL_WORK if N is None else N * work > PARALLEL_WORK
    prologue = []
    for b in _blocks(sch):
        if sch.get(b).name_hint == PACKED_CONV_NAME:
            break
        prologue.append(sch.get(b).name_hint)
    # a static batch of images each worth threads: one image after another (see _threads)
    by_image = flat and N is not None and N > 1 and per_image >= BY_IMAGE_WORK and prologue in ([], [PAD_NAME])
    realize, _ = sch._block(sch.get_block(PACKED_CONV_NAME))
    ob = _packed_block_of(realize.block)
    stem = not flat and _is_stem(realize.block, ext[3], ob)
    rows = None if flat else _rows_of(sch, realize.block, ext[3], ob, prologue, stem)
    # (a convolution by image whose batch splits into whole images on the threads runs those)
    images = (rows is not None or by_image) and parallel and _whole_images_per_thread(N) and len(prologue) <= 1
    by_image = by_image and not images
    pad_rows = None
    if flat and parallel and not (by_image or images) and prologue == [PAD_NAME] \
            and _pixel_row_groups(sch, epilogue, ext, ob) is not None:
        pad_rows = PAD_NAME  # (groups of rows of flat pixels, each padding its rows)
    if parallel and not (by_image or images or flat) and prologue == [PAD_NAME] \
            and math.prod(ext[-3:]) >= _pad_per_rows_min_reduction() \
            and _weights_within_padded_image(sch, realize.block):
        pad_rows = PAD_NAME
    if not by_image and not images and pad_rows is None:
        for name in prologue:
            vectorize_rows(sch, sch.get_block(name), parallel=parallel and N is not None)
    conv = sch.get_block(PACKED_CONV_NAME)
    threads = _Threads(parallel, N, prologue[0] if (by_image or images) and prologue else None, by_image, images,
                       pad_rows)
    if flat:
        _tile_pixels(sch, conv, epilogue, ob, threads)
    elif rows is not None:
        _tile_rows(sch, conv, epilogue, rows, threads, STEM_ROWS if stem else 1)
    else:
        _tile_columns(sch, conv, epilogue, ob, ext[3], threads)
    return True


#: a convolution with fewer multiply-adds per output (channels x window) pads before its tiles,
#: not per block of rows: MobileNetV2's 3 -> 32 stem (27) ran 1.35x its time on one thread with
#: the padding per block (its 225-column padding, even and odd columns apart, is loaded lane by
#: lane there), 1.16x by the minimum on 2 (Zen 4, AVX2, the kernel alone, load 3)
PAD_PER_ROWS_MIN_REDUCTION = 32
#: ... on AVX-512, which gathers the deinterleaved padding a vector at a time: every packed conv
#: pads per block of rows.  Measured on a Xeon, 2 threads, the same stem at batch 1 (one vector x
#: 16 channels along the row, :func:`_strided_row_of_vectors`), the kernel alone, min of 600 calls
#: alternating in one process, three runs (load 6-7): 91-93 vs 113-133 us, medians 0.93-0.99x
PAD_PER_ROWS_MIN_REDUCTION_AVX512 = 8


def _pad_per_rows_min_reduction() -> int:
    """The unit in scope's PAD_PER_ROWS_MIN_REDUCTION (AVX-512: PAD_PER_ROWS_MIN_REDUCTION_AVX512)."""
    return PAD_PER_ROWS_MIN_REDUCTION_AVX512 if VectorUnit.current().lanes >= 16 else PAD_PER_ROWS_MIN_REDUCTION


def _weights_within_padded_image(sch: Schedule, conv: Any) -> bool:
    """Whether the packed weight is no larger than one padded image: blocks of rows on threads
    (:meth:`_Threads.apply_rows`) then read less per chunk than blocks of channels.  A chunk of
    rows reads all of the weight and its rows of the image, a chunk of channel blocks its part of
    the weight and all of the image."""
    weight = next(r.buffer for r in conv.reads if len(r.buffer.shape) == 5)
    padded = sch.get(sch.get_block(PAD_NAME)).writes[0].buffer
    weights, image = ([const_int(d) for d in dims] for dims in (weight.shape, padded.shape[1:]))
    return None not in weights + image and math.prod(weights) <= math.prod(image)


def _whole_images_per_thread(N: int | None) -> bool:
    """Whether a static batch of ``N`` images splits into whole images on the threads, at least
    IMAGES_PER_THREAD each: the batch loop then is the parallel loop, and each image's padding
    (or strided copy) is computed by its thread just before its tiles -- one parallel region per
    kernel instead of two, the copy warm in that core's cache.  Measured on Zen 4 (AVX2), 2
    threads, resnet_small at batch 8 against the (channel block, row) loop on threads with the
    padding on threads before it, in one process: the model 0.77-0.91x, its 3x3 convs 0.76-0.90x
    (load 4.2).  A flat-pixel convolution that would run by image (:class:`_Threads`) does the
    same: ResNet-18 at batch 8, 2 threads, in one process, against image after image with two
    parallel regions each: the model 0.92x and 0.94x, one run of four 1.34x (load 5-9), its
    convs summed 0.90x in two runs -- the pool's chunks are whole images, so a core another
    process takes costs its share of images, not a wait at each image's two region ends."""
    threads = parallel_threads()
    return N is not None and N % threads == 0 and N >= IMAGES_PER_THREAD * threads


@dataclass(frozen=True)
class _Threads:
    """How a tiled convolution runs on threads: ``parallel`` (large enough), the batch ``N``
    (None: symbolic) and, with ``by_image``, one image after another -- the image's padding
    (``pad``, computed per image) and then its tiles on threads.  With the batch fused into the
    parallel loop instead, the input's address in the inner loop carries the image's offset and
    LLVM kept the tile's six pixel offsets in a vector register, extracting each per step (with
    spills).  Measured on Zen 4 (AVX2), ResNet-18's 3x3 convs at batch 8, fused -> by image:
    int32 indices (a kernel built alone), 2 threads, 30.4 -> 11.4 ms (128 channels, 28 x 28),
    strided ones 8.2 -> 6.6; the model's int64 kernels, 1 thread, 25.5 -> 21.9 ms, 64 -> 128
    stride 2 16.0 -> 11.8 (8 x the batch-1 time is 21.2 and 11.5)."""

    parallel: bool
    N: int | None
    pad: str | None
    by_image: bool
    images: bool = False  # the batch on threads, the padding per image (:func:`_whole_images_per_thread`)
    pad_rows: str | None = None  # the padding, computed per block of output rows (:meth:`apply_rows`)

    def apply_rows(self, sch: Schedule, n: Any, o0: Any, y: Any, rows: int) -> bool:
        """Threads over blocks of the ``rows`` output rows (loop ``y``, :func:`_row_blocks`), all
        channel blocks ``o0`` of a row block in one chunk, and the padding (``pad_rows``) computed
        per row block at the top of its chunk: each thread pads the input rows its tiles read (the
        window's halo rows padded again by the next block) into a chunk-local buffer it reads back
        from its own cache.  With the padding on threads before the convolution, each thread read
        half the padded rows from the other core's cache, and the channel blocks on threads made
        every chunk read all of them.  Measured on Zen 4 (AVX2), 2 threads, resnet_small at batch
        1, each kernel alone (min of 500 calls, load 1.6): 16 -> 16 3x3 on 32 x 32 53 -> 41 us,
        32 -> 32 on 16 x 16 54 -> 33, 16 -> 32 stride 2 29 -> 19; in the model (kernel minima,
        same process) 0.64-0.97x.  False (nothing done) without ``pad_rows`` (set only for a
        padded convolution on threads that does not run by image)."""
        if self.pad_rows is None:
            return False
        blocks = _row_blocks(rows)
        y0, y1 = sch.split(y, [blocks, None])
        sch.reorder(y0, o0, y1)
        outer = y0 if self.N is None else sch.fuse(n, y0)
        pad = sch.get_block(self.pad_rows)
        sch.compute_at(pad, outer)
        sch.vectorize(sch.get_loops(pad)[-1])
        sch.parallel(outer)
        return True

    def apply(self, sch: Schedule, n: Any, inner: list) -> None:
        """Parallel over ``inner`` (the tile loops below the batch ``n``), with ``n`` too unless
        the convolution runs by image (or over ``n`` alone, ``images``); the padding computed per
        image under ``n``."""
        if self.pad is not None:
            pad = sch.get_block(self.pad)
            sch.compute_at(pad, n)
            rows = sch.get_loops(pad)[1:]
            sch.vectorize(rows[-1])
            if self.parallel and not self.images:
                sch.parallel(sch.fuse(*rows[:-1]))
        if not self.parallel:
            return
        if self.images:
            sch.parallel(n)
            return
        sch.parallel(sch.fuse(*inner) if self.by_image or self.N is None else sch.fuse(n, *inner))


#: the output rows of a convolution that pads per block of rows (:meth:`_Threads.apply_rows`) are
#: cut into at least this many blocks per thread, the pool's chunks (``CHUNKS_PER_THREAD``).
#: Measured on Zen 4 (AVX2), 2 threads, resnet_small at batch 1 in the model, against 2 and 1:
#: level with 2 (the stride-2 conv 0.93x), 1 block per thread 1.1-1.2x the time (load 2.6)
ROW_BLOCKS_PER_THREAD = 4


def _row_blocks(rows: int) -> int:
    """How many blocks the ``rows`` output rows are cut into: the smallest divisor of ``rows``
    of at least ROW_BLOCKS_PER_THREAD per thread (or all of them, one row each)."""
    want = ROW_BLOCKS_PER_THREAD * parallel_threads()
    return min((d for d in range(1, rows + 1) if rows % d == 0 and d >= want), default=rows)


def _tile_columns(sch: Schedule, conv: Any, epilogue: Any, ob: int, X: int, threads: _Threads) -> None:
    """Steps 2-4 of :func:`schedule_conv2d_nchw_packed` for a block of one vector of channels:
    a tile of ``ob`` channels x ``ow_t`` columns of one output row."""
    n, o, y, x, rc, ry, rx = sch.get_loops(conv)
    ow_t = _column_tile(X, ob)
    o0, o1 = sch.split(o, [None, ob])
    x0, x1 = sch.split(x, [None, ow_t])
    sch.reorder(n, o0, y, x0, rc, ry, rx, x1, o1)
    local = sch.cache_write(conv, 0, "local")
    # the tile's channels innermost: vector o1 is then contiguous in the accumulator buffer
    sch.transform_layout(conv, ("write", 0), lambda nn, oo, yy, xx: (nn, yy, xx, oo))
    if epilogue is not None:
        sch.compute_inline(local)
        wb = epilogue
    else:
        wb = local
    sch.reverse_compute_at(wb, x0)
    sch.vectorize(o1)
    sch.unroll(x1)
    sch.unroll(rx)
    wb_loops = sch.get_loops(wb)
    sch.vectorize(wb_loops[-1])
    if not threads.apply_rows(sch, n, o0, y, _extents(sch, [y])[0]):
        threads.apply(sch, n, [o0, y])  # a dynamic batch: the rows of one image, when one image is enough work
    init = sch.decompose_reduction(conv, rc)
    sch.vectorize(sch.get_loops(init)[-1])


def _row_tile(X: int, ob: int) -> tuple[int, int] | None:
    """(channels, vectors) of a tile along the output row for a convolution of width ``X`` whose
    input row is read as vectors (:func:`_rows_of`) and a packed block of ``ob`` channels: two
    vectors of columns and as many channels as fill the unit's accumulators (AVX2: 4 x 16
    columns, AVX-512: 8 x 32), or None when the rows are not whole pairs of vectors.  Each step
    loads the two input vectors once and broadcasts each channel's weight: 6 loads per 8 FMAs on
    AVX2, where one vector of columns (8 channels x 8 columns) needs 9 and measured 1.1x the
    channel-vector tile's time.  Measured on Zen 4 (AVX2), one thread, against the channel-vector
    tile (8 channels x 8 columns, transposed on its way back): resnet_small's 16 -> 16 3x3 convs
    at 32 x 32, batch 8, 0.94-0.95x; its 32 -> 32 at 16 x 16 0.97-0.99x."""
    unit = VectorUnit.current()
    vectors = 2
    channels = unit.accumulators // vectors
    if X % (vectors * unit.lanes) or ob % channels:
        return None
    return channels, vectors


def _rows_of(sch: Schedule, conv: Any, X: int, ob: int, prologue: list, stem: bool = False) -> tuple[int, int] | None:
    """The row tile (:func:`_row_tile`) of the convolution block ``conv``, or None: the tile of
    channel vectors.  Stride 1 along the width reads each row tile's input as whole vectors;
    stride 2 does after its padding copy stores the padded rows deinterleaved, even columns and
    then odd ones (``pad[n, c, y, x % 2, x // 2]``: the window's column 2x + rx is then
    ``[rx % 2, x + rx // 2]``, consecutive in x).  Measured on Zen 4 (AVX2), one thread, batch 8,
    against the channel-vector tile: resnet_small's 3 -> 16 stem (stride 2, 32 output columns)
    0.76-0.78x, its 16 -> 32 stride-2 conv (16 columns) 0.91x."""
    stride = _column_stride(conv)
    rows = _row_tile(X, ob) if stride in (1, 2) else None
    if rows is None and stride == 2:
        rows = _strided_row_of_vectors(X, ob, STEM_ROWS if stem else 1)
    if rows is None or stride == 1:
        return rows
    if prologue != [PAD_NAME]:
        return None  # (an unpadded strided conv reads its input in place: nowhere to deinterleave)
    pad = sch.get_block(PAD_NAME)
    sch.transform_layout(pad, ("write", 0), lambda nn, cc, yy, xx: (nn, cc, yy, xx % 2, xx // 2), pad_value=0.0)
    if stem:
        # the copy walks its output (even columns, then odd ones): whole-vector stores of a row read
        # at stride 2 (a load and a shuffle), where walking its input scattered each vector
        sch.transform_block_layout(pad, lambda nn, cc, yy, xx: (nn, cc, yy, xx % 2, xx // 2))
    return rows


def _is_stem(conv: Any, X: int, ob: int) -> bool:
    """Whether the convolution block ``conv`` (output rows of ``X`` columns, a block of ``ob``
    channels, before :func:`_rows_of`) is a stem as :func:`stem_block` means it, whichever rule
    chose its block of one vector: stride 2 along the row, at most STEM_MAX_CHANNELS input
    channels, a padded input of an even width, rows of whole vectors but not pairs of them."""
    ext = [const_int(iv.dom.extent) for iv in conv.iter_vars]
    if None in ext or len(ext) != 7 or _column_stride(conv) != 2:
        return False
    padded = next((r.buffer for r in conv.reads if r.buffer.name == PAD_NAME), None)
    width = None if padded is None else const_int(padded.shape[-1])
    unit = VectorUnit.current()
    return (unit.lanes >= STRIDED_ROW_MIN_LANES and ob == unit.lanes and ext[4] <= STEM_MAX_CHANNELS
            and math.prod(ext[4:]) >= PIXEL_TILE_MIN_REDUCTION and width is not None and width % 2 == 0
            and X % unit.lanes == 0 and X % (2 * unit.lanes) and ext[2] % STEM_ROWS == 0)


#: the tile along a strided output row of whole vectors that are not pairs of them
#: (:func:`_strided_row_of_vectors`) is used on vector units of at least this many lanes
STRIDED_ROW_MIN_LANES = 16


def _strided_row_of_vectors(X: int, ob: int, rows: int = 1) -> tuple[int, int] | None:
    """(channels, 1): a tile along a stride-2 output row of ``X`` columns, whole vectors but not
    pairs (MobileNetV2's 3 -> 32 stem onto 112 columns on AVX-512), one vector of columns by as many
    channels of the block as fill the accumulators -- each step loads a vector of the input row and
    broadcasts the weights, and the write-back stores rows (the tile of channel vectors transposed
    each 16 x 16 tile through the stack, lane by lane).  Measured on a Xeon (AVX-512), one thread,
    the stem at batch 1, against the channel-vector tile (min of 1000 calls alternating in one
    process, load 3.2): 174 vs 229 us (2 threads: 115 vs 133 min, 176 vs 229 median); batch 8
    (load 7-8) 1442 vs 2029 us, 2 threads 716 vs 1015 min; resnet_small's 16 -> 32 onto 16
    columns 0.95-0.98x at batch 1 and 8 (load 9).  7 vectors x
    2 channels (fewer loads per multiply-add, but each input vector straddles two cache lines)
    measured 0.96x, 0.82x with the padded rows aligned (which 1 x 16 does not need).  AVX-512 only:
    AVX2's 8 lanes make 112 columns pairs of vectors (:func:`_row_tile`).  A stem (:func:`_is_stem`)
    takes ``rows`` output rows side by side and half the channels (8 x 2 rows: 2 input loads and 8
    broadcasts per 16 FMAs, where 16 x 1 loads 17): :func:`_tile_rows` splits the rows."""
    unit = VectorUnit.current()
    if unit.lanes < STRIDED_ROW_MIN_LANES or X % unit.lanes:
        return None
    return max(d for d in range(1, min(ob, unit.accumulators // rows) + 1) if ob % d == 0), 1


def _tile_rows(sch: Schedule, conv: Any, epilogue: Any, rows: tuple[int, int], threads: _Threads,
               side_by_side: int = 1) -> None:
    """Steps 2-4 of :func:`schedule_conv2d_nchw_packed` for a tile along the output row
    (:func:`_row_tile`): ``channels`` x ``vectors`` vectors of columns of one output row, loops
    (n, o0, y, x0, c, ry, rx, o1, x1, x2) with x2 a vector; the accumulators are in NCHW order,
    so the write-back stores whole rows."""
    n, o, y, x, rc, ry, rx = sch.get_loops(conv)
    channels, vectors = rows
    o0, o1 = sch.split(o, [None, channels])
    x0, x1, x2 = sch.split(x, [None, vectors, VectorUnit.current().lanes])
    if side_by_side > 1:  # (a stem: rows of the tile, :func:`_strided_row_of_vectors`)
        y, y1 = sch.split(y, [None, side_by_side])
        sch.reorder(n, o0, y, x0, rc, ry, rx, o1, y1, x1, x2)
        sch.unroll(y1)
    else:
        sch.reorder(n, o0, y, x0, rc, ry, rx, o1, x1, x2)
    wb = _local_accumulator(sch, conv, epilogue)
    sch.reverse_compute_at(wb, x0)
    sch.vectorize(x2)
    sch.unroll(x1)
    sch.unroll(o1)
    sch.unroll(rx)
    sch.vectorize(sch.get_loops(wb)[-1])
    if not threads.apply_rows(sch, n, o0, y, _extents(sch, [y])[0]):
        threads.apply(sch, n, [o0, y])
    init = sch.decompose_reduction(conv, rc)
    sch.vectorize(sch.get_loops(init)[-1])


def _tile_pixels(sch: Schedule, conv: Any, epilogue: Any, ob: int, threads: _Threads) -> None:
    """Steps 2-4 of :func:`schedule_conv2d_nchw_packed` for a convolution over flat pixels
    (:func:`pixel_tile`): a tile of ``ob`` channels x ``pt`` pixels, written back into NCHW rows
    through the epilogue (its own pixels only: the last tile may run past the plane).  A small
    plane runs its reduction in chunks outside the tiles (:func:`_reduction_in_chunks`), a medium
    one in chunks over groups of tiles (:func:`_tiles_per_group`); with ``threads.pad_rows`` the
    groups are whole rows on threads, each padding its input rows (:func:`_pixel_row_groups`)."""
    if epilogue is None:
        raise ScheduleError(f"{PACKED_CONV_NAME}: a flat-pixel convolution without its write-back into rows")
    n, o, p, rc, ry, rx = sch.get_loops(conv)
    pixels, channels, kh, kw = _extents(sch, [p, rc, ry, rx])
    # (the compute's unit made the pixels a multiple of its tile; another unit in scope now may not)
    width = const_int(sch.get(epilogue).iter_vars[3].dom.extent)
    most = pixel_tile(ob, width) or _peeled_tile_rows(VectorUnit.current(), ob)
    tile = max(d for d in range(1, most + 1) if pixels % d == 0)
    o0, o1 = sch.split(o, [None, ob])
    p0, p1 = sch.split(p, [None, tile])
    chunked = _reduction_in_chunks(pixels, ob, channels, kh * kw)
    group = None if chunked else _tiles_per_group(pixels // tile, tile, ob, channels, kh * kw,
                                                      threads.images)
    pg = None
    # (whole images on each thread: the groups of an image run on its thread)
    images_padded = threads.images and threads.pad == PAD_NAME
    row_group = _pixel_row_groups(sch, epilogue, [None, None, pixels, channels, kh, kw], ob,
                                  1 if images_padded else None) if threads.pad_rows or images_padded else None
    if row_group is not None:
        # (groups of whole rows on threads, each padding its rows: :func:`_pixel_row_groups`)
        chunked, group = False, row_group * width // tile
    if chunked:
        rc, rc1 = sch.split(rc, [None, REDUCTION_CHUNK])
        sch.reorder(n, o0, rc, p0, rc1, ry, rx, p1, o1)
    elif group is not None:
        pg, p0 = sch.split(p0, [None, group])
        rc, rc1 = sch.split(rc, [None, REDUCTION_CHUNK])
        if row_group is not None:
            sch.reorder(n, pg, o0, rc, p0, rc1, ry, rx, p1, o1)
        else:
            sch.reorder(n, o0, pg, rc, p0, rc1, ry, rx, p1, o1)
    else:
        sch.reorder(n, o0, p0, rc, ry, rx, p1, o1)
    local = sch.cache_write(conv, 0, "local")
    # the tile's channels innermost: vector o1 is then contiguous in the accumulator buffer
    sch.transform_layout(conv, ("write", 0), lambda nn, oo, pp: (nn, pp, oo))
    sch.compute_inline(local)
    sch.transform_block_layout(epilogue, _flatten_pixels(width))
    # the write-back follows the loop outside the reduction: the block, a group or a tile
    tile_outer = p0 if pg is None else pg
    sch.reverse_compute_at(epilogue, o0 if chunked or row_group is not None else tile_outer)
    sch.vectorize(o1)
    sch.unroll(p1)
    sch.unroll(rx)
    # the write-back along each channel's pixels, contiguous in NCHW: along the channels every
    # value of a pixel lands H x W floats from the last (4 KB on a 32 x 32 plane: the 16 stores
    # of a pixel share one cache set), measured 1.4-2.5x slower on resnet_small's 16-channel convs
    sch.vectorize(sch.get_loops(epilogue)[-1])
    if row_group is not None and threads.images:
        pad = sch.get_block(threads.pad)
        sch.compute_at(pad, pg)
        sch.vectorize(sch.get_loops(pad)[-1])
        sch.parallel(n)
    elif row_group is not None:
        outer = pg if threads.N is None else sch.fuse(n, pg)
        pad = sch.get_block(threads.pad_rows)
        sch.compute_at(pad, outer)
        sch.vectorize(sch.get_loops(pad)[-1])
        sch.parallel(outer)
    else:
        threads.apply(sch, n, [o0] if chunked else [o0, tile_outer])
    init = sch.decompose_reduction(conv, rc)
    sch.vectorize(sch.get_loops(init)[-1])
    if chunked or (pg is not None and row_group is None):  # (row groups: see _pixel_row_groups)
        _prefetch_next_chunk(sch, conv, rc, p0, rc1)


#: a padded flat-pixel convolution on threads runs groups of whole output rows
#: (:func:`_pixel_row_groups`) when its rows cut into at least this many groups per thread (the
#: pool's chunks; fewer, larger groups pad fewer halo rows, but a busy core then costs more)
ROW_GROUPS_PER_THREAD = 4


def _pixel_row_groups(sch: Schedule, epilogue: Any, ext: list, ob: int, threads: int | None = None) -> int | None:
    """Output rows per group when a padded flat-pixel convolution on threads (``ext``: its loop
    extents (n, o, pixels, c, kh, kw); ``epilogue``: its write-back into rows; ``threads``: the
    threads the groups are cut for, default all) runs groups of whole output rows on the
    threads, or None.  Each group pads the input rows it reads (window
    halo included) into a chunk-local buffer at the top of its chunk, then runs every block of
    channels over them, the reduction in chunks of REDUCTION_CHUNK channels over the group's
    tiles, (n, g, o0, c0, p0, c1, ry, rx, p1, o1), writing each block back after its last chunk.
    The padding before the convolution took a parallel region of its own, and each core then read
    half its rows from the other core's cache (the blocks of channels on threads read every row).
    The largest group whose partial sums fit GROUP_PARTIAL_BYTES, in a number of groups the
    threads divide, ROW_GROUPS_PER_THREAD or more each: ResNet-18's 28 x 28 planes 14 groups of 2
    rows, 56 x 56 14 of 4.  No weight prefetch (:func:`_prefetch_next_chunk`): a block's weights
    (147 KB) stay in L2 across groups, and the hints' address arithmetic cost more than they
    saved.  AVX-512 with 3x3-like windows only (AVX2's schedule is unchanged), on planes too
    large for :func:`_reduction_in_chunks` (its chunks over the whole plane read each weight once:
    256 ch on 14 x 14 in 14 groups of a row measured 1.46x, each group reading all 2.4 MB of
    weights).  A batch whose whole images run on each thread (:func:`_whole_images_per_thread`)
    runs the groups of each image on its thread, padded per group (``threads``: 1, the groups per
    image): one 28 x 28 image in 4 groups of 7 rows, 56 x 56 in 14 of 4; measured on a Xeon, one
    thread, ResNet-18 at batch 8, CPU time of 60 calls alternating in one process (two runs, load
    4), against each image padded whole before (blocks of channels, groups of tiles) with the
    prefetch: 128 ch on 28 x 28 0.94x and 0.95x (min), 64 -> 128 stride 2 0.92x and 0.95x, 64 ch
    on 56 x 56 0.98x and 1.02x.  (Groups of all the images on threads, padded per group, measured
    1.03-1.07x the images'.)  Measured on a Xeon (AVX-512), ResNet-18 at batch 1, each kernel alone, min of 400
    calls alternating in one process (load 3-4), against the padding before and (blocks of
    channels, groups of tiles) on threads: 2 threads, 64 ch on 56 x 56 0.92x (631 -> 578 us),
    64 -> 128 stride 2 onto 28 x 28 0.86x (376 -> 324), 128 ch on 28 x 28 0.89x (656 -> 583);
    with the prefetch 0.95x, 0.88x, 0.92x.  One thread 0.91x and 0.93x (56 and 28)."""
    _, _, pixels, channels, kh, kw = ext
    if VectorUnit.current().lanes < 16 or kh * kw <= 1 or channels % REDUCTION_CHUNK or channels <= REDUCTION_CHUNK \
            or _reduction_in_chunks(pixels, ob, channels, kh * kw):
        return None
    height, width = (const_int(sch.get(epilogue).iter_vars[i].dom.extent) for i in (2, 3))
    tile = pixel_tile(ob, width)
    if tile is None or width % tile or pixels != height * width:
        return None
    threads = threads or parallel_threads()
    fits = [r for r in range(1, height + 1) if height % r == 0 and (height // r) % threads == 0
            and height // r >= ROW_GROUPS_PER_THREAD * threads and r * width * ob * 4 <= GROUP_PARTIAL_BYTES]
    return max(fits) if fits else None


#: a plane whose partial sums of one block of channels are more than REDUCTION_CHUNK_MAX_PARTIAL_BYTES
#: and at most this many bytes runs the reduction in chunks over groups of pixel tiles
#: (:func:`_tiles_per_group`): ResNet-18's 28 x 28 planes (100 KB), not its 56 x 56 (400 KB)
GROUPED_CHUNKS_MAX_PLANE_BYTES = 128 * 1024
#: ... the partial sums of one group are at most this many bytes: in L1 (48 KB) beside a chunk's
#: weights (16 x 3 x 3 x 32: 18 KB) and its input rows
GROUP_PARTIAL_BYTES = 32 * 1024


def _tiles_per_group(tiles: int, tile: int, ob: int, channels: int, window: int,
                     whole_images: bool = False) -> int | None:
    """Pixel tiles per group when a flat-pixel convolution runs its reduction in chunks of
    REDUCTION_CHUNK input channels over groups of tiles, (n, o0, g, c0, p0, c1, ry, rx, p1, o1),
    or None.  Without chunks each tile reads its block's whole weight (128 channels x 3 x 3 x 32:
    147 KB) from L2; a chunk's weights stay in L1 across a group's tiles, whose partial sums
    (GROUP_PARTIAL_BYTES) are stored and reloaded once per chunk.  For planes too large for the
    whole plane's partial sums to stay in L1 (:func:`_reduction_in_chunks`) and at most
    GROUPED_CHUNKS_MAX_PLANE_BYTES -- or any size when ``whole_images`` run on each thread
    (:func:`_whole_images_per_thread`) --, 3x3-like windows, AVX-512 (AVX2's schedule is unchanged).
    Measured on a Xeon (AVX-512), the kernel + bias, residual, ReLU (or bias, ReLU) against no
    groups, min of 30-40 rounds alternating in one process, CPU time (load 6-7): 128 ch on 28 x 28
    one thread 0.97-0.96x, 2 threads 0.94x (b1), b8 one thread 0.96x; 64 -> 128 stride 2 onto 28 x
    28 0.95x (one thread), 0.94x (2).  56 x 56 (64 ch, 4 chunks): one thread 0.97x b1 and 0.93x b8,
    but 2 threads at b1 1.08x in two runs (not understood), so it keeps whole reductions unless
    whole images run on each thread (b8: 2 threads 0.91-0.95x).  Groups of 16 KB measured 0.98x of
    32 KB's, 64 KB 1.0-1.07x.  ResNet-18, whole model, 2 threads, CPU time, one process
    alternating: b1 0.98x (30 rounds), b8 0.99-1.05x (28 x 28 only, two runs of 10-14) and 0.99x
    more with the 56 x 56 convs grouped (load 7-9)."""
    large = tiles * tile * ob * 4 > GROUPED_CHUNKS_MAX_PLANE_BYTES and not whole_images
    if VectorUnit.current().lanes < 16 or window <= 1 or channels % REDUCTION_CHUNK \
            or channels <= REDUCTION_CHUNK or large:
        return None
    most = GROUP_PARTIAL_BYTES // (tile * ob * 4)
    group = max(d for d in range(1, min(tiles, max(most, 1)) + 1) if tiles % d == 0)
    return group if 1 < group < tiles else None


#: input channels per chunk of the reduction (:func:`_reduction_in_chunks`): 16 x 3 x 3 x 32
#: weights are 18 KB, in L1 beside the chunk's input rows.  Measured on a Xeon (AVX-512), one
#: thread, ResNet-18's 3x3 convs at batch 1 (min of 40-60 rounds alternating in one process, load
#: ~4.7), chunks of 8, 16 and 32 channels against none: 512 ch on 7 x 7 0.87x, 0.86-0.87x, 0.88x;
#: stride 2 onto 7 x 7 0.90x, 0.89-0.94x, 0.90x.  With 16: AVX2 (-mcpu=znver3), one thread,
#: 0.88-0.97x on the four small-plane convs, but on 2 threads the two onto 7 x 7 took 1.21-1.23x
#: (two runs, load 2; not understood), so AVX2 keeps the whole reduction in each tile.  Batch 8,
#: 2 threads (by image) 0.68-1.06x (load 5.5); 2 threads, b1, load 2: 0.91-0.95x onto 7 x 7,
#: 256 ch on 14 x 14 1.0x, stride 2 onto it 0.90x
REDUCTION_CHUNK = 16
#: ... when the partial sums of one block of channels over the whole plane are at most this many
#: bytes (they stay in L1 between chunks).  Measured as above with chunks of 16: 256 ch on 14 x 14
#: (25 KB) 0.93-0.95x, stride 2 onto 14 x 14 0.90x; 128 on 28 x 28 (100 KB) 1.0x; 64 on 56 x 56
#: (400 KB) 1.15x (2 threads 1.23x)
REDUCTION_CHUNK_MAX_PARTIAL_BYTES = 32 * 1024


def _reduction_in_chunks(pixels: int, ob: int, channels: int, window: int) -> bool:
    """Whether a flat-pixel convolution runs its reduction in chunks of REDUCTION_CHUNK input
    channels outside its pixel tiles, (n, o0, c0, p0, c1, ry, rx, p1, o1): each tile re-reads
    its block's weights, and on a small plane (ResNet-18's 7 x 7: 7 tiles) a 590 KB block of 512
    channels then streams from L2 and L3 for every tile; a chunk's weights stay in L1 across the
    tiles, and the tiles' partial sums are stored and reloaded once per chunk.  Only windows of
    more than one position (3x3 measured), planes whose partial sums fit
    REDUCTION_CHUNK_MAX_PARTIAL_BYTES and AVX-512 (see REDUCTION_CHUNK); threads then take whole
    blocks of channels."""
    return VectorUnit.current().lanes >= 16 and window > 1 and channels % REDUCTION_CHUNK == 0 \
        and channels > REDUCTION_CHUNK and pixels * ob * 4 <= REDUCTION_CHUNK_MAX_PARTIAL_BYTES


#: the locality hint of the weights' prefetch (``llvm.prefetch``: 2 is ``prefetcht1``, into L2 and
#: not L1, where this chunk's weights, input rows and partial sums already fill most of 48 KB).
#: Against 3 (``prefetcht0``, TVM's lowered ``T.prefetch``), one thread, weights flushed, CPU time,
#: median of 15 and 25 alternating (load 7.5): stride 2 onto 7 x 7 0.94-0.95x, 512 ch on 7 x 7
#: 0.98-0.99x, 256 ch on 14 x 14 1.03x, b8 0.99x
PREFETCH_LOCALITY = 2
#: bytes a prefetch brings in: one cache line
CACHE_LINE = 64


def _prefetch_next_chunk(sch: Schedule, conv: Any, rc0: Any, p0: Any, rc1: Any) -> None:
    """In a reduction in chunks (:func:`_reduction_in_chunks`), prefetch the next chunk's
    weights while the pixel tiles of this one run: at each input channel ``rc1`` of tile ``p0``,
    a few cache lines of the same channel of the next chunk, the tiles taking turns through its
    lines (``T.prefetch(T.address_of(W[...]), 0, PREFETCH_LOCALITY, 1)``).  Without it the first tile of every
    chunk waits on memory for the chunk's weights (18 KB on a 3x3 of 32 channels) and the others
    wait on nothing: the block's weights stream at the demand of one tile in seven on a 7 x 7
    plane, ResNet-18's 512-channel 3x3 ran at 50% of peak with its weights out of cache against
    80% in cache.  Measured on a Xeon (AVX-512), one thread, b1, weights flushed before each call
    (CPU time, median of 15, alternating in one process): 512 ch on 7 x 7 0.74-0.78x, stride 2
    onto 7 x 7 0.89x, 256 ch on 14 x 14 0.96x; in cache 0.81x on 7 x 7.  In the model, 2 threads,
    per-kernel minima of 8-20 profiled calls alternating in one process (load 2.7-3.3): b1 the
    512-channel convs 0.44-0.75x, stride 2 onto 7 x 7 0.73x, all kernels 0.94x; b8 0.66-0.77x,
    0.74x, all 0.87x.  AVX2 reduces in whole tiles: nothing to prefetch.  The statements go at
    the top of loop ``rc1``'s body (no schedule primitive inserts a statement: TVM's TE had
    ``s[B].prefetch``; this is the rule editing its own result, not replayed from the trace)."""
    realize, _ = sch._block(conv)
    weight = next(r.buffer for r in realize.block.reads if len(r.buffer.shape) == 5)
    _, channels, kh, kw, ob = (const_int(d) for d in weight.shape)
    loads: list = []
    pre_order_visit(realize.block.body, lambda n: not (isinstance(n, BufferLoad) and n.buffer is weight
                                                       and loads.append(n)))
    loop_vars = [sch.get(x).loop_var for x in sch.get_loops(conv)]
    # the block of channels the tile reads, in the outer loops (those inside rc1 at their first iteration)
    binding = {iv.var: value for iv, value in zip(realize.block.iter_vars, realize.iter_values)}
    inner = next(i for i, v in enumerate(loop_vars) if v is sch.get(rc1).loop_var) + 1
    zeros = {v: _op.const(0, v.dtype) for v in loop_vars[inner:]}
    analyzer = Analyzer()
    block_of_channels = analyzer.simplify(substitute(substitute(loads[0].indices[0], binding), zeros))
    rc0_var, p0_var, rc1_var = (sch.get(x).loop_var for x in (rc0, p0, rc1))
    chunk, tiles = const_int(sch.get(rc1).extent), const_int(sch.get(p0).extent)
    per_line = CACHE_LINE // (_dt.bits(weight.dtype) // 8)  # weights per cache line
    lines = -(-kh * kw * ob // per_line)  # of one input channel
    per_tile = -(-lines // tiles)
    dtype = rc0_var.dtype
    channel = _op.min((rc0_var + 1) * chunk + rc1_var, _op.const(channels - 1, dtype))  # (the last chunk: its own)
    lines_ahead = []
    for j in range(per_tile):
        first = _op.min(p0_var * per_tile + j, _op.const(lines - 1, dtype)) * per_line
        index = [block_of_channels, channel, _op.floordiv(first, kw * ob), _op.floormod(_op.floordiv(first, ob), kw),
                 _op.floormod(first, ob)]
        lines_ahead.append(BufferLoad(weight, tuple(analyzer.simplify(i) for i in index)))
    prefetch_at_top(sch, conv.func_name, rc1, lines_ahead, PREFETCH_LOCALITY)


def _packed_block_of(block: Any) -> int:
    """``ob``: the last dimension of the packed weight the block reads (a 5-d buffer)."""
    for region in block.reads:
        if len(region.buffer.shape) == 5:
            ob = const_int(region.buffer.shape[-1])
            if ob is not None:
                return ob
    raise ScheduleError(f"{PACKED_CONV_NAME}: no 5-d packed weight among the block's reads")

