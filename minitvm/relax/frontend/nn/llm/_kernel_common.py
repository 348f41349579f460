"""What the paged-KV-cache kernels share: the enums of TVM's ``nn.llm`` and the attention loop."""

from __future__ import annotations

import enum
from typing import Any, Callable

from .....tir import op as tir_op
from .....tir.buffer import Buffer
from .....tir.expr import PrimExpr, Var, const
from ._tir_builder import KernelBuilder

__all__ = ["AttnKind", "RopeMode", "KERNEL_DTYPES", "check_dtype", "online_softmax_attention", "as_f32", "PageTable"]


class AttnKind(enum.IntEnum):
    """Attention kind of a layer (TVM's values): multi-head, multi-head latent, sliding window."""

    MHA = 0
    MLA = 1
    MHA_SLIDING = 3


class RopeMode(enum.IntEnum):
    """Where RoPE is applied: NONE not at all, NORMAL to q and k before k enters the cache,
    INLINE inside the attention kernels (not built here)."""

    NONE = 0
    NORMAL = 1
    INLINE = 2


#: cache dtypes the CPU kernels are built for (they read either and compute in float32)
KERNEL_DTYPES = ("float32", "float16")


def check_dtype(dtype: str, where: str) -> str:
    if dtype not in KERNEL_DTYPES:
        raise NotImplementedError(f"{where}: dtype {dtype!r}; the CPU kernels are built for "
                                  f"{' and '.join(KERNEL_DTYPES)}")
    return dtype


def as_f32(x: PrimExpr) -> PrimExpr:
    """``x`` in float32 (the kernels accumulate in float32 whatever the cache's dtype)."""
    return x if x.dtype == "float32" else tir_op.cast(x, "float32")


class PageTable:
    """The four parameters through which a kernel reads the cache: ``pages`` ``(num_pages, 2,
    num_kv_heads, page_size, head_dim)``, and per sequence ``b`` of the batch its pages
    ``page_values[page_indptr[b]:page_indptr[b+1]]``, all full but the last, which holds
    ``last_page_len[b]`` tokens."""

    def __init__(self, kb: KernelBuilder, batch: Var, num_kv_heads: int, head_dim: int, dtype: str):
        self.page_size = kb.size("page_size")
        self.pages = kb.buffer("pages", (kb.size("num_pages"), 2, num_kv_heads, self.page_size, head_dim), dtype)
        self.page_indptr = kb.buffer("page_indptr", (batch + 1,), "int32")
        self.page_values = kb.buffer("page_values", (kb.size("nnz"),), "int32")
        self.last_page_len = kb.buffer("last_page_len", (batch,), "int32")

    def sequence(self, kb: KernelBuilder, b: Var) -> tuple[Callable[[PrimExpr], PrimExpr], Var]:
        """For sequence ``b``: its ``p``-th page (a function of ``p``), and its length."""
        first = kb.let("first_page", self.page_indptr[b])
        num = kb.let("seq_pages", self.page_indptr[b + 1] - first)
        kv_len = kb.let("kv_len", tir_op.max((num - 1) * self.page_size + self.last_page_len[b], 0))
        return (lambda p: self.page_values[first + p]), kv_len


#: positions whose scores one step of :func:`online_softmax_attention` computes together: a
#: vector register of float32 (AVX-512's), so their exponentials are one vector of work
SCORE_CHUNK = 16


def online_softmax_attention(kb: KernelBuilder, q_at: Callable[[Var], PrimExpr], pages: Buffer, kv_head: PrimExpr,
                             page_at: Callable[[PrimExpr], PrimExpr], n: PrimExpr, sm_scale: Var,
                             store_out: Callable[[Var, PrimExpr], None]) -> None:
    """One query row against the first ``n`` positions of a sequence in the cache.

    ``q_at(d)`` reads the query, ``page_at(p)`` gives the sequence's ``p``-th page (positions
    ``p * page_size ..``), ``store_out(d, value)`` writes the result.  The softmax is the
    one-pass form, a chunk of ``SCORE_CHUNK`` positions of a page at a time: the chunk's scores
    (independent dot products), their maximum, then a running maximum ``m`` rescales the
    running sum and the output accumulator once per chunk, not per position, and the chunk's
    exponentials are one vector.  Walking pages, not positions, spares a division per position
    (the page size is only known at run time)."""
    head_dim = pages.shape[4]
    page_size = pages.shape[3]
    lanes = _dot_lanes(int(head_dim))
    chunk = SCORE_CHUNK
    acc = kb.local("acc", (head_dim,), "float32")
    part = kb.local("part", (lanes,), "float32")  # q . k in ``lanes`` partial sums: one vector register
    score = kb.local("score", (chunk,), "float32")  # the chunk's scores, then their exponentials
    stat = kb.local("stat", (2,), "float32")  # [running max, running sum of exp]
    fold = kb.local("fold", (chunk,), "float32")  # scratch of the chunk's maximum and sum
    kb.store(stat, (0,), const(-3.0e38, "float32"))
    kb.store(stat, (1,), const(0.0, "float32"))
    with kb.loop("d", head_dim, "vectorized") as d:
        kb.store(acc, (d,), const(0.0, "float32"))
    with kb.loop("p", (n + page_size - 1) // page_size) as p:
        page = kb.let("page", page_at(p))
        in_page = kb.let("in_page", tir_op.min(page_size, n - p * page_size))
        with kb.loop("c", (in_page + chunk - 1) // chunk) as c:
            start = kb.let("start", c * chunk)
            count = tir_op.min(chunk, in_page - start)  # not a let: bounds checks see it is at most chunk
            with kb.loop("t", chunk, "vectorized") as t:  # positions past count score -inf: exp gives 0
                kb.store(score, (t,), const(-3.0e38, "float32"))
            with kb.loop("t", count) as t:
                _dot(kb, part, lanes, head_dim, q_at, lambda d: pages[page, 0, kv_head, start + t, d])
                kb.store(score, (t,), part[0] * sm_scale)
            m_old = kb.let("m_old", stat[0])
            m_new = kb.let("m_new", tir_op.max(m_old, _fold(kb, fold, score, chunk, tir_op.max)))
            rescale = kb.let("rescale", tir_op.exp(m_old - m_new))
            with kb.loop("t", chunk, "vectorized") as t:
                kb.store(score, (t,), tir_op.exp(score[t] - m_new))
            kb.store(stat, (0,), m_new)
            kb.store(stat, (1,), stat[1] * rescale + _fold(kb, fold, score, chunk, lambda x, y: x + y))
            with kb.loop("d", head_dim, "vectorized") as d:
                kb.store(acc, (d,), acc[d] * rescale)
            with kb.loop("t", count) as t:
                with kb.loop("d", head_dim, "vectorized") as d:
                    kb.store(acc, (d,), acc[d] + score[t] * as_f32(pages[page, 1, kv_head, start + t, d]))
    with kb.loop("d", head_dim) as d:
        store_out(d, acc[d] / stat[1])


def _dot(kb: KernelBuilder, part: Buffer, lanes: int, head_dim: Any, q_at: Callable[[Var], PrimExpr],
         k_at: Callable[[PrimExpr], PrimExpr]) -> None:
    """``part[0] = q . k``: a serial sum over d is one add after another (float addition does
    not reassociate); ``lanes`` independent sums vectorize, and only their final sum is serial,
    added pairwise, halving: log2(lanes) vector adds, not lanes - 1 serial ones."""
    with kb.loop("l", lanes, "vectorized") as lane:
        kb.store(part, (lane,), const(0.0, "float32"))
    with kb.loop("d0", head_dim // lanes) as d0:
        with kb.loop("l", lanes, "vectorized") as lane:
            d = d0 * lanes + lane
            kb.store(part, (lane,), part[lane] + as_f32(q_at(d)) * as_f32(k_at(d)))
    _halve(kb, part, lanes, lambda x, y: x + y)


def _halve(kb: KernelBuilder, buf: Buffer, width: int, combine: Callable[[PrimExpr, PrimExpr], PrimExpr]) -> None:
    """``buf[0] = combine`` of ``buf[:width]``, pairwise in halves (each a vector operation)."""
    half = width // 2
    while half:
        with kb.loop("l", half, "vectorized") as lane:
            kb.store(buf, (lane,), combine(buf[lane], buf[lane + half]))
        half //= 2


def _fold(kb: KernelBuilder, scratch: Buffer, values: Buffer, width: int,
          combine: Callable[[PrimExpr, PrimExpr], PrimExpr]) -> PrimExpr:
    """``combine`` of ``values[:width]`` (max, sum), through ``scratch``: ``values`` is kept."""
    with kb.loop("l", width, "vectorized") as lane:
        kb.store(scratch, (lane,), values[lane])
    _halve(kb, scratch, width, combine)
    return scratch[0]


def _dot_lanes(head_dim: int) -> int:
    """Partial sums of a q . k product: a vector register's float32 lanes that divide ``head_dim``."""
    return next(c for c in (16, 8, 4, 2, 1) if head_dim % c == 0)
