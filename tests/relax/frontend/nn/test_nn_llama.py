"""A tiny Llama written as TVM's optimize_llm tutorial writes it (fused QKV and gate/up projections,
``op.split``, ``op.silu``, ``nn.RMSNorm(hidden, -1, eps, bias=False)``, ``hidden_states += ...``,
no ``super().__init__()``, ``model.to(dtype)``, the prefill's ``tensor_expr_op`` index, a
multi-function spec with ``"$"`` modes and an ``nn.Object`` argument handed back), but with plain
causal attention in place of the paged KV cache.  Its logits are compared with a torch model
written the way Hugging Face's LlamaForCausalLM computes (RoPE by halves, grouped-query attention)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch

import minitvm
from minitvm import relax, te, tir
from minitvm.relax.frontend import nn
from minitvm.relax.frontend.nn import Tensor, op
from minitvm.runtime import ShapeTuple


@dataclasses.dataclass
class LlamaConfig:
    hidden_size: int = 32
    intermediate_size: int = 48
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    num_hidden_layers: int = 2
    rms_norm_eps: float = 1e-5
    vocab_size: int = 50
    rope_theta: int = 10000
    head_dim: int = 8


class NoCache(nn.Object):
    """The tutorial's methods take and return a KV cache; here it is only passed through."""


def _rope(x: te.Tensor, theta: float) -> te.Tensor:
    """Rotary embedding by halves at positions 0..s-1 (x: b, s, h, d)."""
    _, _, _, d = x.shape
    half = d // 2

    def f(b, s, h, i):
        j = tir.floormod(i, half)
        freq = tir.exp(tir.Cast("float32", j) * (-2.0 * math.log(theta) / int(d)))
        angle = tir.Cast("float32", s) * freq
        rotated = tir.if_then_else(i < half, -x[b, s, h, i + half], x[b, s, h, i - half])
        return x[b, s, h, i] * tir.cos(angle) + rotated * tir.sin(angle)

    return te.compute(x.shape, f, name="rope")


def _causal_mask(scores: te.Tensor) -> te.Tensor:
    return te.compute(scores.shape, lambda b, h, i, j: tir.if_then_else(
        j > i, tir.min_value("float32"), scores[b, h, i, j]), name="causal_mask")


class LlamaFFN(nn.Module):
    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.gate_up_proj = nn.Linear(config.hidden_size, 2 * config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x: Tensor):
        x1, x2 = op.split(self.gate_up_proj(x), 2, axis=-1)
        return self.down_proj(op.silu(x1) * x2)


class LlamaAttention(nn.Module):
    def __init__(self, config: LlamaConfig):
        self.head_dim, self.theta = config.head_dim, config.rope_theta
        self.num_q_heads, self.num_kv_heads = config.num_attention_heads, config.num_key_value_heads
        qkv_out = (self.num_q_heads + 2 * self.num_kv_heads) * self.head_dim
        self.qkv_proj = nn.Linear(config.hidden_size, qkv_out, bias=False)
        self.o_proj = nn.Linear(self.num_q_heads * self.head_dim, config.hidden_size, bias=False)

    def forward(self, hidden_states: Tensor):
        d, h_q, h_kv = self.head_dim, self.num_q_heads, self.num_kv_heads
        b, s, _ = hidden_states.shape
        qkv = op.reshape(self.qkv_proj(hidden_states), (b, s, h_q + 2 * h_kv, d))
        q, k, v = op.split(qkv, [h_q, h_q + h_kv], axis=2)
        q = op.tensor_expr_op(lambda x: _rope(x, self.theta), "rope_q", [q])
        k = op.tensor_expr_op(lambda x: _rope(x, self.theta), "rope_k", [k])
        k, v = (op.repeat(t, h_q // h_kv, axis=2) for t in (k, v))
        q, k, v = (op.permute_dims(t, [0, 2, 1, 3]) for t in (q, k, v))
        scores = op.matmul(q, op.permute_dims(k, [0, 1, 3, 2])) * (d ** -0.5)
        probs = op.softmax(op.tensor_expr_op(_causal_mask, "causal_mask", [scores]), axis=-1)
        out = op.permute_dims(op.matmul(probs, v), [0, 2, 1, 3])
        return self.o_proj(op.reshape(out, (b, s, h_q * d)))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, config: LlamaConfig):
        self.self_attn = LlamaAttention(config)
        self.mlp = LlamaFFN(config)
        self.input_layernorm = nn.RMSNorm(config.hidden_size, -1, config.rms_norm_eps, bias=False)
        self.post_attention_layernorm = nn.RMSNorm(config.hidden_size, -1, config.rms_norm_eps, bias=False)

    def forward(self, hidden_states: Tensor):
        hidden_states += self.self_attn(self.input_layernorm(hidden_states))
        hidden_states += self.mlp(self.post_attention_layernorm(hidden_states))
        return hidden_states


class LlamaModel(nn.Module):
    def __init__(self, config: LlamaConfig):
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList([LlamaDecoderLayer(config) for _ in range(config.num_hidden_layers)])
        self.norm = nn.RMSNorm(config.hidden_size, -1, config.rms_norm_eps, bias=False)

    def forward(self, input_embed: Tensor):
        hidden_states = input_embed
        for layer in self.layers:
            hidden_states = layer(hidden_states)
        return self.norm(hidden_states)


class LlamaForCausalLM(nn.Module):
    def __init__(self, config: LlamaConfig):
        self.model = LlamaModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.hidden_size = config.hidden_size
        self.dtype = "float32"

    def to(self, dtype: str | None = None):
        super().to(dtype=dtype)
        if dtype is not None:
            self.dtype = dtype

    def embed(self, input_ids: Tensor):
        return self.model.embed_tokens(input_ids)

    def get_logits(self, hidden_states: Tensor):
        logits = self.lm_head(hidden_states)
        if logits.dtype != "float32":
            logits = logits.astype("float32")
        return logits

    def prefill(self, input_embed: Tensor, kv_cache: NoCache):
        def _index(x: te.Tensor):  # x[:, -1:, :]
            b, s, d = x.shape
            return te.compute((b, 1, d), lambda i, _, k: x[i, s - 1, k], name="index")

        hidden_states = self.model(input_embed)
        hidden_states = op.tensor_expr_op(_index, name_hint="index", args=[hidden_states])
        return self.get_logits(hidden_states), kv_cache

    def get_default_spec(self):
        packed = {"param_mode": "packed", "effect_mode": "none"}
        return nn.spec.ModuleSpec.from_raw({
            "embed": {"input_ids": nn.spec.Tensor(["seq_len"], "int32"), "$": packed},
            "prefill": {"input_embed": nn.spec.Tensor([1, "seq_len", self.hidden_size], self.dtype),
                        "kv_cache": nn.spec.Object(object_type=NoCache), "$": packed},
        }, self)


def _torch_reference(cfg: LlamaConfig, w: dict[str, np.ndarray], ids: np.ndarray) -> np.ndarray:
    """Last-position logits as HF's LlamaForCausalLM computes them (separate q/k/v, gate/up)."""
    t = {k: torch.from_numpy(v) for k, v in w.items()}
    d, h_q, h_kv = cfg.head_dim, cfg.num_attention_heads, cfg.num_key_value_heads
    s = len(ids)

    def rms(x, weight):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + cfg.rms_norm_eps) * weight

    inv_freq = 1.0 / (cfg.rope_theta ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
    angles = torch.outer(torch.arange(s, dtype=torch.float32), inv_freq)
    cos, sin = torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)

    def rope(x):  # (1, heads, s, d)
        rot = torch.cat([-x[..., d // 2:], x[..., : d // 2]], -1)
        return x * cos + rot * sin

    h = t["model.embed_tokens.weight"][torch.from_numpy(ids).long()][None]
    mask = torch.full((s, s), float("-inf")).triu(1)
    for i in range(cfg.num_hidden_layers):
        p = f"model.layers.{i}."
        x = rms(h, t[p + "input_layernorm.weight"])
        qkv = (x @ t[p + "self_attn.qkv_proj.weight"].T).view(1, s, h_q + 2 * h_kv, d).transpose(1, 2)
        q, k, v = qkv[:, :h_q], qkv[:, h_q:h_q + h_kv], qkv[:, h_q + h_kv:]
        q, k = rope(q), rope(k)
        k, v = k.repeat_interleave(h_q // h_kv, 1), v.repeat_interleave(h_q // h_kv, 1)
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d) + mask, -1) @ v
        h = h + att.transpose(1, 2).reshape(1, s, h_q * d) @ t[p + "self_attn.o_proj.weight"].T
        x = rms(h, t[p + "post_attention_layernorm.weight"])
        gate, up = (x @ t[p + "mlp.gate_up_proj.weight"].T).chunk(2, -1)
        h = h + (torch.nn.functional.silu(gate) * up) @ t[p + "mlp.down_proj.weight"].T
    h = rms(h, t["model.norm.weight"])
    return (h[:, -1:] @ t["lm_head.weight"].T).numpy()


def test_tiny_llama_prefill_matches_torch():
    cfg = LlamaConfig()
    model = LlamaForCausalLM(cfg)
    model.to("float32")
    mod, named_params = model.export_tvm(spec=model.get_default_spec())
    names = [n for n, _ in named_params]
    assert names[:3] == ["model.embed_tokens.weight", "model.layers.0.self_attn.qkv_proj.weight",
                         "model.layers.0.self_attn.o_proj.weight"]
    assert names[-2:] == ["model.norm.weight", "lm_head.weight"]
    prefill = mod["prefill"]
    assert [p.name for p in prefill.params] == ["input_embed", "kv_cache", "packed_params"]
    assert prefill.attrs["num_input"] == 2
    kernels = {gv.name_hint for gv in mod.get_global_vars()}
    assert {"index", "rope_q", "rope_k", "causal_mask"} <= kernels

    rng = np.random.default_rng(0)
    weights = {n: (rng.standard_normal(p.shape) * 0.3).astype("float32") for n, p in named_params}
    params = [minitvm.nd.array(weights[n]) for n in names]
    vm = relax.VirtualMachine(minitvm.compile(relax.get_pipeline("zero")(mod), "llvm"), minitvm.cpu())
    cache = ShapeTuple([0])
    for seq_len in (1, 6):
        ids = rng.integers(0, cfg.vocab_size, seq_len).astype("int32")
        embedded = vm["embed"](minitvm.nd.array(ids), params).numpy()
        np.testing.assert_array_equal(embedded, weights["model.embed_tokens.weight"][ids])
        logits, cache_back = vm["prefill"](minitvm.nd.array(embedded[None]), cache, params)
        assert cache_back is cache and logits.shape == (1, 1, cfg.vocab_size)
        want = _torch_reference(cfg, weights, ids)
        np.testing.assert_allclose(logits.numpy(), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
