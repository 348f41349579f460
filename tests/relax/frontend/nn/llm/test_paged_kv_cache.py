"""The paged KV cache at run time: its TIR kernels against a numpy attention, page bookkeeping, misuse.

The kernels are built once; the cache is made through ``vm.builtin.paged_attention_kv_cache_create``
as TVM's own runtime tests make it (compiled functions as arguments), and every step compares the
attention output with numpy on seeded random qkv: several sequences of different lengths in
one batch, a page size small enough that every sequence crosses page boundaries, prefill then
decode steps, a removed sequence whose pages are reused, a forked one.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm.ir.module import IRModule
from minitvm.relax.frontend.nn.llm._decode_kernels import _attention_decode_cpu
from minitvm.relax.frontend.nn.llm._page_kernels import _copy_single_page_cpu, _kv_cache_transpose_append
from minitvm.relax.frontend.nn.llm._prefill_kernels import _attention_prefill_cpu
from minitvm.relax.frontend.nn.llm.position_embedding import llama_rope_with_position_map
from minitvm.runtime.vm.builtins import ShapeTuple

H_QO, H_KV, D, LAYERS, PAGE = 4, 2, 8, 2, 4
THETA, SCALE = 10000.0, 1.0
SM_SCALE = D ** -0.5


def build_kernels(dtype, target="llvm"):
    funcs = {
        "tir_split_rotary": llama_rope_with_position_map(THETA, SCALE, D, H_QO, H_KV, dtype, {}),
        "kv_cache_transpose_append": _kv_cache_transpose_append(H_KV, D, dtype),
        "batch_prefill_paged_kv_cpu": _attention_prefill_cpu(H_KV, H_QO, D, dtype),
        "batch_decode_paged_kv_cpu": _attention_decode_cpu(H_KV, H_QO, D, dtype),
        "kv_cache_copy_single_page_cpu": _copy_single_page_cpu(H_KV, D, dtype),
    }
    return minitvm.build(IRModule(funcs), target=target)


@pytest.fixture(scope="module")
def lib():
    return build_kernels("float32")


def create(lib, max_batch=4, max_total=64, chunk=32, rope_mode=1, dtype="float32"):
    """TVM's 28 arguments of the creation global, in TVM's order (absent kernels: empty tuples)."""
    fn = minitvm.get_global_func("vm.builtin.paged_attention_kv_cache_create")
    return fn(ShapeTuple([max_batch, max_total, chunk, PAGE, 0, 1024]), ShapeTuple([0, LAYERS]), H_QO, H_KV, D, D,
              ShapeTuple([0] * LAYERS), False, rope_mode, SCALE, THETA, 0,
              minitvm.nd.array(np.zeros((), dtype)), lib["kv_cache_transpose_append"], (),
              (), ("tirx", lib["batch_prefill_paged_kv_cpu"]), ("tirx", lib["batch_decode_paged_kv_cpu"]),
              (), (), (), (), (), (), lib["tir_split_rotary"], lib["kv_cache_copy_single_page_cpu"], (), ())


def rope(x, positions):
    """HF Llama's rotary embedding of x (tokens, heads, D) at the given positions."""
    inv_freq = 1.0 / THETA ** (np.arange(0, D, 2, dtype=np.float64) / D)
    angles = np.outer(np.asarray(positions, np.float64) * SCALE, inv_freq)
    cos, sin = np.cos(np.concatenate([angles] * 2, -1)), np.sin(np.concatenate([angles] * 2, -1))
    rotated = np.concatenate([-x[..., D // 2:], x[..., :D // 2]], -1)
    return x * cos[:, None, :] + rotated * sin[:, None, :]


class Reference:
    """Every sequence's rotated keys and values per layer, and numpy attention over them."""

    def __init__(self, rope_on=True):
        self.k, self.v, self.rope_on = {}, {}, rope_on

    def add(self, seq):
        self.k[seq] = [np.zeros((0, H_KV, D)) for _ in range(LAYERS)]
        self.v[seq] = [np.zeros((0, H_KV, D)) for _ in range(LAYERS)]

    def attend(self, layer, seqs, lengths, qkv):
        out, row = [], 0
        for seq, n in zip(seqs, lengths):
            chunk = qkv[row:row + n].astype(np.float64)
            row += n
            start = len(self.k[seq][layer])
            pos = np.arange(start, start + n)
            q, k, v = chunk[:, :H_QO], chunk[:, H_QO:H_QO + H_KV], chunk[:, H_QO + H_KV:]
            if self.rope_on:
                q, k = rope(q, pos), rope(k, pos)
            keys = self.k[seq][layer] = np.concatenate([self.k[seq][layer], k])
            vals = self.v[seq][layer] = np.concatenate([self.v[seq][layer], v])
            for i in range(n):
                visible = start + i + 1  # causal: up to and including its own position
                heads = []
                for h in range(H_QO):
                    s = keys[:visible, h // (H_QO // H_KV)] @ q[i, h] * SM_SCALE
                    p = np.exp(s - s.max())
                    heads.append((p / p.sum()) @ vals[:visible, h // (H_QO // H_KV)])
                out.append(np.stack(heads))
        return np.stack(out)


def forward(cache, ref, rng, seqs, lengths, dtype="float32", tol=(1e-4, 1e-5)):
    """One forward through both layers; each layer's output checked against the reference."""
    f = minitvm.get_global_func
    f("vm.builtin.kv_state_begin_forward")(cache, ShapeTuple(seqs), ShapeTuple(lengths))
    total = sum(lengths)
    for layer in range(LAYERS):
        qkv = rng.standard_normal((total, H_QO + 2 * H_KV, D)).astype(dtype)
        out = minitvm.nd.empty((total, H_QO, D), dtype)
        f("vm.builtin.attention_kv_cache_attention_with_fused_qkv")(cache, layer, SM_SCALE, minitvm.nd.array(qkv), out)
        np.testing.assert_allclose(out.numpy(), ref.attend(layer, seqs, lengths, qkv), rtol=tol[0], atol=tol[1])
    f("vm.builtin.kv_state_end_forward")(cache)


def test_prefill_decode_remove_and_reuse_match_numpy(lib):
    rng = np.random.default_rng(0)
    cache, ref = create(lib), Reference()
    add = minitvm.get_global_func("vm.builtin.kv_state_add_sequence")
    for seq in (0, 1, 2):
        add(cache, seq)
        ref.add(seq)
    forward(cache, ref, rng, [0, 1, 2], [5, 9, 3])  # prefill: three lengths, pages of 4
    # pages are handed out lowest id first, in the order of the forward's sequences
    assert [cache.page_table(s) for s in (0, 1, 2)] == [([0, 1], 5), ([2, 3, 4], 9), ([5], 3)]
    positions = minitvm.get_global_func("vm.builtin.attention_kv_cache_get_query_positions")
    for _ in range(3):  # decode: one token per sequence
        forward(cache, ref, rng, [2, 0, 1], [1, 1, 1])
    assert minitvm.get_global_func("vm.builtin.attention_kv_cache_get_total_sequence_length")(cache) == 8 + 12 + 6
    minitvm.get_global_func("vm.builtin.kv_state_remove_sequence")(cache, 1)
    free_before = minitvm.get_global_func("vm.builtin.attention_kv_cache_get_num_available_pages")(cache)
    add(cache, 7)
    ref.add(7)
    # a prefill of a new sequence beside decodes: the freed pages are reused, the mixed batch
    # takes the prefill kernel
    minitvm.get_global_func("vm.builtin.kv_state_begin_forward")(cache, ShapeTuple([0, 7]), ShapeTuple([1, 6]))
    np.testing.assert_array_equal(positions(cache).numpy(), [8, 0, 1, 2, 3, 4, 5])
    minitvm.get_global_func("vm.builtin.kv_state_end_forward")(cache)
    minitvm.get_global_func("vm.builtin.kv_state_popn")(cache, 0, 1)  # undo that forward's reservation
    minitvm.get_global_func("vm.builtin.kv_state_popn")(cache, 7, 6)
    forward(cache, ref, rng, [0, 7, 2], [1, 6, 1])
    assert minitvm.get_global_func("vm.builtin.attention_kv_cache_get_num_available_pages")(cache) == free_before - 3
    for _ in range(2):
        forward(cache, ref, rng, [7, 0, 2], [1, 1, 1])


def test_a_float16_cache_matches_numpy():
    """TVM's LLM tutorial exports its cache in float16: pages and q/k/v in float16, scores and
    sums in float32; against float64 numpy on the same float16 inputs, to float16's precision
    (the rotated keys are rounded to float16 when they enter the pages).  Built without LLVM's
    optimizer (-opt-level=0, a seventh of the build): minitvm emits the same kernels either way, and
    the float32 tests run them optimized."""
    rng = np.random.default_rng(3)
    cache, ref = create(build_kernels("float16", "llvm -opt-level=0"), dtype="float16"), Reference()
    for seq in (0, 1):
        minitvm.get_global_func("vm.builtin.kv_state_add_sequence")(cache, seq)
        ref.add(seq)
    forward(cache, ref, rng, [0, 1], [6, 3], "float16", (1e-2, 4e-3))
    for _ in range(2):
        forward(cache, ref, rng, [1, 0], [1, 1], "float16", (1e-2, 4e-3))


def test_cache_contents_fork_and_no_rope(lib):
    rng = np.random.default_rng(1)
    cache, ref = create(lib, rope_mode=0), Reference(rope_on=False)
    minitvm.get_global_func("vm.builtin.kv_state_add_sequence")(cache, 3)
    ref.add(3)
    forward(cache, ref, rng, [3], [10])
    k = minitvm.nd.empty((LAYERS, 7, H_KV, D), "float32")
    v = minitvm.nd.empty((LAYERS, 7, H_KV, D), "float32")
    minitvm.get_global_func("vm.builtin.attention_kv_cache_debug_get_kv")(cache, 3, 2, 9, k, v)
    np.testing.assert_allclose(k.numpy(), np.stack(ref.k[3])[:, 2:9], rtol=1e-6)
    np.testing.assert_allclose(v.numpy(), np.stack(ref.v[3])[:, 2:9], rtol=1e-6)
    # a fork at position 6 copies the parent's first 6 tokens (one full page, half of the next)
    minitvm.get_global_func("vm.builtin.kv_state_fork_sequence")(cache, 3, 4, 6)
    ref.add(4)
    for layer in range(LAYERS):
        ref.k[4][layer], ref.v[4][layer] = ref.k[3][layer][:6], ref.v[3][layer][:6]
    forward(cache, ref, rng, [4, 3], [3, 2])
    forward(cache, ref, rng, [3, 4], [1, 1])


def test_single_sequence_decode_matches_one_long_prefill(lib):
    """Decoding token by token gives what prefilling the same tokens at once gives (causality)."""
    rng = np.random.default_rng(2)
    qkv = rng.standard_normal((LAYERS, 7, H_QO + 2 * H_KV, D)).astype("float32")
    f = minitvm.get_global_func
    outs = []
    for lengths in ([7], [3, 1, 1, 1, 1]):
        cache = create(lib)
        f("vm.builtin.kv_state_add_sequence")(cache, 0)
        rows, start = [], 0
        for n in lengths:
            f("vm.builtin.kv_state_begin_forward")(cache, ShapeTuple([0]), ShapeTuple([n]))
            step = []
            for layer in range(LAYERS):
                out = minitvm.nd.empty((n, H_QO, D), "float32")
                f("vm.builtin.attention_kv_cache_attention_with_fused_qkv")(
                    cache, layer, SM_SCALE, minitvm.nd.array(qkv[layer, start:start + n]), out)
                step.append(out.numpy())
            f("vm.builtin.kv_state_end_forward")(cache)
            rows.append(np.stack(step, 1))
            start += n
        outs.append(np.concatenate(rows))
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5, atol=1e-6)


def test_misuse_is_named(lib):
    f = minitvm.get_global_func
    cache = create(lib, max_batch=2, max_total=16, chunk=8)
    begin, end = f("vm.builtin.kv_state_begin_forward"), f("vm.builtin.kv_state_end_forward")
    with pytest.raises(ValueError, match='sequence "5" cannot be found'):
        begin(cache, ShapeTuple([5]), ShapeTuple([1]))
    f("vm.builtin.kv_state_add_sequence")(cache, 0)
    with pytest.raises(ValueError, match="already in the KV cache"):
        f("vm.builtin.kv_state_add_sequence")(cache, 0)
    with pytest.raises(ValueError, match="exceed prefill_chunk_size=8"):
        begin(cache, ShapeTuple([0]), ShapeTuple([9]))
    with pytest.raises(ValueError, match=r"seq_ids size \(1\) and append_lengths size \(2\) mismatch"):
        begin(cache, ShapeTuple([0]), ShapeTuple([1, 2]))
    qkv = minitvm.nd.array(np.ones((2, H_QO + 2 * H_KV, D), "float32"))
    out = minitvm.nd.empty((2, H_QO, D), "float32")
    attn = f("vm.builtin.attention_kv_cache_attention_with_fused_qkv")
    with pytest.raises(RuntimeError, match="outside a forward; call vm.builtin.kv_state_begin_forward"):
        attn(cache, 0, SM_SCALE, qkv, out)
    begin(cache, ShapeTuple([0]), ShapeTuple([3]))
    with pytest.raises(RuntimeError, match="begin_forward called twice without end_forward"):
        begin(cache, ShapeTuple([0]), ShapeTuple([1]))
    with pytest.raises(ValueError, match=r"qkv is \(2, 8, 8\) float32, expected \(3, 8, 8\)"):
        attn(cache, 0, SM_SCALE, qkv, out)
    with pytest.raises(ValueError, match="layer_id 2 is outside 0..1"):
        attn(cache, 2, SM_SCALE, qkv, out)
    end(cache)
    with pytest.raises(RuntimeError, match="end_forward called without begin_forward"):
        end(cache)
    for _ in range(2):  # 6 pages of 4 (16 tokens plus a spare per batch slot): 3 + 2 * 8 = 19 tokens on 5
        begin(cache, ShapeTuple([0]), ShapeTuple([8]))
        end(cache)
    with pytest.raises(ValueError, match="KV cache is full"):
        begin(cache, ShapeTuple([0]), ShapeTuple([8]))
    with pytest.raises(TypeError, match="must be a KV cache"):
        begin(None, ShapeTuple([0]), ShapeTuple([1]))


def test_later_layers_of_a_forward_still_check_what_changes(lib):
    """From the second layer of a forward on, the kernels run without their own argument check
    (the first layer's was done): the cache itself refuses a qkv or an output that differs."""
    f = minitvm.get_global_func
    cache = create(lib)
    f("vm.builtin.kv_state_add_sequence")(cache, 0)
    f("vm.builtin.kv_state_begin_forward")(cache, ShapeTuple([0]), ShapeTuple([2]))
    attn = f("vm.builtin.attention_kv_cache_attention_with_fused_qkv")
    rng = np.random.default_rng(5)
    qkv = minitvm.nd.array(rng.standard_normal((2, H_QO + 2 * H_KV, D)).astype("float32"))
    out = minitvm.nd.empty((2, H_QO, D), "float32")
    attn(cache, 0, SM_SCALE, qkv, out)
    with pytest.raises(ValueError, match=r"qkv is \(1, 8, 8\) float32, expected \(2, 8, 8\)"):
        attn(cache, 1, SM_SCALE, minitvm.nd.array(np.ones((1, H_QO + 2 * H_KV, D), "float32")), out)
    with pytest.raises(ValueError, match=r"output is \(2, 4, 8\) float64, expected \(2, 4, 8\) float32"):
        attn(cache, 1, SM_SCALE, qkv, minitvm.nd.empty((2, H_QO, D), "float64"))
    with pytest.raises(TypeError, match="qkv must be a tensor"):
        attn(cache, 1, SM_SCALE, qkv.numpy(), out)
    # the unchecked layer computes what a checked call computes: layer 1 from a fresh cache's layer 0 path
    attn(cache, 1, SM_SCALE, qkv, out)
    fresh = create(lib)
    f("vm.builtin.kv_state_add_sequence")(fresh, 0)
    f("vm.builtin.kv_state_begin_forward")(fresh, ShapeTuple([0]), ShapeTuple([2]))
    checked = minitvm.nd.empty((2, H_QO, D), "float32")
    attn(fresh, 0, SM_SCALE, qkv, checked)
    np.testing.assert_array_equal(out.numpy(), checked.numpy())
