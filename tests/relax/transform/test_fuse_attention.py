"""FuseAttention: FuseOps' groups with softmax(Q·Kᵀ)·V of a short sequence as one kernel."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.relax.transform import fuse_attention

RNG = np.random.default_rng(3)


def _attention_module(heads=2, seq=6, dim=8):
    """x (seq, heads*dim) -> q, k, v by splitting heads -> softmax(q kᵀ / sqrt(d) + mask) v."""
    x = relax.Var("x", relax.TensorStructInfo((seq, 3 * heads * dim), "float32"))
    mask = np.triu(np.full((seq, seq), -1e9, "float32"), 1)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            parts = bb.emit(relax.op.split(x, 3, axis=1))
            q, k, v = (bb.emit(relax.op.permute_dims(relax.op.reshape(relax.TupleGetItem(parts, i), (seq, heads, dim)),
                                                     (1, 0, 2))) for i in range(3))
            scores = bb.emit(relax.op.matmul(q, relax.op.permute_dims(k, (0, 2, 1))))
            scores = bb.emit(relax.op.add(relax.op.multiply(scores, relax.const(1 / np.sqrt(dim), "float32")),
                                          relax.const(mask)))
            probs = bb.emit(relax.op.nn.softmax(scores, axis=-1))
            out = bb.emit(relax.op.matmul(probs, v))
            gv = bb.emit_output(relax.op.reshape(relax.op.permute_dims(out, (1, 0, 2)), (seq, heads * dim)))
        bb.emit_func_output(gv)

    def reference(xv):
        q, k, v = (p.reshape(seq, heads, dim).transpose(1, 0, 2) for p in np.split(xv, 3, axis=1))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(dim) + mask
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        return (p @ v).transpose(1, 0, 2).reshape(seq, heads * dim)

    return bb.get(), reference


def _fused(mod, fuse):
    passes = [relax.transform.LegalizeOps(), relax.transform.AnnotateTIROpPattern(),
              relax.transform.FoldConstant(), fuse, relax.transform.FuseTIR()]
    for p in passes:
        mod = p(mod)
    return mod


def _kernels(mod):
    return sorted(gv.name_hint for gv, f in mod.functions.items() if isinstance(f, minitvm.tir.PrimFunc))


def test_attention_becomes_one_kernel_and_matches_numpy():
    mod, reference = _attention_module()
    plain = _kernels(_fused(mod, relax.transform.FuseOps()))
    fused_mod = _fused(mod, relax.transform.FuseAttention())
    fused = _kernels(fused_mod)
    assert sum("softmax" in k for k in plain) == 1 and len(fused) < len(plain)
    (attention,) = [k for k in fused if "softmax" in k]
    # both matmuls, the softmax and the heads' reshapes/transposes in the one kernel
    assert attention.count("matmul") == 2 and "split" in attention and "transpose" in attention
    x = RNG.standard_normal((6, 48)).astype("float32")
    ex = minitvm.compile(fused_mod, "llvm")
    got = relax.VirtualMachine(ex, minitvm.cpu())["main"](x).numpy()
    np.testing.assert_allclose(got, reference(x), rtol=1e-5, atol=1e-5)


def test_long_sequences_keep_separate_kernels(monkeypatch):
    mod, _ = _attention_module()
    monkeypatch.setattr(fuse_attention, "MAX_SCORES", 2 * 6 * 6 - 1)  # these scores are 2 x 6 x 6
    fused = _kernels(_fused(mod, relax.transform.FuseAttention()))
    assert fused == _kernels(_fused(mod, relax.transform.FuseOps()))


@pytest.mark.parametrize("name", ["transformer_sdpa"])
def test_zoo_transformers_get_one_attention_kernel(name):
    torch = pytest.importorskip("torch")
    from minitvm.relax.frontend.torch import from_exported_program
    from minitvm.testing import zoo

    from ..frontend.torch.zoo_cache import exported

    m = zoo.MODELS[name]
    mod = from_exported_program(exported(name, 1), unwrap_unit_return_tuple=True)
    lowered = relax.get_pipeline("default")(mod)
    attention = [k for k in _kernels(lowered) if "softmax" in k]
    assert len(attention) == 1 and attention[0].count("matmul") == 2
    x = m.example_inputs(1)
    got = relax.VirtualMachine(minitvm.compile(lowered, "llvm", relax_pipeline=None), minitvm.cpu())["main"](
        x[0].numpy()).numpy()
    with torch.no_grad():
        np.testing.assert_allclose(got, m.build()(*x).numpy(), rtol=1e-4, atol=1e-5)
