"""The default CPU schedule of the packed-int4 dequantize-GEMV (a decode step's int4 linear layers).

``relax.transform.QuantizeLinearWeights("int4")`` stores a weight eight to a 32-bit word, tiled
by ``T`` (64) rows: word ``P[t, w, r]`` holds weights ``8w .. 8w + 7`` of row ``tT + r``, so a
tile -- the rows one step computes -- is one stretch of memory, read front to back.  For a few
rows of x its kernel ``fused_dequantize_int4_NT_matmul`` computes, per group g of weights::

    int4_x_shifted[r, k]    = x[r, k] / 16**(k % 8)       (16**0 for k % 8 = 7)
    int4_xsum[r, g]         = sum of x[r, k] over the group
    int4_group_dot[r, j, g] = sum over the group's words w and nibbles i of
                              (P[j // T, w, j % T] & (15 << 4i)) * int4_x_shifted[r, 8w + i]
                              (the top nibble shifted down instead of masked)
    NT_matmul[r, j]         = sum_g S[j // T, g, j % T] * (int4_group_dot[r, j, g] - 8 * int4_xsum[r, g])

maybe followed by elementwise epilogues (a residual add).  A nibble masked where it lies is
``q * 16**i``; x divided by that power of two makes each product exactly ``q * x``, with one
operation per weight fewer than shifting every nibble down.  :func:`schedule_int4_gemv` makes
the kernel one pass over the weights in which a vector's lanes are output rows:

1. Split the output column j into (j0, vector, lane), 16 lanes, a step of j0 one tile (four
   vectors), and order (j0, g, rows, vector, lane).
2. Compute ``int4_group_dot`` under g in a ``"local"`` buffer, its loops (word, nibble, rows,
   vector, lane): ``lane`` vectorized -- one load brings a word of each of 16 rows, and a nibble
   of all of them is a mask, a conversion and one multiply-add with x[k] broadcast -- the rest
   unrolled, so the partial sums (vectors x rows) stay in registers.
3. ``NT_matmul`` adds each group in once, its scales a vector load, vectorized over the lanes.
4. The epilogue runs after each step; j0 runs on threads past :data:`INT4_GEMV_PARALLEL_WORK`.
"""

from __future__ import annotations

import math

from ..expr import BufferLoad, IntImm
from ..functor import post_order_visit
from ..schedule import BlockRV, Schedule
from ..stmt_functor import block_realizes

__all__ = ["schedule_int4_gemv", "INT4_DOT_BLOCK", "INT4_XSUM_BLOCK", "INT4_X_BLOCK", "INT4_GEMV_PARALLEL_WORK"]

#: the kernel's block names (``relax.transform.quantize_weights`` names its TE stages so)
INT4_DOT_BLOCK = "int4_group_dot"
INT4_XSUM_BLOCK = "int4_xsum"
INT4_X_BLOCK = "int4_x_shifted"
#: run the steps on threads from this many multiply-adds on (as the float GEMV rule: below it
#: the thread pool's wake-up costs more than the second core brings)
INT4_GEMV_PARALLEL_WORK = 256 * 1024
#: at most this many vectors of partial sums (tiles x rows) in flight
INT4_ACCUMULATORS = 8
#: lanes of a vector (AVX-512's float32 lanes; LLVM splits them in two on AVX2)
INT4_LANES = 16
#: unroll the words of a group up to this many (a group of 32 weights has 4)
INT4_UNROLL_WORDS = 4


def _static(extents: list) -> list[int] | None:
    values = [int(e.value) if isinstance(e, IntImm) else None for e in extents]
    return None if None in values else values


def _tile_rows(sch: Schedule, dot: BlockRV) -> int | None:
    """T: the last extent of the packed (uint32) weight the dot block reads."""
    found: list[BufferLoad] = []
    post_order_visit(sch.get(dot).body, lambda e: found.append(e) if isinstance(e, BufferLoad)
                     and e.buffer.dtype == "uint32" else None)
    return _static([found[0].buffer.shape[-1]])[0] if found else None  # type: ignore[index]


def _block_names(sch: Schedule) -> list[str]:
    func = sch.mod[sch.func_working_on]
    return [r.block.name_hint for r, _ in block_realizes(func.body) if r.block.name_hint != "root"]


def _epilogue(sch: Schedule, out: BlockRV) -> tuple[bool, BlockRV | None]:
    """Inline the spatial blocks after ``out`` but the last: ``(True, last or None)``; ``(False,
    None)`` when a block after it is not spatial or the blocks before it are not the kernel's."""
    names = _block_names(sch)
    at = names.index(sch.get(out).name_hint)
    if sorted(names[:at]) != sorted([INT4_DOT_BLOCK, INT4_X_BLOCK, INT4_XSUM_BLOCK]):
        return False, None
    after = [sch.get_block(n) for n in names[at + 1:]]
    if any(iv.iter_type != "spatial" for b in after for iv in sch.get(b).iter_vars):
        return False, None
    for b in after[:-1]:
        sch.compute_inline(b)
    return True, (after[-1] if after else None)


def schedule_int4_gemv(sch: Schedule) -> bool:
    """The packed-int4 dequantize-GEMV (see the module docstring); ``False`` for any other function."""
    if INT4_DOT_BLOCK not in _block_names(sch):
        return False
    dot = sch.get_block(INT4_DOT_BLOCK)
    consumers = sch.get_consumers(dot)
    t = _tile_rows(sch, dot)
    if len(consumers) != 1 or t is None:
        return False
    out = consumers[0]
    kinds = [iv.iter_type for iv in sch.get(out).iter_vars]
    loops = sch.get_loops(out)
    ext = _static([sch.get(lp).extent for lp in loops])
    if ext is None or kinds[-1] != "reduce" or "reduce" in kinds[:-1] or len(loops) != len(kinds) or ext[-2] % t:
        return False
    dot_ext = _static([iv.dom.extent for iv in sch.get(dot).iter_vars])
    ok, epilogue = _epilogue(sch, out)
    if dot_ext is None or not ok:
        return False
    per_group = dot_ext[-2] * dot_ext[-1]  # words x nibbles
    *row_loops, j, g = loops
    rows = math.prod(ext[:-2])
    lanes = min(t, INT4_LANES)
    # a step is one tile of T rows (T / lanes vectors), or a few narrow tiles side by side
    vecs = t // lanes if t >= INT4_LANES else \
        next(v for v in (4, 2, 1) if (ext[-2] // t) % v == 0 and v * rows <= max(INT4_ACCUMULATORS, rows))
    j0, vec, lane = sch.split(j, [None, vecs, lanes])
    if vecs * rows <= INT4_ACCUMULATORS:
        sch.reorder(j0, g, *row_loops, vec, lane)
    else:  # too many partial sums for the registers: a vector of the tile at a time
        sch.reorder(j0, vec, g, *row_loops, lane)
    sch.compute_at(dot, g, preserve_unit_loops=True)
    sch.set_scope(dot, 0, "local")
    # under g the dot block has a loop per iterator: the rows, j, the unit g, the words, the nibbles
    *d_rows, d_j, d_g, d_word, d_nibble = sch.get_loops(dot)[-(len(row_loops) + 4):]
    d_vec, d_lane = sch.split(d_j, [None, lanes])
    sch.reorder(d_word, d_nibble, *d_rows, d_g, d_vec, d_lane)
    # loop kinds before decompose_reduction (a loop over a decomposed update cannot change kind)
    sch.vectorize(d_lane)
    sch.vectorize(lane)
    for lp in (d_vec, *d_rows, d_nibble, vec, *row_loops):
        sch.unroll(lp)
    if dot_ext[-2] <= INT4_UNROLL_WORDS:
        sch.unroll(d_word)
    if epilogue is not None:
        sch.reverse_compute_at(epilogue, j0)
        sch.vectorize(sch.get_loops(epilogue)[-1])
    if math.prod(ext) * per_group > INT4_GEMV_PARALLEL_WORK:  # rows x N x K multiply-adds
        sch.parallel(j0)
    for block, loop in ((dot, d_word), (out, g)):
        init = sch.decompose_reduction(block, loop)
        sch.vectorize(sch.get_loops(init)[-1])
    return True
