"""What the paged-KV-cache kernels share: the enums of TVM's ``nn.llm`` and the attention loop."""

from __future__ import annotations

import enum
from typing import Callable

from .....tir import op as tir_op
from .....tir.buffer import Buffer
from .....tir.expr import PrimExpr, Var, const
from ._tir_builder import KernelBuilder

__all__ = ["AttnKind", "RopeMode", "check_dtype", "online_softmax_attention", "as_f32", "PageTable"]


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


def check_dtype(dtype: str, where: str) -> str:
    if dtype != "float32":
        raise NotImplementedError(f"{where}: dtype {dtype!r}; the CPU kernels are built for float32")
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
        """For sequence ``b``: the page holding position ``j`` (a function of ``j``), and its length."""
        first = kb.let("first_page", self.page_indptr[b])
        num = kb.let("seq_pages", self.page_indptr[b + 1] - first)
        kv_len = kb.let("kv_len", tir_op.max((num - 1) * self.page_size + self.last_page_len[b], 0))
        return (lambda j: self.page_values[first + j // self.page_size]), kv_len


def online_softmax_attention(kb: KernelBuilder, q_at: Callable[[Var], PrimExpr], pages: Buffer, kv_head: PrimExpr,
                             page_of: Callable[[PrimExpr], PrimExpr], n: PrimExpr, sm_scale: Var,
                             store_out: Callable[[Var, PrimExpr], None]) -> None:
    """One query row against the first ``n`` positions of a sequence in the cache.

    ``q_at(d)`` reads the query, ``page_of(j)`` gives the page holding position ``j`` (its
    slot is ``j % page_size``), ``store_out(d, value)`` writes the result.  The softmax is
    the one-pass form: a running maximum ``m`` rescales the running sum and the output
    accumulator each time it grows, so the scores need no buffer of length ``n``."""
    head_dim = pages.shape[4]
    page_size = pages.shape[3]
    lanes = _dot_lanes(int(head_dim))
    acc = kb.local("acc", (head_dim,), "float32")
    part = kb.local("part", (lanes,), "float32")  # q . k in ``lanes`` partial sums: one vector register
    stat = kb.local("stat", (2,), "float32")  # [running max, running sum of exp]
    kb.store(stat, (0,), const(-3.0e38, "float32"))
    kb.store(stat, (1,), const(0.0, "float32"))
    with kb.loop("d", head_dim, "vectorized") as d:
        kb.store(acc, (d,), const(0.0, "float32"))
    with kb.loop("j", n) as j:
        page = kb.let("page", page_of(j))
        slot = kb.let("slot", j % page_size)
        # a serial sum over d is one add after another (float addition does not reassociate):
        # ``lanes`` independent sums vectorize, and only their final sum is serial
        with kb.loop("l", lanes, "vectorized") as lane:
            kb.store(part, (lane,), const(0.0, "float32"))
        with kb.loop("d0", head_dim // lanes) as d0:
            with kb.loop("l", lanes, "vectorized") as lane:
                d = d0 * lanes + lane
                kb.store(part, (lane,), part[lane] + as_f32(q_at(d)) * as_f32(pages[page, 0, kv_head, slot, d]))
        half = lanes // 2
        while half:  # the partial sums added pairwise, halving: log2(lanes) vector adds, not lanes - 1 serial ones
            with kb.loop("l", half, "vectorized") as lane:
                kb.store(part, (lane,), part[lane] + part[lane + half])
            half //= 2
        s = kb.let("s", part[0] * sm_scale)
        m_new = kb.let("m_new", tir_op.max(stat[0], s))
        rescale = kb.let("rescale", tir_op.exp(stat[0] - m_new))
        p = kb.let("p", tir_op.exp(s - m_new))
        kb.store(stat, (1,), stat[1] * rescale + p)
        kb.store(stat, (0,), m_new)
        with kb.loop("d", head_dim, "vectorized") as d:
            kb.store(acc, (d,), acc[d] * rescale + p * as_f32(pages[page, 1, kv_head, slot, d]))
    with kb.loop("d", head_dim) as d:
        store_out(d, acc[d] / stat[1])


def _dot_lanes(head_dim: int) -> int:
    """Partial sums of a q . k product: a vector register's float32 lanes that divide ``head_dim``."""
    return next(c for c in (16, 8, 4, 2, 1) if head_dim % c == 0)
