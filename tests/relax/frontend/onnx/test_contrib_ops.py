"""onnxruntime's contrib operators (domain com.microsoft) through from_onnx, against onnxruntime
on seeded random data: the gelus, SkipLayerNormalization (with its statistics outputs),
EmbedLayerNormalization and BERT's fused Attention."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from minitvm.relax.frontend.onnx import from_onnx

from ._check import check, model_of

F = "float32"
RNG = np.random.default_rng(0)


def _ms_model(op, names, inputs, outputs, **attrs):
    model = model_of([helper.make_node(op, names, list(outputs), domain="com.microsoft", **attrs)], inputs, outputs,
                     opset=14)
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return model


@pytest.mark.parametrize("op, names", [("Gelu", ["x"]), ("BiasGelu", ["x", "b"]), ("FastGelu", ["x"]),
                                       ("FastGelu", ["x", "b"])])
def test_gelus(op, names):
    shapes = {"x": (F, [4, 6]), "b": (F, [6])}
    check(_ms_model(op, names, {n: shapes[n] for n in names}, {"y": (F, [4, 6])}), rtol=1e-4, atol=1e-5)


def test_skip_layer_normalization_and_its_statistics():
    h = 16
    ins = {"x": (F, [2, 3, h]), "skip": (F, [2, 3, h]), "gamma": (F, [h]), "beta": (F, [h]), "bias": (F, [h])}
    outs = {"y": (F, [2, 3, h]), "mean": (F, [2, 3, 1]), "inv_std": (F, [2, 3, 1]), "sum": (F, [2, 3, h])}
    check(_ms_model("SkipLayerNormalization", list(ins), ins, outs, epsilon=1e-4), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("with_segments", [True, False])
def test_embed_layer_normalization(with_segments):
    b, s, h, vocab = 2, 5, 8, 11
    ins = {"ids": ("int32", [b, s]), "seg": ("int32", [b, s]), "word": (F, [vocab, h]), "pos": (F, [s, h]),
           "seg_emb": (F, [2, h]), "gamma": (F, [h]), "beta": (F, [h])}
    names = ["ids", "seg" if with_segments else "", "word", "pos", "seg_emb" if with_segments else "", "gamma", "beta"]
    if not with_segments:
        del ins["seg"], ins["seg_emb"]
    values = {n: RNG.standard_normal(shape).astype(dt) for n, (dt, shape) in ins.items() if dt == F}
    values["ids"] = RNG.integers(0, vocab, [b, s]).astype("int32")
    if with_segments:
        values["seg"] = RNG.integers(0, 2, [b, s]).astype("int32")
    model = _ms_model("EmbedLayerNormalization", names, ins, {"y": (F, [b, s, h]), "mask": ("int32", [b])},
                      epsilon=1e-4)
    check(model, inputs=values, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mask_rank", [2, 3])
def test_fused_attention(mask_rank):
    b, s, hidden, heads, sizes = 2, 4, 16, 4, [8, 8, 12]
    ins = {"x": (F, [b, s, hidden]), "w": (F, [hidden, sum(sizes)]), "bias": (F, [sum(sizes)]),
           "mask": ("int32", [b, s] if mask_rank == 2 else [b, s, s]), "rel": (F, [b, heads, s, s])}
    values = {n: RNG.standard_normal(shape).astype(dt) for n, (dt, shape) in ins.items() if dt == F}
    values["mask"] = RNG.integers(0, 2, ins["mask"][1]).astype("int32")
    values["mask"][..., 0] = 1  # every query keeps one key
    model = _ms_model("Attention", ["x", "w", "bias", "mask", "", "rel"], ins, {"y": (F, [b, s, sizes[2]])},
                      num_heads=heads, qkv_hidden_sizes=sizes)
    check(model, inputs=values, rtol=1e-4, atol=1e-4)


def test_fused_attention_refuses_past_state():
    ins = {"x": (F, [1, 2, 8]), "w": (F, [8, 24]), "past": (F, [2, 1, 2, 0, 4])}
    model = _ms_model("Attention", ["x", "w", "", "", "past"], ins, {"y": (F, [1, 2, 8])}, num_heads=2)
    with pytest.raises(ValueError, match="Attention node .*past"):
        from_onnx(model)
