"""A decode loop over quantized weights (``relax.transform.QuantizeLinearWeights``): a small
token-to-token model in ``relax.frontend.nn`` (an embedding, two residual MLP blocks, an LM
head; no attention, so it compiles in seconds) runs one token at a time -- every linear layer a
fused dequantize-GEMV at batch 1, the residual adds their epilogues -- and its greedy tokens
must be numpy's with the same weights dequantized.  (The whole trained Llama's float32 tokens:
test_trained_tiny_llama.py; its quantized rows: benchmarks/llm.py.)"""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.relax.frontend import detach_params, nn
from minitvm.relax.transform import QuantizeLinearWeights
from minitvm.relax.transform.quantize_weights import pack_int4, quantize_int8, unpack_int4

VOCAB, HIDDEN, INNER, STEPS = 96, 64, 128, 24


class _TokenModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HIDDEN)
        self.up = nn.ModuleList([nn.Linear(HIDDEN, INNER, bias=False) for _ in range(2)])
        self.down = nn.ModuleList([nn.Linear(INNER, HIDDEN, bias=False) for _ in range(2)])
        self.head = nn.Linear(HIDDEN, VOCAB, bias=False)

    def forward(self, token):
        h = self.embed(token)
        for up, down in zip(self.up, self.down):
            h = h + down(nn.op.relu(up(h)))
        return self.head(h)


def _weights(rng):
    shapes = {"embed.weight": (VOCAB, HIDDEN), "head.weight": (VOCAB, HIDDEN)}
    for i in range(2):
        shapes[f"up.{i}.weight"], shapes[f"down.{i}.weight"] = (INNER, HIDDEN), (HIDDEN, INNER)
    return {name: (rng.standard_normal(s) / np.sqrt(s[1])).astype("float32") for name, s in shapes.items()}


def _dequantized(w, mode):
    if mode == "int8":
        q, scale = quantize_int8(w)
        return q * scale[:, None]
    return unpack_int4(*pack_int4(w, 32), 32)


def _numpy_logits(w, token):
    h = w["embed.weight"][token].astype("float64")
    for i in range(2):
        h = h + np.maximum(h @ w[f"up.{i}.weight"].T, 0) @ w[f"down.{i}.weight"].T
    return h @ w["head.weight"].T


@pytest.mark.parametrize("mode", ["int8", "int4"])
def test_greedy_tokens_of_the_quantized_model_are_numpys(mode):
    weights = _weights(np.random.default_rng(70))
    mod, _ = _TokenModel().export_tvm(spec={"forward": {"token": nn.spec.Tensor((1,), "int32")}})
    quantized, params = detach_params(QuantizeLinearWeights(mode, params=weights)(mod))
    text = quantized.script()
    kernel = "fused_dequantize_NT_matmul" if mode == "int8" else "fused_dequantize_int4_NT_matmul"
    assert text.count(f"cls.{kernel}") == 5 and "R.matmul" not in text, text  # every linear layer
    vm = relax.VirtualMachine(tvm.compile(quantized, target="llvm"), tvm.cpu())
    reference = {n: w if n == "embed.weight" else _dequantized(w, mode) for n, w in weights.items()}
    ours, want, token = [], [], 5
    for _ in range(STEPS):
        logits = vm["forward"](tvm.nd.array(np.array([token], "int32")), *params["forward"]).numpy()[0]
        expected = _numpy_logits(reference, want[-1] if want else 5)
        top2 = np.sort(expected)[-2:]
        assert top2[1] - top2[0] > 1e-3  # a clear choice, not one that rounding decides
        np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-4)
        token = int(np.argmax(logits))
        ours.append(token)
        want.append(int(np.argmax(expected)))
    assert ours == want and len(set(ours)) > 3, ours  # a walk through several tokens, not one repeated
