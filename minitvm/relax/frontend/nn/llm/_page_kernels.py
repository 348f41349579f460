"""Page kernels: new k/v into their pages, and one page copied to another."""

from __future__ import annotations

from .....tir.function import PrimFunc
from ._kernel_common import check_dtype
from ._tir_builder import KernelBuilder

__all__ = ["_kv_cache_transpose_append", "_copy_single_page_cpu"]


def _kv_cache_transpose_append(num_key_value_heads: int, head_dim: int, dtype: str) -> PrimFunc:
    """``kv_cache_transpose_append(pages, k_data, v_data, position_map)``: token ``t``'s k and v
    (``(total_len, num_kv_heads, head_dim)``) go to slot ``position_map[t]`` of the cache, that is
    page ``pos // page_size``, offset ``pos % page_size`` (``-1``: skip the token)."""
    check_dtype(dtype, "_kv_cache_transpose_append")
    kb = KernelBuilder("kv_cache_transpose_append")
    num_pages, page_size, total = kb.size("num_pages"), kb.size("page_size"), kb.size("total_len")
    pages = kb.buffer("pages", (num_pages, 2, num_key_value_heads, page_size, head_dim), dtype)
    k_data = kb.buffer("k_data", (total, num_key_value_heads, head_dim), dtype)
    v_data = kb.buffer("v_data", (total, num_key_value_heads, head_dim), dtype)
    position_map = kb.buffer("position_map", (total,), "int32")
    with kb.loop("t", total) as t:
        pos = kb.let("pos", position_map[t])
        with kb.if_(pos != -1):
            with kb.loop("h", num_key_value_heads) as h:
                with kb.loop("d", head_dim) as d:
                    kb.store(pages, (pos // page_size, 0, h, pos % page_size, d), k_data[t, h, d])
                    kb.store(pages, (pos // page_size, 1, h, pos % page_size, d), v_data[t, h, d])
    return kb.func()


def _copy_single_page_cpu(num_heads: int, head_dim: int, dtype: str) -> PrimFunc:
    """``kv_cache_copy_single_page_cpu(pages, src_page_id, tgt_page_id, copy_length)``: the first
    ``copy_length`` slots (k and v, every head) of one page into another (a forked sequence
    gets its own copy of a partly shared page)."""
    check_dtype(dtype, "_copy_single_page_cpu")
    kb = KernelBuilder("kv_cache_copy_single_page_cpu")
    num_pages, page_size = kb.size("num_pages"), kb.size("page_size")
    pages = kb.buffer("pages", (num_pages, 2, num_heads, page_size, head_dim), dtype)
    src, tgt, length = kb.scalar("src_page_id", "int32"), kb.scalar("tgt_page_id", "int32"), kb.scalar(
        "copy_length", "int32")
    with kb.loop("kv", 2) as kv:
        with kb.loop("h", num_heads) as h:
            with kb.loop("i", length) as i:
                with kb.loop("d", head_dim) as d:
                    kb.store(pages, (tgt, kv, h, i, d), pages[src, kv, h, i, d])
    return kb.func()
