"""Language-model building blocks for ``relax.frontend.nn`` (TVM's ``nn.llm``): the paged KV cache
with CPU kernels of our own, and Llama's rotary position embedding."""

from . import kv_cache, position_embedding
from .kv_cache import PagedKVCache, TIRPagedKVCache
from .position_embedding import llama_rope

__all__ = ["kv_cache", "position_embedding", "PagedKVCache", "TIRPagedKVCache", "llama_rope"]
