"""Whole models written with Relax operators, legalized and run against numpy: an MLP, a
LeNet-style CNN and a transformer block, each with a symbolic batch dimension."""

from __future__ import annotations

import math

import numpy as np
import pytest

from minitvm import relax, tir
from minitvm.ir import assert_structural_equal
from minitvm.relax import op as R
from minitvm.relax.pipeline import high_level_ops
from minitvm.relax.transform import LegalizeOps
from minitvm.script import from_source
from minitvm.testing.op_reference import conv2d_nchw, pool2d_nchw
from minitvm.testing.relax_eval import evaluate

RNG = np.random.default_rng(11)


def rand(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype("float32")


def params(**shapes):
    return {name: relax.Var(name, relax.TensorStructInfo(shape, dtype))
            for name, (shape, dtype) in shapes.items()}


def legalize(mod):
    mod = LegalizeOps()(mod)
    assert high_level_ops(mod) == [] and relax.analysis.well_formed(mod)
    return mod


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def build_mlp():
    n = tir.Var("n", "int64")
    p = params(x=((n, 784), "float32"), w0=((128, 784), "float32"), b0=((128,), "float32"),
               w1=((10, 128), "float32"), b1=((10,), "float32"))

    bb = relax.BlockBuilder()
    with bb.function("main", list(p.values())):
        with bb.dataflow():
            h = bb.emit(R.nn.relu(R.linear(p["x"], p["w0"], p["b0"])))
            out = bb.emit_output(R.nn.log_softmax(R.linear(h, p["w1"], p["b1"])))
        bb.emit_func_output(out)
    return bb.get()


def test_mlp():
    mod = legalize(build_mlp())
    x, w0, b0, w1, b1 = rand(3, 784), rand(128, 784, scale=0.05), rand(128), rand(10, 128, scale=0.1), rand(10)
    logits = np.maximum(x @ w0.T + b0, 0) @ w1.T + b1
    want = logits - logits.max(-1, keepdims=True)
    want = want - np.log(np.exp(want).sum(-1, keepdims=True))
    np.testing.assert_allclose(evaluate(mod, "main", x, w0, b0, w1, b1), want, rtol=1e-4, atol=1e-4)


def build_cnn():
    n = tir.Var("n", "int64")
    p = params(x=((n, 1, 12, 12), "float32"), c1=((4, 1, 3, 3), "float32"), c1b=((1, 4, 1, 1), "float32"),
               c2=((8, 4, 3, 3), "float32"), fw=((10, 8 * 2 * 2), "float32"), fb=((10,), "float32"))

    bb = relax.BlockBuilder()
    with bb.function("main", list(p.values())):
        with bb.dataflow():
            h = bb.emit(R.nn.relu(R.add(R.nn.conv2d(p["x"], p["c1"], padding=1), p["c1b"])))   # n,4,12,12
            h = bb.emit(R.nn.max_pool2d(h, 2, 2))                                             # n,4,6,6
            h = bb.emit(R.nn.relu(R.nn.conv2d(h, p["c2"])))                                   # n,8,4,4
            h = bb.emit(R.nn.avg_pool2d(h, 2, 2))                                             # n,8,2,2
            h = bb.emit(R.reshape(h, (h.struct_info.shape.values[0], -1)))                    # n,32
            out = bb.emit_output(R.nn.softmax(R.linear(h, p["fw"], p["fb"])))
        bb.emit_func_output(out)
    return bb.get()


def test_lenet_style_cnn():
    mod = legalize(build_cnn())
    x, c1, c1b, c2 = rand(2, 1, 12, 12), rand(4, 1, 3, 3), rand(1, 4, 1, 1), rand(8, 4, 3, 3, scale=0.3)
    fw, fb = rand(10, 32, scale=0.3), rand(10)
    h = np.maximum(conv2d_nchw(x, c1, padding=(1, 1, 1, 1)) + c1b, 0)
    h = pool2d_nchw(h, 2, 2, (0,) * 4, "max")
    h = pool2d_nchw(np.maximum(conv2d_nchw(h, c2), 0), 2, 2, (0,) * 4, "avg")
    want = softmax(h.reshape(2, -1) @ fw.T + fb)
    np.testing.assert_allclose(evaluate(mod, "main", x, c1, c1b, c2, fw, fb), want, rtol=1e-4, atol=1e-5)


SEQ, D, VOCAB = 4, 8, 16


def build_transformer():
    """Token embedding, one-head attention with a causal mask, layer norms and a gelu MLP."""
    n = tir.Var("n", "int64")     # batch
    seq, d, vocab = SEQ, D, VOCAB
    p = params(tokens=((n, seq), "int64"), emb=((vocab, d), "float32"), wqkv=((3 * d, d), "float32"),
               wo=((d, d), "float32"), g1=((d,), "float32"), be1=((d,), "float32"),
               w1=((2 * d, d), "float32"), w2=((d, 2 * d), "float32"), g2=((d,), "float32"),
               be2=((d,), "float32"), mask=((seq, seq), "bool"))

    bb = relax.BlockBuilder()
    with bb.function("main", list(p.values())):
        with bb.dataflow():
            x = bb.emit(R.take(p["emb"], p["tokens"], axis=0))                 # n, seq, d
            h = bb.emit(R.nn.layer_norm(x, p["g1"], p["be1"]))
            qkv = bb.emit(R.split(R.linear(h, p["wqkv"]), 3, axis=-1))
            q, k, v = (bb.emit(relax.TupleGetItem(qkv, i)) for i in range(3))
            scores = bb.emit(R.divide(R.matmul(q, R.permute_dims(k, [0, 2, 1])),
                                      relax.const(np.float32(math.sqrt(d)))))
            scores = bb.emit(R.where(p["mask"], scores, relax.const(np.float32(-1e9))))
            attn = bb.emit(R.matmul(R.nn.softmax(scores, axis=-1), v))
            x = bb.emit(R.add(x, R.linear(attn, p["wo"])))
            h = bb.emit(R.nn.layer_norm(x, p["g2"], p["be2"]))
            h = bb.emit(R.linear(R.nn.gelu(R.linear(h, p["w1"])), p["w2"]))
            out = bb.emit_output(R.mean(R.add(x, h), axis=1))                   # n, d
        bb.emit_func_output(out)
    return bb.get()


def test_transformer_block():
    seq, d, vocab = SEQ, D, VOCAB
    mod = legalize(build_transformer())
    tokens = RNG.integers(0, vocab, (2, seq)).astype("int64")
    emb, wqkv, wo = rand(vocab, d), rand(3 * d, d, scale=0.3), rand(d, d, scale=0.3)
    g1, be1, g2, be2 = rand(d), rand(d), rand(d), rand(d)
    w1, w2 = rand(2 * d, d, scale=0.3), rand(d, 2 * d, scale=0.3)
    mask = np.tril(np.ones((seq, seq), bool))

    def ln(t, g, b):
        return (t - t.mean(-1, keepdims=True)) / np.sqrt(t.var(-1, keepdims=True) + 1e-5) * g + b

    erf = np.vectorize(math.erf)
    x = emb[tokens]
    q, k, v = np.split(ln(x, g1, be1) @ wqkv.T, 3, axis=-1)
    scores = np.where(mask, q @ k.transpose(0, 2, 1) / np.sqrt(d), -1e9)
    x = x + (softmax(scores) @ v) @ wo.T
    u = ln(x, g2, be2) @ w1.T
    h = (0.5 * u * (1 + erf(u / np.sqrt(2)))) @ w2.T
    want = (x + h).mean(axis=1)
    got = evaluate(mod, "main", tokens, emb, wqkv, wo, g1, be1, w1, w2, g2, be2, mask)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("build", [build_mlp, build_cnn, build_transformer])
def test_models_round_trip_through_tvmscript_before_and_after_legalization(build):
    for mod in (build(), LegalizeOps()(build())):
        assert_structural_equal(from_source(mod.script()), mod)
