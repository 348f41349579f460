"""Every model of minitvm.testing.zoo: torch.export -> from_exported_program -> the zero
pipeline -> LLVM -> the Relax VM, compared with torch eager at two batch sizes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import minitvm
from minitvm import relax
from minitvm.relax.frontend.torch import from_exported_program
from minitvm.testing import zoo

from .zoo_cache import compile_zero, exported

NAMES = ["mlp", "lenet", "mlc_mnist", "resnet_block", "resnet_small", "depthwise_separable", "transformer_sdpa",
         "transformer_explicit", "embedding_posenc",
         # real architectures of four families (issue 18)
         "llama_decoder", "bert_encoder", "mobilenet_tf_same", "audio_encoder"]


def eager(model, inputs):
    with torch.no_grad():
        return model(*inputs).numpy()


def test_the_zoo_lists_the_models_of_the_issue():
    assert list(zoo.MODELS) == NAMES
    for name, m in zoo.MODELS.items():
        assert m.name == name and m.description


@pytest.mark.parametrize("name", NAMES)
def test_build_and_inputs_are_seeded(name):
    m = zoo.MODELS[name]
    a, b = m.build(), m.build()
    assert not a.training
    for (ka, va), (kb, vb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert ka == kb and torch.equal(va, vb)
    x1, x2 = m.example_inputs(3), m.example_inputs(3)
    assert all(torch.equal(p, q) for p, q in zip(x1, x2)) and x1[0].shape[0] == 3
    assert x1[0].float().std() > 0  # random, not zeros


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("name", NAMES)
def test_zoo_model_matches_torch(name, batch):
    m = zoo.MODELS[name]
    mod = from_exported_program(exported(name, batch), unwrap_unit_return_tuple=True)
    vm = compile_zero(mod)
    inputs = m.example_inputs(batch)
    got = vm["main"](*(minitvm.nd.array(x.numpy()) for x in inputs)).numpy()
    want = eager(m.build(), inputs)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_batch_norm_statistics_are_not_trivial():
    """The zoo's BatchNorm layers would hide a wrong formula with fresh 0/1 statistics."""
    bn = zoo.MODELS["resnet_block"].build().bn1
    assert bn.running_mean.abs().min() > 0 and not torch.allclose(bn.running_var, torch.ones_like(bn.running_var))


def test_the_new_architectures_use_what_they_are_named_for():
    """Each family exercises its defining operators (so a simplification cannot hide them)."""
    def ops(name):
        ep = exported(name, 2)
        return {str(n.target) for n in ep.graph.nodes if n.op == "call_function"}

    llama = ops("llama_decoder")
    assert {"aten.sin.default", "aten.cos.default", "aten.rsqrt.default"} <= llama
    assert "aten.scaled_dot_product_attention.default" in llama
    gqa = zoo.MODELS["llama_decoder"].build().layers[0].attn
    assert gqa.q.out_features == 2 * gqa.k.out_features  # 4 query heads over 2 key/value heads
    bert = zoo.MODELS["bert_encoder"].build()
    assert bert.token_types.num_embeddings == 2
    assert "aten.conv1d.default" in ops("audio_encoder")
    assert "aten.pad.default" in ops("mobilenet_tf_same")  # the asymmetric TF padding


def test_the_transformers_differ_only_in_attention_and_activation():
    sdpa = from_exported_program(exported("transformer_sdpa", 2)).script()
    explicit = from_exported_program(exported("transformer_explicit", 2)).script()
    assert "R.nn.gelu" in sdpa and "R.nn.gelu" not in explicit and "R.sigmoid" in explicit
    assert "R.where" in sdpa and "R.where" in explicit
    assert "R.strided_slice" in explicit  # the causal buffer sliced to the sequence length
    assert "R.split" in sdpa and "R.nn.softmax" in sdpa


@pytest.mark.parametrize("name", NAMES)
def test_zoo_model_through_the_default_pipeline_matches_torch(name, capfd):
    """What a user runs: ``minitvm.compile`` (fusion and default schedules), torch tensors in
    and out through DLPack; importing and compiling print nothing (no LLVM remarks, no library
    chatter on the process's stdout or stderr).  The model runs as one native entry, which gives
    exactly the values the bytecode VM computes kernel by kernel (checked here rather than in
    tests/relax/vm/test_native_entry.py, so that each model is compiled once)."""
    m = zoo.MODELS[name]
    ep = exported(name, 2)
    capfd.readouterr()
    mod = from_exported_program(ep, unwrap_unit_return_tuple=True)
    ex = minitvm.compile(mod, target="llvm")
    vm = relax.VirtualMachine(ex, minitvm.cpu())
    out, err = capfd.readouterr()
    assert out == "" and err == "", f"compiling {name} printed:\n{out}{err}"
    assert "main" in vm.native_entries, ex.native_plans()
    inputs = m.example_inputs(2)
    got = torch.from_dlpack(vm["main"](*inputs))
    assert vm.native_entries["main"].calls == 1
    interpreted = vm.invoke_bytecode("main", *(minitvm.nd.array(x.numpy()) for x in inputs))
    np.testing.assert_array_equal(got.numpy(), interpreted.numpy())
    np.testing.assert_allclose(got.numpy(), eager(m.build(), inputs), rtol=1e-4, atol=1e-5)
