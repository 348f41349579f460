# Generated from solutions/ch10.py by `python -m minitvm.grade.make_stubs`: edit the bodies that raise.
"""Chapter 10 exercises: compiling a language model (to solve).

Each function returns what its docstring asks for: a piece of a Llama written with
``relax.frontend.nn`` or TE, a step of the decode loop in numpy, a number worked out from a
model's configuration, or a schedule. Try them here or in a notebook::

    from exercises import ch10
    ch10.decode_bytes_per_token(tiny_llama.load_config(), seq_len=100)

The graders (``tests/grade/test_ch10.py``) export and compile what you write, run it on seeded
random data against numpy, and time the GEMV of exercise 10.7 against the unscheduled one. Run
them with ``minitvm grade ch10`` or ``minitvm.grade.check("ch10")``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from minitvm import s_tir, te, tirx
from minitvm.ir import IRModule
from minitvm.relax.frontend import nn
from minitvm.relax.frontend.nn import Tensor, op
from minitvm.script import ir as I
from minitvm.script import tirx as T

# ---------------------------------------------------------------- starting programs


@I.ir_module
class GEMV:
    """One linear layer of a decode step: ``y = W @ x`` for a single token (4 MB of weights)."""

    @T.prim_func
    def main(W: T.Buffer((1024, 1024), "float32"), x: T.Buffer((1024,), "float32"),
             y: T.Buffer((1024,), "float32")):
        T.func_attr({"global_symbol": "main", "tirx.noalias": True})
        for i, k in T.grid(1024, 1024):
            with T.sblock("y"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    y[vi] = T.float32(0)
                y[vi] = y[vi] + W[vi, vk] * x[vk]


# ---------------------------------------------------------------- exercises


def rms_norm(x: Tensor, weight: Tensor, eps: float) -> Tensor:
    """Exercise 10.1: RMSNorm written with ``nn.op``.

    Return ``x / sqrt(mean(x * x over the last axis) + eps) * weight`` for an ``nn.Tensor`` ``x``
    of any rank (its last axis of size ``hidden``) and ``weight`` of shape ``(hidden,)``: what
    ``nn.RMSNorm`` computes before every attention and MLP of a Llama. Build it from ``op.mean``,
    ``op.square``, ``op.rsqrt`` and arithmetic (``x * y``, ``x + 1e-5``), not ``op.rms_norm``: the
    grader calls it inside a module's ``forward``, exports it with a symbolic sequence length,
    compiles it and compares with numpy.
    """
    raise NotImplementedError("exercise 10.1: write rms_norm")


def causal_mask(scores: te.Tensor) -> te.Tensor:
    """Exercise 10.2: the causal mask, in TE.

    ``scores`` is ``(heads, q_len, kv_len)``: the attention scores of the ``q_len`` new tokens
    against all ``kv_len`` positions in the cache, the new tokens being the *last* ``q_len`` of
    them (a prefill of the whole prompt has ``q_len == kv_len``; a decode step has ``q_len == 1``).
    Return a ``te.compute`` of the same shape that keeps ``scores[h, i, j]`` where key ``j`` is not
    after query ``i``'s position and puts ``tirx.min_value("float32")`` (the most negative float,
    which softmax turns into 0) where it is. The shapes may be symbolic: use ``scores.shape``.
    """
    raise NotImplementedError("exercise 10.2: write causal_mask")


def cached_attention(q: Tensor, k: Tensor, v: Tensor, k_cache: nn.KVCache, v_cache: nn.KVCache,
                     total_seq_len: Any) -> Tensor:
    """Exercise 10.3: one decode step of attention over a simple KV cache, in ``nn``.

    ``q``, ``k``, ``v`` are the new token's query, key and value, each ``(1, heads, head_dim)``;
    ``k_cache`` and ``v_cache`` are ``nn.KVCache(..., [heads, head_dim])`` holding the keys and
    values of the earlier tokens. Append ``k`` and ``v`` to the caches, read all
    ``total_seq_len`` rows back (``view``), and return ``softmax(q K^T / sqrt(head_dim)) V`` per
    head, shaped ``(1, heads, head_dim)``. No mask is needed: the new token may see every
    cached one. ``op.permute_dims``, ``op.matmul`` and ``op.softmax`` do the rest.
    """
    raise NotImplementedError("exercise 10.3: write cached_attention")


def sample_top_k(logits: np.ndarray, k: int, temperature: float, rng: np.random.Generator) -> int:
    """Exercise 10.4: the next token by top-k sampling.

    ``logits`` is a vector over the vocabulary. With ``temperature == 0`` return the most likely
    token (``argmax``). Otherwise keep the ``k`` tokens with the largest logits, turn
    ``logits / temperature`` of those into probabilities (softmax over the ``k`` only), and draw
    one with ``rng`` (``rng.choice``). Return the token id as an ``int``.
    """
    raise NotImplementedError("exercise 10.4: write sample_top_k")


def decode_bytes_per_token(config: Any, seq_len: int, weight_bytes: float = 4, cache_bytes: float = 4) -> float:
    """Exercise 10.5: the bytes one decode step reads from memory.

    ``config`` has a Llama's fields (``tiny_llama.TinyLlamaConfig``): ``hidden_size``,
    ``intermediate_size``, ``num_attention_heads``, ``num_key_value_heads``, ``head_dim``,
    ``num_hidden_layers``, ``vocab_size``. At batch 1, generating one token after ``seq_len``
    tokens in the cache (the new one included) reads:

    * every weight of every linear layer once -- per layer q, k, v, o, gate, up, down, then
      ``lm_head`` -- at ``weight_bytes`` each (4 for float32, 1 for int8, 0.5 for int4);
    * the norms' weights (two per layer and the final one) and one row of the embedding table,
      in float32 (4 bytes each);
    * the keys and values of all ``seq_len`` positions, in every layer, at ``cache_bytes`` each.

    Return the total. (k and v have ``num_key_value_heads`` heads: grouped-query attention.)
    """
    raise NotImplementedError("exercise 10.5: write decode_bytes_per_token")


def quantize_per_channel(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exercise 10.6: symmetric int8 quantization with one scale per output channel.

    ``w`` is a linear layer's float32 weight ``(out_features, in_features)``. Return ``(q,
    scale)``: ``scale`` float32 of shape ``(out_features,)``, the largest ``|w|`` of each row over
    127 (use 1 for a row of zeros), and ``q`` int8 of ``w``'s shape, ``w / scale`` rounded to the
    nearest integer and clipped to ``[-127, 127]``. ``q * scale[:, None]`` is then within half a
    scale of ``w``, row by row.
    """
    raise NotImplementedError("exercise 10.6: write quantize_per_channel")


def fast_gemv(mod: IRModule) -> IRModule | s_tir.Schedule:
    """Exercise 10.7 (open): make the decode GEMV fast.

    ``mod`` is a GEMV like ``GEMV`` above (``y = W @ x``, possibly of other sizes). Return a
    schedule (``s_tir.Schedule``) or an ``IRModule`` that computes the same ``y`` and runs at least
    3x faster than ``mod`` built as it is; the grader measures both. Any approach: split the
    reduction and vectorize, ``rfactor``, run rows in parallel, or apply a default schedule
    (``minitvm.tir.transform.DefaultCPUSchedule``) and read what it did.
    """
    raise NotImplementedError("exercise 10.7: write fast_gemv")

