"""Language-model building blocks for ``relax.frontend.nn``: the paged KV cache and RoPE (TVM's ``nn.llm``)."""
