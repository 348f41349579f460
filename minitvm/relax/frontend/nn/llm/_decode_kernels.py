"""Decode attention on the CPU: one new query per sequence against all of its cached k/v."""

from __future__ import annotations

from .....tir import op as tir_op
from .....tir.function import PrimFunc
from ._kernel_common import PageTable, check_dtype, online_softmax_attention
from ._tir_builder import KernelBuilder

__all__ = ["_attention_decode_cpu", "DECODE_PARALLEL_HEAD_WORK"]

#: decode attention runs its query heads on threads from this many ``num_qo_heads * head_dim`` on
#: (per cached position that many multiply-adds twice): the thread pool's wake-up costs a few
#: microseconds, more than a tiny model's whole attention (4 heads of 16)
DECODE_PARALLEL_HEAD_WORK = 256


def _attention_decode_cpu(num_kv_heads: int, num_qo_heads: int, head_dim: int, dtype: str) -> PrimFunc:
    """``batch_decode_paged_kv_cpu(q, pages, page_indptr, page_values, last_page_len, output, sm_scale)``.

    ``q``/``output``: ``(batch, num_qo_heads, head_dim)``; sequence ``b`` owns pages
    ``page_values[page_indptr[b]:page_indptr[b+1]]``, all full but the last, which holds
    ``last_page_len[b]`` tokens.  Query head ``h`` reads kv head ``h // (num_qo_heads //
    num_kv_heads)`` (grouped-query attention).  The new token's k/v are already in the pages."""
    check_dtype(dtype, "_attention_decode_cpu")
    group = num_qo_heads // num_kv_heads
    kb = KernelBuilder("batch_decode_paged_kv_cpu")
    batch = kb.size("batch")
    q = kb.buffer("q", (batch, num_qo_heads, head_dim), dtype)
    table = PageTable(kb, batch, num_kv_heads, head_dim, dtype)
    output = kb.buffer("output", (batch, num_qo_heads, head_dim), dtype)
    sm_scale = kb.scalar("sm_scale", "float32")
    with kb.loop("b", batch) as b:
        page_at, kv_len = table.sequence(kb, b)
        kind = "parallel" if num_qo_heads * head_dim >= DECODE_PARALLEL_HEAD_WORK else "serial"
        with kb.loop("h", num_qo_heads, kind) as h:
            online_softmax_attention(kb, lambda d: q[b, h, d], table.pages, h // group, page_at, kv_len, sm_scale,
                                     lambda d, value: kb.store(output, (b, h, d), tir_op.cast(value, dtype)))
    return kb.func()
