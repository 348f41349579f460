"""Thirty Hugging Face ``transformers`` architectures at tiny configs: the models the torch
frontend must import as a user would get them (transformers' own model code, random weights, no
download), shared by the importer's tests and the compile-time benchmark.

    from minitvm.testing import transformers_zoo
    model, (ids,) = transformers_zoo.build("deberta-v2")     # ids: (1, 16) token ids
    hidden = model(ids)                                       # the last hidden state, (1, 16, 64)

Each is 2 layers wide 64 with 4 heads (the family's own names for those sizes), a 512-token
vocabulary and 16 tokens: encoders (BERT and its descendants, funnel, T5's encoder), decoders
(GPT-2 to Gemma), an encoder-decoder (BART: the decoder reads the shifted input) and a state-space
model (Mamba).  A model is wrapped as one module of token ids -> last hidden state, one tensor.
transformers and torch are imported inside the functions, so importing this module needs
neither.  ``benchmarks/compile_time.py --models transformers`` compiles all of them, and beside
each its time in TVM 0.27 when a Python with TVM is given.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ARCHITECTURES", "SEQUENCE", "VOCAB", "build"]

#: tokens per example and vocabulary size of every architecture
SEQUENCE, VOCAB = 16, 512

_BERT = dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
             max_position_embeddings=64)
#: grouped-query attention: 4 query heads share 2 key/value heads
_LLAMA = {**_BERT, "num_key_value_heads": 2}

#: transformers ``model_type`` -> the config's arguments (the family's own names for the sizes)
ARCHITECTURES: dict[str, dict[str, Any]] = {
    # encoders
    "bert": _BERT,
    "roberta": _BERT,
    "xlm-roberta": _BERT,
    "ernie": _BERT,
    "megatron-bert": _BERT,
    "mpnet": _BERT,
    "deberta": _BERT,
    "deberta-v2": _BERT,
    "electra": {**_BERT, "embedding_size": 32},
    "albert": {**_BERT, "embedding_size": 32},
    "convbert": {**_BERT, "embedding_size": 64},
    "roformer": {**_BERT, "embedding_size": 64},
    "distilbert": dict(vocab_size=VOCAB, dim=64, n_layers=2, n_heads=4, hidden_dim=128, max_position_embeddings=64),
    "mobilebert": {**_BERT, "embedding_size": 32, "intra_bottleneck_size": 32, "true_hidden_size": 32,
                   "num_feedforward_networks": 2},
    "squeezebert": {**_BERT, "embedding_size": 64, "q_groups": 2, "k_groups": 2, "v_groups": 2,
                    "post_attention_groups": 2, "intermediate_groups": 2, "output_groups": 2},
    "funnel": dict(vocab_size=VOCAB, d_model=64, n_head=4, d_head=16, d_inner=128, block_sizes=[1, 1, 1],
                   num_decoder_layers=1),
    "t5": dict(vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4),
    # decoders
    # (the special tokens inside the small vocabulary: transformers warns of its default 50256 otherwise)
    "gpt2": dict(vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4, n_positions=64, bos_token_id=0, eos_token_id=0),
    "gpt_neo": dict(vocab_size=VOCAB, hidden_size=64, num_layers=2, num_heads=4,
                    attention_types=[[["global", "local"], 1]], max_position_embeddings=64, window_size=8,
                    bos_token_id=0, eos_token_id=0),
    "gptj": dict(vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4, rotary_dim=8, n_positions=64, bos_token_id=0,
                 eos_token_id=0),
    "opt": dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, ffn_dim=128,
                max_position_embeddings=64, word_embed_proj_dim=64),
    "bloom": dict(vocab_size=VOCAB, hidden_size=64, n_layer=2, n_head=4),
    "llama": _LLAMA,
    "mistral": _LLAMA,
    "qwen2": _LLAMA,
    "gemma": {**_LLAMA, "head_dim": 16},
    "phi": _BERT,
    "falcon": {**_BERT, "new_decoder_architecture": False},
    # an encoder-decoder and a state-space model
    "bart": dict(vocab_size=VOCAB, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                 decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=64),
    "mamba": dict(vocab_size=VOCAB, hidden_size=64, state_size=8, num_hidden_layers=2, intermediate_size=128,
                  time_step_rank=8),
}

#: the model class where ``AutoModel`` has none or picks another (T5's is encoder-decoder; in
#: transformers 5 ``AutoModel.from_config`` fails on funnel's config)
_MODEL_CLASS = {"t5": "T5EncoderModel", "funnel": "FunnelModel"}


def build(name: str) -> tuple[Any, tuple[Any]]:
    """(model, (token ids,)): ``name``'s architecture at its tiny config, seeded random weights, in
    eval mode and eager attention, as one module of token ids -> last hidden state."""
    import torch
    import transformers

    if name not in ARCHITECTURES:
        raise KeyError(f"transformers_zoo has no architecture {name!r}; it has {', '.join(ARCHITECTURES)}")
    torch.manual_seed(0)
    config = transformers.AutoConfig.for_model(name, **ARCHITECTURES[name])
    config._attn_implementation = "eager"  # the attention as plain ops, the same on every version
    model_class = getattr(transformers, _MODEL_CLASS[name]) if name in _MODEL_CLASS else None
    model = model_class(config) if model_class else transformers.AutoModel.from_config(config)
    ids = torch.randint(1, VOCAB, (1, SEQUENCE), generator=torch.Generator().manual_seed(1))
    return _LastHiddenState(model.eval()).eval(), (ids,)


def _LastHiddenState(model: Any) -> Any:  # noqa: N802 -- a class made on first use (torch is optional)
    from torch import nn

    class LastHiddenState(nn.Module):
        """token ids -> the model's last hidden state"""

        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids):
            return self.model(input_ids=input_ids).last_hidden_state

    return LastHiddenState()
