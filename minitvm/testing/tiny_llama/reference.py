"""The tiny Llama's forward pass in numpy, every step written out: a second reference next to
Hugging Face's, one that needs no torch and shows what a compiled model must compute."""

from __future__ import annotations

import numpy as np

from .model import TinyLlamaConfig


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def rope(x: np.ndarray, positions: np.ndarray, theta: float) -> np.ndarray:
    """Rotary position embedding of ``x`` (heads, seq, head_dim), Llama's layout: dimension ``j`` of
    the first half turns with dimension ``j`` of the second half by ``position * theta**(-2j/head_dim)``."""
    d = x.shape[-1]
    angle = positions[:, None] * theta ** (-np.arange(0, d, 2) / d)[None, :]  # (seq, d/2)
    cos, sin = np.cos(np.concatenate([angle, angle], -1)), np.sin(np.concatenate([angle, angle], -1))
    rotated = np.concatenate([-x[..., d // 2:], x[..., :d // 2]], axis=-1)
    return x * cos + rotated * sin


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Causal attention; q (heads, seq, d), k and v (kv_heads, seq, d) shared by groups of query heads."""
    group = q.shape[0] // k.shape[0]
    k, v = np.repeat(k, group, axis=0), np.repeat(v, group, axis=0)
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    seq = q.shape[1]
    scores = np.where(np.tril(np.ones((seq, seq), dtype=bool)), scores, -np.inf)  # no peeking ahead
    p = np.exp(scores - scores.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


def forward(weights: dict[str, np.ndarray], config: TinyLlamaConfig, token_ids) -> np.ndarray:
    """The logits (seq, vocab) of every position of ``token_ids``, computed in float64."""
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    c, d = config, config.head_dim
    ids = np.asarray(token_ids)
    positions = np.arange(len(ids), dtype=np.float64)
    x = w["model.embed_tokens.weight"][ids]
    for n in range(c.num_hidden_layers):
        p = f"model.layers.{n}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], c.rms_norm_eps)
        q = (h @ w[p + "self_attn.q_proj.weight"].T).reshape(len(ids), -1, d).transpose(1, 0, 2)
        k = (h @ w[p + "self_attn.k_proj.weight"].T).reshape(len(ids), -1, d).transpose(1, 0, 2)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).reshape(len(ids), -1, d).transpose(1, 0, 2)
        q, k = rope(q, positions, c.rope_theta), rope(k, positions, c.rope_theta)
        o = attention(q, k, v).transpose(1, 0, 2).reshape(len(ids), -1)
        x = x + o @ w[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], c.rms_norm_eps)
        gate, up = h @ w[p + "mlp.gate_proj.weight"].T, h @ w[p + "mlp.up_proj.weight"].T
        x = x + (gate / (1 + np.exp(-gate)) * up) @ w[p + "mlp.down_proj.weight"].T  # SwiGLU: silu(gate) * up
    return rms_norm(x, w["model.norm.weight"], c.rms_norm_eps) @ w["lm_head.weight"].T
