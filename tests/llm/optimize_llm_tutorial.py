"""TVM's tutorial ``docs/how_to/tutorials/optimize_llm.py`` (Apache TVM, current main), adapted
for a learner with no GPU and no network, in one importable place: the tests
``tests/llm/test_optimize_llm_tutorial.py`` and ``test_trained_tiny_llama.py``,
``benchmarks/optimize_llm_adapted.py`` and ``benchmarks/llm.py`` all run this code.  It is a
learner's script, not library code (its imports are the tutorial's, at the top, of the whole of
minitvm), so it lives beside its test rather than in the ``minitvm`` package.  What is changed
from the tutorial, and nothing else:

* ``import minitvm as tvm`` (and ``minitvm``/``minitvm_ffi`` in the ``from`` imports);
* ``dev = tvm.cpu()`` and ``target = tvm.target.Target("llvm")`` for the CUDA device;
* a tiny ``LlamaConfig`` (2 layers, hidden 64, 4 query / 2 key-value heads of 16, vocab 256) and
  float32 for float16;
* the weights of a Hugging Face ``LlamaForCausalLM`` built from the same config with a seeded
  random init (:func:`hf_model_for`) and saved with ``save_pretrained`` stand in for the
  TinyLlama download (the tutorial's own safetensors load and q/k/v, gate/up concatenation then
  run on them); where torch is missing, the same tensors by HF name in a ``.npz`` file;
* a byte-level tokenizer (a prompt's UTF-8 bytes are its token ids) for ``AutoTokenizer``, and a
  bound on the decode loop, since a random model need not ever emit its end token;
* the ``IS_IN_CI`` guards are dropped (the weights are here), each step's logits are kept to
  compare with Hugging Face's, and a rerun of the pipeline cell in one process keeps the
  pipeline registered the first time (both TVM and minitvm refuse a second registration).

**The same file on TVM.**  The import lines name minitvm, so that the test runs the tutorial
with ``import minitvm as tvm`` as written here.  To run it on TVM itself,
``benchmarks/optimize_llm_adapted.py --tvm`` (in a Python where ``tvm`` is installed and minitvm
is not imported) first enters each loaded ``tvm.*`` module and ``tvm_ffi`` under the matching
``minitvm.*`` / ``minitvm_ffi`` name in ``sys.modules``, then loads this file by its path: every
``from minitvm... import`` here then binds TVM's object.  Torch, transformers and safetensors are
imported only inside the functions that need them, so the module loads where only TVM and numpy
are installed.
"""

# ruff: noqa: F401  (the tutorial's imports, kept as it writes them)
from __future__ import annotations

import dataclasses
import enum
import os
from pathlib import Path
from pprint import pprint
from typing import Any

import numpy as np

import minitvm as tvm
from minitvm import relax, te, tirx
from minitvm.relax import register_pipeline
from minitvm.relax.frontend import nn
from minitvm.relax.frontend.nn import Tensor, op
from minitvm.relax.frontend.nn.llm.kv_cache import PagedKVCache, TIRPagedKVCache
from minitvm.s_tir import dlight
from minitvm_ffi import Shape


@dataclasses.dataclass
class LlamaConfig:
    # the tutorial's TinyLlama (hidden 2048, 22 layers, vocab 32000, context 2048) made tiny
    hidden_size: int = 64
    intermediate_size: int = 128
    num_attention_heads: int = 4
    num_hidden_layers: int = 2
    rms_norm_eps: float = 1e-05
    vocab_size: int = 256
    rope_theta: int = 10000
    context_window_size: int = 128
    prefill_chunk_size: int = 128
    num_key_value_heads: int = 2
    head_dim: int = 16  # hidden_size // num_attention_heads


dev = tvm.cpu()
target = tvm.target.Target("llvm")


class RopeMode(enum.IntEnum):
    """The RoPE mode of the Paged KV cache.
    If it is none, the KV cache will not apply RoPE to q and k.
    If it is normal, RoPE will be applied to k before adding k to cache.
    Otherwise, RoPE will be applied to q/k in attention kernel on-the-fly.
    """

    NONE = 0
    NORMAL = 1
    INLINE = 2


class LlamaFFN(nn.Module):
    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.gate_up_proj = nn.Linear(
            in_features=config.hidden_size,
            out_features=2 * config.intermediate_size,
            bias=False,
        )
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x: Tensor):
        concat_x1_x2 = self.gate_up_proj(x)
        x1, x2 = op.split(concat_x1_x2, 2, axis=-1)
        return self.down_proj(op.silu(x1) * x2)


class LlamaAttention(nn.Module):  # pylint: disable=too-many-instance-attributes
    def __init__(self, config: LlamaConfig):
        self.head_dim = config.head_dim
        self.num_q_heads = config.num_attention_heads
        self.num_kv_heads = config.num_key_value_heads
        # horizontal fusion on QKV projection
        self.qkv_proj = nn.Linear(
            in_features=config.hidden_size,
            out_features=(self.num_q_heads + 2 * self.num_kv_heads) * self.head_dim,
            bias=False,
        )
        self.o_proj = nn.Linear(self.num_q_heads * self.head_dim, config.hidden_size, bias=False)

    def forward(self, hidden_states: Tensor, paged_kv_cache: PagedKVCache, layer_id: int):
        d, h_q, h_kv = self.head_dim, self.num_q_heads, self.num_kv_heads
        b, s, _ = hidden_states.shape
        # QKV Projection
        qkv = self.qkv_proj(hidden_states)
        qkv = op.reshape(qkv, (b, s, h_q + h_kv + h_kv, d))
        # Attention
        output = op.reshape(
            paged_kv_cache.attention_with_fused_qkv(
                layer_id, qkv, self.num_q_heads, sm_scale=self.head_dim**-0.5
            ),
            (b, s, h_q * d),
        )
        # Output Projection
        return self.o_proj(output)


class LlamaDecoderLayer(nn.Module):
    def __init__(self, config: LlamaConfig):
        rms_norm_eps = config.rms_norm_eps
        self.self_attn = LlamaAttention(config)
        self.mlp = LlamaFFN(config)
        self.input_layernorm = nn.RMSNorm(config.hidden_size, -1, rms_norm_eps, bias=False)
        self.post_attention_layernorm = nn.RMSNorm(config.hidden_size, -1, rms_norm_eps, bias=False)

    def forward(self, hidden_states: Tensor, paged_kv_cache: PagedKVCache, layer_id: int):
        hidden_states += self.self_attn(
            self.input_layernorm(hidden_states), paged_kv_cache, layer_id
        )
        hidden_states += self.mlp(self.post_attention_layernorm(hidden_states))
        return hidden_states


class LlamaModel(nn.Module):
    def __init__(self, config: LlamaConfig):
        assert config.hidden_size % config.num_attention_heads == 0
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(
            [LlamaDecoderLayer(config) for _ in range(config.num_hidden_layers)]
        )
        self.norm = nn.RMSNorm(config.hidden_size, -1, config.rms_norm_eps, bias=False)

    def forward(self, input_embed: Tensor, paged_kv_cache: PagedKVCache):
        hidden_states = input_embed
        for layer_id, layer in enumerate(self.layers):
            hidden_states = layer(hidden_states, paged_kv_cache, layer_id)
        hidden_states = self.norm(hidden_states)
        return hidden_states


class LlamaForCausalLM(nn.Module):
    def __init__(self, config: LlamaConfig):
        self.model = LlamaModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.num_hidden_layers = config.num_hidden_layers
        self.num_attention_heads = config.num_attention_heads
        self.num_key_value_heads = config.num_key_value_heads
        self.head_dim = config.head_dim
        self.hidden_size = config.hidden_size
        self.vocab_size = config.vocab_size
        self.rope_theta = config.rope_theta
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

    def prefill(self, input_embed: Tensor, paged_kv_cache: PagedKVCache):
        def _index(x: te.Tensor):  # x[:-1,:]
            b, s, d = x.shape
            return te.compute((b, 1, d), lambda i, _, k: x[i, s - 1, k], name="index")

        hidden_states = self.model(input_embed, paged_kv_cache)
        hidden_states = op.tensor_expr_op(_index, name_hint="index", args=[hidden_states])
        logits = self.get_logits(hidden_states)
        return logits, paged_kv_cache

    def decode(self, input_embed: Tensor, paged_kv_cache: PagedKVCache):
        hidden_states = self.model(input_embed, paged_kv_cache)
        logits = self.get_logits(hidden_states)
        return logits, paged_kv_cache

    def create_tir_paged_kv_cache(
        self,
        max_batch_size: tirx.Var,
        max_total_seq_len: tirx.Var,
        prefill_chunk_size: tirx.Var,
        page_size: tirx.Var,
    ) -> PagedKVCache:
        return TIRPagedKVCache(
            attn_kind="mha",
            max_batch_size=max_batch_size,
            max_total_seq_len=max_total_seq_len,
            prefill_chunk_size=prefill_chunk_size,
            page_size=page_size,
            support_sliding_window=0,
            layer_partition=relax.ShapeExpr([0, self.num_hidden_layers]),
            num_hidden_layers=self.num_hidden_layers,
            num_attention_heads=self.num_attention_heads,
            num_key_value_heads=self.num_key_value_heads,
            qk_head_dim=self.head_dim,
            v_head_dim=self.head_dim,
            mla_original_qk_head_dim=0,
            mla_original_v_head_dim=0,
            rope_mode=RopeMode.NORMAL,
            rope_scale=1,
            rope_theta=self.rope_theta,
            rope_scaling={},
            rope_ext_factors=tirx.IntImm("int64", 0),
            rotary_dim=self.head_dim,
            dtype=self.dtype,
            target=target,
            enable_disaggregation=False,
        )

    def get_default_spec(self):
        mod_spec = {
            "embed": {
                "input_ids": nn.spec.Tensor(["seq_len"], "int32"),
                "$": {
                    "param_mode": "packed",
                    "effect_mode": "none",
                },
            },
            "prefill": {
                "input_embed": nn.spec.Tensor([1, "seq_len", self.hidden_size], self.dtype),
                "paged_kv_cache": nn.spec.Object(object_type=PagedKVCache),
                "$": {
                    "param_mode": "packed",
                    "effect_mode": "none",
                },
            },
            "decode": {
                "input_embed": nn.spec.Tensor([1, 1, self.hidden_size], self.dtype),
                "paged_kv_cache": nn.spec.Object(object_type=PagedKVCache),
                "$": {
                    "param_mode": "packed",
                    "effect_mode": "none",
                },
            },
            "create_tir_paged_kv_cache": {
                "max_batch_size": int,
                "max_total_seq_len": int,
                "prefill_chunk_size": int,
                "page_size": int,
                "$": {
                    "param_mode": "none",
                    "effect_mode": "none",
                },
            },
        }
        return nn.spec.ModuleSpec.from_raw(mod_spec, self)


def register_opt_llm_pipeline():
    """The tutorial's "Define Optimization Pipeline" cell, dlight line and all."""

    @register_pipeline("opt_llm")
    def _pipeline(  # pylint: disable=too-many-arguments
        ext_mods: list[nn.ExternModule] | None = None,
    ):
        ext_mods = ext_mods or []

        @tvm.transform.module_pass(opt_level=0)
        def _pipeline(mod: tvm.ir.IRModule, _ctx: tvm.transform.PassContext) -> tvm.ir.IRModule:
            seq = tvm.transform.Sequential(
                [
                    # Phase 1. Passes on high-level operator graph
                    # We can enable cublas for further optimization
                    relax.transform.FuseTransposeMatmul(),
                    # Phase 2. Lowering to TIR, inherited TVM Relax's official "zero" pipeline
                    relax.transform.LegalizeOps(),
                    relax.transform.AnnotateTIROpPattern(),
                    relax.transform.FoldConstant(),
                    relax.transform.FuseOps(),
                    relax.transform.FuseTIR(),
                    # Phase 3. Passes on TIR
                    relax.transform.DeadCodeElimination(),
                    # Phase 4. Low-level Optimizations
                    dlight.ApplyDefaultSchedule(
                        dlight.gpu.Matmul(),
                        dlight.gpu.GEMV(),
                        dlight.gpu.Reduction(),
                        dlight.gpu.GeneralReduction(),
                        dlight.gpu.Fallback(),
                    ),
                    # Phase 5. Lowering to VM bytecode
                    relax.transform.RewriteDataflowReshape(),
                    relax.transform.ToNonDataflow(),
                    relax.transform.RemovePurityChecking(),
                    relax.transform.CallTIRRewrite(),
                    relax.transform.StaticPlanBlockMemory(),
                    relax.transform.RewriteCUDAGraph(),
                    relax.transform.LowerAllocTensor(),
                    relax.transform.KillAfterLastUse(),
                    relax.transform.LowerRuntimeBuiltin(),
                    relax.transform.VMShapeLower(),
                    relax.transform.AttachGlobalSymbol(),
                    relax.transform.AttachExternModules(ext_mods),
                ]
            )
            mod = seq(mod)
            return mod

        return _pipeline


def register_once():
    """Run the pipeline cell as a learner reruns it in one process: TVM's ``register_pipeline``
    refuses a name already registered with a ValueError, and so does minitvm; the pipeline
    registered the first time is this same function."""
    try:
        register_opt_llm_pipeline()
    except ValueError as err:
        if "opt_llm" not in str(err) or "already" not in str(err):
            raise


class ByteTokenizer:
    """Stand-in for ``AutoTokenizer``: a text's UTF-8 bytes are its token ids (vocab 256)."""

    eos_token_id = 0  # NUL, as a byte

    def apply_chat_template(self, messages):
        text = "".join(f"<|{m['role']}|>\n{m['content']}\n" for m in messages) + "<|assistant|>\n"
        return list(text.encode("utf-8"))

    def decode(self, tokens):
        return bytes(int(t) for t in tokens).decode("utf-8", errors="replace")


MAX_NEW_TOKENS = 20  # prefill's token, then 19 decode steps


def hf_model_for(config: LlamaConfig, seed: int = 0) -> Any:
    """Hugging Face's ``LlamaForCausalLM`` with the same shapes, seeded random weights.  A wider
    init than HF's 0.02 so that the greedy choice is clear (the top two logits well apart), not a
    coin toss decided by rounding."""
    import torch  # lazy: the reference needs torch, which TVM's Python may not have
    import transformers  # lazy: as torch

    hf_config = transformers.LlamaConfig(
        vocab_size=config.vocab_size, hidden_size=config.hidden_size,
        intermediate_size=config.intermediate_size, num_hidden_layers=config.num_hidden_layers,
        num_attention_heads=config.num_attention_heads, num_key_value_heads=config.num_key_value_heads,
        head_dim=config.head_dim, max_position_embeddings=config.context_window_size,
        rms_norm_eps=config.rms_norm_eps, rope_theta=float(config.rope_theta), tie_word_embeddings=False,
        attention_bias=False, mlp_bias=False, initializer_range=0.2, eos_token_id=ByteTokenizer.eos_token_id,
        bos_token_id=None, pad_token_id=None)
    torch.manual_seed(seed)
    return transformers.LlamaForCausalLM(hf_config).eval()


def build(model_config: LlamaConfig):
    """The tutorial's "Export the model" and compile cells."""
    model = LlamaForCausalLM(model_config)
    model.to("float32")
    mod, named_params = model.export_tvm(spec=model.get_default_spec())
    prefill_str = mod["prefill"].script()
    print(*prefill_str.split("\n")[3:20], sep="\n")  # Only show the first 10 lines for demonstration
    print("        ...")

    print("\nParameters:")
    pprint(named_params[:5])  # Only show the first 5 parameters for demonstration

    register_once()
    with target:
        ex = tvm.compile(mod, target, relax_pipeline=relax.get_pipeline("opt_llm"))
        vm = relax.VirtualMachine(ex, dev)
    return vm, named_params


def load_params(model_config: LlamaConfig, named_params, HF_WEIGHT_PATH: Path):
    """The tutorial's "Prepare the model weights" cell, float32 for float16.  ``HF_WEIGHT_PATH``
    is the ``save_pretrained`` directory, or (no torch here) a ``.npz`` of the same tensors by HF
    name, which takes the place of the safetensors lines."""
    if str(HF_WEIGHT_PATH).endswith(".npz"):
        with np.load(HF_WEIGHT_PATH) as npz:
            param_dict = {k: npz[k] for k in npz.files}
    else:
        import safetensors.torch  # lazy: the tutorial's loader needs torch, which TVM's Python may not have
        import torch  # lazy: as safetensors.torch

        # Torch format weights
        param_dict = safetensors.torch.load_file(HF_WEIGHT_PATH / "model.safetensors", device="cpu")
        # Numpy format weights
        param_dict = {
            k: v.half().numpy() if v.dtype == torch.bfloat16 else v.numpy()
            for k, v in param_dict.items()
        }

    named_params = dict(named_params)
    for i in range(model_config.num_hidden_layers):
        # Add QKV in self attention
        attn = f"model.layers.{i}.self_attn"
        param_dict[f"{attn}.qkv_proj.weight"] = np.concatenate(
            [
                param_dict.pop(f"{attn}.q_proj.weight"),  # Pop the old parameters to save memory
                param_dict.pop(f"{attn}.k_proj.weight"),
                param_dict.pop(f"{attn}.v_proj.weight"),
            ],
            axis=0,
        )
        # Add gates in MLP
        mlp = f"model.layers.{i}.mlp"
        param_dict[f"{mlp}.gate_up_proj.weight"] = np.concatenate(
            [
                param_dict.pop(f"{mlp}.gate_proj.weight"),
                param_dict.pop(f"{mlp}.up_proj.weight"),
            ],
            axis=0,
        )

    # Convert params into ndarray
    params = [
        tvm.runtime.tensor(param_dict[k].astype("float32"), device=dev) for k in named_params.keys()
    ]
    return params


def generate(vm, params, tokenizer):
    """The tutorial's tokenization, KV cache, embedding, prefill and decode cells; returns the
    generated tokens and each step's logits."""
    messages = [
        {"role": "user", "content": "What's your name?"},
    ]
    prompt = tokenizer.apply_chat_template(messages)
    input_len = len(prompt)

    # Load prompt tokens into TVM ndarray on the target device
    tokens = tvm.runtime.tensor(np.array(prompt).astype("int32"), device=dev)

    kv_cache = vm["create_tir_paged_kv_cache"](
        Shape([1]),  # max_batch_size=1
        Shape([128]),  # max_total_seq_len=128 (the tiny context window)
        Shape([128]),  # prefill_chunk_size=128
        Shape([16]),  # page_size=16
    )

    nd_view_func = tvm.get_global_func("vm.builtin.reshape")

    def embed(tokens, params):
        _embed = vm["embed"](tokens, params)
        # Reshape hidden from [seq_len, hidden_size] to [1, seq_len, hidden_size]
        _embed = nd_view_func(_embed, Shape([1, _embed.shape[0], _embed.shape[1]]))
        return _embed

    add_sequence_func = tvm.get_global_func("vm.builtin.kv_state_add_sequence")
    begin_forward_func = tvm.get_global_func("vm.builtin.kv_state_begin_forward")
    end_forward_func = tvm.get_global_func("vm.builtin.kv_state_end_forward")

    seq_id = 0
    add_sequence_func(kv_cache, seq_id)
    hidden_states = embed(tokens, params)
    begin_forward_func(kv_cache, Shape([seq_id]), Shape([input_len]))
    logits, kv_cache = vm["prefill"](hidden_states, kv_cache, params)
    end_forward_func(kv_cache)
    all_logits = [logits.numpy()]

    def sample_token(logits):
        logits_np = logits.numpy()
        return np.argmax(logits_np)

    last_token = sample_token(logits)
    output_tokens = [last_token]

    print("The generated token:")

    while last_token != tokenizer.eos_token_id and len(output_tokens) < MAX_NEW_TOKENS:
        tokens = tvm.runtime.tensor(np.array([last_token]).astype("int32"), device=dev)
        hidden_states = embed(tokens, params)
        begin_forward_func(kv_cache, Shape([seq_id]), Shape([1]))
        logits, kv_cache = vm["decode"](hidden_states, kv_cache, params)

        end_forward_func(kv_cache)
        all_logits.append(logits.numpy())
        last_token = sample_token(logits)
        output_tokens.append(last_token)

    print(tokenizer.decode(output_tokens))
    return prompt, output_tokens, all_logits




def hf_reference(hf_model: Any, prompt: list[int]) -> tuple[list[int], list[np.ndarray]]:
    """Hugging Face's greedy ``generate`` on ``prompt`` with its cache, as bounded as
    :func:`generate`: the tokens it generates and each step's logits (``[vocab]``, float32)."""
    import torch  # lazy: as hf_model_for

    with torch.no_grad():
        ref = hf_model.generate(torch.tensor([prompt]), max_new_tokens=MAX_NEW_TOKENS, do_sample=False,
                                output_logits=True, return_dict_in_generate=True)
    return ref.sequences[0, len(prompt):].tolist(), [step[0].numpy() for step in ref.logits]


def compare_with_reference(all_logits: list[np.ndarray], output_tokens: list[Any], ref_tokens: list[int],
                           ref_logits: list[np.ndarray], vocab_size: int) -> None:
    """Raise unless prefill's and every decode step's logits equal the reference's (rtol 1e-4)
    and so do the greedy tokens; at least 16 decode steps must be compared."""
    if len(ref_tokens) < 17:
        raise AssertionError(f"the reference stopped after {len(ref_tokens)} tokens: fewer than 16 decode steps")
    if len(all_logits) != len(ref_tokens):
        raise AssertionError(f"{len(all_logits)} steps of logits, the reference has {len(ref_tokens)}")
    for step, (got, want) in enumerate(zip(all_logits, ref_logits)):
        if got.shape != (1, 1, vocab_size):
            raise AssertionError(f"logits of step {step} have shape {got.shape}, not (1, 1, {vocab_size})")
        np.testing.assert_allclose(got[0, 0], want, rtol=1e-4, atol=1e-4,
                                   err_msg=f"logits of step {step} ({'prefill' if step == 0 else 'decode'})")
    if [int(t) for t in output_tokens] != [int(t) for t in ref_tokens]:
        raise AssertionError(f"greedy tokens differ: {[int(t) for t in output_tokens]} vs {ref_tokens}")
