"""A tiny Llama trained on Python's own help text (``pydoc_data.topics``), with its byte tokenizer,
its Hugging Face reference, a numpy forward pass and a readable decode loop.

``load_hf_model()`` is the committed trained model as ``transformers.LlamaForCausalLM``;
``train.py`` is the script that made its weights. torch and transformers are imported only where used.
"""

from .generate import generate, nucleus, sample_next_token
from .model import (
    CONFIG_PATH,
    WEIGHTS_PATH,
    TinyLlamaConfig,
    build_hf_model,
    continue_text,
    hf_step_fn,
    load_config,
    load_hf_model,
    load_weights,
)
from .tokenizer import BOS_ID, EOS_ID, PAD_ID, VOCAB_SIZE, ByteTokenizer, decode, encode

__all__ = ["generate", "nucleus", "sample_next_token", "CONFIG_PATH", "WEIGHTS_PATH", "TinyLlamaConfig",
           "build_hf_model", "continue_text", "hf_step_fn", "load_config", "load_hf_model", "load_weights",
           "BOS_ID", "EOS_ID", "PAD_ID", "VOCAB_SIZE", "ByteTokenizer", "decode", "encode"]
