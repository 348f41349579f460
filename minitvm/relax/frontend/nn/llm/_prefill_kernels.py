"""Prefill attention on the CPU: several new tokens per sequence, a causal mask over the pages."""

from __future__ import annotations

from .....tir import op as tir_op
from .....tir.function import PrimFunc
from ._kernel_common import PageTable, check_dtype, online_softmax_attention
from ._tir_builder import KernelBuilder

__all__ = ["_attention_prefill_cpu"]


def _attention_prefill_cpu(num_kv_heads: int, num_qo_heads: int, head_dim: int, dtype: str) -> PrimFunc:
    """``batch_prefill_paged_kv_cpu(q, q_indptr, pages, page_indptr, page_values, last_page_len,
    output, sm_scale)``.

    ``q``/``output``: ``(total_new_tokens, num_qo_heads, head_dim)``, sequence ``b``'s new
    tokens at rows ``q_indptr[b]:q_indptr[b+1]``; their k/v are already appended, so they are
    the last ``q_len`` of the sequence's ``kv_len`` positions.  New token ``i`` sits at position
    ``kv_len - q_len + i`` and sees positions ``0 ..`` that one (the causal mask), across
    every page of the sequence, earlier forwards' tokens included."""
    check_dtype(dtype, "_attention_prefill_cpu")
    group = num_qo_heads // num_kv_heads
    kb = KernelBuilder("batch_prefill_paged_kv_cpu")
    total, batch = kb.size("total_len"), kb.size("batch")
    q = kb.buffer("q", (total, num_qo_heads, head_dim), dtype)
    q_indptr = kb.buffer("q_indptr", (batch + 1,), "int32")
    table = PageTable(kb, batch, num_kv_heads, head_dim, dtype)
    output = kb.buffer("output", (total, num_qo_heads, head_dim), dtype)
    sm_scale = kb.scalar("sm_scale", "float32")
    with kb.loop("b", batch) as b:
        q_begin = kb.let("q_begin", q_indptr[b])
        q_len = kb.let("q_len", q_indptr[b + 1] - q_begin)
        page_at, kv_len = table.sequence(kb, b)
        with kb.loop("i", q_len, "parallel") as i:  # query rows are independent: each its own softmax
            row = kb.let("row", q_begin + i)
            visible = kb.let("visible", kv_len - q_len + i + 1)  # the causal mask
            with kb.loop("h", num_qo_heads) as h:
                online_softmax_attention(kb, lambda d: q[row, h, d], table.pages, h // group, page_at, visible,
                                         sm_scale,
                                         lambda d, value: kb.store(output, (row, h, d), tir_op.cast(value, dtype)))
    return kb.func()
