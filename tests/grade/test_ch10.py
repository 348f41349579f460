"""Graders for chapter 10 (``exercises/ch10.py``): one test per exercise, worth ``points``.

What you write in ``nn`` is called inside a module's ``forward`` here, exported with a symbolic
sequence length, compiled for ``llvm`` and run on seeded random data against numpy; the TE mask
is built once with symbolic shapes and run at prefill and decode shapes; the numpy exercises are
compared with references written here; the GEMV of exercise 10.7 (the grader's own, of other
sizes than the exercise file's) must match numpy and run at least 3x faster than the unscheduled
kernel, both measured here.
"""

from __future__ import annotations

import functools
import math
from types import SimpleNamespace

import numpy as np
import pytest

import minitvm
from minitvm import relax, te, tirx
from minitvm.grade.mistakes import LIKELY, Mistake, assert_allclose_or_name
from minitvm.ir import IRModule
from minitvm.relax.frontend import nn
from minitvm.runtime import ShapeTuple
from minitvm.s_tir import Schedule


@pytest.fixture
def ex(grade_module):
    return grade_module("ch10")


def _on(catalogue: list[Mistake], *args) -> list[Mistake]:
    """The catalogue's mistakes, each computing on ``args`` (this case's inputs)."""
    return [Mistake(m.says, functools.partial(m.computes, *args)) for m in catalogue]


def _vm(mod: IRModule) -> relax.VirtualMachine:
    return relax.VirtualMachine(minitvm.compile(relax.get_pipeline("zero")(mod), "llvm"), minitvm.cpu())


# ------------------------------------------------------------------ 10.1: RMSNorm in nn


def _rms_norm_np(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


RMS_NORM_MISTAKES = [
    Mistake("the mean of the squares is taken over every axis: RMSNorm normalises each token's vector on "
            "its own (axis=-1, keepdims=True)",
            lambda x, w, eps: x / np.sqrt(np.mean(x * x) + eps) * w),
    Mistake("eps is added after the square root: it goes under it, sqrt(mean(x * x) + eps)",
            lambda x, w, eps: x / (np.sqrt(np.mean(x * x, axis=-1, keepdims=True)) + eps) * w),
    Mistake("the mean is subtracted first: that is LayerNorm; RMSNorm only divides by the root mean square",
            lambda x, w, eps: (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps) * w),
]


@pytest.mark.points(2)
@pytest.mark.hint("The model in relax.frontend.nn: RMSNorm divides each token's vector by the root of the mean of "
                  "its squares, then scales it",
                  "the mean runs over the last axis and keeps it, so that it broadcasts against x; eps is added "
                  "before the reciprocal square root")
def test_rms_norm(ex):
    """Exercise 10.1: RMSNorm from nn.op, any sequence length, against numpy."""
    hidden, eps = 48, 1e-5

    class Norm(nn.Module):
        def __init__(self):
            self.weight = nn.Parameter((hidden,), "float32")

        def forward(self, x):
            return ex.rms_norm(x, self.weight, eps)

    mod, _ = Norm().export_tvm(spec={"forward": {"x": nn.spec.Tensor([1, "seq_len", hidden], "float32")}})
    text = mod.script()
    assert "rms_norm" not in text, "build RMSNorm from op.mean, op.square, op.rsqrt: op.rms_norm is the answer"
    vm = _vm(mod)
    rng = np.random.default_rng(101)
    w = rng.standard_normal(hidden).astype("float32")
    for seq_len in (1, 7):  # a decode step and a prefill, one executable
        x = (3 * rng.standard_normal((1, seq_len, hidden))).astype("float32")
        x[0, -1] *= 1e-3  # a token of tiny values: eps matters there
        got = vm["forward"](minitvm.nd.array(x), minitvm.nd.array(w))
        mistakes = _on(RMS_NORM_MISTAKES, x, w, eps)
        assert_allclose_or_name(got, _rms_norm_np(x, w, eps), mistakes, rtol=1e-4, atol=1e-5,
                                err_msg=f"seq_len={seq_len}")


# ------------------------------------------------------------------ 10.2: the causal mask in TE

_MASKED = -1e30  # anything at or below it is "masked" (min_value("float32") or -inf both count)


def _canonical(a: np.ndarray) -> np.ndarray:
    return np.where(a <= _MASKED, _MASKED, a)


def _mask_np(scores: np.ndarray, offset: bool = True, strict: bool = False) -> np.ndarray:
    _, q_len, kv_len = scores.shape
    i = np.arange(q_len)[:, None] + (kv_len - q_len if offset else 0)
    j = np.arange(kv_len)[None, :]
    keep = j < i if strict else j <= i
    return np.where(keep[None], scores, _MASKED)


CAUSAL_MASK_MISTAKES = [
    Mistake("query i is treated as position i: the new tokens are the last q_len of kv_len positions, so "
            "query i sits at kv_len - q_len + i (a decode step's one query sees every key)",
            lambda s: _mask_np(s, offset=False)),
    Mistake("the diagonal is masked too: a token attends to itself (keep j <= position, not j < position)",
            lambda s: _mask_np(s, strict=True)),
]


@pytest.mark.points(2)
@pytest.mark.hint("Prefill and decode: the new tokens are the last q_len positions of the cache: where is query i?",
                  "the last query sits at the last position of the cache, each query before it one position "
                  "earlier; a key stays when it is not after its query")
def test_causal_mask(ex):
    """Exercise 10.2: the mask, built once with symbolic shapes, at prefill and decode shapes."""
    q_len, kv_len = tirx.Var("q_len", "int64"), tirx.Var("kv_len", "int64")
    scores = te.placeholder((4, q_len, kv_len), "float32", name="scores")
    out = ex.causal_mask(scores)
    assert isinstance(out, te.Tensor), f"causal_mask must return a te.Tensor, not {type(out).__name__}"
    lib = minitvm.build(te.create_prim_func([scores, out]).with_attr("global_symbol", "main"), target="llvm")
    rng = np.random.default_rng(102)
    for q, kv in [(6, 6), (1, 9), (3, 8)]:  # a prefill, a decode step, a chunk after a cached prefix
        s = rng.standard_normal((4, q, kv)).astype("float32")
        got = minitvm.nd.empty((4, q, kv), "float32")
        lib["main"](minitvm.nd.array(s), got)
        mistakes = _on(CAUSAL_MASK_MISTAKES, s)
        assert_allclose_or_name(_canonical(got.numpy()), _mask_np(s), mistakes, rtol=0, atol=0,
                                err_msg=f"q_len={q}, kv_len={kv}")


# ------------------------------------------------------------------ 10.3: attention over a KV cache


def _attention_np(q: np.ndarray, keys: np.ndarray, values: np.ndarray, scale: bool = True,
                  axis: int = -1) -> np.ndarray:
    """q (1, h, d); keys, values (t, h, d) -> (1, h, d); the softmax over ``axis`` of (h, t)."""
    s = np.einsum("hd,thd->ht", q[0], keys) / (math.sqrt(q.shape[-1]) if scale else 1)
    p = np.exp(s - s.max(axis, keepdims=True))
    return np.einsum("ht,thd->hd", p / p.sum(axis, keepdims=True), values)[None]


ATTENTION_MISTAKES = [
    Mistake("the scores are not scaled: divide q K^T by sqrt(head_dim) before the softmax",
            lambda q, ks, vs: _attention_np(q, ks, vs, scale=False)),
    Mistake("the softmax runs over the heads: each head's weights sum to one over the positions (the last axis)",
            lambda q, ks, vs: _attention_np(q, ks, vs, axis=0)),
]


@pytest.mark.points(3)
@pytest.mark.hint("Attention needs the past: a KV cache: the step adds its key and value, then attends over every "
                  "cached position",
                  "with heads first, the query against the keys gives one score per position; scale, softmax over "
                  "the positions, then weight the values")
def test_cached_attention(ex):
    """Exercise 10.3: six decode steps through the caches, each against numpy."""
    heads, d = 4, 16

    class Attention(nn.Module):
        def __init__(self):
            self.k_cache = nn.KVCache(4, [heads, d])
            self.v_cache = nn.KVCache(4, [heads, d])

        def forward(self, q, k, v, total_seq_len):
            return ex.cached_attention(q, k, v, self.k_cache, self.v_cache, total_seq_len)

    one = nn.spec.Tensor([1, heads, d], "float32")
    spec = {"forward": {"q": one, "k": one, "v": one, "total_seq_len": int, "$": {"effect_mode": "packed"}}}
    vm = _vm(Attention().export_tvm(spec=spec)[0])
    (k_cache, v_cache) = vm["_initialize_effect"]()
    rng = np.random.default_rng(103)
    keys, values = [], []
    for step in range(1, 7):
        q, k, v = (rng.standard_normal((1, heads, d)).astype("float32") for _ in range(3))
        keys.append(k[0])
        values.append(v[0])
        got, (k_cache, v_cache) = vm["forward"](minitvm.nd.array(q), minitvm.nd.array(k), minitvm.nd.array(v),
                                                ShapeTuple([step]), [k_cache, v_cache])
        ks, vs = np.stack(keys), np.stack(values)
        mistakes = _on(ATTENTION_MISTAKES, q, ks, vs)
        assert_allclose_or_name(got, _attention_np(q, ks, vs), mistakes, rtol=1e-4, atol=1e-5,
                                err_msg=f"decode step {step}")


# ------------------------------------------------------------------ 10.4: top-k sampling


def _top_k_probs(logits: np.ndarray, k: int, temperature: float) -> np.ndarray:
    top = np.argsort(-logits, kind="stable")[:k]
    p = np.zeros_like(logits, dtype=np.float64)
    e = np.exp((logits[top] - logits[top].max()) / temperature)
    p[top] = e / e.sum()
    return p


@pytest.mark.points(2)
@pytest.mark.hint("The decode loop: temperature 0 is greedy; otherwise a softmax over the k largest logits only",
                  "take the ids of the k largest logits, softmax those logits divided by the temperature, draw one "
                  "of those ids with rng")
def test_sample_top_k(ex):
    """Exercise 10.4: greedy at temperature 0; otherwise draws only from the top k, as often as softmax says."""
    rng = np.random.default_rng(104)
    logits = rng.standard_normal(50) * 2
    greedy = ex.sample_top_k(logits, 5, 0.0, np.random.default_rng(0))
    assert isinstance(greedy, (int, np.integer)), f"return the token id as an int, not {type(greedy).__name__}"
    assert int(greedy) == int(np.argmax(logits)), f"at temperature 0 the token is argmax = {np.argmax(logits)}"
    draws = 3000
    for k, temperature in [(5, 1.0), (3, 0.5), (50, 2.0)]:
        gen = np.random.default_rng(k)
        counts = np.bincount([int(ex.sample_top_k(logits, k, temperature, gen)) for _ in range(draws)],
                             minlength=len(logits))
        want = _top_k_probs(logits, k, temperature)
        outside = np.flatnonzero((counts > 0) & (want == 0))
        assert outside.size == 0, (f"k={k}: token(s) {outside.tolist()} were drawn but are not among the {k} "
                                   "largest logits")
        worst = int(np.argmax(np.abs(counts / draws - want)))
        # 3000 draws: a frequency is within 0.04 of its probability far beyond 4 standard deviations
        assert abs(counts[worst] / draws - want[worst]) < 0.04, (
            f"k={k}, temperature={temperature}: token {worst} was drawn {counts[worst] / draws:.3f} of the time, "
            f"softmax(logits / temperature) over the top {k} gives it {want[worst]:.3f}")


# ------------------------------------------------------------------ 10.5: bytes per decode token


def _bytes_np(c, seq_len, wb, cb, gqa=True, cache=True, embed_row=True):
    h, i, d, layers = c.hidden_size, c.intermediate_size, c.head_dim, c.num_hidden_layers
    kv = (c.num_key_value_heads if gqa else c.num_attention_heads) * d
    q = c.num_attention_heads * d
    linear = layers * (h * q + 2 * h * kv + q * h + 3 * h * i) + c.vocab_size * h
    floats = (2 * layers + 1) * h + (h if embed_row else c.vocab_size * h)
    return linear * wb + 4 * floats + (2 * layers * kv * seq_len * cb if cache else 0)


BYTES_MISTAKES = [
    ("the KV cache is missing: attention reads the keys and values of every cached position, in every layer",
     dict(cache=False)),
    ("k and v are counted with num_attention_heads: with grouped-query attention they have num_key_value_heads",
     dict(gqa=False)),
    ("the whole embedding table is counted: a step looks up one row of it", dict(embed_row=False)),
]

_CONFIGS = [
    SimpleNamespace(hidden_size=256, intermediate_size=512, num_attention_heads=8, num_key_value_heads=4,
                    head_dim=32, num_hidden_layers=4, vocab_size=259),
    SimpleNamespace(hidden_size=4096, intermediate_size=11008, num_attention_heads=32, num_key_value_heads=32,
                    head_dim=128, num_hidden_layers=32, vocab_size=32000),  # Llama-2-7B's shape
    SimpleNamespace(hidden_size=2048, intermediate_size=5632, num_attention_heads=32, num_key_value_heads=4,
                    head_dim=64, num_hidden_layers=22, vocab_size=32000),  # TinyLlama-1.1B's
]


@pytest.mark.points(2)
@pytest.mark.hint("Prefill is compute, decode is memory: count what one step must read: every weight once, then the "
                  "cache",
                  "layer by layer: 7 linear layers and 2 norms; then lm_head, the final norm, one embedding row; "
                  "the cache holds k and v per layer, per key-value head, per position")
def test_decode_bytes_per_token(ex):
    """Exercise 10.5: three model shapes, three precisions, two cache lengths."""
    for c in _CONFIGS:
        for seq_len, wb, cb in [(100, 4, 4), (2000, 1, 2), (1, 0.5, 4)]:
            got = ex.decode_bytes_per_token(c, seq_len, wb, cb)
            want = _bytes_np(c, seq_len, wb, cb)
            if not math.isclose(float(got), want, rel_tol=1e-9):
                err = AssertionError(f"hidden_size={c.hidden_size}, seq_len={seq_len}, weight_bytes={wb}, "
                                     f"cache_bytes={cb}: expected {want:,.0f} bytes, got {float(got):,.0f}")
                for says, wrong in BYTES_MISTAKES:
                    if math.isclose(float(got), _bytes_np(c, seq_len, wb, cb, **wrong), rel_tol=1e-9):
                        err.add_note(f"{LIKELY} {says}")
                        break
                raise err


# ------------------------------------------------------------------ 10.6: int8 per-channel


def _dequantized(w: np.ndarray, rounding=np.round) -> np.ndarray:
    """w through symmetric int8, one scale per row (1 for a row of zeros)."""
    scale = np.abs(w).max(axis=1, keepdims=True) / np.float32(127)
    scale = np.where(scale > 0, scale, np.float32(1))
    return np.clip(rounding(w / scale), -127, 127) * scale


PER_COLUMN = ("one scale per column (input channel): a linear layer's output channel is a row of W "
              "(out_features, in_features), so the max is taken along axis 1")
PER_TENSOR = "one scale for the whole tensor: per-channel means one scale per output row"
QUANTIZE_MISTAKES = [
    Mistake("w / scale is truncated toward zero (astype) instead of rounded: np.round it first",
            lambda w: _dequantized(w, np.trunc)),
]


@pytest.mark.points(2)
@pytest.mark.hint("Quantized weights: one scale per row maps that row's largest magnitude to 127",
                  "divide, round to the nearest integer, clip, cast; a row of zeros needs a scale of 1; check the "
                  "dtypes: q int8, scale float32 of shape (out_features,)")
def test_quantize_per_channel(ex):
    """Exercise 10.6: dtypes and shapes, q * scale against the reference, and a layer's error."""
    rng = np.random.default_rng(106)
    w = (rng.standard_normal((96, 64)) * rng.uniform(0.01, 3, (96, 1))).astype("float32")  # rows of many sizes
    w[5] = 0  # a row of zeros must not divide by zero
    q, scale = (np.asarray(a) for a in ex.quantize_per_channel(w))
    assert q.dtype == np.int8 and q.shape == w.shape, f"q must be int8 of shape {w.shape}, got {q.dtype} {q.shape}"
    if scale.shape != (96,):
        err = AssertionError(f"scale must have shape (96,), one per output row; got {scale.shape}")
        likely = PER_COLUMN if scale.shape == (64,) else PER_TENSOR if scale.size == 1 else None
        if likely:
            err.add_note(f"{LIKELY} {likely}")
        raise err
    assert scale.dtype == np.float32, f"scale must be float32, got {scale.dtype}"
    assert np.all(np.isfinite(scale)) and np.all(scale > 0), "every scale must be positive (1 for a zero row)"
    back = q.astype("float32") * scale[:, None]
    mistakes = _on(QUANTIZE_MISTAKES, w)
    assert_allclose_or_name(back, _dequantized(w), mistakes, rtol=1e-5, atol=1e-6)
    x = rng.standard_normal((3, 64)).astype("float32")
    rel = np.abs(x @ back.T - x @ w.T).max() / np.abs(x @ w.T).max()
    assert rel < 0.02, f"the layer's outputs differ by {rel:.1%} of their largest: more than int8 rounding gives"


# ------------------------------------------------------------------ 10.7 (open): a fast GEMV


def _gemv(n: int, k: int) -> IRModule:
    W = te.placeholder((n, k), "float32", name="W")
    x = te.placeholder((k,), "float32", name="x")
    r = te.reduce_axis((0, k), "k")
    y = te.compute((n,), lambda i: te.sum(W[i, r] * x[r], axis=r), name="y")
    func = te.create_prim_func([W, x, y]).with_attr("global_symbol", "main").with_attr("tir.noalias", True)
    return IRModule({"main": func})


def _seconds(mod: IRModule, args, number: int) -> float:
    lib = minitvm.build(mod, target="llvm")
    return min(lib.time_evaluator("main", minitvm.cpu(), number=number)(*args).mean for _ in range(3))


@pytest.mark.points(3)
@pytest.mark.hint("Prefill and decode: two graphs of one model: the decode GEMV's schedule there (T_matmul_rf); the "
                  "naive loop adds one product at a time into one sum: no vectors, one core",
                  "a reduction can be cut into partial sums that a vector holds side by side (rfactor), and the "
                  "rows are independent of each other")
def test_fast_gemv(ex):
    """Exercise 10.7: y = W @ x right, and at least 3x faster than the unscheduled kernel."""
    n, k = 1536, 1024
    start = _gemv(n, k)
    result = ex.fast_gemv(start)
    mod = result.mod if isinstance(result, Schedule) else result
    assert isinstance(mod, IRModule), f"return an s_tir.Schedule or an IRModule, not {type(result).__name__}"
    rng = np.random.default_rng(107)
    w, x = rng.standard_normal((n, k)).astype("float32"), rng.standard_normal(k).astype("float32")
    args = [minitvm.nd.array(w), minitvm.nd.array(x), minitvm.nd.empty((n,), "float32")]
    minitvm.build(mod, target="llvm")["main"](*args)
    assert_allclose_or_name(args[2], w @ x, rtol=1e-3, atol=1e-3)
    naive, fast = _seconds(start, args, number=3), _seconds(mod, args, number=20)
    assert naive >= 3 * fast, (f"{fast * 1e6:.0f} us per call is not 3x faster than the unscheduled "
                               f"{naive * 1e6:.0f} us ({naive / fast:.1f}x)")
