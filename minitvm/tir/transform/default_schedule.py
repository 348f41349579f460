"""DefaultCPUSchedule: readable, rule-based default schedules for CPU (in the spirit of DLight).

For every PrimFunc without the attribute ``"tir.is_scheduled"`` the pass tries a few small
rules in order and keeps the first one that applies::

    schedule_int4_gemv     the packed-int4 dequantize-GEMV of decode's int4 layers (quantized_gemv.py)
    schedule_gemv          C[0, j] = sum_k x[0, k] * w(j, k) at batch 1 (decode's linear layers, also with
                           the weight decoded from int8 inside the kernel): stream w once
    schedule_matmul_nt     C[i, j] = sum_k A[i, k] * B[j, k] with few rows (batch-1 dense): dot products
    schedule_dense_few_rows   C[i, j] = sum_k A[i, k] * B[k, j] with 2-8 rows, a row of outputs no whole number of
                           vectors (a small-batch dense): the rows take turns over blocks of k
    schedule_dense_transposed_weight   the same with 1-8 rows over a large constant B: B stored
                           transposed at compile time, then the GEMV rule (a classifier head)
    schedule_matmul_like   C[i, j] (+batch) = sum_k A * B, maybe with elementwise epilogues
    schedule_matmul_rows_untiled   the same, a symbolic row count one row per tile (when tiling it fails)
    schedule_depthwise_conv2d   the same with one input channel per output channel, at stride 1:
                           a tile of whole output rows per channel
    schedule_conv2d_1x1    a 1x1 stride-1 convolution as a matmul over (channels, pixels)
    schedule_conv2d_like   out[n, c, h, w] = sum_{ci, kh, kw} pad * W, with its padding and epilogue
    schedule_elementwise   only spatial blocks (add, relu, transpose, ...)
    schedule_reduction     row reductions (softmax, layer_norm ...): parallel rows

A rule takes a ``tir.Schedule`` over the function and returns ``True`` when it scheduled it,
``False`` when the function is not its kind.  Each primitive checks itself: a
:class:`ScheduleError` inside a rule means "this rule does not fit", the schedule is thrown away
and the next rule is tried.  If no rule fits the function is returned unchanged; otherwise it
gets ``"tir.is_scheduled": True``.

Usage (on a TIR module or a Relax module after FuseTIR -- only PrimFuncs are touched)::

    mod = tir.transform.DefaultCPUSchedule()(mod)
"""

from __future__ import annotations

import math
import sys
import threading
import types
from collections import OrderedDict
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable, Iterator

from ...arith import Analyzer
from ...ir import replace
from ...ir.module import GlobalVar, IRModule
from ...ir.structural import structural_equal, structural_hash
from ...runtime.cpu import parallel_threads
from ...transform import module_pass
from ..analysis import uses_var
from ..expr import Add, BufferLoad, Call, FloatImm, IntImm, Min, Mul, Range, Var
from ..function import PrimFunc
from ..functor import post_order_visit, substitute
from ..op import call_builtin
from ..schedule import BlockRV, LoopRV, Schedule, ScheduleError
from ..schedule.block_annotate import BufferReplacer
from ..stmt import Block, BufferStore, Evaluate, For, Stmt, seq
from ..stmt_functor import block_realizes, replace_stmt
from ..vector_unit import MAX_SHUFFLED_STRIDE, VectorUnit
from .quantized_gemv import schedule_int4_gemv

__all__ = ["DefaultCPUSchedule", "schedule_gemv", "schedule_matmul_nt", "schedule_dense_few_rows",
           "schedule_dense_transposed_weight",
           "schedule_matmul_like", "schedule_conv2d_like",
           "schedule_depthwise_conv2d", "schedule_elementwise", "schedule_reduction", "pack_into_panels", "RULES",
           "SCHEDULE_CACHE", "SCHEDULE_CACHE_SIZE", "DEPTHWISE_TILE_VECTORS", "SCHEDULED_ATTR", "is_scheduled",
           "scheduled_kernels_to"]

#: the attribute a scheduled function carries, which this pass, DefaultGPUSchedule, dlight and the
#: tuner set; TVM 0.27 spells it "tirx.is_scheduled", which :func:`is_scheduled` reads too
SCHEDULED_ATTR = "tir.is_scheduled"
_SCHEDULED_ATTRS_READ = (SCHEDULED_ATTR, "tirx.is_scheduled")


def is_scheduled(func: PrimFunc) -> bool:
    """Whether ``func`` was marked scheduled (by a schedule pass, the tuner or by hand)."""
    return isinstance(func, PrimFunc) and any(bool(func.attrs.get(k)) for k in _SCHEDULED_ATTRS_READ)


# Thresholds for ``parallel``.  A parallel region costs what waking the pool's workers costs: tens
# of microseconds once they sleep (measured on 2 cores with the OpenMP runtime minitvm used before
# its own thread pool: a 64^3 matmul 7 us serial vs 70 us parallel, the 1x784x256 dense 14 vs
# 28-67 us), a few microseconds while they still spin between the kernels of one model call
# (``thread_pool.SPIN_ITERATIONS``: a 4 us region after a 20 us pause, 20 -> 4 us).
#: parallelize a matmul or a convolution when it does more multiply-adds than this (256^3 = 16M is
#: well above; about 50 us on one core).  Measured interleaved on 2 cores with the spinning pool
#: (medians of whole zoo models, against 4M): the MLP at batch 8 (its 8x784x256 dense layers)
#: 73-91 -> 64-68 us; MNIST at batch 8 (its 1.6M-MAC 1 -> 32 conv, whose write-back costs as much as
#: its arithmetic) 351-356 -> 207-220 us; a small ResNet at batch 8 (2.4M-MAC convs per image)
#: 1.60-2.31 -> 1.41-1.45 ms
MATMUL_PARALLEL_WORK = 1024 * 1024
#: the same for a convolution (the conv rules here and ``topi.x86``'s packed kernel)
CONV_PARALLEL_WORK = MATMUL_PARALLEL_WORK
#: the same for a depthwise convolution, whose multiply-adds (9 per loaded input row, per channel)
#: are bound by loads, several times slower each than a dense conv's.  Measured on Zen 4 (AVX2), 2
#: threads against one, one kernel at a time on a busy machine (load 9): MobileNetV2's depthwise
#: layers at batch 1 below CONV_PARALLEL_WORK, 576 x 14 -> 7 (254K multiply-adds) 41 -> 23 us,
#: 192 x 28 -> 14 45 -> 30 us, 960 x 7 x 7 64 -> 41 us, 384 x 14 x 14 55 -> 48-55 us
DEPTHWISE_PARALLEL_WORK = 128 * 1024
#: parallelize elementwise / row loops when they touch more elements than this
ELEMENTWISE_PARALLEL_WORK = 256 * 1024
#: parallelize a global sum pooling's tiles of channels (:func:`_schedule_plane_reduction`) when it
#: reads more elements than this (it had ELEMENTWISE_PARALLEL_WORK's 256K): its sums are chains of
#: dependent adds, and the convolution before it wrote half of its channels on each core.  Xeon, 2
#: threads, in the model, both in one process (per-kernel minima / medians of native profiles, load
#: 2.3-2.7): MobileNetV2's 1 x 1280 x 7 x 7 (62720) 13.7 -> 8.4 us / 19.5 -> 13.8 us, AVX2 code
#: (``-mcpu=znver3``) 11.5 -> 7.5 / 17.6 -> 12.3; ResNet-18 at batch 8, 8 x 512 x 7 x 7, 50.6 ->
#: 29.5 / 71.9 -> 46.3.  ResNet-18's 1 x 512 x 7 x 7 (25088) stays serial
PLANE_REDUCTION_PARALLEL_WORK = 32 * 1024
#: the same for a window reduction (max / average pooling), counted in window positions: each
#: is a strided load and a NaN-propagating max (several instructions) -- the zoo's MNIST pool,
#: 8 x 32 x 26 x 26 -> 13 x 13 (173K positions), ran serial at 30 us
WINDOW_PARALLEL_WORK = 64 * 1024
#: the same for a transposing copy, whose vector of outputs is gathered from as many rows (an
#: element costs several times a flat copy's): GPT-2's attention heads at batch 8, 32 x 64 x 128
#: floats out of the qkv projection, ran serial at 0.12-0.29 ms each
TRANSPOSE_PARALLEL_WORK = 64 * 1024
#: j-tile widths tried (largest first) when a matmul has a single row (batch-1 dense), in
#: vector registers: the k loop then keeps 8 (4, 2, 1) independent accumulators
ROW_TILE_VECTORS = (8, 4, 2, 1)
#: a matmul with a few rows keeps a whole row of at most this many outputs in registers
ROW_MAX = 128
#: parallelize the rows of a row reduction (softmax, layer norm) when its blocks touch more
#: elements than this (measured on 2 cores, rows on threads against serial: ViT's 3 x 197 x 197
#: safe softmax 241 -> 151 us; GPT-2's 4 x 128 x 128 softmax 129 vs 132, and a 197 x 192 layer
#: norm 55 vs 60, no faster)
ROW_REDUCTION_PARALLEL_WORK = 64 * 1024
#: vector width in float32 lanes that elementwise splits aim for (AVX-512's; on a narrower
#: unit LLVM splits a 16-lane loop into two or four registers, which costs nothing there).
#: Register tiles are sized for the unit in scope instead (:class:`~minitvm.tir.vector_unit.VectorUnit`)
VECTOR_LANES = 16
#: schedule_matmul_like packs B into column panels from this many rows on (the copy pays off)
PACK_MIN_ROWS = 64
#: vectorize_rows vectorizes a row of up to this many elements whole (LLVM splits it into registers)
ROW_VECTOR_MAX = 256
#: schedule_matmul_nt takes matmuls with at most this many rows (more rows: the tiled rule)
NT_MAX_ROWS = 8
#: rows a matmul with a symbolic row count is assumed to have when deciding on threads (a prompt;
#: a single row is the GEMV rule's, at a static shape)
SYMBOLIC_ROWS_GUESS = 64
#: schedule_gemv runs the output columns on threads from this many multiply-adds on (1 MiB of
#: float32 weights): a GEMV reads each weight once, so below that the thread pool's wake-up
#: costs more than the second core's share of the memory traffic brings
GEMV_PARALLEL_WORK = 256 * 1024


# -- small helpers -------------------------------------------------------------------------------


def _int(e) -> int | None:
    """The value of a constant extent (IntImm or int), else None (a symbolic shape)."""
    if isinstance(e, int):
        return e
    if isinstance(e, IntImm):
        return int(e.value)
    return None


def _blocks(sch: Schedule) -> list[BlockRV]:
    """The function's blocks (not the root block), in program order."""
    func = sch.mod[sch.func_working_on]
    names = [r.block.name_hint for r, _ in block_realizes(func.body) if r.block.name_hint != "root"]
    return [sch.get_block(n) for n in names]


def _extents_or_none(sch: Schedule, loops: list[LoopRV]) -> list[int | None]:
    """Constant loop extents, None for a symbolic one (a dynamic batch ``n``)."""
    return [_int(sch.get(lp).extent) for lp in loops]


def _extents(sch: Schedule, loops: list[LoopRV]) -> list[int]:
    ext = [_int(sch.get(lp).extent) for lp in loops]
    if any(e is None for e in ext):
        raise ScheduleError("symbolic loop extent: the default schedules need static shapes")
    return ext  # type: ignore[return-value]


def _is_spatial(sch: Schedule, block: BlockRV) -> bool:
    return all(iv.iter_type == "spatial" for iv in sch.get(block).iter_vars)


def _largest_divisor(n: int, candidates: tuple[int, ...]) -> int:
    """The first of ``candidates`` (largest first) that divides ``n``; 1 if none does."""
    for c in candidates:
        if n % c == 0:
            return c
    return 1


def _inner_factor(n: int) -> int:
    """A vector-friendly inner split factor for an extent ``n``: 16 (or 8/4/2) if it divides,
    else ``n`` itself when small (the whole loop is one vector), else 1."""
    f = _largest_divisor(n, (VECTOR_LANES, 8, 4, 2))
    if f == 1 and n <= 2 * VECTOR_LANES:
        return n
    return f


# -- rule 0: GEMV ---------------------------------------------------------------------------------


def _gemv_block(sch: Schedule) -> BlockRV | None:
    """The multiply-accumulate block over spatial iterators then one or more reductions."""
    def kinds_ok(kinds: list[str]) -> bool:
        n = kinds.index("reduce") if "reduce" in kinds else len(kinds)
        return 1 <= n < len(kinds) and all(k == "reduce" for k in kinds[n:])
    return _multiply_accumulate_block(sch, kinds_ok)


def _streams_along(value: Any, k: Any, j: Any) -> bool:
    """Whether every load in ``value`` that moves with the reduction iterator ``k`` moves one
    element per step of k in its last index only (it reads a row), and one of them -- the
    weight -- is indexed by the output column ``j`` too."""
    loads: list[BufferLoad] = []
    post_order_visit(value, lambda x: loads.append(x) if isinstance(x, BufferLoad) else None)
    analyzer, weight = Analyzer(), False
    for ld in loads:
        if not any(uses_var(i, k) for i in ld.indices):
            continue  # a scale per row or per group: one value for a whole vector
        *outer, last = ld.indices
        if any(uses_var(i, k) for i in outer) or not analyzer.can_prove_equal(substitute(last, {k: k + 1}) - last, 1):
            return False
        weight = weight or any(uses_var(i, j) for i in ld.indices)
    return weight


def schedule_gemv(sch: Schedule, plain_rows: int = 1) -> bool:
    """A matrix-vector product ``C[0, j] = sum_k x[0, k] * w(j, k)`` -- a dense layer at batch 1,
    a decode step's linear layers -- whose weight is read along k: a float ``W[j, k]``, or one
    decoded inside the kernel (int8 ``Wq[j, k]``, its row's scale applied after the reduction, or
    ``(Wq[j, k] - zp) * scale[j]``; packed int4 is ``schedule_int4_gemv``'s).  Every weight is
    read once for one multiply-add, so memory bandwidth bounds the kernel: the schedule streams
    the weights.
    A decoded weight with up to ``NT_MAX_ROWS`` rows of x is taken too (each weight is decoded
    once for all rows); a float one with more than ``plain_rows`` rows (by default one) is
    ``schedule_matmul_nt``'s (``schedule_dense_transposed_weight`` passes ``NT_MAX_ROWS``: a cold
    weight read once for all rows).  A float weight with one row of x reads one weight row at a
    time (:func:`_schedule_float_gemv`); the steps below are the decoded weights' and those of a
    float weight with several rows.

    1. Split the innermost reduction by a vector (16 lanes on AVX-512) and j by 4 (fewer with
       more rows); order (j0, outer reductions, k0, rows, j1, k1): four rows of W side by side.
    2. ``rfactor`` k1 into a ``"local"`` buffer: per output a vector of partial sums that LLVM
       keeps in registers for the whole k loop; they are added up after it.
    3. Vectorize k1, unroll j1 and short outer reductions, compute the epilogue after each
       tile of columns.
    4. Run j0 on threads when there are more than ``GEMV_PARALLEL_WORK`` multiply-adds.
    """
    mm = _gemv_block(sch)
    if mm is None:
        return False
    blk = sch.get(mm)
    ns = [iv.iter_type for iv in blk.iter_vars].index("reduce")
    loops = sch.get_loops(mm)
    ext = _extents(sch, loops)
    rows = math.prod(ext[:ns - 1])
    product = blk.body.value.b
    plain = isinstance(product.a, BufferLoad) and isinstance(product.b, BufferLoad)
    if len(loops) != len(blk.iter_vars) or ext[ns - 1] < 2 or rows > (plain_rows if plain else NT_MAX_ROWS):
        return False  # more rows (a plain weight: from 2 on), or loops already transformed: the matmul rules
    if not _streams_along(product, blk.iter_vars[-1].var, blk.iter_vars[ns - 1].var):
        return False
    kf = _largest_divisor(ext[-1], (VectorUnit.current().lanes, 8, 4))
    if kf == 1:
        return False
    ok, epilogue = _single_epilogue(sch, mm)
    if not ok:
        return False
    if plain and rows == 1 and len(loops) == ns + 1:
        return _schedule_float_gemv(sch, mm, ns, ext, kf, epilogue)
    row_loops, j, reds = loops[:ns - 1], loops[ns - 1], loops[ns:]
    k0, k1 = sch.split(reds[-1], [None, kf])
    # rows x nj accumulators: a weight decoded once serves every row (AVX-512 has room for 8)
    j0, j1 = sch.split(j, [None, _largest_divisor(ext[ns - 1], tuple(c for c in (4, 2) if rows * c <= 8))])
    sch.reorder(j0, *reds[:-1], k0, *row_loops, j1, k1)
    rf = sch.rfactor(k1, len(blk.body.indices))
    sch.compute_at(rf, j0, preserve_unit_loops=True)
    sch.set_scope(rf, 0, "local")
    # the rf block has a loop per iterator: k1, the spatial ones (rows, j1), the reductions (.., k0)
    tail = sch.get_loops(rf)[-(1 + ns + len(reds)):]
    k1, spatial, red = tail[0], tail[1:1 + ns], tail[1 + ns:]
    sch.reorder(*red, *spatial, k1)
    sch.vectorize(k1)  # loop kinds before decompose_reduction, as TVM requires
    for lp in spatial:
        sch.unroll(lp)
    for lp, e in zip(red[:-1], ext[ns:-1]):
        if e <= 4:
            sch.unroll(lp)
    if epilogue is not None:
        sch.reverse_compute_at(epilogue, j0)
    if math.prod(ext) > GEMV_PARALLEL_WORK:
        sch.parallel(j0)
    init = sch.decompose_reduction(rf, red[0])
    sch.vectorize(sch.get_loops(init)[-1])
    return True


def _schedule_float_gemv(sch: Schedule, mm: BlockRV, ns: int, ext: list[int], lanes: int,
                         epilogue: BlockRV | None) -> bool:
    """:func:`schedule_gemv` for a float weight ``W[j, k]``: one row of W at a time, read front
    to back.  Side by side rows (four streams 2 KiB apart at k = 512) defeat the hardware
    prefetcher: a 1 x 512 x 2752 GEMV streamed 12 GB/s that way and 25 GB/s row by row here,
    as fast as numpy sums the same bytes.

    k splits into (k0, ka, kl): kl a vector of ``lanes``, ka (up to 4) independent accumulators so
    the FMAs do not wait on each other.  Two ``rfactor`` steps give the sums a tree:
    ``acc[ka, kl]`` over k0, then ``part[kl] = sum_ka acc[ka, kl]`` (vector adds), then the
    ``kl`` lanes into the output -- all per output row, in registers (``"local"``)."""
    ka = _largest_divisor(ext[-1] // lanes, (4, 2))
    loops = sch.get_loops(mm)
    row_loops, j, k = loops[:ns - 1], loops[ns - 1], loops[ns]
    n_index = len(sch.get(mm).body.indices)
    k0, k_acc, k_lane = sch.split(k, [None, ka, lanes])
    sch.reorder(j, *row_loops, k0, k_acc, k_lane)
    part = sch.rfactor(k_lane, n_index)  # part[.., kl] = sum over (k0, ka)
    sch.compute_at(part, j, preserve_unit_loops=True)
    acc = sch.rfactor(sch.get_loops(part)[-1], n_index)  # acc[.., ka, kl] = sum over k0
    sch.compute_at(acc, j, preserve_unit_loops=True)
    # acc's loops under j: (ka, kl, rows and j's unit loops, k0) -> (k0, unit loops, ka, kl)
    a_acc, a_lane, *a_unit, a_k0 = sch.get_loops(acc)[1:]
    sch.reorder(a_k0, *a_unit, a_acc, a_lane)
    # part's loops under j: (kl, unit loops, ka) -> (unit loops, ka, kl)
    p_lane, *p_unit, p_acc = sch.get_loops(part)[1:]
    sch.reorder(*p_unit, p_acc, p_lane)
    for block in (acc, part):
        sch.set_scope(block, 0, "local")
    for lp in (*a_unit, a_acc, *p_unit, p_acc):
        sch.unroll(lp)
    sch.vectorize(a_lane)  # loop kinds before decompose_reduction, as TVM requires
    sch.vectorize(p_lane)
    if epilogue is not None:
        sch.reverse_compute_at(epilogue, j)
    if math.prod(ext) > GEMV_PARALLEL_WORK:
        sch.parallel(j)
    for block, first_reduction in ((acc, a_k0), (part, p_acc)):
        init = sch.decompose_reduction(block, first_reduction)
        sch.vectorize(sch.get_loops(init)[-1])
    return True


# -- rule 1: matmul-like --------------------------------------------------------------------------


def _is_multiply_accumulate(blk: Any) -> bool:
    """Whether a block is ``C[..] = C[..] + X[..] * Y[..]`` with a ``T.init``."""
    body = blk.body
    if blk.init is None or not isinstance(body, BufferStore) or not isinstance(body.value, Add):
        return False
    lhs, rhs = body.value.a, body.value.b
    return isinstance(lhs, BufferLoad) and lhs.buffer == body.buffer and isinstance(rhs, Mul)


def _multiply_accumulate_block(sch: Schedule, kinds_ok: Callable[[list[str]], bool]) -> BlockRV | None:
    """The first block ``C[..] = C[..] + X[..] * Y[..]`` (with ``T.init``) whose iterator kinds fit."""
    for rv in _blocks(sch):
        blk = sch.get(rv)
        if kinds_ok([iv.iter_type for iv in blk.iter_vars]) and _is_multiply_accumulate(blk):
            return rv
    return None


def _matmul_block(sch: Schedule) -> BlockRV | None:
    """The block computing ``C[.., i, j] = C[.., i, j] + A[..] * B[..]`` over (batch,) i, j, k;
    with two or more batch axes (a 4-D ``matmul`` of attention heads, ``[b, h, i, k] @ [b, h, k, j]``,
    as torch.fx hands it over) only when it reads ``A[.., i, k]`` and ``B[.., k, j]``: a 1 x 1
    convolution has the same iterator kinds."""
    mm = _multiply_accumulate_block(
        sch, lambda kinds: kinds in (["spatial", "spatial", "reduce"], ["spatial", "spatial", "spatial", "reduce"]))
    if mm is not None:
        return mm
    mm = _multiply_accumulate_block(sch, lambda kinds: len(kinds) > 4 and kinds[-1] == "reduce"
                                    and all(kind == "spatial" for kind in kinds[:-1]))
    return mm if mm is not None and _reads_rows_by_columns(sch.get(mm)) else None


def _reads_rows_by_columns(blk: Any) -> bool:
    """Whether a multiply-accumulate block over (.., i, j, k) stores ``C[.., i, j]`` and multiplies
    ``A[.., i, k]`` by ``B[.., k, j]``, each index the plain iterator."""
    i, j, k = (iv.var for iv in blk.iter_vars[-3:])
    a, b = blk.body.value.b.a, blk.body.value.b.b
    return _indexed_last_by(blk.body, i, j) and (_indexed_last_by(a, i, k) and _indexed_last_by(b, k, j)
                                                  or _indexed_last_by(a, k, j) and _indexed_last_by(b, i, k))


def _indexed_last_by(access: Any, row: Var, column: Var) -> bool:
    """Whether a load or store's last two indices are the iterators ``row`` and ``column`` themselves."""
    return isinstance(access, (BufferLoad, BufferStore)) and len(access.indices) >= 2 and \
        access.indices[-2] is row and access.indices[-1] is column


def _single_epilogue(sch: Schedule, mm: BlockRV, allow_prologue: bool = False,
                     tail: tuple[str, ...] = ()) -> tuple[bool, BlockRV | None]:
    """Inline the elementwise blocks after the matmul but the last: ``(True, last or None)``;
    ``(False, None)`` when the function is not "matmul, then elementwise blocks" (with
    ``allow_prologue``: spatial blocks before it, such as padding, are fine too).  The blocks
    named in ``tail`` (at the end) are left out: the caller schedules them."""
    # a weight's layout-rewrite copy (schedule_dense_transposed_weight's) is split off the kernel
    names = [sch.get(b).name_hint for b in _blocks(sch)
             if not (sch.get(b).annotations or {}).get(LAYOUT_REWRITE_PREPROC)]
    mm_name = sch.get(mm).name_hint
    before = names[:names.index(mm_name)]
    after = [n for n in names[names.index(mm_name) + 1:] if n not in tail]
    if before and not allow_prologue:
        return False, None  # a prologue (e.g. padding) -- leave it to other rules
    if not all(_is_spatial(sch, sch.get_block(n)) for n in before + after):
        return False, None
    for n in after[:-1]:
        sch.compute_inline(sch.get_block(n))
    return True, (sch.get_block(after[-1]) if after else None)


def _reads_both_along_k(sch: Schedule, mm: BlockRV) -> bool:
    """True when both operands of the matmul block are indexed by the reduction iterator last
    (``A[i, k] * B[j, k]``): rows of A and B are contiguous along k."""
    blk = sch.get(mm)
    k = blk.iter_vars[-1].var
    product = blk.body.value.b
    loads = [product.a, product.b]
    return all(isinstance(ld, BufferLoad) and ld.indices and ld.indices[-1] is k for ld in loads)


def schedule_matmul_nt(sch: Schedule) -> bool:
    """A matmul with few rows whose second operand is stored transposed (``x @ W.T`` of a
    dense layer at batch 1, made by ``relax.transform.FuseTransposeMatmul``): a dot product
    per output, vectorized along k.

    1. Split k by a vector (16 lanes on AVX-512, 8 on AVX2), j by 8 (a few rows: i by 2/4 and
       j by 4, fewer where the unit has fewer registers) and reorder to (i0, j0, k0, i1, j1, k1).
    2. ``rfactor`` k1: a block accumulates a vector of partial sums per output (k1 is a
       spatial axis of it, so it can be vectorized); the original block adds them up.
    3. Zero the partial sums before k0, vectorize k1, unroll the small i1 x j1 tile (that many
       independent accumulators keep the FMA units busy), and put the epilogue after each tile.
    """
    mm = _matmul_block(sch)
    if mm is None or not _reads_both_along_k(sch, mm):
        return False
    loops = sch.get_loops(mm)
    ext = _extents(sch, loops)
    M, N, K = ext[-3:]
    unit = VectorUnit.current()
    kf = _largest_divisor(K, (unit.lanes, 8, 4))
    if M > NT_MAX_ROWS or kf == 1:
        return False
    ok, epilogue = _single_epilogue(sch, mm)
    if not ok:
        return False
    batch, (i, j, k) = loops[:-3], loops[-3:]
    mi = _largest_divisor(M, (4, 2))
    # mi x nj accumulators of kf lanes: within the vector unit's (AVX-512: 4 x 4, AVX2: 4 x 2)
    nj = _largest_divisor(N, tuple(c for c in ((8, 4, 2) if mi == 1 else (4, 2))
                                   if mi * c * -(-kf // unit.lanes) <= unit.accumulators))
    k0, k1 = sch.split(k, [None, kf])
    j0, j1 = sch.split(j, [None, nj])
    i0, i1 = sch.split(i, [None, mi])
    sch.reorder(*batch, i0, j0, k0, i1, j1, k1)
    rf = sch.rfactor(k1, len(sch.get(mm).body.indices))
    # as in TVM, rfactor computes the partial sums in a loop nest of their own; compute them
    # per tile, under the final reduction's j0, in the order (k0, i1, j1, k1)
    sch.compute_at(rf, j0, preserve_unit_loops=True)
    k1, i1, j1, k0 = sch.get_loops(rf)[-4:]
    sch.reorder(k0, i1, j1, k1)
    # loop kinds first: as in TVM, a loop over a decomposed update (no T.init) cannot change kind
    sch.vectorize(k1)
    sch.unroll(j1)
    sch.unroll(i1)
    if epilogue is not None:
        sch.reverse_compute_at(epilogue, j0)
    if math.prod(ext) > MATMUL_PARALLEL_WORK:
        sch.parallel(sch.fuse(*batch, i0, j0))
    init = sch.decompose_reduction(rf, k0)
    sch.vectorize(sch.get_loops(init)[-1])
    return True


def _pack_right_operand(sch: Schedule, mm: BlockRV, nj: int) -> BlockRV | None:
    """Copy ``B[k, j]`` into column panels ``B_packed[j // nj, k, j % nj]`` (``cache_read`` +
    ``transform_layout``): the tile loop then reads ``nj`` consecutive floats per k instead of
    jumping a whole row of B, and one panel stays in cache while all rows use it.  The copy
    costs K x N once per call, repaid over the M rows.  None when B is not a plain 2-D ``B[k, j]``."""
    blk = sch.get(mm)
    vj, vk = blk.iter_vars[-2].var, blk.iter_vars[-1].var
    for index, region in enumerate(blk.reads):
        dims = region.region
        if (len(dims) == 2 and region.buffer is not blk.body.buffer and dims[0].min is vk and dims[1].min is vj):
            return pack_into_panels(sch, mm, index, nj)
    return None


def pack_into_panels(sch: Schedule, block: BlockRV, read_index: int, width: int, j_first: bool = False) -> BlockRV:
    """Copy ``block``'s read ``read_index`` -- ``B[k, j]``, or ``W[j, k]`` with ``j_first`` -- into
    panels ``B_packed[j // width, k, j % width]`` (``cache_read`` + ``transform_layout``) and
    return the copy block.  The default schedule and MetaSchedule's packing postprocessor share it."""
    packed = sch.cache_read(block, read_index, "global")
    if j_first:
        sch.transform_layout(block, ("read", read_index), lambda j, k: (j // width, k, j % width))
    else:
        sch.transform_layout(block, ("read", read_index), lambda k, j: (j // width, k, j % width))
    return packed


#: the annotation of a block that re-lays-out a weight, for SplitLayoutRewritePreproc to move into
#: a function of its own (TVM's MetaSchedule name)
LAYOUT_REWRITE_PREPROC = "meta_schedule.layout_rewrite_preproc"


def _packs_a_weight(sch: Schedule, packed: BlockRV) -> bool:
    """Whether the packing copy ``packed`` reads a parameter the function's ``layout_free_buffers``
    names (a weight: AttachAttrLayoutFreeBuffers marks the constants).  Then the copy is left at
    the root, annotated :data:`LAYOUT_REWRITE_PREPROC`: the default pipeline splits it off
    (SplitLayoutRewritePreproc) and FoldConstant packs the weight once, at compile time, instead
    of on every call (a 256 x 1024 weight: 1 MiB read and written per call)."""
    return _is_layout_free(sch, sch.get(packed).reads[0].buffer)


def _is_layout_free(sch: Schedule, buffer: Any) -> bool:
    """Whether ``buffer`` is a parameter the function's ``layout_free_buffers`` names (a constant)."""
    func = sch.mod["main"]
    free = func.attrs.get("layout_free_buffers") if func.attrs else None
    return bool(free) and any(func.buffer_map.get(func.params[int(i)]) is buffer for i in free)


def _vectorize_copy(sch: Schedule, copy: BlockRV, width: int, parallel: bool) -> None:
    """Copy a packing block's ``(k, j)`` as ``width``-float vectors along j, and over k on
    threads when ``parallel``: each row of B is read once and written as whole vectors into its
    panels (the scalar copy compiled to one 4-byte scatter store per element: 0.44 vs 0.31 ms
    for 4 MiB on 2 threads)."""
    rows, cols = sch.get_loops(copy)[-2:]
    if parallel:
        sch.parallel(rows)
    sch.vectorize(sch.split(cols, [None, width])[1])


def _matmul_tile(M: int | None, N: int) -> tuple[int, int]:
    """The register tile ``(nj, mi)`` of a matmul with M rows (None: symbolic) and N columns,
    sized for the vector unit in scope (AVX-512: 8 x 32, AVX2: 4 x 16).

    j: two vectors when N is a multiple of the vector width, the whole row when it is short (at
    i == 1 a wider tile gives the k loop more independent accumulators), two vectors and a
    peeled partial tile when N has no vector-sized divisor; i: 8/4/2/1 rows, as many
    as keep ``mi`` x (vectors per row) within the unit's accumulators -- one more row of a tile
    that no longer fits spills every accumulator on every step of k."""
    unit = VectorUnit.current()
    lanes = unit.lanes
    row_tiles = tuple(v * lanes for v in ROW_TILE_VECTORS)
    if N % lanes == 0:
        nj = _largest_divisor(N, (2 * lanes, lanes) if M != 1 else row_tiles)
    elif N <= 4 * lanes:
        nj = N
    elif M is not None and M <= NT_MAX_ROWS and N <= min(ROW_MAX, (unit.registers - 2) * lanes):
        # a few rows (a small-batch dense, e.g. 5408 -> 100): the whole row of outputs as a few
        # vectors streams the weight once per 2 rows, instead of 4-wide tiles that jump a row
        # of the weight per k (batch 1: measured 130 -> 26 us).  One row may use all registers
        # but a broadcast and a spare: its FMAs read the weight from memory
        return N, _largest_divisor(M, _tile_rows(unit, N, (2,)))
    else:
        nj = _largest_divisor(N, (8, 4, 2))
        fits = N <= (unit.registers - 2) * lanes
        if nj < lanes and (not fits or M is not None and M >= PEEL_MIN_ROWS):
            # columns without a vector-sized divisor (ViT's 197 tokens: the scores Q.K^T):
            # tiles of two vectors, the last, partial one peeled (``_tile_loops``).  A 1-wide
            # tile left the columns scalar (measured ~0.05 GFLOP/s; 2.3 at 3x197x197x64); a row
            # too wide for the registers (197 on AVX2: 25 ymm) spills; and one that fits keeps
            # one row per tile, one load of B per FMA (AVX2, 3x197x101x64, 13 ymm: 43 GFLOP/s,
            # these tiles 53; at 24 heads 21 vs 44)
            nj = 2 * lanes
        elif nj == 1:
            # ... few or symbolic rows: the whole row, as for a few rows
            nj = N
    return nj, _largest_divisor(M, _tile_rows(unit, nj, (8, 4, 2))) if M is not None else 1


def _tile_rows(unit: VectorUnit, width: int, rows: tuple[int, ...]) -> tuple[int, ...]:
    """The row counts of ``rows`` whose tiles of ``width`` floats fit the unit's accumulators."""
    vectors = -(-width // unit.lanes)
    return tuple(r for r in rows if r * vectors <= unit.accumulators)


def _parallel_matmul_loop(sch: Schedule, batch: list, i0: Any, j0: Any, batch_size: int | None,
                          rows: int | None, row_tiles: int, work_per_row: int, partitioned: bool = False) -> None:
    """Make one outer loop of a tiled matmul parallel when the work is large: the row tiles
    (batch fused with i0) when there are several, else j0.  ``batch_size`` and ``rows`` (M)
    are None when they are symbolic; then only j0 can be parallel, and only for a large row.
    ``partitioned``: i0 is the whole tiles' piece of a peeled row loop, in a block of its own
    under the batch loops -- the batch loops go on threads, or (a batch of one) those tiles."""
    if batch_size is None or rows is None:
        if work_per_row > MATMUL_PARALLEL_WORK:
            sch.parallel(j0)
        return
    if batch_size * rows * work_per_row <= MATMUL_PARALLEL_WORK:
        return
    if partitioned:
        row_loops = list(batch) if batch_size > 1 else [i0]
    else:
        row_loops = list(batch) + ([i0] if row_tiles > 1 else [])
    if batch_size * row_tiles >= 2:
        sch.parallel(sch.fuse(*row_loops) if len(row_loops) > 1 else row_loops[0])
    else:
        sch.parallel(j0)


def schedule_matmul_like(sch: Schedule, tile_symbolic_rows: bool = True) -> bool:
    """Tile a matmul into a register tile, with its epilogue (bias add, relu) computed per tile.

    1. Inline the elementwise blocks between the matmul and the last block (``compute_inline``),
       so at most one epilogue block is left.
    2. Split i by ``mi`` (8/4/2/1) and j by ``nj`` (32/16/...), reorder to (i0, j0, k, i1, j1):
       k runs outside an ``mi x nj`` tile of accumulators.  A matmul of many rows takes as
       many as the registers hold (AVX2: 6) even when they do not divide M, and columns
       without a vector-sized divisor (197) tiles of two vectors: ``loop_partition`` then gives
       the last, partial row (column) of tiles a loop of its own, and steps 3-4 are done for
       each piece.
    3. Accumulate in a ``cache_write("local")`` buffer; its write-back is the epilogue block if
       there is one (the copy block is inlined into it), else the copy; ``reverse_compute_at``
       j0 puts it after each tile.  CompactBufferAllocation then shrinks the local buffer to
       the tile, allocated inside the loops: a small array LLVM keeps in registers.
    4. Vectorize j1 and the write-back, unroll i1, parallel the outer loop when the work is
       large; then ``decompose_reduction`` at k (zero the tile first) and vectorize the init
       (TVM changes loop kinds only over blocks that still have their ``T.init``).

    A large matmul packs B into column panels (``_pack_right_operand``).  When there are
    panels enough, the columns are first cut into blocks of panels, a few per thread
    (``_column_blocks``): the loops become (jb, i0, j0, k, i1, j1) with jb parallel, and each
    block's panels are packed inside jb (``compute_at``), by the thread that uses them, just
    before it does.  At batch 1 (i == 1) only j is tiled and j0 is the parallel loop.
    """
    mm = _matmul_block(sch)
    if mm is None:
        return False
    prologue = _right_operand_prologue(sch, mm)
    ok, epilogue = _single_epilogue(sch, mm, allow_prologue=bool(prologue))
    if not ok:
        return False

    ext = _extents_or_none(sch, sch.get_loops(mm))
    M, N, K = ext[-3:]  # C[M, N] += A[M, K] * B[K, N]
    if N is None or K is None:
        raise ScheduleError("symbolic columns or reduction: the matmul rule needs static N and K")
    # a dynamic batch (symbolic rows): rows are not split, and only a large row is parallel
    rows_known = M is not None and all(e is not None for e in ext[:-3])
    B = math.prod(ext[:-3]) if rows_known else 1
    nj, mi = _matmul_tile(M, N)
    symbolic_rows = tile_symbolic_rows and M is None and all(e is not None for e in ext[:-3])
    if symbolic_rows:  # rows of a dynamic length (a prompt's tokens): whole tiles, then a guarded tail
        mi = _tile_rows(VectorUnit.current(), nj, (8, 4, 2))[0] if nj % VectorUnit.current().lanes == 0 else 1
    packed = _pack_right_operand(sch, mm, nj) if rows_known and B == 1 and M >= PACK_MIN_ROWS \
        and N % nj == 0 and M * N * K > MATMUL_PARALLEL_WORK else None
    prepacked = packed is not None and not prologue and _packs_a_weight(sch, packed)
    if prepacked:  # packed once, ahead of the calls (see _packs_a_weight)
        sch.annotate(packed, LAYOUT_REWRITE_PREPROC, True)
    if rows_known:
        mi = _static_tile_rows(M, nj, mi, packed is not None)
    blocks = _column_blocks(N // nj) if packed is not None and not (prepacked and _rows_on_threads(M)) else 0
    batch, jb, pieces, updates, epilogues = _tile_loops(
        sch, mm, None if prepacked else packed, mi, nj, blocks,
        M if rows_known else "symbolic" if symbolic_rows else None, epilogue)
    tiled_rows = mi > 1  # (else i is not split: one row per tile)

    # 3 and 4. the register tile (accumulator, write-back, vectors) of each piece
    # a symbolic row count's tail without an epilogue accumulates in C (compute_at refuses its guard)
    stages = [_register_tile_stage(sch, update, epi, unrolled=tiled_rows,
                                   in_place=symbolic_rows and epi is None and p > 0)
              for p, (update, epi) in enumerate(zip(updates, epilogues))]
    j0 = stages[0][0]
    if packed is not None and not prepacked:
        _vectorize_copy(sch, packed, nj, parallel=jb is None)
    if jb is not None:
        sch.parallel(jb)
    elif symbolic_rows and len(pieces) > 1:
        _parallel_whole_tiles(sch, pieces[0], N * K)
    else:
        _parallel_matmul_loop(sch, batch, pieces[0], j0, B if rows_known else None, M if rows_known else None,
                              row_tiles=(M // mi if tiled_rows else M) if rows_known else 1,
                              work_per_row=N * K, partitioned=len(pieces) > 1)
    # as in TVM, a loop over a decomposed update (no T.init) cannot change kind: init last
    for update, (_, k) in zip(updates, stages):
        init = sch.decompose_reduction(update, k)
        sch.vectorize(sch.get_loops(init)[-1])
    _schedule_prologue(sch, prologue, packed is not None)
    return True


#: schedule_dense_few_rows runs the reduction in blocks whose rows of B take at most this many
#: bytes: the block stays in the L1 cache (32 KiB on Zen 4) while every row of A uses it
DENSE_K_BLOCK_BYTES = 16 * 1024


#: schedule_dense_few_rows splits k between threads also when the work is small but the weight
#: this large (streaming it is the cost), batch 1 included -- measured on the Xeon (AVX-512, 2 MB
#: L2 per core), MNIST's 1 x 5408 -> 100 (2.2 MB), the kernel alone, fresh processes alternated,
#: load ~4.3: one row in registers on one thread 71-78 us median (min 41-44), halves of k on
#: two threads 16-20 (min 9.3-10.7); -mcpu=znver3 code 65 -> 18
DENSE_SPLIT_K_WEIGHT_BYTES = 1 << 20


def _right_operand_by_rows(sch: Schedule, mm: BlockRV) -> int | None:
    """The index among the matmul block's reads of a 2-D ``B[k, j]`` (a row of B contiguous
    along j), None when it reads none."""
    blk = sch.get(mm)
    vj, vk = blk.iter_vars[-2].var, blk.iter_vars[-1].var
    return next((i for i, r in enumerate(blk.reads) if len(r.region) == 2 and r.buffer is not blk.body.buffer
                 and r.region[0].min is vk and r.region[1].min is vj), None)


def schedule_dense_few_rows(sch: Schedule) -> bool:
    """A dense layer at a small batch, ``C[i, j] = sum_k A[i, k] * B[k, j]`` with 2 to
    ``NT_MAX_ROWS`` rows (one when k is split, below) and a row of outputs that is no whole
    number of vectors (8 x 5408 -> 100: MNIST's hidden layer at batch 8).  The matmul rule keeps
    a whole row of outputs in registers, as many rows as fit (AVX2: one, AVX-512: two), and so
    streams B -- 2.2 MB, larger than L2 -- once per row tile.  Here the rows take turns over blocks of k instead:

    1. Split k into blocks of ``kb`` rows of B (``DENSE_K_BLOCK_BYTES`` of them, in L1) and the
       rows into one group per thread; loops (i0, k0, i1, k1, j): B comes from memory once per
       group, each block from L1 for the group's other rows.
    2. Accumulate in a ``cache_write("local")`` tile of (rows of the group) x N, written back
       through the epilogue after the group; vectorize j (the row's accumulators live in
       registers for a block, in L1 between blocks: 2 x N floats per ``kb`` x N multiply-adds).
    3. When the work is large (``MATMUL_PARALLEL_WORK``) and k even, split k in halves instead,
       one per thread, all rows each (:func:`_dense_split_k`): each thread streams half of B,
       not all of it (8 x 5408 -> 100: 1.2 of 2.4 MB, which stays in a 2 MB L2 between calls);
       also for smaller work over a weight of ``DENSE_SPLIT_K_WEIGHT_BYTES`` or more, one row
       included; else (k odd) the groups of rows on threads.
    A constant B is stored with its rows padded to whole vectors (:func:`_align_weight_rows`).
    Measured on Zen 4 with AVX2, 8 x 5408 -> 100 + bias + ReLU, a busy machine, interleaved in one
    process: 494 -> 237 us on 2 threads, 298 -> 212 us on one.
    Halves of k against groups of rows, the kernel alone, fresh processes alternated, Xeon (AVX-512,
    2 MB L2 per core), load 1.2-2.7: 70-90 -> 39-42 us min, 112-115 -> 53-58 us median; with
    ``-mcpu=znver3`` (AVX2 code, same host) 91-107 -> 46 us min, 115-175 -> 61-65 median.
    """
    mm = _matmul_block(sch)
    if mm is None or len(sch.get_loops(mm)) != 3 or _right_operand_by_rows(sch, mm) is None:
        return False
    M, N, K = _extents_or_none(sch, sch.get_loops(mm))
    unit = VectorUnit.current()
    if None in (M, N, K) or not 1 <= M <= NT_MAX_ROWS or N % unit.lanes == 0 \
            or N > min(ROW_MAX, (unit.registers - 2) * unit.lanes):
        return False
    split_k = K % 2 == 0 and (M * N * K > MATMUL_PARALLEL_WORK or K * N * 4 >= DENSE_SPLIT_K_WEIGHT_BYTES)
    if M == 1 and not split_k:
        return False
    ok, epilogue = _single_epilogue(sch, mm)
    if not ok:
        return False
    _align_weight_rows(sch, mm, unit.lanes)
    if split_k:
        _dense_split_k(sch, mm, epilogue, N, K)
        return True
    parallel = M * N * K > MATMUL_PARALLEL_WORK and M % 2 == 0
    kb = _dense_k_block(K, N)
    i, j, k = sch.get_loops(mm)
    i0, i1 = sch.split(i, [2 if parallel else 1, None])
    k0, k1 = sch.split(k, [None, kb])
    sch.reorder(i0, k0, i1, k1, j)
    wb = _local_accumulator(sch, mm, epilogue)
    sch.reverse_compute_at(wb, i0)
    sch.vectorize(j)
    sch.vectorize(sch.get_loops(wb)[-1])
    if parallel:
        sch.parallel(i0)
    init = sch.decompose_reduction(mm, k0)
    sch.vectorize(sch.get_loops(init)[-1])
    return True


#: schedule_dense_transposed_weight stores a dense layer's constant ``B[k, j]`` transposed from
#: this many bytes on (a classifier head: ResNet-18's 512 x 1000 is 2 MB, MobileNetV2's 5 MB)
TRANSPOSE_WEIGHT_BYTES = 1 << 20


def schedule_dense_transposed_weight(sch: Schedule) -> bool:
    """A dense layer with up to ``NT_MAX_ROWS`` rows over a large constant weight ``B[k, j]``
    (``layout_free_buffers``) -- a classifier head, whose weight is cold in the model: each call
    streams it from L3 or memory.  Read column tile by column tile, ``B[k, j]`` is thousands of
    short strided streams (a tile of 32 columns: 128 bytes from each row, rows 4 KB apart) that
    the hardware prefetchers follow poorly.  Here the weight is stored transposed, ``W[j, k]``,
    once at compile time (:data:`LAYOUT_REWRITE_PREPROC`, as ONNX Runtime's Gemm transB keeps
    it), and the kernel is the GEMV rule's, every row of x at once (``plain_rows``): each output
    column reads one contiguous row of W once for all rows, each thread a contiguous range of W.
    Measured in the model (vm.profile, A/B alternated in one process, 30 profiles, load 6-10 on
    2 cores), median (min) us, before -> after.  AVX-512: ResNet-18 1 x 512 -> 1000 218 (205) ->
    158 (84), 8 rows 602 (364) -> 387 (304); MobileNetV2 1 x 1280 -> 1000 555 (316) -> 391 (202).
    AVX2 code (-mcpu=znver3): 479 (297) -> 159 (86); 922 (382) -> 335 (209); 714 (375) -> 398
    (213); 8 x 1280 -> 1000 2242 (929) -> 803 (413).  At 8 rows ``schedule_matmul_nt``'s 4 x 4
    tiles (the weight read twice, four rows of W side by side) were slower: MobileNetV2 965 (459)
    against 538 (329) here."""
    mm = _matmul_block(sch)
    index = None if mm is None or len(sch.get_loops(mm)) != 3 else _right_operand_by_rows(sch, mm)
    if index is None:
        return False
    M, N, K = _extents_or_none(sch, sch.get_loops(mm))
    if None in (M, N, K) or not 1 <= M <= NT_MAX_ROWS or K * N * 4 < TRANSPOSE_WEIGHT_BYTES:
        return False
    if not _is_layout_free(sch, sch.get(mm).reads[index].buffer):
        return False
    copy = sch.cache_read(mm, index, "global")
    sch.transform_layout(mm, ("read", index), lambda k, j: (j, k))
    sch.annotate(copy, LAYOUT_REWRITE_PREPROC, True)
    if not schedule_gemv(sch, plain_rows=NT_MAX_ROWS):
        raise ScheduleError("the transposed dense layer does not fit the GEMV rule")
    return True


def _dense_k_block(K: int, N: int) -> int:
    """Rows of B per block of a dense layer's k (of ``K``; rows of ``N`` floats): the largest
    divisor of ``K`` whose rows fit ``DENSE_K_BLOCK_BYTES`` (at least one row)."""
    return max(d for d in range(1, K + 1) if K % d == 0 and d * N * 4 <= max(DENSE_K_BLOCK_BYTES, N * 4))


def _dense_split_k(sch: Schedule, mm: BlockRV, epilogue: BlockRV | None, N: int, K: int) -> None:
    """:func:`schedule_dense_few_rows` on two threads: each thread takes half of k for all the
    rows (``rfactor``), accumulating in a local tile of the rows x N in blocks of k as on one
    thread, then writes its partial tile back; the two are added and the epilogue applied per
    row.  Each thread reads half of B instead of all of it."""
    i, j, k = sch.get_loops(mm)
    kt, kr = sch.split(k, [2, None])
    rf = sch.rfactor(kt, 0)
    i, j, kt, kr = sch.get_loops(rf)
    k0, k1 = sch.split(kr, [None, _dense_k_block(K // 2, N)])
    sch.reorder(kt, k0, i, k1, j)
    wb = sch.cache_write(rf, 0, "local")
    sch.reverse_compute_at(wb, kt)
    sch.vectorize(j)
    sch.vectorize(sch.get_loops(wb)[-1])
    sch.parallel(kt)
    init = sch.decompose_reduction(rf, k0)
    sch.vectorize(sch.get_loops(init)[-1])
    fi, fj, fk = sch.get_loops(mm)
    sch.reorder(fi, fk, fj)
    sch.vectorize(fj)
    finit = sch.decompose_reduction(mm, fk)
    sch.vectorize(sch.get_loops(finit)[-1])
    if epilogue is not None:
        sch.reverse_compute_at(epilogue, fi)
        sch.vectorize(sch.get_loops(epilogue)[-1])


def _align_weight_rows(sch: Schedule, mm: BlockRV, lanes: int) -> None:
    """Store the weight ``B[k, j]`` of a dense layer -- a constant (``layout_free_buffers``) --
    with its rows padded to a whole number of vectors, once at compile time
    (:data:`LAYOUT_REWRITE_PREPROC`): ``B_aligned[k, 0, j]`` of row length N rounded up to
    ``lanes``.  The padding is never read; every vector load of a row then starts on a vector
    boundary instead of a row of 100 floats (400 bytes) putting every other one across two cache
    lines.  Measured on Zen 4 (AVX2), 8 x 5408 -> 100 + bias + ReLU (MNIST's hidden layer at
    batch 8), the kernel alone in one process (load 5-6): one thread 171-178 -> 152-157 us, two
    94-101 -> 88-93 us; compiled in the model, interleaved (load 3.5-4): 0.91x, 0.93x.  A stride
    of 128 floats (16 vectors) instead of 104 spilled: 1.4x."""
    blk = sch.get(mm)
    vj, vk = blk.iter_vars[-2].var, blk.iter_vars[-1].var
    index, weight = next(((i, r.buffer) for i, r in enumerate(blk.reads) if len(r.region) == 2
                          and r.buffer is not blk.body.buffer and r.region[0].min is vk and r.region[1].min is vj),
                         (None, None))
    row = None if weight is None else _int(weight.shape[1])
    if row is None or row % lanes == 0 or not _is_layout_free(sch, weight):
        return
    width = -(-row // lanes) * lanes
    copy = sch.cache_read(mm, index, "global")
    sch.transform_layout(mm, ("read", index), lambda k, j: (k, j // width, j % width), pad_value=0.0)
    sch.annotate(copy, LAYOUT_REWRITE_PREPROC, True)


def _parallel_whole_tiles(sch: Schedule, whole: LoopRV, work_per_row: int) -> None:
    """A symbolic row count's whole tiles on threads when a prompt of ``SYMBOLIC_ROWS_GUESS``
    rows would be large work (one parallel region per call; the few tail rows stay serial)."""
    if SYMBOLIC_ROWS_GUESS * work_per_row > MATMUL_PARALLEL_WORK:
        sch.parallel(whole)


def schedule_matmul_rows_untiled(sch: Schedule) -> bool:
    """:func:`schedule_matmul_like` with a symbolic row count left one row per tile: the
    fallback when tiling those rows does not fit (a write-back a primitive refuses to move)."""
    return schedule_matmul_like(sch, tile_symbolic_rows=False)


def _right_operand_prologue(sch: Schedule, mm: BlockRV) -> list[str]:
    """The names of the spatial blocks before the matmul when the last of them computes its
    right operand ``B[k, j]`` (a weight decoded from int8 / int4 in the kernel, written
    transposed); else []: other prologues are left to other rules."""
    names = [sch.get(b).name_hint for b in _blocks(sch)]
    before = names[:names.index(sch.get(mm).name_hint)]
    if not before or not all(_is_spatial(sch, sch.get_block(n)) for n in before):
        return []
    written = sch.get(sch.get_block(before[-1])).writes
    blk = sch.get(mm)
    vj, vk = blk.iter_vars[-2].var, blk.iter_vars[-1].var
    for region in blk.reads:
        dims = region.region
        if (len(written) == 1 and region.buffer is written[0].buffer and len(dims) == 2
                and dims[0].min is vk and dims[1].min is vj):
            return before
    return []


def _schedule_prologue(sch: Schedule, names: list[str], packed: bool) -> None:
    """The blocks computing the right operand: inlined into the packing copy when B is packed
    (decoded as it is copied, once), else each a loop nest of its own -- transposing ones in
    tiles, the others flat -- vectorized, and on threads when large."""
    for name in names:
        block = sch.get_block(name)
        if packed:
            try:
                sch.compute_inline(block)
                continue
            except ScheduleError:
                pass  # (a failed primitive changes nothing) -- schedule it on its own below
        if _reads_transposed(sch, block):
            _tile_transpose(sch, block)
        else:
            _vectorize_flat(sch, block)


#: a matmul of this many rows or more whose weight is packed ahead of the calls (a dense layer at
#: batch 8) runs its row tiles on threads, each thread reading every panel of the weight, rather
#: than blocks of columns (each thread then streams all of A, 4 MB at 1024 x 1024, once per block
#: it owns) -- with 32 vector registers (AVX-512).  Measured on the Xeon (2 MB L2 per core, the
#: weights 0.6-1 MB), whole models, the two alternated in one process (load 1.1-1.3): ViT-tiny at
#: 8 x 197 tokens 0.91x the time, GPT-2-mini at 8 x 128 0.97x, BERT-mini 0.99x; at one batch
#: (128-197 rows) mixed (0.99x, 0.99x, ViT 1.02x), and AVX2 code on the same host mixed at both
#: (0.98x to 1.04x): those keep the column blocks.
PREPACKED_ROWS_ON_THREADS = 512


def _rows_on_threads(rows: int) -> bool:
    """Whether a matmul of ``rows`` rows with a prepacked weight puts its row tiles on threads
    rather than blocks of its columns (:data:`PREPACKED_ROWS_ON_THREADS`)."""
    return rows >= PREPACKED_ROWS_ON_THREADS and VectorUnit.current().registers >= 32


def _column_blocks(panels: int) -> int:
    """Blocks to cut ``panels`` column panels into so that each thread packs and uses its own:
    the fewest that give every thread two (a block per thread leaves a core idle when the other
    is slowed), 0 when there are not that many panels (B is then packed before the matmul, in
    a parallel pass of its own).  Fewer blocks read A fewer times: measured on a 1024^3 matmul
    (2 threads, Zen 3), 4 blocks of 256 columns ran 4-6% faster than packing all of B first,
    8 blocks 3-5%, 2 blocks 4%."""
    want = 2 * parallel_threads()
    return next((d for d in range(want, panels + 1) if panels % d == 0), 0)


def _tile_loops(sch: Schedule, mm: BlockRV, packed: BlockRV | None, mi: int, nj: int, blocks: int,
                rows: int | str | None, epilogue: BlockRV | None = None
                ) -> tuple[list[LoopRV], LoopRV | None, list[LoopRV], list[BlockRV], list[BlockRV | None]]:
    """Step 2 of :func:`schedule_matmul_like`: split i by ``mi`` and j by ``nj`` -- first into
    ``blocks`` column blocks jb when there are any, with the packing of each block's panels
    (``packed``; None: packed ahead of the calls) moved inside jb -- and reorder to
    ``(batch, [jb,] i0, j0, k, i1, j1)``; then peel the last, partial row of tiles off when
    ``mi`` does not divide ``rows`` (M, None: symbolic), and the last, partial column of tiles
    of the whole rows when ``nj`` does not divide N.  Returns the batch loops, jb (or None),
    each row piece's i0 loop, and each piece's update block and epilogue (whole tiles first)."""
    loops = sch.get_loops(mm)
    batch, (i, j, k) = list(loops[:-3]), loops[-3:]
    cols = _extents(sch, [j])[0]
    if blocks:
        jb, j0, j1 = sch.split(j, [blocks, None, nj])
    else:
        jb, (j0, j1) = None, sch.split(j, [None, nj])
    outer = batch + ([jb] if jb is not None else [])
    i0, i1 = sch.split(i, [None, mi]) if mi > 1 else (i, None)
    sch.reorder(*outer, i0, j0, k, *([i1] if i1 is not None else []), j1)
    if jb is not None and packed is not None:
        sch.compute_at(packed, jb)  # before loop_partition, which puts the pieces in a block of their own
    # a tile that does not divide M (N): the last, partial row (column) of tiles becomes a
    # loop of its own (loop_partition), so the main loop's tiles run without the split's guard
    pieces, updates, epilogues = [i0], [mm], [epilogue]
    if i1 is not None and (rows is not None and not (isinstance(rows, int) and rows % mi == 0)):
        # symbolic rows: the last tile, which may be partial, peeled off the whole ones (whose
        # split guard loop_partition drops)
        factors = [rows // mi, None] if isinstance(rows, int) else [None, 1]
        pieces, updates, epilogues = _peel(sch, i0, factors, updates, epilogues)
    if cols % nj:  # the whole rows' tiles only: the few partial rows keep both guards
        j0 = sch.get_loops(updates[0])[-4 if i1 is not None else -3]
        _, whole, whole_epilogues = _peel(sch, j0, [cols // nj, None], updates[:1], epilogues[:1])
        updates, epilogues = whole + updates[1:], whole_epilogues + epilogues[1:]
    return batch, jb, pieces, updates, epilogues


def _peel(sch: Schedule, loop: LoopRV, factors: list, updates: list[BlockRV], epilogues: list[BlockRV | None]
          ) -> tuple[list[LoopRV], list[BlockRV], list[BlockRV | None]]:
    """``loop_partition`` ``loop`` of a tiled matmul by ``factors`` (the whole tiles, then the
    partial one), the epilogues moved under ``loop`` first so that each piece gets its own copy,
    written back after each of its tiles.  Returns the pieces' loops and each piece's copy of
    every update and epilogue."""
    loop_name = sch.get(loop).loop_var.name
    update_names = [sch.get(u).name_hint for u in updates]
    epilogue_names = [None if e is None else sch.get(e).name_hint for e in epilogues]
    for e in epilogues:
        if e is not None:
            sch.reverse_compute_at(e, loop)
    pieces = sch.loop_partition(loop, factors)
    new_updates = [sch.get_block(f"{u}_{loop_name}{p}") for p in range(len(pieces)) for u in update_names]
    new_epilogues = [None if e is None else sch.get_block(f"{e}_{loop_name}{p}")
                     for p in range(len(pieces)) for e in epilogue_names]
    return pieces, new_updates, new_epilogues


#: a static row count without a divisor to tile by (ViT's 197 tokens) is tiled -- whole tiles, then
#: a peeled partial one -- from this many rows on; fewer rows keep their one-row tiles
PEEL_MIN_ROWS = 16


def _static_tile_rows(M: int, nj: int, mi: int, packed: bool) -> int:
    """The rows of a register tile of ``nj`` columns for a static row count ``M`` (``mi``: the
    largest fitting divisor of M).  A packed matmul, or one of ``PEEL_MIN_ROWS`` rows or more,
    takes as many rows as the registers hold (:func:`_peeled_tile_rows`) -- with its epilogue
    too -- whether or not they divide M; ``_tile_loops`` peels the rows the whole tiles do not
    cover into a guarded piece of their own, epilogue included.  Measured on AVX2 (2 threads),
    6 x 16 tiles against the 4 x 16 that divide M: BERT's dense + bias at 128 and 1024 rows
    5-15% faster, its attention's 4 x 128 x 128 x 64 and 64 x 128 3-8%; and 197 = prime rows in
    one-row tiles ran at half the rate of 196 = 4 x 49."""
    unit = VectorUnit.current()
    if nj % unit.lanes:
        return mi
    most = MATMUL_TILE_MAX_ROWS if unit.registers >= 32 else 8
    return _peeled_tile_rows(unit, nj, most) if packed or M >= PEEL_MIN_ROWS else mi


def _peeled_tile_rows(unit: VectorUnit, width: int, most: int = 8) -> int:
    """Rows of a large matmul's register tile of ``width`` floats when the rows need not divide
    M (the rest is peeled off): as many as leave registers for one row of B and a broadcast of
    A, at most ``most``.  AVX2: 6 x 16, 12 accumulators in 16 ymm -- more than the half that
    ``VectorUnit.accumulators`` allows other tiles, yet with 2 vectors of B and 1 broadcast it
    fits, and it measured 5-8% faster on a 1024^3 matmul (Zen 3, 2 threads) than the 4 x 16
    tile that divides 1024; AVX-512: 8 x 32 (a matmul's: 12 x 32, :data:`MATMUL_TILE_MAX_ROWS`)."""
    vectors = -(-width // unit.lanes)
    return max(1, min(most, (unit.registers - vectors - 1) // vectors))


#: the most rows of a matmul's peeled register tile with 32 vector registers (AVX-512): 12 x 32,
#: 24 accumulators in 32 zmm -- each row of B loaded from the cache feeds 12 rows of A instead
#: of 8 (B's panel at K = 1024 is 128 KB, read from L2 once per tile).  Measured on the Xeon,
#: whole models, 12 against 8 rows alternated in one process (load 0.6-1.2): GPT-2-mini (4 x
#: 256) at 8 x 128 tokens 0.94-0.95x the time, BERT-mini 0.97x, ViT-tiny 0.98x; at batch 1
#: 0.95x, 0.96x, 0.97x.  (With 16 registers, AVX2, the tile stays 6 x 16.)
MATMUL_TILE_MAX_ROWS = 12


def _local_accumulator(sch: Schedule, block: BlockRV, epilogue: BlockRV | None) -> BlockRV:
    """Make ``block`` accumulate in a ``cache_write("local")`` buffer (registers, once compacted)
    and return the block that writes it back: the epilogue, reading the accumulator directly
    (the copy inlined into it), or else the copy."""
    local = sch.cache_write(block, 0, "local")
    if epilogue is None:
        return local
    sch.compute_inline(local)
    return epilogue


def _register_tile_stage(sch: Schedule, update: BlockRV, epilogue: BlockRV | None,
                         unrolled: bool, in_place: bool = False) -> tuple[LoopRV, LoopRV]:
    """Accumulate ``update``'s tile in a ``cache_write("local")`` buffer and write it back (through
    the epilogue, if any) after each tile; vectorize the columns, unroll the rows.  Returns j0
    (the loop over tiles of columns) and k (where the tile is zeroed first).  ``in_place``:
    no local buffer, the tile accumulates in the output (a few tail rows)."""
    loops = sch.get_loops(update)
    # (j0, k, [i1,] j1): j0 is the loop the write-back goes under
    tile_loop, reduction_loop = loops[-4:-2] if unrolled else loops[-3:-1]
    if in_place:
        sch.vectorize(loops[-1])
        if unrolled:
            sch.unroll(loops[-2])
        return tile_loop, reduction_loop
    wb = _local_accumulator(sch, update, epilogue)
    if not any(sch.get(loop) is sch.get(tile_loop) for loop in sch.get_loops(wb)):
        sch.reverse_compute_at(wb, tile_loop)  # (an epilogue peeled with the columns is there already)
    sch.vectorize(loops[-1])
    if unrolled:
        sch.unroll(loops[-2])
    sch.vectorize(sch.get_loops(wb)[-1])
    return tile_loop, reduction_loop


# -- rule: conv2d-like ----------------------------------------------------------------------------


def _conv_block(sch: Schedule) -> BlockRV | None:
    """The block computing ``out[n, c, h, w] += data[..] * W[..]`` over 4 spatial and 2-3 reduction iterators."""
    return _multiply_accumulate_block(
        sch, lambda kinds: kinds[:4] == ["spatial"] * 4 and kinds[4:] in (["reduce"] * 2, ["reduce"] * 3))


def _reshaping_tail(sch: Schedule, conv: BlockRV) -> tuple[str, ...]:
    """The spatial blocks at the end of a convolution's function that write a buffer of another
    shape than the convolution's output -- the next layer's padding, which FuseOps fuses after the
    activation (TF-style "same" padding as an explicit pad, MobileNetV2's): they cannot be inlined
    into the register tile's write-back, so they stay row-by-row copies after it."""
    shape = [_int(x) for x in sch.get(conv).body.buffer.shape]
    names = [sch.get(b).name_hint for b in _blocks(sch)]
    tail: list[str] = []
    for name in reversed(names[names.index(sch.get(conv).name_hint) + 1:]):
        blk = sch.get(sch.get_block(name))
        if not _is_spatial(sch, sch.get_block(name)) or not isinstance(blk.body, BufferStore) or \
                [_int(x) for x in blk.body.buffer.shape] == shape:
            break
        tail.insert(0, name)
    return tuple(tail)


def schedule_conv2d_like(sch: Schedule) -> bool:
    """A 2-D convolution (NCHW) with its padding before it and elementwise epilogue after it.

    1. The padding (and any other spatial block before the convolution) is copied by rows, or
       inlined when it only copies (no padding); the epilogue blocks are inlined into the last one.
    2. A register tile of ``co_t`` output channels x ``ow_t`` output columns: split c and w,
       reorder to (n, c0, h, w0, ci, kh, kw, c1, w1) -- every input value loaded in the inner
       loops is used by ``co_t`` accumulators, every weight by ``ow_t``.
    3. As the matmul rule: accumulate in a ``cache_write("local")`` tile written back (through
       the epilogue) after each tile, zero it before ci, vectorize w1, unroll c1, and parallel
       over (n, c0) when the kernel does more than ``CONV_PARALLEL_WORK`` multiply-adds.
    """
    conv, epilogue = _conv_prologue_and_tail(sch, _conv_block(sch), _inline_copy_or_rows)
    if conv is None:
        return False
    loops = sch.get_loops(conv)
    ext = _extents_or_none(sch, loops)
    if None in ext[1:]:
        raise ScheduleError("the convolution rule needs static channels, sizes and window (the batch may vary)")
    n, co, oh, ow, *red = loops
    N, CO, _, OW = ext[:4]
    # a row of up to 16 columns (one AVX-512 register, two of AVX2's): a narrower cap would cut
    # rows of 26 or 14 columns into vectors of 2; the channels then fill the accumulators
    ow_t = max(d for d in range(1, VECTOR_LANES + 1) if OW % d == 0)
    co_t = _largest_divisor(CO, _tile_rows(VectorUnit.current(), ow_t, (16, 8, 4, 2)))
    c0, c1 = sch.split(co, [None, co_t])
    w0, w1 = sch.split(ow, [None, ow_t])
    sch.reorder(n, c0, oh, w0, *red, c1, w1)
    wb = _local_accumulator(sch, conv, epilogue)
    sch.reverse_compute_at(wb, w0)
    sch.vectorize(w1)  # loop kinds before decompose_reduction, as TVM requires
    sch.unroll(c1)
    sch.vectorize(sch.get_loops(wb)[-1])
    per_image = math.prod(ext[1:])
    if N is None:  # a dynamic batch: parallel over channel groups when one image is enough work
        if per_image > CONV_PARALLEL_WORK and CO // co_t >= 2:
            sch.parallel(c0)
    elif N * per_image > CONV_PARALLEL_WORK:
        sch.parallel(sch.fuse(n, c0) if N * (CO // co_t) >= 2 else oh)
    init = sch.decompose_reduction(conv, red[0])
    sch.vectorize(sch.get_loops(init)[-1])
    return True

def _pointwise_plane(sch: Schedule, conv: BlockRV) -> tuple[int, int] | None:
    """(H, W) of a 1x1, stride-1, unpadded convolution block (every output pixel reads the input
    pixel at the same place: ``data[n, c, y, x]``), else None."""
    blk = sch.get(conv)
    ext = _extents_or_none(sch, sch.get_loops(conv))
    if len(ext) != 7 or None in ext[1:] or ext[5:] != [1, 1]:
        return None
    out_shape = [_int(d) for d in blk.body.buffer.shape]
    yy, xx = blk.iter_vars[2].var, blk.iter_vars[3].var
    analyzer = Analyzer()
    loads: list[BufferLoad] = []
    post_order_visit(blk.body.value.b, lambda x: loads.append(x) if isinstance(x, BufferLoad) else None)
    data = [ld for ld in loads if len(ld.indices) == 4 and uses_var(ld.indices[-1], xx)]
    if len(data) != 1 or [_int(d) for d in data[0].buffer.shape[2:]] != out_shape[2:]:
        return None
    h, w = data[0].indices[2:]
    if not (analyzer.can_prove_equal(substitute(h, {yy: yy + 1}) - h, 1)
            and analyzer.can_prove_equal(substitute(w, {xx: xx + 1}) - w, 1)):
        return None
    return out_shape[2], out_shape[3]


def _pointwise_tile(channels: int) -> tuple[int, int]:
    """(rows of output channels, columns of pixels) of a pointwise convolution's register tile:
    two vectors of pixels by as many channels as leave registers for them and a broadcast
    (AVX2: 6 x 16, AVX-512: 12 x 32 where 12 divides the channels, POINTWISE_TILE_MAX_ROWS, else
    8 x 32), as the matmul rule's peeled tiles; the channels past the
    last whole tile are peeled when there are ``POINTWISE_PEEL_MIN_CHANNELS`` or more (1280 =
    213 x 6 + 2), else the tile takes the most rows that divide them.  Two vectors (a load of the input per
    two FMAs, where one vector by 8 channels loaded 9 times per 8 FMAs): on AVX2, one kernel at
    a time, 0.75-0.95x the time of the 8 x 8 tile on MobileNetV2's layers at 112, 56 and 28
    pixels square (e.g. 192 -> 32 at 28 x 28: 826 -> 614 us, a busy machine)."""
    unit = VectorUnit.current()
    rows = _peeled_tile_rows(unit, 2 * unit.lanes, POINTWISE_TILE_MAX_ROWS)
    if channels % rows:  # (the tall tile only where it divides the channels)
        rows = _peeled_tile_rows(unit, 2 * unit.lanes)
    if channels % rows and channels < POINTWISE_PEEL_MIN_CHANNELS:
        rows = _largest_divisor(channels, tuple(r for r in (8, 6, 4, 2) if r <= rows))
    return rows, 2 * unit.lanes


#: a pointwise convolution of this many output channels or more peels the channels its tiles do
#: not divide; fewer take a dividing tile.  AVX2 (6 x 16 peeled against 4 x 16), one kernel, a
#: busy machine: at 7 x 7, 320 -> 1280 819 -> 667 us, 960 -> 160 417 -> 337 us, 576 -> 160 231 ->
#: 190 us; 384 -> 64 at 14 x 14 110 -> 116 us and 192 -> 32 at 28 x 28 94 -> 109 us (a partial
#: tile is a larger share of few channels)
POINTWISE_PEEL_MIN_CHANNELS = 128
#: a pointwise convolution's tile takes up to this many channels where they divide its output
#: channels (AVX-512: 12 x 32, 24 zmm accumulators; AVX2's registers hold 6 x 16 either way), else
#: up to 8 (:func:`_pointwise_tile`): each pass over the input plane then feeds 12 channels, not 8.
#: MobileNetV2 on a Xeon, 12 against 8 in one process (ab60, per-kernel minima/medians of native
#: profiles, load 1.6-2.8): b1 the call 0.989x median, 576 -> 96 at 14 x 14 81 -> 73-76 us, 144 ->
#: 24 at 56 x 56 80 -> 75, 16 -> 96 at 112 x 112 141 -> 134; b8 the call 0.970x, 576 -> 96 0.88x,
#: 384 -> 96 0.89x, 64 -> 384 0.94x.  Where 12 does not divide (160, 320, 1280 channels, peeled),
#: 12 measured 1.02-1.05x on 576 -> 160 and 960 -> 160 (b1), so those keep 8
POINTWISE_TILE_MAX_ROWS = 12


#: a pointwise convolution whose input plane (channels x pixels, float32) is larger than this
#: many bytes runs over its pixels in chunks of at most this much input, each chunk through all
#: tiles of channels (:func:`_pointwise_chunk_tiles`); 0: never
POINTWISE_CHUNK_BYTES = 128 * 1024


def _pointwise_chunk_tiles(pixels: int, nj: int, channels: int) -> int | None:
    """Pixel tiles per chunk of a pointwise convolution over ``pixels`` (whole tiles of ``nj``)
    with ``channels`` input channels, or None: no chunks.  Every tile of output channels reads
    the whole input plane; when that is larger than a core's L2 (MobileNetV2's 144 x 56 x 56
    is 1.8 MB) each tile of channels streamed it from memory again.  A chunk of pixels whose
    input fits ``POINTWISE_CHUNK_BYTES`` is read from memory once and then from cache by every
    tile of channels.  Measured on Zen 4 (AVX2), MobileNetV2, chunks against none in one process
    on a busy machine (load 5-9): its 96 -> 24 and 144 -> 24 at 56 x 56 and 32 -> 16 at 112 x 112
    0.91-0.96x the CPU time (one thread); the model 0.87x at batch 8, 0.95x at batch 1 (2 threads).
    Only whole tiles of pixels and of channels are chunked (no peeled pieces)."""
    if not POINTWISE_CHUNK_BYTES or pixels % nj or channels * pixels * 4 <= POINTWISE_CHUNK_BYTES:
        return None
    tiles = pixels // nj
    most = max(1, POINTWISE_CHUNK_BYTES // (channels * nj * 4))
    chunk = max(d for d in range(1, min(tiles, most) + 1) if tiles % d == 0)
    return chunk if chunk < tiles else None


def prefetch_at_top(sch: Schedule, func_name: str, loop: Any, loads: list[BufferLoad], locality: int) -> None:
    """Cache-line prefetch hints, one per load (``T.prefetch(T.address_of(load), 0, locality, 1)``:
    a read, kept in the cache level ``locality`` names), at the top of loop ``loop``'s body.  No
    schedule primitive inserts a statement (TVM's TE had ``s[B].prefetch``): the rule edits its own
    result, which a replayed trace does not reproduce."""
    stmt = sch.get(loop)
    hints = [Evaluate(call_builtin("prefetch", call_builtin("address_of", ld), 0, locality, 1)) for ld in loads]
    sch._commit(func_name, replace_stmt(sch.mod[func_name].body, stmt, replace(stmt, body=seq(*hints, stmt.body))))


#: a projecting pointwise convolution (fewer output channels than input ones) prefetches its
#: input this many channels ahead of its reduction (0: never; :func:`_prefetch_input`)
POINTWISE_PREFETCH_CHANNELS = 16
#: ``llvm.prefetch`` locality of that prefetch (3: ``prefetcht0``, into L1: 16 channels of a
#: tile are 2-3 lines each)
POINTWISE_PREFETCH_LOCALITY = 3


def _prefetch_input(sch: Schedule, update: BlockRV, pixels: int) -> None:
    """At each input channel of a pointwise tile (loop ``c`` of (.., c, ry, rx, o1, p1)), prefetch
    the tile's first and last input pixel ``POINTWISE_PREFETCH_CHANNELS`` channels ahead (clamped to
    the last channel and pixel).  Each channel row of a tile is 2-3 cache lines a plane apart (784
    bytes at 14 x 14): a stride the hardware prefetcher follows late, and in a model the input was
    just written by the depthwise convolution, half of it by the other core -- MobileNetV2's 384 ->
    64 at 14 x 14 took 58 us there against 33 us alone (2 threads), and as long as alone with one
    thread.  The statements go at the top of the loop's body (the rule editing its own result, as
    ``topi.x86``'s ``_prefetch_next_chunk``).  Measured in the model (Xeon, b1, 2 threads,
    per-kernel minima of 30-50 native profiles, both schedules alternating in one process, load
    2.9-3.9): the projections 576 -> 96 0.86-0.88x, 384 -> 64 0.85-0.88x, 144 -> 24 at 56 x 56
    0.71-0.83x, 96 -> 24 0.85-0.88x, 384 -> 96 0.87x, 192 -> 64 0.89-0.94x; the sum of all kernels
    0.95x over three runs (other kernels +-10%: noise).  AVX2 code (``-mcpu=znver3``, same host):
    the projections 0.91-0.96x, 32 -> 16 at 112 x 112 1.15x; all kernels 1.01x (noise of +-20% on
    the untouched classifier).  Tiles by vectors (7 x 7 on AVX-512) are left alone."""
    ahead = POINTWISE_PREFETCH_CHANNELS
    if not ahead:
        return
    realize, _ = sch._block(update)
    blk = realize.block
    loops = sch.get_loops(update)
    c_loop, p1 = sch.get(loops[-5]), sch.get(loops[-1])
    inner = [sch.get(x).loop_var for x in loops[-4:]]
    written, pixel = {w.buffer for w in blk.writes}, blk.iter_vars[2].var
    loads: list[BufferLoad] = []  # the input: the one load of another buffer that moves with the pixel
    post_order_visit(blk.body, lambda x: loads.append(x) if isinstance(x, BufferLoad) and x.buffer not in written
                     and any(uses_var(i, pixel) for i in x.indices) else None)
    if len(loads) != 1:
        return
    binding = {iv.var: value for iv, value in zip(blk.iter_vars, realize.iter_values)}
    channels = _int(c_loop.extent)
    c = c_loop.loop_var
    ahead_c = Min(c + IntImm(c.dtype, ahead), IntImm(c.dtype, channels - 1))
    ahead_loads = []
    for last in (0, _int(p1.extent) - 1):
        at = {v: IntImm(v.dtype, 0) for v in inner}
        at[p1.loop_var] = IntImm(p1.loop_var.dtype, last)
        at[c] = ahead_c
        values = {iv: substitute(v, at) for iv, v in binding.items()}
        values[pixel] = Min(values[pixel], IntImm(pixel.dtype, pixels - 1))  # (a partial tile's last lanes)
        index = [Analyzer().simplify(substitute(i, values)) for i in loads[0].indices]
        ahead_loads.append(BufferLoad(loads[0].buffer, tuple(index)))
    prefetch_at_top(sch, update.func_name, loops[-5], ahead_loads, POINTWISE_PREFETCH_LOCALITY)


#: a pointwise convolution with a packed weight prefetches the next tile of output channels' weights
#: (:func:`_prefetch_next_panel`)
POINTWISE_PREFETCH_NEXT_PANEL = True


def _prefetch_next_panel(sch: Schedule, update: BlockRV, by_vectors: bool, channels_out: int, mi: int) -> None:
    """At each input channel of a pointwise tile of whole tiles (``update``: loop ``c`` of (.., c, ry,
    rx, o1, p1)), prefetch the weights of the next tile of output channels at that channel (its
    packed panel ``W[o // mi, c, 0, 0, o % mi]``, clamped to the last channel).  In a model the
    weights come from L3 (MobileNetV2's are 14 MB): its 160 -> 960 at 7 x 7 took 75 us there
    against 46 us alone, 1.45x with one thread too, its panel of 5 KB streamed at the demand of a
    tile.  Measured in the model (Xeon, 2 threads, per-kernel minima of native profiles, with and
    without alternating in one process, load 4-4.4): b1 160 -> 960 0.76-0.79x, 320 -> 1280
    0.89-0.92x, 960 -> 160 0.87-0.95x, 960 -> 320 0.83-0.98x, 576 -> 160 0.82-0.95x, the sum of
    all kernels 0.95x and 0.966x; b8 the same kernels 0.92-0.97x, all 0.968x; AVX2 code (``-mcpu
    =znver3``, same host) b1 the 7 x 7 ones 0.82-0.87x, all 0.965x.  The other tiles re-read the
    panel from L1."""
    realize, _ = sch._block(update)
    blk = realize.block
    loops = sch.get_loops(update)
    depth = 6 if by_vectors else 5
    inner = [sch.get(x).loop_var for x in loops[1 - depth:]]
    weights = [r.buffer for r in blk.reads if len(r.buffer.shape) == 5]
    loads: list[BufferLoad] = []
    post_order_visit(blk.body, lambda x: loads.append(x) if isinstance(x, BufferLoad) and weights
                     and x.buffer is weights[0] else None)
    if len(loads) != 1:
        return
    binding = {iv.var: value for iv, value in zip(blk.iter_vars, realize.iter_values)}
    at = {v: IntImm(v.dtype, 0) for v in inner}
    values = {iv: substitute(v, at) for iv, v in binding.items()}
    out = blk.iter_vars[1].var
    values[out] = Min(values[out] + IntImm(out.dtype, mi), IntImm(out.dtype, channels_out - 1))
    index = [Analyzer().simplify(substitute(i, values)) for i in loads[0].indices]
    prefetch_at_top(sch, update.func_name, loops[-depth], [BufferLoad(loads[0].buffer, tuple(index))],
                    POINTWISE_PREFETCH_LOCALITY)


def _pack_pointwise_weight(sch: Schedule, conv: BlockRV, mi: int) -> None:
    """A pointwise convolution's constant weight ``W[o, c, 0, 0]`` (one its function's
    ``layout_free_buffers`` names) read from panels ``W[o // mi, c, 0, 0, o % mi]`` (zeros past the
    last channel), packed once at compile time (:data:`LAYOUT_REWRITE_PREPROC`, as a large matmul's
    B): the ``mi`` weights a step of the tile broadcasts are then next to each other, one stream
    of weights instead of ``mi`` rows ``c`` floats apart.  Measured on Zen 4 (AVX2), one thread,
    MobileNetV2 at batch 1, packed against not in one process (per-kernel minima over 20 profiles):
    160 -> 960 and 320 -> 1280 at 7 x 7 0.87x and 0.90x, 384 -> 96, 64 -> 384 and 384 -> 64 at 14 x 14
    0.91-0.97x, most others 0.97-1.01x (32 -> 16 at 112 x 112 1.04x); all its convolutions 0.967x."""
    blk = sch.get(conv)
    vo = blk.iter_vars[1].var
    for idx, region in enumerate(blk.reads):
        if len(region.region) == 4 and region.buffer is not blk.body.buffer and region.region[0].min is vo:
            if not _is_layout_free(sch, region.buffer):
                return  # (packed on every call it would cost a pass over the weight)
            packed = sch.cache_read(conv, idx, "global")
            sch.transform_layout(conv, ("read", idx), lambda o, c, kh, kw: (o // mi, c, kh, kw, o % mi),
                                 pad_value=0.0)
            sch.annotate(packed, LAYOUT_REWRITE_PREPROC, True)
            return


def _vectorize_by(sch: Schedule, loop: LoopRV, lanes: int | None) -> None:
    """Vectorize ``loop`` whole, or (``lanes``) as unrolled vectors of ``lanes``: a pointwise
    convolution's partial tile of more than a vector of pixels (AVX-512: 49 = 32 + 17) as whole
    vectors and a guarded rest -- LLVM lowered a <17 x float> accumulator lane by lane, through
    the stack: MobileNetV2's 160 -> 960 at 7 x 7, batch 1, alone 1034 -> 86 us (Xeon, 2 threads)."""
    if lanes is not None:
        outer, loop = sch.split(loop, [None, lanes])
        sch.unroll(outer)
    sch.vectorize(loop)


def _flatten_pixels(W: int) -> Callable:
    """(n, o, y, x) -> (n, o, y * W + x): a pointwise convolution's output plane as one pixel axis."""
    return lambda n, o, y, x: (n, o, y * W + x)


def schedule_conv2d_1x1(sch: Schedule) -> bool:
    """A 1x1, stride-1, unpadded convolution (NCHW: MobileNet's expand and project layers) as the
    matmul it is: per image, ``out[o, p] = sum_c W[o, c] * data[c, p]`` over the H x W pixels p.

    1. The zero-width padding copy is inlined; ``transform_block_layout`` flattens (y, x) of the
       convolution and of its epilogue into one pixel axis p = y * W + x (the tile then need not
       fit a row: a 14 x 14 or 7 x 7 plane is 196 or 49 pixels, not rows of 14 or 7 lanes).
    2. A register tile of ``mi`` channels x ``nj`` pixels (:func:`_pointwise_tile`); loops
       (n, o0, p0, c, o1, p1): each weight is broadcast to the pixel vectors, and the tile is
       written back through the epilogue straight into NCHW rows (the packed conv kernel
       transposes its tiles; the generic one tiled rows of 14 or 16 columns).  Pixels outside
       channels: with the channel tiles inside, each pixel tile wrote 96 rows 50 KB apart (112 x
       112) and ran at an eighth of the rate.  Against the generic conv rule, one thread, same
       process: 4 x 24 -> 144 at 56 x 56 1.15 -> 0.82-0.88 ms, 8 x 32 -> 192 at 28 x 28 0.95 ->
       0.71-0.76 ms, 4 x 16 -> 96 at 112 x 112 0.9-1.1x over runs; 4 x 144 -> 24 at 56 x 56 0.57x
       the packed kernel's time.  A plane of no whole vectors (49, 196 pixels) has its last,
       partial tile of pixels peeled (``loop_partition``) into a loop of its own.
    3. (n, o0) on threads when the kernel is large; the tile zeroed before c.  A large input plane
       is read in chunks of pixels, each through all tiles of channels (:func:`_pointwise_chunk_tiles`);
       a projection onto a plane of partial chunks runs (n, p0, o0) (:func:`_pointwise_pixels_on_threads`).
       A projection prefetches its input channels ahead (:func:`_prefetch_input`), every tile of
       whole tiles the next tile's weights (:func:`_prefetch_next_panel`).
    """
    conv = _conv_block(sch)
    plane = None if conv is None else _pointwise_plane(sch, conv)
    if plane is None or _reshaping_tail(sch, conv):
        return False
    conv, epilogue = _conv_prologue_and_tail(sch, conv, _inline_copy)
    if conv is None or sch.get(_blocks(sch)[0]).name_hint != sch.get(conv).name_hint:
        return False  # (a prologue that is not a plain copy)
    H, W = plane
    N, CO = _extents_or_none(sch, sch.get_loops(conv))[:2]
    mi, nj = _pointwise_tile(CO)
    sch.transform_block_layout(conv, lambda n, o, y, x, c, ry, rx: (n, o, y * W + x, c, ry, rx))
    # the convolution writes a buffer of flat pixels that the epilogue (or, without one, a copy)
    # writes back into NCHW: the write-back of a tile then covers its pixels, not their rows
    if epilogue is None:
        epilogue = sch.cache_write(conv, 0, "local")
    sch.transform_layout(conv, ("write", 0), _flatten_pixels(W))
    sch.transform_block_layout(epilogue, _flatten_pixels(W))
    n, o, p, c, ry, rx = sch.get_loops(conv)
    CI = _extents(sch, [c])[0]
    work = (N or 1) * CO * H * W * CI
    _pack_pointwise_weight(sch, conv, mi)
    o0, o1 = sch.split(o, [None, mi])
    p0, p1 = sch.split(p, [None, nj])
    chunk = None if CO % mi else _pointwise_chunk_tiles(H * W, nj, _extents(sch, [c])[0])
    pixel_major = chunk is None and work > CONV_PARALLEL_WORK and _pointwise_pixels_on_threads(N, CO, CI, H * W, mi)
    pc = None
    if chunk:  # the pixels in chunks outside the channel tiles (see _pointwise_chunk_tiles)
        pc, p0 = sch.split(p0, [None, chunk])
        sch.reorder(n, pc, o0, p0, c, ry, rx, o1, p1)
    else:
        sch.reorder(*((n, p0, o0) if pixel_major else (n, o0, p0)), c, ry, rx, o1, p1)
    pieces, updates, epilogues = [o0], [conv], [epilogue]
    if CO % mi:  # the last, partial tile of channels a loop of its own
        pieces, updates, epilogues = _peel(sch, o0, [CO // mi, None], updates, epilogues)
    if H * W % nj:  # the same for the pixels, in the whole tiles of channels
        _, whole, whole_epilogues = _peel(sch, sch.get_loops(updates[0])[-7 if pixel_major else -6],
                                          [H * W // nj, None], updates[:1], epilogues[:1])
        updates, epilogues = whole + updates[1:], whole_epilogues + epilogues[1:]
    lanes = VectorUnit.current().lanes
    by_vectors = H * W % nj > lanes and nj % lanes == 0  # (see _vectorize_by)
    for update, epi in zip(updates, epilogues):
        *_, tile_loop, _, _, _, tile_rows, tile_cols = sch.get_loops(update)
        sch.compute_inline(sch.cache_write(update, 0, "local"))
        wb = epi
        if not any(sch.get(loop) is sch.get(tile_loop) for loop in sch.get_loops(wb)):
            sch.reverse_compute_at(wb, tile_loop)
        _vectorize_by(sch, tile_cols, lanes if by_vectors else None)
        sch.unroll(tile_rows)
        _vectorize_by(sch, sch.get_loops(wb)[-1], lanes if by_vectors else None)
    if work > CONV_PARALLEL_WORK:
        _pointwise_threads(sch, N, [n, pc, o0, p0], pieces, updates, pixel_major)
    _zero_tiles(sch, updates, by_vectors, prefetch=not by_vectors and CO < CI, pixels=H * W, panel=(CO, mi))
    return True


#: a projecting pointwise convolution (fewer output channels than input ones) of one image onto at
#: least this many pixels that are not whole chunks (:func:`_pointwise_chunk_tiles`; 784 = 24.5
#: tiles of 32) runs its tiles of pixels on threads, (p0, o0), not its tiles of output channels
#: (0: never).  By channels each thread read the whole input plane, whose channels the depthwise
#: convolution before it wrote in halves on the two cores; by pixels each reads half of it (and all
#: of the small weight).  Xeon (AVX-512), 2 threads, MobileNetV2 at batch 1, both in one process,
#: per-kernel minima of 500 native profiles (load 3.2-3.8): 144 -> 32 at 28 x 28 35.0 -> 27.1 us,
#: 192 -> 32 45.9 -> 33.6 and 44.7 -> 35.3.  Not at 14 x 14 (196 pixels: 6 tiles and a partial
#: one, which takes a parallel region of its own): 384 -> 64 39-40 -> 42-44, 384 -> 96 52.8 ->
#: 55.3, 576 -> 96 81.4 -> 82.3, 192 -> 64 level.  AVX-512 only (AVX2's 16-pixel tiles divide 784)
POINTWISE_PIXELS_ON_THREADS_MIN_PIXELS = 28 * 28


def _pointwise_pixels_on_threads(N: int | None, CO: int, CI: int, pixels: int, mi: int) -> bool:
    """Whether a pointwise convolution runs (n, p0, o0) with its tiles of pixels on threads."""
    return bool(POINTWISE_PIXELS_ON_THREADS_MIN_PIXELS) and N == 1 and CO < CI and CO % mi == 0 and \
        pixels >= POINTWISE_PIXELS_ON_THREADS_MIN_PIXELS and VectorUnit.current().lanes >= 16


def _pointwise_threads(sch: Schedule, N: int | None, loops: list, pieces: list[LoopRV], updates: list[BlockRV],
                       pixel_major: bool) -> None:
    """Step 3 of :func:`schedule_conv2d_1x1`, its loops on threads (``loops``: n, the chunk of
    pixels or None, o0, p0 of the whole tiles): with ``pixel_major`` (loops (n, p0, o0, ..)) the
    whole tiles' (p0, o0) and the partial tile's o0; else the images, or (one image) the whole
    tiles of channels when there are partial ones; else (n, [chunk,] o0, p0)."""
    n, pc, o0, p0 = loops
    if pixel_major:
        for update in updates:
            p0, o0 = sch.get_loops(update)[-7:-5]
            sch.parallel(sch.fuse(p0, o0) if update is updates[0] else o0)
    elif len(pieces) > 1:
        sch.parallel(n if N is not None and N > 1 else pieces[0])
    elif len(updates) > 1:
        sch.parallel(sch.fuse(n, o0) if N is not None else o0)
    else:
        inner = [o0, p0] if pc is None else [pc, o0, p0]
        sch.parallel(sch.fuse(n, *inner) if N is not None else sch.fuse(*inner))


def _zero_tiles(sch: Schedule, updates: list[BlockRV], by_vectors: bool, prefetch: bool, pixels: int,
                panel: tuple[int, int]) -> None:
    """A pointwise convolution's tiles zeroed before their reduction (vectorized); a projection's
    input prefetched ahead in it (``prefetch``: :func:`_prefetch_input`); the whole tiles, which
    read each weight panel first, prefetch the next (:func:`_prefetch_next_panel`; ``panel``:
    output channels, channels per tile)."""
    for update in updates:
        k = sch.get_loops(update)[-6 if by_vectors else -5]
        init = sch.decompose_reduction(update, k)
        sch.vectorize(sch.get_loops(init)[-1])
        if prefetch:
            _prefetch_input(sch, update, pixels)
    if POINTWISE_PREFETCH_NEXT_PANEL:
        _prefetch_next_panel(sch, updates[0], by_vectors, *panel)


#: a depthwise convolution's register tile holds at most this many vectors (rows x row vectors)
#: of AVX-512's 32 registers, as many of the unit's (AVX2: 10 of 16 ymm, which leaves the weight's
#: broadcast and the input rows theirs).  12 (AVX2: 6) took one row of 7 x 7 and of 28 x 28 planes
#: at a time; 20 takes 7 and 2: MobileNetV2's 960 x 7 x 7 kernel 0.84-0.9x the time, 192 x 28 x 28
#: 0.88-0.95x, the others alike (AVX2, both in one process, batch 1 and 8)
DEPTHWISE_TILE_VECTORS = 20

#: registers a depthwise tile leaves to the weight's broadcast and the input rows: a row is emitted
#: in whole registers and power-of-two pieces (AVX-512: 14 = 8 + 4 + 2 lanes, three registers), and
#: the tile's rows x pieces stay within the unit's registers less these.  14 rows of 14 took 42 of
#: AVX-512's 32 and spilled: MobileNetV2 384 x 14 x 14 45 -> 35 us, 576 x 14 x 14 67 -> 52 us, 192 x
#: 28 -> 14 45 -> 30 us (7 rows, not 14); AVX2 (rows of 7: 4 + 2 + 1 lanes, one row, not 7) 960 x 7
#: x 7 53 -> 49 us, 576 x 14 -> 7 41 -> 37 us; the other schedules unchanged (batch 1, one thread,
#: both in one process; batch 8, 2 threads: 576 x 14 x 14 305 -> 222 us, 384 x 14 x 14 202 -> 171)
DEPTHWISE_SPARE_REGISTERS = 4


def _depthwise_column_stride(sch: Schedule, conv: BlockRV) -> int | None:
    """The column stride (1 or 2) of a convolution block that sums over one input channel per
    output channel (its channel reduction has extent 1: depthwise, or a channel multiplier);
    None for any other convolution or stride."""
    ext = _extents(sch, sch.get_loops(conv))
    if len(ext) != 7 or ext[4] != 1:
        return None
    return _column_stride(sch.get(conv))


def _column_stride(block: Any) -> int | None:
    """How far apart (1 or 2) the input columns of neighbouring output columns are in an NCHW
    convolution block (iterators n, c, y, x, ...): the step of the last index of its one 4-d
    input load that moves with x (not the accumulator it writes); None when there is no single
    such load or the step is another."""
    xx, written = block.iter_vars[3].var, {w.buffer for w in block.writes}
    data: list[BufferLoad] = []
    post_order_visit(block.body, lambda x: data.append(x) if isinstance(x, BufferLoad) and len(x.indices) == 4
                     and x.buffer not in written and uses_var(x.indices[-1], xx) else None)
    if len(data) != 1:
        return None
    column = data[0].indices[-1]
    step = substitute(column, {xx: xx + 1}) - column
    analyzer = Analyzer()
    return next((s for s in (1, 2) if analyzer.can_prove_equal(step, s)), None)


def _deinterleave_columns(sch: Schedule, b: BlockRV) -> None:
    """A stride-2 convolution's input copy (its padding) stored as even columns then odd ones
    (``pad[n, c, h, w] -> pad[n, c, h, w % 2, w // 2]``): the taps at ``2 x + kw`` then read
    ``pad[.., kw % 2, x + kw // 2]``, one contiguous vector per output row instead of a gather."""
    sch.transform_layout(b, ("write", 0), lambda n, c, h, w: (n, c, h, w % 2, w // 2),
                         assume_injective_transform=True)  # the slot past an odd width is never read


#: a depthwise convolution's padded input plane larger than this (bytes) is copied a row tile at a
#: time (:func:`_copy_rows_in_place`), not a plane at a time: the whole deinterleaved plane of
#: MobileNetV2's 96 x 112 -> 56 (51 KB) outgrew AVX-512's 48 KB L1 cache and its copy waited on
#: its stores, then the convolution read it back from L2 (more below)
DEPTHWISE_COPY_PLANE_BYTES = 24 * 1024


def _copy_plane_in_place(sch: Schedule, b: BlockRV, plane: LoopRV, deinterleaved: bool, channels: int) -> None:
    """Make a depthwise convolution's input copy (its padding) per channel plane, under the
    convolution's (batch, channel) loop ``plane``: each plane is copied just before its rows are
    convolved, by the thread that convolves them, and read back from cache (a separate pass
    wrote and re-read the whole padded tensor: MobileNetV2's 8 x 96 x 113 x 113 is 39 MB).  The
    copy is vectorized along its rows -- over (parity, column) when ``deinterleaved`` (stored
    even columns first, :func:`_deinterleave_columns`), so it writes whole vectors; a
    deinterleaved copy of rows of more than a register per parity is cut into pieces first
    (:func:`_cut_padding_off`)."""
    cut = deinterleaved and _cut_before_deinterleaving(sch, b, channels)
    sch.compute_at(b, plane)
    pieces = [b]
    if cut:
        pieces = _cut_padding_off(sch, b)
        _deinterleave_columns(sch, pieces[0])
    for piece in pieces:
        _vectorize_row(sch, piece, deinterleaved, by_registers=len(pieces) > 1)


def _copies_rows(sch: Schedule, b: BlockRV, channels: int) -> bool:
    """Whether a stride-2 convolution's padded copy is made per row tile
    (:func:`_copy_rows_in_place`): a plane of more than ``DEPTHWISE_COPY_PLANE_BYTES`` whose
    padding :func:`_cut_padding_off` can cut."""
    rows, cols = _extents(sch, sch.get_loops(b)[-2:])
    return rows * cols * 4 > DEPTHWISE_COPY_PLANE_BYTES and _cut_before_deinterleaving(sch, b, channels)


def _copy_rows_in_place(sch: Schedule, b: BlockRV, tile: LoopRV) -> None:
    """Copy a stride-2 convolution's padded input (:func:`_copy_plane_in_place`) per tile of
    output rows, under the convolution's row-tile loop ``tile``: the input rows the tile reads
    (one more than twice its rows: one row is copied twice), deinterleaved, each parity's row
    starting a cache line (``storage_align``).  Only the columns are cut: the inside keeps its
    row test, one branch per row vector (:mod:`minitvm.target.codegen.vector`), since a tile's
    rows are padding only in the last tile.  MobileNetV2's 96 x 112 -> 56 (TF padding), one
    thread, the kernel alone, plane copy vs tile copy in one process: batch 1 287 -> 236 us,
    batch 8 2.31 -> 1.91 ms; 2 threads 139 -> 108 us, 1.16 -> 0.96 ms (AVX2 code: 1 thread
    307 -> 231 us, 2.38 -> 1.72 ms)."""
    sch.compute_at(b, tile)
    pieces = _cut_padding_off(sch, b, rows=False)
    _deinterleave_columns(sch, pieces[0])
    for piece in pieces:
        _vectorize_row(sch, piece, True, by_registers=True)
    sch.storage_align(pieces[0], 0, 3, VectorUnit.current().lanes, 0)


def _cut_before_deinterleaving(sch: Schedule, b: BlockRV, channels: int) -> bool:
    """Whether a stride-2 convolution's padded copy has rows of more than a register per parity
    and a padding :func:`_cut_padding_off` cuts: then it is deinterleaved after the cut
    (``annotate_buffer_access`` declares the pieces' regions in the copy's four axes).  Not with
    a channel multiplier (a copy of fewer than the convolution's ``channels``): its plane is
    found by a division, and (column, parity) can then not be reordered after ``compute_at``."""
    rows = _extents(sch, sch.get_loops(b)[-1:])[0]
    if rows <= 2 * VectorUnit.current().lanes or _int(sch.get(b).iter_vars[1].dom.extent) != channels:
        return False
    padding = _padding_offsets(sch, b)
    return padding is not None and padding[:2] == (0, 0) and padding[3] % 2 == 0 and padding[3] < rows


def _deinterleave_unless_cut(channels: int) -> Callable[[Schedule, BlockRV], None]:
    """A stride-2 convolution's prologue: deinterleave its copy now, or after the cut."""
    def prologue(sch: Schedule, b: BlockRV) -> None:
        if not _cut_before_deinterleaving(sch, b, channels):
            _deinterleave_columns(sch, b)
    return prologue


def _cut_padding_off(sch: Schedule, b: BlockRV, rows: bool = True) -> list[BlockRV]:
    """Cut a padded copy (``loop_partition``) into its border rows and columns, which store
    zeros, and its inside, a plain copy of each input row; returns the pieces.  The padding test
    per lane (a compare and a select of 57-lane int64 vectors per row at MobileNetV2's 96 x 112
    -> 56, stride 2) took longer than the convolution: that kernel alone, AVX2, 2 threads, cut
    and whole alternated in one process, 1.6x faster at batch 1 (305 -> 189 us), 1.25x at batch
    8 (3.06 -> 2.45 ms); 56 -> 28 and 28 -> 14 1.09x.  Narrower stride-2 rows are left whole: at
    14 -> 7 the pieces' rows of 7 lanes, written and read back at once, were 1.6x slower (store
    forwarding across unaligned parts).  Only TF's "same" padding (none before, after an even
    width) is cut: a row cut elsewhere could not be split into (column, parity) after the cut
    (torch's padding of 1 before keeps the whole rows)."""
    _, _, H, W = _padding_offsets(sch, b)
    name = sch.get(b).name_hint
    *_, h, w = sch.get_loops(b)
    if rows and H != _extents(sch, [h])[0]:
        h_name = sch.get(h).loop_var.name
        sch.loop_partition(h, [H, None])
        b = sch.get_block(f"{name}_{h_name}0")
    sch.loop_partition(sch.get_loops(b)[-1], [W, None])
    pieces = [p for p in _blocks(sch) if sch.get(p).name_hint.startswith(name)
              and isinstance(sch.get(p).body, BufferStore)]
    for p in pieces:
        _write_one_element(sch, p)
    return pieces


def _padding_offsets(sch: Schedule, b: BlockRV) -> tuple[int, int, int, int] | None:
    """(top, left, H, W) of a padding block ``pad[n, c, h, w] = if(.., data[n, c, h - top, w - left], 0)``
    whose padded plane holds the whole input plane, else None."""
    blk = sch.get(b)
    loads: list[BufferLoad] = []
    post_order_visit(blk.body.value, lambda x: loads.append(x) if isinstance(x, BufferLoad) else None)
    if len(loads) != 1 or len(loads[0].indices) != 4 or len(blk.iter_vars) != 4:
        return None
    analyzer, ivs = Analyzer(), [iv.var for iv in blk.iter_vars]
    rows, cols = loads[0].indices[2:]
    at_zero = {v: IntImm(v.dtype, 0) for v in ivs}
    top, left = (_int(analyzer.simplify(-substitute(x, at_zero))) for x in (rows, cols))
    H, W = (_int(d) for d in loads[0].buffer.shape[2:])
    Hp, Wp = (_int(iv.dom.extent) for iv in blk.iter_vars[2:])
    if None in (top, left, H, W, Hp, Wp) or top < 0 or left < 0 or top + H > Hp or left + W > Wp:
        return None
    if not all(analyzer.can_prove_equal(substitute(x, {v: v + 1}) - x, 1) for x, v in ((rows, ivs[2]), (cols, ivs[3]))):
        return None
    return top, left, H, W


def _write_one_element(sch: Schedule, b: BlockRV) -> None:
    """Declare that each instance of block ``b`` writes the one element it stores: ``loop_partition``
    widens every axis of a piece's write region to its iterator's domain (as TVM's does), and the
    copy of one plane then claims all of them: CompactBufferAllocation would keep every plane."""
    blk = sch.get(b)
    ivs, indices = [iv.var for iv in blk.iter_vars], blk.body.indices
    sch.annotate_buffer_access(
        b, 0, "write", lambda *args: tuple(substitute(x, dict(zip(ivs, args))) for x in indices))


def _vectorize_row(sch: Schedule, b: BlockRV, deinterleaved: bool, by_registers: bool) -> None:
    """Vectorize (a piece of) a padded copy along its row; a deinterleaved row over (parity,
    column), the parity outside.  ``by_registers``: a row of several whole registers as one
    unrolled vector op each (one 56-lane op is legalized into a long chain).  A piece of the
    border starting past column 0 (padding after the row) stays scalar: split needs a loop
    from 0."""
    w = sch.get_loops(b)[-1]
    (extent,) = _extents(sch, [w])
    if extent == 1 or _int(sch.get(w).min) != 0:
        return
    if deinterleaved:
        w0, w1 = sch.split(w, [None, 2])
        sch.reorder(w1, w0)
        w, extent = w0, -(-extent // 2)
    lanes = VectorUnit.current().lanes
    if by_registers and extent % lanes == 0 and extent > lanes:
        w0, w = sch.split(w, [None, lanes])
        sch.unroll(w0)
    sch.vectorize(w)


def _depthwise_tile_rows(rows: int, width: int) -> int:
    """Output rows of a depthwise tile of whole rows of ``width``: the most that divide ``rows`` and
    fit ``DEPTHWISE_TILE_VECTORS`` of AVX-512's 32 registers, as many of the unit's (AVX2: 10 of
    16 ymm; LeNet's 28-column rows once took 4 rows = 16 ymm, all AVX2 has, and spilled: 228 us
    at batch 8), counting the pieces a row is emitted in (``DEPTHWISE_SPARE_REGISTERS``)."""
    unit = VectorUnit.current()
    budget = max(1, DEPTHWISE_TILE_VECTORS * unit.registers // 32)
    vectors = -(-width // unit.lanes)
    pieces = width // unit.lanes + bin(width % unit.lanes).count("1")
    room = unit.registers - DEPTHWISE_SPARE_REGISTERS
    return max(d for d in range(1, rows + 1) if rows % d == 0 and (d == 1 or d * vectors <= budget
                                                                   and d * pieces <= room))


def _widened_row(sch: Schedule, conv: BlockRV, stride: int, copies: list[str]) -> int:
    """The width a depthwise convolution computes its rows of output columns in: on AVX-512, the
    next power of two when the row is narrower than a register and not one already (7 -> 8, 14 ->
    16), else the row's.  A row of 7 was emitted as 4 + 2 + 1 lanes, of 14 as 8 + 4 + 2, every tap
    three loads and three FMAs; the extra lanes compute from columns of zeros past the padded copy
    and are not written back (:func:`_widen_rows`).  Xeon, one kernel with its bias and clip, both
    schedules alternating in one process (load 4.6-5), minimum time: batch 1 960 x 7 x 7
    0.80-0.82x, 384 x 14 x 14 0.91x, 576 x 14 x 14 0.92x; batch 8 960 x 7 x 7 0.81x, 384 x 14 x 14
    1.02x (median 0.99x).  AVX2 code (``-mcpu=znver3``) of 960 x 7 x 7 at 8 lanes took 1.04-1.09x,
    so AVX2 keeps its rows.  Only at stride 1 over a padded copy the rule allocates (``copies``),
    zero past its last column (a row read straight from the input would read past its plane)."""
    blk = sch.get(conv)
    width = _int(blk.iter_vars[3].dom.extent)
    lanes = VectorUnit.current().lanes
    if lanes < 16 or stride != 1 or len(copies) != 1 or width >= lanes or width & (width - 1) == 0:
        return width
    wide = 1 << width.bit_length()
    copy = sch.get(sch.get_block(copies[0]))
    padded = copy.writes[0].buffer
    cols, needed = _int(padded.shape[3]), _columns_read(blk, padded, wide)
    if needed is None or len(copy.iter_vars) != 4:
        return width
    value, col = copy.body.value, copy.iter_vars[3].var
    for c in range(cols, needed):  # the copy's value there: its padding test must be false
        at = Analyzer().simplify(substitute(value, {col: IntImm(col.dtype, c)}))
        if not (isinstance(at, FloatImm) and at.value == 0.0):
            return width
    return wide


def _columns_read(blk: Any, buffer: Any, width: int) -> int | None:
    """Columns of ``buffer`` a convolution block (iterators n, c, y, x, rc, ry, rx) reads when its
    rows are ``width`` wide: one past its column index at the last x and window column (the index
    grows with both: ``x + rx``, or ``x + 2 rx`` dilated); None without a single such load."""
    loads: list[BufferLoad] = []
    post_order_visit(blk.body, lambda x: loads.append(x) if isinstance(x, BufferLoad) and x.buffer is buffer else None)
    if len(loads) != 1:
        return None
    x, rx = blk.iter_vars[3], blk.iter_vars[6]
    last = {x.var: IntImm(x.var.dtype, width - 1), rx.var: rx.dom.min + rx.dom.extent - 1}
    return _int(Analyzer().simplify(substitute(loads[0].indices[-1], last) + 1))


class _WidenRows(BufferReplacer):
    """Column loops and block iterators widened, buffers swapped for wider ones (:func:`_widen_rows`)."""

    def __init__(self, buffers: dict[int, Any], loops: dict[int, int], iters: dict[str, int]):
        super().__init__(buffers)
        self.loops, self.iters = loops, iters

    def visit_for_(self, n: For) -> Stmt:
        if id(n.loop_var) in self.loops:
            n = replace(n, extent=IntImm(n.extent.dtype, self.loops[id(n.loop_var)]))
        return self.visit_children(n)

    def visit_block_(self, n: Block) -> Stmt:
        if n.name_hint in self.iters:
            ivs, dom = list(n.iter_vars), n.iter_vars[3].dom
            ivs[3] = replace(ivs[3], dom=Range(dom.min, IntImm(dom.extent.dtype, self.iters[n.name_hint])))
            n = replace(n, iter_vars=tuple(ivs))
        return super().visit_block_(n)


def _widen_rows(sch: Schedule, conv: BlockRV, init: BlockRV, copy: BlockRV, width: int) -> None:
    """Compute a depthwise convolution's rows ``width`` wide (:func:`_widened_row`): the column loops
    of its update and init blocks and their accumulator get ``width`` columns; its padded copy
    ``copy`` the columns past its last that they read (zeros).  The write-back still reads the first
    columns only.  No schedule primitive widens a loop past its block's domain (TVM's
    ``pad_einsum`` needs an Einsum block, and a window is not one): the rule edits its own result,
    as :func:`_prefetch_next_chunk` does."""
    realizes = [sch._block(b)[0] for b in (conv, init, copy)]
    update, copy_r = realizes[0].block, realizes[2].block
    acc, padded = update.writes[0].buffer, copy_r.writes[0].buffer
    cols = max(_int(padded.shape[3]), _columns_read(update, padded, width))
    loop_vars = [r.iter_values[3] for r in realizes]
    if not all(isinstance(v, Var) for v in loop_vars):
        raise ScheduleError(f"depthwise rows of {width}: a column iterator is not bound to one loop")
    extents = [width, width, cols]
    loops = {id(v): e for v, e in zip(loop_vars, extents)}
    iters = {r.block.name_hint: e for r, e in zip(realizes, extents)}
    buffers = {id(b): replace(b, shape=(*b.shape[:3], IntImm(b.shape[3].dtype, e)))
               for b, e in ((acc, width), (padded, cols))}
    sch._commit(conv.func_name, _WidenRows(buffers, loops, iters).visit(sch.mod[conv.func_name].body))


def schedule_depthwise_conv2d(sch: Schedule) -> bool:
    """A depthwise convolution at stride 1 or 2 (NCHW, MobileNet's 3x3 layers): each output
    channel reads only its own input plane, so the generic conv tile (16 channels x a piece of a
    row) multiplied each loaded input vector by a single weight and kept a copy of the input.

    1. Stride 1: a prologue that only copies (the conv's ``pad_temp`` without padding) is
       inlined; a real padding is copied per channel plane inside the loop over planes
       (:func:`_copy_plane_in_place`).  Stride 2: that copy is stored even columns first
       (:func:`_deinterleave_columns`), and a wide one with TF padding is cut into its zero
       border and its inside first (:func:`_cut_padding_off`).
    2. Per channel a tile of ``rt`` output rows x the whole output row (``ceil(W / 16)`` vectors,
       at most ``DEPTHWISE_TILE_VECTORS`` in all): loops (n, c, h0, rc, kh, kw, h1, w) -- each
       window tap adds a shifted input row times one weight to every row of the tile.
    3. Accumulate in registers (``cache_write("local")``) written back through the epilogue;
       channels on threads from ``DEPTHWISE_PARALLEL_WORK`` multiply-adds on.  Measured on
       MobileNetV2's stride-1 layers: 2x the generic rule at stride 1 (144 x 56 x 56: 310 -> 144
       us; 960 x 7 x 7: 52 -> 23 us), 2.5-2.8x at stride 2 (96 x 113 -> 56: 652 -> 236 us), where
       the generic rule gathered every other column.  A row of
       whole registers (AVX2: 56 = 7 x 8) is split into them, the registers unrolled: LLVM
       legalized one 56-lane vector op into a long chain (its weight splat built lane by lane);
       one kernel at a time, AVX2, a busy machine: 144 x 56 x 56 0.6-0.8x the time, 32 x 112 x
       112 0.4-0.7x, 96 x 112 -> 56 0.75x; MobileNetV2 b8 0.92x, b1 0.99-1.0x (pairwise).  A row
       of part registers too (AVX-512: 56 = 3 x 16 + 8, 28 = 16 + 12; AVX2: 28 = 3 x 8 + 4), its
       write-back as well: one 56-lane op over the 16-lane pieces went lane by lane through the
       stack.  Xeon, 2 threads, batch 1, alone: AVX-512 144 x 56 x 56 778 -> 238 us, 192 x 28 x
       28 250 -> 90; AVX2 192 x 28 x 28 and 384 x 14 x 14 0.7-0.8x.
    """
    conv = _conv_block(sch)
    stride = None if conv is None else _depthwise_column_stride(sch, conv)
    if stride is None or (stride == 2 and sch.get(_blocks(sch)[0]).name_hint == sch.get(conv).name_hint):
        return False  # (stride 2 without a copy of the input to deinterleave: the generic rule)
    channels = _extents(sch, sch.get_loops(conv))[1]
    prologue = _inline_copy if stride == 1 else _deinterleave_unless_cut(channels)
    conv, epilogue = _conv_prologue_and_tail(sch, conv, prologue)
    if conv is None:
        return False
    copies = [sch.get(b).name_hint for b in _blocks(sch)]
    copies = copies[:copies.index(sch.get(conv).name_hint)]
    loops = sch.get_loops(conv)
    N, C, OH, OW = _extents(sch, loops)[:4]
    vectors = -(-OW // VECTOR_LANES)
    if vectors > DEPTHWISE_TILE_VECTORS:
        raise ScheduleError("depthwise rows wider than the register tile: the generic conv rule")
    wide = _widened_row(sch, conv, stride, copies)
    rt = _depthwise_tile_rows(OH, wide)
    n, c, oh, ow, rc, kh, kw = loops
    h0, h1 = sch.split(oh, [None, rt])
    sch.reorder(n, c, h0, rc, kh, kw, h1, ow)
    wb = _local_accumulator(sch, conv, epilogue)
    sch.reverse_compute_at(wb, h0)
    lanes = VectorUnit.current().lanes
    # a row of whole registers (and the rest, guarded): one unrolled vector op each; so is the
    # write-back of a row of part registers (a 56-lane row read from 16-lane pieces went lane by lane)
    _vectorize_by(sch, ow, lanes if OW > lanes else None)
    sch.unroll(h1)
    _vectorize_by(sch, sch.get_loops(wb)[-1], lanes if OW > lanes and OW % lanes else None)
    parallel = N * C * OH * OW * math.prod(_extents(sch, [rc, kh, kw])) > DEPTHWISE_PARALLEL_WORK and N * C >= 2
    plane = _depthwise_rows_on_threads(sch, n, c, h0) if parallel and _depthwise_by_rows(N, OH, OW, stride) else None
    if plane is None:
        plane = sch.fuse(n, c)
        if parallel:
            sch.parallel(plane)
    for name in reversed(copies):
        if stride == 2 and _copies_rows(sch, sch.get_block(name), channels):
            _copy_rows_in_place(sch, sch.get_block(name), h0)
        else:
            _copy_plane_in_place(sch, sch.get_block(name), plane, stride == 2, channels)
    init = sch.decompose_reduction(conv, rc)
    sch.vectorize(sch.get_loops(init)[-1])
    if wide != OW:
        _widen_rows(sch, conv, init, sch.get_block(copies[0]), wide)
    return True


#: a stride-1 depthwise convolution of one image onto at least this many output pixels runs blocks
#: of its output rows on threads (:func:`_depthwise_rows_on_threads`), not halves of its channels
#: (0: never).  Its neighbours on such a plane run rows on threads too: a stem pads and convolves
#: blocks of rows (``topi.x86``), a pointwise convolution chunks of pixels
#: (:func:`_pointwise_chunk_tiles`); with halves of the channels each thread read half of every
#: plane from the other core's cache, and the next layer half of its input.  Xeon (AVX-512), 2
#: threads, MobileNetV2 at batch 1, both in one process, per-kernel minima of 400 native profiles
#: (load 2.0-2.4): its 32 x 112 x 112 84 -> 67-69 us and the 32 -> 16 projection after it 63 ->
#: 52 us.  Not smaller planes: 144 x 56 x 56 by rows took 84 -> 95-125 us (the projection after
#: it 84 -> 72-77), 96 x 112 -> 56 (stride 2) 110 -> 118-140 (49-55 -> 48) -- a channel's rows
#: in blocks of 8-28 rows, each copied with its halo, against a whole 56 x 56 plane streamed at once.
#: AVX-512 only: AVX2 code (``-mcpu=znver3``, same host) measured level (the 32 x 112 x 112 147 ->
#: 136 us, the projection 142 -> 149, the call 1.00x), so its schedule stays as it was
DEPTHWISE_ROWS_ON_THREADS_MIN_PIXELS = 112 * 112
#: ... cut into at least this many blocks per thread: 2 against 1 measured 69 vs 79 us on that
#: 32 x 112 x 112 (the pool balances chunks, ``thread_pool.CHUNKS_PER_THREAD``)
DEPTHWISE_ROW_BLOCKS_PER_THREAD = 2


def _depthwise_by_rows(N: int, OH: int, OW: int, stride: int) -> bool:
    """Whether a depthwise convolution of ``N`` images onto ``OH`` x ``OW`` runs blocks of rows on threads."""
    return bool(DEPTHWISE_ROWS_ON_THREADS_MIN_PIXELS) and N == 1 and stride == 1 and \
        OH * OW >= DEPTHWISE_ROWS_ON_THREADS_MIN_PIXELS and VectorUnit.current().lanes >= 16


def _depthwise_rows_on_threads(sch: Schedule, n: LoopRV, c: LoopRV, h0: LoopRV) -> LoopRV | None:
    """Blocks of a depthwise convolution's row tiles ``h0`` on threads, all channels in each:
    loops (n, hb, c, h0', ..), (n, hb) parallel; returns ``c``, under which each channel's input
    rows of the block are copied (its padding; the halo rows again by the next block).  None
    (nothing done) when the row tiles do not cut into DEPTHWISE_ROW_BLOCKS_PER_THREAD per thread."""
    (tiles,) = _extents(sch, [h0])
    want = DEPTHWISE_ROW_BLOCKS_PER_THREAD * parallel_threads()
    blocks = min((d for d in range(want, tiles + 1) if tiles % d == 0), default=None)
    if blocks is None:
        return None
    hb, h0 = sch.split(h0, [blocks, None])
    sch.reorder(n, hb, c, h0)
    sch.parallel(sch.fuse(n, hb))
    return c


def _conv_prologue_and_tail(sch: Schedule, conv: BlockRV | None, prologue: Callable[[Schedule, BlockRV], None]
                            ) -> tuple[BlockRV | None, BlockRV | None]:
    """A convolution's neighbours: the epilogue inlined into its last block, ``prologue`` applied
    to each block before the convolution (its padding), the next layer's padding after it
    (:func:`_reshaping_tail`) copied by rows.  Returns (the conv block, the epilogue or None);
    (None, None) when there is no conv block or its neighbours are not all elementwise."""
    if conv is None:
        return None, None
    tail = _reshaping_tail(sch, conv)
    ok, epilogue = _single_epilogue(sch, conv, allow_prologue=True, tail=tail)
    if not ok:
        return None, None
    conv_name = sch.get(conv).name_hint
    names = [sch.get(b).name_hint for b in _blocks(sch)]
    for name in names[:names.index(conv_name)]:
        prologue(sch, sch.get_block(name))
    for name in tail:
        vectorize_rows(sch, sch.get_block(name))
    return sch.get_block(conv_name), epilogue


def _is_plain_copy(sch: Schedule, b: BlockRV) -> bool:
    """Whether a block only copies its input (``out[i] = in[i]``: a convolution's zero padding)."""
    blk = sch.get(b)
    value = blk.body.value if isinstance(blk.body, BufferStore) else None
    return isinstance(value, BufferLoad) and len(value.indices) == len(blk.body.indices) and \
        all(a.same_as(w) for a, w in zip(value.indices, blk.body.indices))


def _inline_copy(sch: Schedule, b: BlockRV) -> None:
    """Inline a block that only copies its input; leave any other (its caller places it)."""
    if _is_plain_copy(sch, b):
        sch.compute_inline(b)


def _inline_copy_or_rows(sch: Schedule, b: BlockRV) -> None:
    """Inline a block that only copies its input, else copy it by rows (a real padding)."""
    if _is_plain_copy(sch, b):
        sch.compute_inline(b)
    else:
        vectorize_rows(sch, b)

# -- rule 2: elementwise --------------------------------------------------------------------------


def schedule_elementwise(sch: Schedule) -> bool:
    """Only spatial blocks: per block, fuse all loops, split by 16 (or a divisor / the whole
    extent), vectorize the inner loop and parallel the outer one when there is enough work."""
    blocks = _blocks(sch)
    if not blocks or not all(_is_spatial(sch, b) for b in blocks):
        return False
    for b in blocks[:-1]:  # inline intermediate results into their consumers where legal
        try:
            sch.compute_inline(b)
        except ScheduleError:
            pass  # e.g. it writes a function output: keep it (a failed primitive changes nothing)
    for b in _blocks(sch):
        if _reads_transposed(sch, b):
            _tile_transpose(sch, b)
        elif _reads_shifted_rows(sch, b):
            vectorize_rows(sch, b)
        else:
            _vectorize_flat(sch, b)
    return True


def _reads_shifted_rows(sch: Schedule, b: BlockRV) -> bool:
    """True when a block whose rows are static and at most ``ROW_VECTOR_MAX`` long pads (an
    ``if_then_else`` in its value), or, with rows of at least a vector, reads some buffer at
    other indices than it writes (a slice, a broadcast).  Flattened into one vectorized loop,
    every lane would compute its own row and column with a division and gather (a standalone
    pad of MobileNetV2, 1 x 32 x 114 x 114: 971 us flat, 40 us by rows; 1 x 960 x 9 x 9: 198 -> 21 us).
    By rows the last index moves by one per lane and the padding test is per row."""
    blk = sch.get(b)
    loops = sch.get_loops(b)
    ext = _extents_or_none(sch, loops)
    if len(loops) < 2 or None in ext or ext[-1] > ROW_VECTOR_MAX or not isinstance(blk.body, BufferStore):
        return False
    written = list(blk.body.indices)
    loads: list[BufferLoad] = []
    pads: list[Call] = []
    post_order_visit(blk.body.value, lambda x: loads.append(x) if isinstance(x, BufferLoad) else
                     pads.append(x) if isinstance(x, Call) and x.op == "tir.if_then_else" else None)
    if pads or _subsamples_rows(blk.iter_vars[-1].var, loads):
        return True
    return ext[-1] >= VECTOR_LANES and any(
        len(ld.indices) != len(written) or any(not a.same_as(w) for a, w in zip(ld.indices, written)) for ld in loads)


def _subsamples_rows(inner: Var, loads: list[BufferLoad]) -> bool:
    """Whether some load's last index steps by a small constant stride above 1 along ``inner``
    (``x[.., 2 * i]``: a strided slice), which a row's vector reads as a load and a shuffle --
    flattened with a row shorter than a vector, each lane computed its own row and column with
    a division and loaded alone (1 x 128 x 28 x 28 sliced to 14 x 14: 58 us flat, 4 by rows)."""
    analyzer = Analyzer()
    for ld in loads:
        if not ld.indices or not uses_var(ld.indices[-1], inner):
            continue
        last = ld.indices[-1]
        step = analyzer.simplify(substitute(last, {inner: inner + 1}) - last)
        if isinstance(step, IntImm) and 1 < step.value <= MAX_SHUFFLED_STRIDE:
            return True
    return False


def _reads_transposed(sch: Schedule, b: BlockRV) -> bool:
    """True when the block reads some buffer across its rows (``out[i, j] = in[j, i]``): the
    innermost iterator indexes a non-last dimension of a load."""
    blk = sch.get(b)
    if len(blk.iter_vars) < 2:
        return False
    inner = blk.iter_vars[-1].var
    loads: list[BufferLoad] = []
    post_order_visit(blk.body, lambda x: loads.append(x) if isinstance(x, BufferLoad) else None)
    # a fused reshape's flat-index arithmetic (``(h * 12608 + d * 197 + t) % 37824 // ...``)
    # simplified over the iterators' ranges shows which dimension each one indexes
    analyzer = Analyzer()
    for iv in blk.iter_vars:
        analyzer.bind(iv.var, iv.dom)
    for ld in loads:
        if len(ld.indices) < 2 or not any(uses_var(i, inner) for i in ld.indices):
            continue
        *rows, last = (analyzer.simplify(i) for i in ld.indices)
        if not uses_var(last, inner) and any(uses_var(i, inner) for i in rows):
            return True
    return False


def _tile_transpose(sch: Schedule, b: BlockRV) -> None:
    """A transposing copy in square tiles (16 x 16): both the rows it reads and the rows it
    writes stay in cache while a tile is done, instead of a cache miss per element read."""
    loops = sch.get_loops(b)
    ext = _extents_or_none(sch, loops)
    if None in ext:
        _vectorize_flat(sch, b)
        return
    *outer, i, j = loops
    ti = _largest_divisor(ext[-2], (VECTOR_LANES, 8, 4, 2))
    # a row of a length with no such divisor (197 tokens) in vectors too, the last one guarded
    tj = _largest_divisor(ext[-1], (VECTOR_LANES, 8, 4, 2)) if ext[-1] < 2 * VECTOR_LANES else VECTOR_LANES
    if ti == 1 or tj == 1:
        _vectorize_flat(sch, b)
        return
    i0, i1 = sch.split(i, [None, ti])
    j0, j1 = sch.split(j, [None, tj])
    sch.reorder(i0, j0, i1, j1)
    sch.vectorize(j1)
    if math.prod(ext) > TRANSPOSE_PARALLEL_WORK:
        sch.parallel(sch.fuse(*outer, i0) if outer else i0)


def _vectorize_innermost(sch: Schedule, loop: LoopRV, extent: int) -> None:
    """Vectorize ``loop`` whole when it is short, else split off a vector of 16 (8, 4, 2) lanes."""
    f = _inner_factor(extent)
    if f == extent:
        sch.vectorize(loop)
    elif f > 1:
        sch.vectorize(sch.split(loop, [None, f])[1])


def vectorize_rows(sch: Schedule, b: BlockRV, parallel: bool = False) -> None:
    """A copy such as a convolution's padding: the innermost loop (a row) vectorized whole when
    it is short (else by 16 lanes), the outer loops fused (parallel when large, or when
    ``parallel``: the padding of a convolution that runs on threads would otherwise be its
    serial part).  Fusing the row into the rest (``_vectorize_flat``) would make every lane
    compute its own row and column with a division, and the padding test per lane then defeats
    the vector code."""
    loops = sch.get_loops(b)
    ext = _extents_or_none(sch, loops)
    if len(loops) < 2 or None in ext or ext[-1] > ROW_VECTOR_MAX:
        _vectorize_flat(sch, b)
        return
    sch.vectorize(loops[-1])
    outer = sch.fuse(*loops[:-1]) if len(loops) > 2 else loops[0]
    if math.prod(ext) > ELEMENTWISE_PARALLEL_WORK or (parallel and math.prod(ext[:-1]) >= 2):
        sch.parallel(outer)


def _vectorize_flat(sch: Schedule, b: BlockRV) -> None:
    """One spatial block: fuse all its loops, split off a vector, parallel the rest if large."""
    loops = sch.get_loops(b)
    if not loops:
        return
    ext = _extents_or_none(sch, loops)
    if None in ext:  # a dynamic batch: vectorize the innermost loop when its extent is known
        if ext[-1] is not None:
            _vectorize_innermost(sch, loops[-1], ext[-1])
        return
    total = math.prod(ext)
    fused = sch.fuse(*loops) if len(loops) > 1 else loops[0]
    f = _inner_factor(total)
    if f == total:
        sch.vectorize(fused)
        return
    outer, inner = sch.split(fused, [None, f])
    if f > 1:
        sch.vectorize(inner)
    if total > ELEMENTWISE_PARALLEL_WORK:
        sch.parallel(outer)


# -- rule 3: row reductions -----------------------------------------------------------------------


#: a row reduction adds (or takes the max of) this many partial results side by side, in vector
#: lanes, on every target -- AVX2's two ymm registers, AVX-512's one zmm: the same order
#: everywhere, so the same result on every target (a serial sum waits ~4 cycles per element)
ROW_PARTIALS = 16


def schedule_row_reduction(sch: Schedule) -> bool:
    """Softmax / layer norm / RMSNorm-like functions, a row at a time: every block runs under the
    output's row loop (one row's intermediates stay in cache), each reduction in
    :data:`ROW_PARTIALS` partial results side by side in vector lanes (``rfactor``; layer norm's
    sum and sum of squares, one tuple reduction, get a vector each) combined as a tree
    (:func:`_lanes_as_tree`), the elementwise steps vectorized; the rows run on threads when
    large.  Spatial blocks with one consumer are inlined into it (an exp read by both a sum and a
    division stays, not computed twice).
    Left to :func:`schedule_reduction` (serial reductions) when a block does not fit: a
    reduction that is not one value per output row along the row (a mean over channels would be
    recomputed for every row), a tuple reduction whose parts depend on each other (argmax), a
    reduction whose T.init is not its identity, symbolic shapes.
    Measured, one thread, ViT-tiny's safe softmax over 3 x 197 x 197 (Zen 4, AVX2): 239 -> 145 us
    (exp alone 73 us); torch's softmax 174 us.  Layer norm, the kernel alone in one process
    (Xeon, AVX-512, 2 threads, busy machine, min of 300): GPT-2's 8 x 128 x 256 41.4 -> 19.4 us,
    ViT's 197 x 192 29.4 -> 6.9 us (it took 8 rows side by side, a scalar add per element)."""
    blocks = _blocks(sch)
    if len(blocks) < 2 or all(_is_spatial(sch, b) for b in blocks) or not _is_spatial(sch, blocks[-1]):
        return False
    for b in blocks[:-1]:
        if _is_spatial(sch, b) and len(sch.get_consumers(b)) == 1:
            sch.compute_inline(b)
    out = _blocks(sch)[-1]
    loops = sch.get_loops(out)
    ext = _extents(sch, loops)
    if len(loops) < 2:
        return False
    # partial results first: rfactor wants the reduction alone under its loops
    rows, row_length = math.prod(ext[:-1]), ext[-1]
    partials: list[BlockRV] = []
    for b in [b for b in _blocks(sch) if not _is_spatial(sch, b)]:
        rf = _partial_results(sch, b, rows, row_length)
        partials += [] if rf is None else [rf, *_lanes_as_tree(sch, b)]
    row = sch.fuse(*loops[:-1]) if len(loops) > 2 else loops[0]
    for b in _blocks(sch)[-2::-1]:
        sch.compute_at(b, row)
    for b in _blocks(sch):
        inner = sch.get_loops(b)[1:]
        if _is_spatial(sch, b) and len(inner) == 1:
            _vectorize_guarded(sch, inner[0])
    if rows > 1 and math.prod(ext) > ROW_REDUCTION_PARALLEL_WORK:
        sch.parallel(row)
    for rf in partials:
        lane, k_outer = sch.get_loops(rf)[-2:]  # (compute_at made its loops: lane, then k_0)
        sch.vectorize(lane)
        sch.decompose_reduction(rf, k_outer)
    return True


def _vectorize_guarded(sch: Schedule, loop: LoopRV) -> None:
    """Vectorize ``loop`` by :data:`VECTOR_LANES`, the last vector guarded when they do not divide
    its extent (lowering runs that vector's live lanes only)."""
    extent = _extents(sch, [loop])[0]
    if extent <= VECTOR_LANES:
        sch.vectorize(loop)
    else:
        sch.vectorize(sch.split(loop, [None, VECTOR_LANES])[1])


def _reduces_last_loop_alone(sch: Schedule, b: BlockRV) -> bool:
    """Block ``b`` has one loop per iterator, and its only reduction iterator is the last."""
    kinds = [iv.iter_type for iv in sch.get(b).iter_vars]
    return len(sch.get_loops(b)) == len(kinds) and kinds[-1] == "reduce" and "reduce" not in kinds[:-1]


def _partial_results(sch: Schedule, b: BlockRV, rows: int, row_length: int) -> BlockRV | None:
    """The reduction ``b``, one value per row of ``rows`` along the row's ``row_length``, in
    :data:`ROW_PARTIALS` partial results in a local vector (the returned block ``<name>_rf``),
    then one short serial reduction of them; None for a row too short to split."""
    loops = sch.get_loops(b)
    blk = sch.get(b)
    ext = _extents(sch, loops)
    if not _reduces_last_loop_alone(sch, b) or math.prod(ext[:-1]) != rows or ext[-1] != row_length:
        raise ScheduleError("not a reduction along the output's rows, one value per row")
    if ext[-1] < 2 * ROW_PARTIALS:
        return None
    _, k_lane = sch.split(loops[-1], [None, ROW_PARTIALS])
    rf = sch.rfactor(k_lane, len(blk.writes[0].region))
    _local_partials(sch, rf)
    return rf


def _local_partials(sch: Schedule, rf: BlockRV) -> None:
    """Keep every buffer of partial results ``rf`` writes (two for layer norm's sum and sum of
    squares) in ``"local"`` scope: registers once compacted to a row."""
    for index in range(len(sch.get(rf).writes)):
        sch.set_scope(rf, index, "local")


def _lanes_as_tree(sch: Schedule, b: BlockRV) -> list[BlockRV]:
    """Reduce the :data:`ROW_PARTIALS` lanes of a row's partial results as a tree: half the lanes
    onto the other half (``rfactor``: a vector operation) until two are left, which ``b`` itself
    combines.  Added one after another, a row's 16 partial maxima were a chain of 15 dependent
    NaN-aware maxima (about 7 instructions each), its sums 15 dependent adds: that latency, not
    arithmetic, set a softmax row's time.  The order is still fixed, the same on every target.
    Returns the new blocks (in order), each reducing over its last loop, its lanes the one before."""
    tree = []
    width = _extents(sch, sch.get_loops(b)[-1:])[0]
    while width > 2 and width % 2 == 0:
        _, lane = sch.split(sch.get_loops(b)[-1], [2, width // 2])
        tree.append(sch.rfactor(lane, len(sch.get(b).writes[0].region)))
        _local_partials(sch, tree[-1])
        width //= 2
    return tree


def schedule_reduction(sch: Schedule) -> bool:
    """Softmax / layer_norm-like functions (some block reduces): each block's outermost loop
    runs over rows.  Parallel that loop when it feeds only spatial iterators (rows are
    independent) and the block touches enough elements; vectorize the inner loop of the
    elementwise blocks (exp, divide ...).  The reductions themselves stay serial: a sum in a
    fixed order gives the same result on every run and every target."""
    blocks = _blocks(sch)
    if all(_is_spatial(sch, b) for b in blocks):
        return False
    _inline_read_once(sch)
    blocks = _blocks(sch)
    done = {name for b in blocks for name in _vectorize_accumulation(sch, b)}
    for b in _blocks(sch):
        if sch.get(b).name_hint in done:
            continue
        loops = sch.get_loops(b)
        if not loops:
            continue
        ext = _extents_or_none(sch, loops)
        if _is_spatial(sch, b) and len(loops) > 1 and ext[-1] is not None:
            _vectorize_innermost(sch, loops[-1], ext[-1])
        elif not _is_spatial(sch, b) and None not in ext and _rows_side_by_side(sch, b):
            continue
        # (a dynamic batch: how much work there is is unknown, so no threads)
        if None not in ext and len(loops) > 1 and math.prod(ext) > ROW_REDUCTION_PARALLEL_WORK:
            _parallel_rows(sch, b, loops[:-1])
    return True


def _inline_read_once(sch: Schedule) -> None:
    """Inline each spatial block whose one consumer reads every element of it once (a comparison,
    a cast before a max): computed where it is read instead of stored in a buffer of its own
    and read back.  (torch's safe softmax checks a row for a finite score as ``max(astype(not(x ==
    -inf), int8))``: three such buffers the size of the scores.)"""
    for b in _blocks(sch)[:-1]:
        consumers = sch.get_consumers(b)
        if _is_spatial(sch, b) and len(consumers) == 1 and _reads_each_element_once(sch, b, consumers[0]):
            sch.compute_inline(b)


def _reads_each_element_once(sch: Schedule, producer: BlockRV, consumer: BlockRV) -> bool:
    """Whether every load of ``producer``'s output in ``consumer`` is indexed by all of the
    consumer's iterators that take more than one value (no element read twice)."""
    written = sch.get(producer).writes[0].buffer
    blk = sch.get(consumer)
    loads: list[BufferLoad] = []
    post_order_visit(blk.body, lambda x: loads.append(x) if isinstance(x, BufferLoad) and x.buffer is written else None)
    moving = [iv.var for iv in blk.iter_vars if _int(iv.dom.extent) != 1]
    return bool(loads) and all(all(any(uses_var(i, v) for i in ld.indices) for v in moving) for ld in loads)


#: rows a serial row reduction takes side by side (independent chains, each in its own order)
ROWS_SIDE_BY_SIDE = 8


def _rows_side_by_side(sch: Schedule, b: BlockRV) -> bool:
    """A reduction over the last axis of its rows (a sum of squares alone, which
    :func:`schedule_row_reduction` leaves: nothing reads it a row at a time) takes
    :data:`ROWS_SIDE_BY_SIDE` rows at a time, the row loop unrolled inside the reduction loop:
    each row still sums in its own serial order
    (the same numbers), but the chains no longer wait on one another (an add's latency is 3-4
    cycles).  The row groups run on threads when large.  Returns whether it applied."""
    loops = sch.get_loops(b)
    if (len(loops) < 2 or not _reduces_last_loop_alone(sch, b)
            or not all(_loop_is_spatial(sch, b, sch.get(lp).loop_var) for lp in loops[:-1])):
        return False
    ext = _extents(sch, loops)
    # the innermost row loop of more than one row (a kept reduced axis is a loop of one)
    last = next((i for i in range(len(loops) - 2, -1, -1) if ext[i] > 1), None)
    if last is None:
        return False
    rows, k = loops[:last + 1], loops[-1]
    group, side = sch.split(rows[-1], [None, min(ROWS_SIDE_BY_SIDE, ext[last])])
    sch.reorder(group, k, side)
    sch.unroll(side)
    if math.prod(ext) > ROW_REDUCTION_PARALLEL_WORK:
        _parallel_rows(sch, b, [*rows[:-1], group])
    sch.decompose_reduction(b, k)
    return True


def _parallel_rows(sch: Schedule, b: BlockRV, outer: list[LoopRV]) -> None:
    """Run the rows of a row-reduction block on threads: its outer loops that feed spatial
    iterators only (a reduction over a loop is not parallel), fused -- attention's rows are
    under (batch, heads), and a batch of one is a loop of one."""
    rows = []
    for loop in outer:
        if not _loop_is_spatial(sch, b, sch.get(loop).loop_var):
            break
        rows.append(loop)
    if rows and math.prod(_extents(sch, rows)) > 1:
        sch.parallel(sch.fuse(*rows) if len(rows) > 1 else rows[0])


def _pooling_block(sch: Schedule) -> tuple[BlockRV, int] | None:
    """The one reduction block of a pooling-like function and its number of spatial loops: its
    spatial loops, then its reduce loops (the window), one loop per iterator, static extents, a
    ``T.init``, not a multiply-accumulate.  Every other block is spatial."""
    reductions = [b for b in _blocks(sch) if not _is_spatial(sch, b)]
    if len(reductions) != 1:
        return None
    (b,) = reductions
    blk = sch.get(b)
    kinds = [iv.iter_type for iv in blk.iter_vars]
    n_spatial = kinds.index("reduce")
    loops = sch.get_loops(b)
    if (n_spatial == 0 or "spatial" in kinds[n_spatial:] or len(loops) != len(kinds) or blk.init is None
            or not isinstance(blk.body, BufferStore)
            or _is_multiply_accumulate(blk) or None in _extents_or_none(sch, loops)):
        return None
    realize, _ = sch._block(b)
    if not all(value.same_as(sch.get(loop).loop_var) for value, loop in zip(realize.iter_values, loops)):
        return None
    return b, n_spatial


def _window_reduction(sch: Schedule) -> tuple[BlockRV, int] | None:
    """:func:`_pooling_block`, when every tensor it reads is indexed along its innermost axis by
    the last spatial iterator (the output's columns walk the input's columns)."""
    found = _pooling_block(sch)
    if found is None or not _inputs_walk(sch.get(found[0]), sch.get(found[0]).iter_vars[found[1] - 1].var):
        return None
    return found


def _inputs_walk(blk: Any, var: Any) -> bool:
    """Whether every tensor a reduction block reads is indexed along its innermost axis by ``var``."""
    loads: list = []
    post_order_visit(blk.body, lambda n: loads.append(n) if isinstance(n, BufferLoad) else None)
    inputs = [ld for ld in loads if ld.buffer != blk.body.buffer]
    return bool(inputs) and all(ld.indices and uses_var(ld.indices[-1], var) for ld in inputs)


def schedule_window_reduction(sch: Schedule) -> bool:
    """Max/min/sum over a small window (``max_pool2d``, a reduction over a middle axis): the
    window's loops move outside the output's last axis, which is vectorized, so each step takes
    one window position for a whole row of outputs (a row of input loads, strided by the pooling
    stride) instead of reducing one output at a time; a short row accumulates in registers, a
    few rows side by side (:func:`_window_rows_in_registers`); the outer rows run on threads
    when large.  The other (spatial) blocks, an average's division for one, are vectorized
    along their rows."""
    found = _window_reduction(sch)
    if found is None:
        return _schedule_plane_reduction(sch)
    b, n_spatial = found
    loops = sch.get_loops(b)
    ext = _extents(sch, loops)
    spatial, window = loops[:n_spatial], loops[n_spatial:]
    sch.reorder(*spatial[:-1], *window, spatial[-1])
    rows, done = list(spatial[:-1]), []
    if rows and ext[n_spatial - 1] <= WINDOW_ROW_IN_REGISTERS:
        rows, written = _window_rows_in_registers(sch, b, rows, ext[:n_spatial - 1], window, spatial[-1])
        done.append(written)
    if rows and math.prod(ext) > WINDOW_PARALLEL_WORK:
        # before decompose_reduction: a loop over both an init and its update is not parallel
        rows = [sch.fuse(*rows) if len(rows) > 1 else rows[0]]
        sch.parallel(rows[0])
    if rows:
        done.extend(_pad_per_rows(sch, b, rows[-1]))
    _vectorize_innermost(sch, spatial[-1], ext[n_spatial - 1])
    init = sch.decompose_reduction(b, window[0])
    init_inner = sch.get_loops(init)[-1]
    _vectorize_innermost(sch, init_inner, _int(sch.get(init_inner).extent))
    _vectorize_other_blocks(sch, sch.get(init).name_hint, *done)
    return True


def _pad_per_rows(sch: Schedule, b: BlockRV, rows: LoopRV) -> list[str]:
    """The spatial block a window reduction reads (the ``pad_temp`` copy of its input with the
    border filled: ``-inf`` for a max) computed under the loop over its rows -- the few padded
    rows one group of output rows reads, cache-hot, instead of a whole padded copy of the input
    written before the loop and read back after; returns its name.  Measured on Zen 4 (AVX2),
    2 threads, ResNet-18's 8 x 64 x 112 x 112 3x3 stride-2 max pool alone, in one process (load
    6): 11.1 -> 3.7 ms (ONNX Runtime's on NCHW 14.4 ms); at batch 1 0.30 -> 0.28 ms."""
    producers = sch.get_producers(b)
    if len(producers) != 1 or not _is_spatial(sch, producers[0]) or len(sch.get_consumers(producers[0])) != 1:
        return []
    (pad,) = producers
    sch.compute_at(pad, rows)
    sch.vectorize(sch.get_loops(pad)[-1])
    return [sch.get(pad).name_hint]


#: a window reduction's output row up to this long accumulates in registers (a few vectors)
WINDOW_ROW_IN_REGISTERS = 64
#: ... and this many rows side by side (independent chains of max: a NaN-propagating max is
#: several dependent instructions, so one row's chain left the core waiting)
WINDOW_ROWS = (4, 2)


def _window_rows_in_registers(sch: Schedule, b: BlockRV, rows: list[LoopRV], extents: list[int],
                              window: list[LoopRV], column: LoopRV) -> tuple[list[LoopRV], str]:
    """Accumulate a few output rows of a window reduction side by side in a local buffer
    (registers), written to the output once after the window; returns the loops over groups
    of rows (fused) and the write-back's name.  Updating the output row in memory at every
    window position made each step wait on the last one's store (a row of 13 lanes is stored in
    pieces a whole-row load cannot forward from), and one row's chain of NaN-propagating max
    (several dependent instructions each) left the core idle.  The rows side by side are the
    inner part of the innermost row loop that splits (a fused loop's split defeats the region
    check of ``reverse_compute_at``).
    Measured, single thread, the zoo's 8 x 32 x 26 x 26 max_pool2d: 35 us -> 24 (one row in
    registers, with the codegen's stride-2 loads as a load and a shuffle; either alone: 35)
    -> 21.5 (4 rows side by side)."""
    split = [i for i, e in enumerate(extents) if _largest_divisor(e, WINDOW_ROWS) > 1]
    if split:
        i = split[-1]
        outer, r = sch.split(rows[i], [None, _largest_divisor(extents[i], WINDOW_ROWS)])
        rows = rows[:i] + [outer] + rows[i + 1:]
        sch.reorder(*rows, *window, r, column)
        sch.unroll(r)
    rows = [sch.fuse(*rows)] if len(rows) > 1 else rows  # (fused before the write-back joins it)
    local = sch.cache_write(b, 0, "local")
    sch.reverse_compute_at(local, rows[-1])
    inner = sch.get_loops(local)[-1]
    _vectorize_innermost(sch, inner, _int(sch.get(inner).extent))
    return rows, sch.get(local).name_hint


#: a global pooling reduces this many outputs' planes side by side (independent sums)
PLANE_REDUCTION_ROWS = (8, 4, 2)


def _schedule_plane_reduction(sch: Schedule) -> bool:
    """A global sum pooling (``mean`` over H x W of NCHW: the output's last axes have extent 1,
    so no output row walks the input's rows): the plane's loops move inside a tile of 8
    channels, which is unrolled -- 8 independent sums, each over its own contiguous plane,
    instead of one chain of dependent adds.  Each output still sums its values in the same
    order (bitwise equal to the unscheduled kernel).  Measured, same process: 8 x 32 x 16 x 16
    (the zoo's resnet_small) 43 -> 15 us, 8 x 1280 x 7 x 7 (MobileNetV2) 196 -> 89 us."""
    found = _pooling_block(sch)
    if found is None or not isinstance(sch.get(found[0]).body.value, Add):
        return False  # (a max LLVM vectorizes along the plane itself: max is exact in any order)
    b, n_spatial = found
    blk, loops = sch.get(b), sch.get_loops(b)
    ext = _extents(sch, loops)
    rows = [i for i in range(n_spatial) if ext[i] > 1]
    if not rows or n_spatial < 2 or not _inputs_walk(blk, blk.iter_vars[-1].var):
        return False
    c = rows[-1]
    tile = _largest_divisor(ext[c], PLANE_REDUCTION_ROWS)
    if tile == 1:
        return False
    c0, c1 = sch.split(loops[c], [None, tile])
    outer = [*loops[:c], c0]
    sch.reorder(*outer, *loops[c + 1:n_spatial], *loops[n_spatial:], c1)
    if math.prod(ext) > PLANE_REDUCTION_PARALLEL_WORK:
        sch.parallel(sch.fuse(*outer) if len(outer) > 1 else outer[0])
    sch.unroll(c1)
    init = sch.decompose_reduction(b, loops[n_spatial])
    sch.unroll(sch.get_loops(init)[-1])
    _vectorize_other_blocks(sch, sch.get(init).name_hint)
    return True


def _vectorize_other_blocks(sch: Schedule, *done: str) -> None:
    """The spatial blocks of a pooling beside its reduction (an average's division) by rows;
    ``done``: the names of those already scheduled (the init, a register tile's write-back)."""
    for other in _blocks(sch):
        if _is_spatial(sch, other) and sch.get(other).name_hint not in done:
            vectorize_rows(sch, other)


def _vectorize_accumulation(sch: Schedule, b: BlockRV) -> tuple[str, ...]:
    """A matmul among the blocks of a row-reduction function (the two matmuls of an attention
    kernel that FuseAttention made one PrimFunc): ``C[.., i, j] += A[.., i, k] * B[.., k, j]``
    with ``j`` the output's last axis.  Left alone, its ``k`` loop is innermost: one scalar
    multiply-add per step, reading ``B`` down a column (measured 0.8 GFLOP/s in BERT-mini's
    attention).  Move ``k`` outside ``j`` and vectorize ``j`` (and its zeroing): each step is then
    a row of ``B`` times one ``A`` value added to a row of ``C`` that stays in cache.  The outer
    loop runs on threads when there is enough work (before ``decompose_reduction``: a loop over
    an init and its update is not parallel).  Returns the names of the blocks it scheduled."""
    blk = sch.get(b)
    loops = sch.get_loops(b)
    if len(blk.iter_vars) < 3 or not _reduces_last_loop_alone(sch, b) or not _is_multiply_accumulate(blk):
        return ()
    realize, _ = sch._block(b)
    j_var, k_var = blk.iter_vars[-2].var, blk.iter_vars[-1].var
    j_loop, k_loop = sch.get(loops[-2]).loop_var, sch.get(loops[-1]).loop_var
    if not (realize.iter_values[-2].same_as(j_loop) and realize.iter_values[-1].same_as(k_loop)
            and blk.body.indices[-1].same_as(j_var) and not any(uses_var(i, k_var) for i in blk.body.indices)):
        return ()  # not (.., j, k) loops over C[.., j]: another rule's shape
    mul = blk.body.value.b
    if not any(isinstance(x, BufferLoad) and x.indices and x.indices[-1].same_as(j_var) for x in (mul.a, mul.b)):
        return ()  # no operand runs along j (a sum of squares over rows): j as the vector would gather
    ext = _extents_or_none(sch, loops)
    if None in ext:
        return ()
    sch.reorder(loops[-1], loops[-2])
    _vectorize_innermost(sch, loops[-2], ext[-2])
    if ext[0] > 1 and math.prod(ext) > MATMUL_PARALLEL_WORK:
        sch.parallel(loops[0])
    name = blk.name_hint
    init_inner = sch.get_loops(sch.decompose_reduction(b, loops[-1]))[-1]
    _vectorize_innermost(sch, init_inner, _int(sch.get(init_inner).extent))
    return f"{name}_init", f"{name}_update", name


def _loop_is_spatial(sch: Schedule, block: BlockRV, loop_var) -> bool:
    """Whether ``loop_var`` appears only in bindings of the block's spatial iterators."""
    realize, _ = sch._block(block)
    return all(not uses_var(value, loop_var)
               for iv, value in zip(realize.block.iter_vars, realize.iter_values)
               if iv.iter_type != "spatial")


# -- the pass -------------------------------------------------------------------------------------

RULES: list[Callable[[Schedule], bool]] = [schedule_int4_gemv, schedule_gemv, schedule_matmul_nt,
                                           schedule_dense_few_rows, schedule_dense_transposed_weight,
                                           schedule_matmul_like,
                                           schedule_matmul_rows_untiled, schedule_depthwise_conv2d,
                                           schedule_conv2d_1x1, schedule_conv2d_like,
                                           schedule_elementwise, schedule_window_reduction, schedule_row_reduction,
                                           schedule_reduction]


def apply_default_schedule(func: PrimFunc, rules: list | None = None) -> PrimFunc:
    """Try each rule on a fresh schedule of ``func``; the first that succeeds wins.  A kernel
    structurally equal to one scheduled before in this process (the same layer of another
    model, the same model compiled again) gets that schedule's result (:data:`SCHEDULE_CACHE`)."""
    return _default_schedule(func, rules)[0]


def _default_schedule(func: PrimFunc, rules: list | None) -> tuple[PrimFunc, bool]:
    """:func:`apply_default_schedule`, and whether the rules ran (not scheduled before, not a
    schedule remembered)."""
    if func.attrs.get(SCHEDULED_ATTR):
        return func, False
    rules = tuple(rules or RULES)
    key, hit = SCHEDULE_CACHE.get(func, rules)
    if hit is not None:
        return hit, False
    out = _first_rule(func, rules)
    SCHEDULE_CACHE.put(key, func, out)
    return out, True


def _first_rule(func: PrimFunc, rules: tuple) -> PrimFunc:
    for rule in rules:
        sch = Schedule(IRModule({"main": func}))
        try:
            ok = rule(sch)
        except ScheduleError:
            continue
        if ok:
            return sch.mod["main"].with_attr(SCHEDULED_ATTR, True)
    return func


class _ScheduleCache:
    """Default schedules of this process by the structural hash of the unscheduled PrimFunc,
    with what the rules read besides it (the rules, the vector unit in scope, the thread
    count); a hit is confirmed with ``structural_equal``.  Rules are deterministic, so a
    structurally equal kernel would be scheduled to a structurally equal result."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.entries: OrderedDict[tuple, list[tuple[PrimFunc, PrimFunc]]] = OrderedDict()
        self.hits = self.misses = 0
        self.lock = threading.Lock()

    def get(self, func: PrimFunc, rules: tuple) -> tuple[tuple, PrimFunc | None]:
        key = (structural_hash(func), rules, VectorUnit.current(), parallel_threads(), _settings(rules))
        with self.lock:
            for seen, scheduled in self.entries.get(key, ()):
                if structural_equal(seen, func):
                    self.entries.move_to_end(key)
                    self.hits += 1
                    return key, scheduled
            self.misses += 1
        return key, None

    def put(self, key: tuple, func: PrimFunc, scheduled: PrimFunc) -> None:
        with self.lock:
            self.entries.setdefault(key, []).append((func, scheduled))
            self.entries.move_to_end(key)
            while len(self.entries) > self.size:
                self.entries.popitem(last=False)

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()
            self.hits = self.misses = 0

    def info(self) -> dict[str, int]:
        """``{"hits", "misses", "size", "max_size"}``."""
        return {"hits": self.hits, "misses": self.misses, "size": len(self.entries), "max_size": self.size}


_FUNCTIONS = (types.FunctionType, types.BuiltinFunctionType)


def _settings(rules: tuple) -> tuple:
    """What else the rules read: the thresholds (upper-case numbers) and the functions of
    their modules, by identity.  A changed one (a test forcing ``parallel`` or replacing a
    helper, a learner's experiment) schedules again."""
    modules = {getattr(r, "__module__", None) for r in rules} | {__name__}
    found = []
    for name in sorted(m for m in modules if m in sys.modules):
        for key, value in vars(sys.modules[name]).items():
            if (key.isupper() and isinstance(value, (int, float, str, tuple))) or isinstance(value, _FUNCTIONS):
                found.append((name, key, value))
    return tuple(found)


#: how many distinct kernels' default schedules the process remembers
SCHEDULE_CACHE_SIZE = 512
#: the default schedules of this process (``SCHEDULE_CACHE.info()``, ``.clear()``)
SCHEDULE_CACHE = _ScheduleCache(SCHEDULE_CACHE_SIZE)


#: who hears of each kernel :class:`DefaultCPUSchedule` schedules afresh (see :func:`scheduled_kernels_to`)
_LISTENER: ContextVar[Callable[[GlobalVar, PrimFunc, IRModule], None] | None] = ContextVar(
    "default_schedule_listener", default=None)


@contextmanager
def scheduled_kernels_to(listener: Callable[[GlobalVar, PrimFunc, IRModule], None]) -> Iterator[None]:
    """Within (on this thread): :class:`DefaultCPUSchedule` calls ``listener(gv, scheduled, mod)``
    (``mod``: the module it schedules) as soon as its rules have scheduled a kernel --
    ``relax.build`` starts compiling the kernel then, while the others are scheduled.  Kernels
    scheduled before (the attribute, or a schedule remembered: the same model compiled again,
    whose kernels come from the compiled-kernel cache) are not told."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)


@module_pass(opt_level=0, name="DefaultCPUSchedule")
class DefaultCPUSchedule:
    """``DefaultCPUSchedule(rules=None)``: give every unscheduled PrimFunc a default CPU
    schedule (see the module docstring); ``rules`` replaces :data:`RULES`."""

    def __init__(self, rules: list | None = None):
        self.rules = rules

    def transform_module(self, mod: IRModule, ctx) -> IRModule:
        listener = _LISTENER.get()
        out = mod
        for gv, func in mod.items():
            if isinstance(func, PrimFunc):
                new, fresh = _default_schedule(func, self.rules)
                if new is not func:
                    out = out.with_function(gv, new)
                if fresh and listener is not None:
                    listener(gv, new, mod)
        return out
