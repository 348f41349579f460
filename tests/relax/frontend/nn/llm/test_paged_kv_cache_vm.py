"""The paged KV cache through the Relax VM: created by a compiled function that hands its kernels
over as values, used by a compiled attention function, checked against numpy; saved and loaded."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax, tir
from minitvm.relax.frontend.nn.llm.kv_cache import create_call, kv_cache_create_args
from minitvm.runtime.vm import load_executable
from minitvm.runtime.vm.builtins import ShapeTuple

from .test_paged_kv_cache import H_KV, H_QO, LAYERS, SM_SCALE, THETA, D, Reference

CONFIG = dict(attn_kind="mha", support_sliding_window=0, layer_partition=relax.ShapeExpr([0, LAYERS]),
              num_hidden_layers=LAYERS, num_attention_heads=H_QO, num_key_value_heads=H_KV, qk_head_dim=D,
              v_head_dim=D, mla_original_qk_head_dim=0, mla_original_v_head_dim=0, rope_mode=1, rope_scale=1,
              rope_theta=THETA, rope_scaling={}, rope_ext_factors=tir.IntImm("int64", 0), rotary_dim=D,
              enable_disaggregation=False, dtype="float32", target="llvm")


def cache_module():
    """``create(max_batch, max_total, chunk, page)`` as the tutorial's ``create_tir_paged_kv_cache``
    (sizes arrive as shapes) and ``attn(cache, qkv)`` for every layer."""
    bb = relax.BlockBuilder()
    sizes = [tir.Var(n, "int64") for n in ("max_batch_size", "max_total_seq_len", "prefill_chunk_size", "page_size")]
    params = [relax.Var(f"{v.name}_", relax.ShapeStructInfo([v])) for v in sizes]
    with bb.function("create", params):
        args = kv_cache_create_args(bb, **dict(zip(("max_batch_size", "max_total_seq_len", "prefill_chunk_size",
                                                    "page_size"), sizes)), **CONFIG)
        bb.emit_func_output(bb.emit(create_call(args)))
    n = tir.Var("n", "int64")
    cache = relax.Var("cache", relax.ObjectStructInfo())
    qkv = relax.Var("qkv", relax.TensorStructInfo([LAYERS, n, H_QO + 2 * H_KV, D], "float32"))
    with bb.function("attn", [cache, qkv]):
        outs = []
        for layer in range(LAYERS):
            x = bb.emit(relax.op.take(qkv, relax.const(np.array(layer, "int64")), axis=0))
            outs.append(bb.emit(relax.op.call_dps_packed(
                "vm.builtin.attention_kv_cache_attention_with_fused_qkv",
                [cache, relax.PrimValue(layer), relax.PrimValue(tir.FloatImm("float32", SM_SCALE)), x],
                out_sinfo=relax.TensorStructInfo([n, H_QO, D], "float32"))))
        bb.emit_func_output(bb.emit(relax.Tuple(outs)))
    return bb.get()


def run_steps(vm, steps, seed):
    f = minitvm.get_global_func
    rng, ref = np.random.default_rng(seed), Reference()
    cache = vm["create"](ShapeTuple([4]), ShapeTuple([64]), ShapeTuple([32]), ShapeTuple([4]))
    for seq in (0, 1):
        f("vm.builtin.kv_state_add_sequence")(cache, seq)
        ref.add(seq)
    for seqs, lengths in steps:
        qkv = rng.standard_normal((LAYERS, sum(lengths), H_QO + 2 * H_KV, D)).astype("float32")
        f("vm.builtin.kv_state_begin_forward")(cache, ShapeTuple(seqs), ShapeTuple(lengths))
        outs = vm["attn"](cache, qkv)
        f("vm.builtin.kv_state_end_forward")(cache)
        for layer in range(LAYERS):
            want = ref.attend(layer, seqs, lengths, qkv[layer])
            np.testing.assert_allclose(outs[layer].numpy(), want, rtol=1e-4, atol=1e-5)
    return cache


@pytest.fixture(scope="module")
def exe():
    return minitvm.compile(cache_module(), target="llvm")


def test_create_and_attend_through_the_vm(exe):
    vm = relax.VirtualMachine(exe, minitvm.cpu())
    cache = run_steps(vm, [([0, 1], [6, 3]), ([1, 0], [1, 1]), ([0, 1], [1, 1])], seed=3)
    assert (cache.page_size, cache.num_layers, cache.num_kv_heads) == (4, LAYERS, H_KV)
    text = exe.as_text()
    assert "function @kv_cache_transpose_append" in text and "function @batch_decode_paged_kv_cpu" in text


def test_kernels_as_values_survive_save_and_load(exe, tmp_path):
    path = tmp_path / "kv.mtvm"
    exe.save(str(path))
    vm = relax.VirtualMachine(load_executable(str(path)), minitvm.cpu())
    run_steps(vm, [([1, 0], [2, 5]), ([0, 1], [1, 1])], seed=4)


@pytest.mark.parametrize("name, value, words", [
    ("attn_kind", "mla", "attention kind other than 'mha'"),
    ("support_sliding_window", 1, "sliding-window attention"),
    ("mla_original_qk_head_dim", 16, "multi-head latent attention"),
    ("rope_mode", 2, "INLINE"),
    ("rope_scaling", {"rope_type": "llama3"}, "RoPE scaling"),
    ("enable_disaggregation", True, "KV transfer"),
    ("dtype", "bfloat16", "dtype other than float32 or float16"),
    ("target", "cuda", "target other than the CPU"),
])
def test_unbuilt_features_are_refused_by_name(name, value, words):
    config = {**CONFIG, name: value}
    with pytest.raises(NotImplementedError, match=f"{name}=.*{words}"):
        kv_cache_create_args(relax.BlockBuilder(), max_batch_size=1, max_total_seq_len=16, prefill_chunk_size=16,
                             page_size=4, **config)


def test_rope_ext_factors_as_a_relax_primvalue_zero_means_none():
    # TVM v0.23's LLM tutorial passes relax.PrimValue(0): no extension factors, as IntImm 0 is;
    # PrimValue(1) asks for them and is refused by name, as before
    def create(**changes):
        bb = relax.BlockBuilder()
        with bb.function("create", []):
            args = kv_cache_create_args(bb, max_batch_size=1, max_total_seq_len=16, prefill_chunk_size=8,
                                        page_size=4, **{**CONFIG, **changes})
            bb.emit_func_output(relax.Tuple(args[:1]))
        return bb.get()

    assert "create" in [gv.name_hint for gv in create(rope_ext_factors=relax.PrimValue(0)).get_global_vars()]
    with pytest.raises(NotImplementedError, match="rope_ext_factors"):
        create(rope_ext_factors=relax.PrimValue(1))
