"""``PagedKVCache`` in ``relax.frontend.nn``: a one-layer attention exported as the tutorial exports
its Llama (``nn.spec.Object(object_type=PagedKVCache)``, a ``create_tir_paged_kv_cache`` of int
arguments), compiled, and run prefill then decode against a torch reference; ``llama_rope``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import minitvm
from minitvm import relax
from minitvm.relax.frontend import nn
from minitvm.relax.frontend.nn import op
from minitvm.relax.frontend.nn.llm.kv_cache import PagedKVCache, RopeMode, TIRPagedKVCache
from minitvm.relax.frontend.nn.llm.position_embedding import llama_rope
from minitvm.runtime.vm.builtins import ShapeTuple

HIDDEN, H_Q, H_KV, D, THETA = 32, 4, 2, 8, 10000.0


class Attention(nn.Module):
    def __init__(self):
        self.qkv_proj = nn.Linear(HIDDEN, (H_Q + 2 * H_KV) * D, bias=False)
        self.o_proj = nn.Linear(H_Q * D, HIDDEN, bias=False)

    def forward(self, x: nn.Tensor, paged_kv_cache: PagedKVCache, layer_id: int):
        b, s, _ = x.shape
        qkv = op.reshape(self.qkv_proj(x), (b, s, H_Q + 2 * H_KV, D))
        out = paged_kv_cache.attention_with_fused_qkv(layer_id, qkv, H_Q, sm_scale=D ** -0.5)
        return self.o_proj(op.reshape(out, (b, s, H_Q * D)))


class OneLayer(nn.Module):
    def __init__(self):
        self.attn = Attention()

    def prefill(self, x: nn.Tensor, paged_kv_cache: PagedKVCache):
        return self.attn(x, paged_kv_cache, 0), paged_kv_cache

    def decode(self, x: nn.Tensor, paged_kv_cache: PagedKVCache):
        return self.attn(x, paged_kv_cache, 0), paged_kv_cache

    def positions(self, x: nn.Tensor, paged_kv_cache: PagedKVCache):
        return paged_kv_cache.get_query_positions(x.shape[0])

    def create_tir_paged_kv_cache(self, max_batch_size, max_total_seq_len, prefill_chunk_size, page_size):
        return TIRPagedKVCache(
            attn_kind="mha", max_batch_size=max_batch_size, max_total_seq_len=max_total_seq_len,
            prefill_chunk_size=prefill_chunk_size, page_size=page_size, support_sliding_window=0,
            layer_partition=relax.ShapeExpr([0, 1]), num_hidden_layers=1, num_attention_heads=H_Q,
            num_key_value_heads=H_KV, qk_head_dim=D, v_head_dim=D, mla_original_qk_head_dim=0,
            mla_original_v_head_dim=0, rope_mode=RopeMode.NORMAL, rope_scale=1, rope_theta=THETA, rope_scaling={},
            rope_ext_factors=minitvm.tir.IntImm("int64", 0), rotary_dim=D, dtype="float32", target="llvm",
            enable_disaggregation=False)

    def get_default_spec(self):
        cache = nn.spec.Object(object_type=PagedKVCache)
        mode = {"param_mode": "packed", "effect_mode": "none"}
        return nn.spec.ModuleSpec.from_raw({
            "prefill": {"x": nn.spec.Tensor([1, "seq_len", HIDDEN], "float32"), "paged_kv_cache": cache, "$": mode},
            "decode": {"x": nn.spec.Tensor([1, 1, HIDDEN], "float32"), "paged_kv_cache": cache, "$": mode},
            "positions": {"x": nn.spec.Tensor(["total"], "int32"), "paged_kv_cache": cache,
                          "$": {"param_mode": "none", "effect_mode": "none"}},
            "create_tir_paged_kv_cache": {"max_batch_size": int, "max_total_seq_len": int, "prefill_chunk_size": int,
                                          "page_size": int, "$": {"param_mode": "none", "effect_mode": "none"}},
        }, self)


def torch_rope(x, start):
    """HF Llama's rotary embedding of x (seq, heads, D) at positions start.."""
    inv_freq = 1.0 / THETA ** (torch.arange(0, D, 2, dtype=torch.float32) / D)
    angles = torch.outer(torch.arange(start, start + x.shape[0], dtype=torch.float32), inv_freq)
    emb = torch.cat([angles, angles], -1)
    rotated = torch.cat([-x[..., D // 2:], x[..., :D // 2]], -1)
    return x * emb.cos()[:, None] + rotated * emb.sin()[:, None]


class TorchAttention:
    """The same layer in torch, with a growing k/v cache of its own."""

    def __init__(self, w_qkv, w_o):
        self.w_qkv, self.w_o = torch.from_numpy(w_qkv), torch.from_numpy(w_o)
        self.k = torch.zeros(0, H_KV, D)
        self.v = torch.zeros(0, H_KV, D)

    def __call__(self, x):
        qkv = (torch.from_numpy(x[0]) @ self.w_qkv.T).reshape(-1, H_Q + 2 * H_KV, D)
        start, n = self.k.shape[0], qkv.shape[0]
        q, k, v = qkv[:, :H_Q], qkv[:, H_Q:H_Q + H_KV], qkv[:, H_Q + H_KV:]
        q, k = torch_rope(q, start), torch_rope(k, start)
        self.k, self.v = torch.cat([self.k, k]), torch.cat([self.v, v])
        keys = self.k.repeat_interleave(H_Q // H_KV, dim=1).transpose(0, 1)
        vals = self.v.repeat_interleave(H_Q // H_KV, dim=1).transpose(0, 1)
        mask = torch.arange(start + n)[None, :] <= torch.arange(start, start + n)[:, None]
        out = torch.nn.functional.scaled_dot_product_attention(q.transpose(0, 1), keys, vals, attn_mask=mask)
        return (out.transpose(0, 1).reshape(n, H_Q * D) @ self.w_o.T).numpy()[None]


@pytest.fixture(scope="module")
def compiled():
    model = OneLayer()
    mod, named_params = model.export_tvm(spec=model.get_default_spec())
    vm = relax.VirtualMachine(minitvm.compile(mod, target="llvm"), minitvm.cpu())
    return vm, [name for name, _ in named_params]


def test_prefill_then_decode_match_torch(compiled):
    vm, names = compiled
    rng = np.random.default_rng(5)
    weights = {"attn.qkv_proj.weight": rng.standard_normal(((H_Q + 2 * H_KV) * D, HIDDEN)).astype("float32") * 0.2,
               "attn.o_proj.weight": rng.standard_normal((HIDDEN, H_Q * D)).astype("float32") * 0.2}
    params = [minitvm.nd.array(weights[n]) for n in names]
    ref = TorchAttention(weights["attn.qkv_proj.weight"], weights["attn.o_proj.weight"])
    cache = vm["create_tir_paged_kv_cache"](ShapeTuple([2]), ShapeTuple([64]), ShapeTuple([32]), ShapeTuple([4]))
    f = minitvm.get_global_func
    f("vm.builtin.kv_state_add_sequence")(cache, 0)
    for step, n in enumerate([7, 1, 1, 1]):  # a prefill crossing a page, then decodes
        x = rng.standard_normal((1, n, HIDDEN)).astype("float32")
        f("vm.builtin.kv_state_begin_forward")(cache, ShapeTuple([0]), ShapeTuple([n]))
        out, cache = vm["prefill" if step == 0 else "decode"](x, cache, params)
        f("vm.builtin.kv_state_end_forward")(cache)
        np.testing.assert_allclose(out.numpy(), ref(x), rtol=1e-4, atol=1e-5)
    f("vm.builtin.kv_state_add_sequence")(cache, 1)
    f("vm.builtin.kv_state_begin_forward")(cache, ShapeTuple([1, 0]), ShapeTuple([3, 1]))
    positions = vm["positions"](np.zeros(4, "int32"), cache)  # where each new token sits in its sequence
    np.testing.assert_array_equal(positions.numpy(), [0, 1, 2, 10])


class RopeOnly(nn.Module):
    def forward(self, qkv: nn.Tensor, total_seq_len: int):
        return llama_rope(qkv, total_seq_len, THETA, 1.0, H_Q, H_KV, {})


def test_llama_rope_matches_torch():
    spec = {"forward": {"qkv": nn.spec.Tensor([1, "s", H_Q + 2 * H_KV, D], "float32"), "total_seq_len": int,
                        "$": {"param_mode": "none", "effect_mode": "none"}}}
    model = RopeOnly()
    mod, _ = model.export_tvm(spec=nn.spec.ModuleSpec.from_raw(spec, model))
    vm = relax.VirtualMachine(minitvm.compile(mod, target="llvm"), minitvm.cpu())
    qkv = np.random.default_rng(6).standard_normal((1, 5, H_Q + 2 * H_KV, D)).astype("float32")
    q, k, v = vm["forward"](qkv, 9)  # 5 new tokens after 4 cached ones: positions 4..8
    t = torch.from_numpy(qkv[0])
    np.testing.assert_allclose(q.numpy()[0], torch_rope(t[:, :H_Q], 4).numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(k.numpy()[0], torch_rope(t[:, H_Q:H_Q + H_KV], 4).numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(v.numpy()[0], qkv[0, :, H_Q + H_KV:])
