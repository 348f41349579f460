"""The trained tiny Llama: its config (JSON), its weights (``.npz``, read without pickle) and the
Hugging Face ``LlamaForCausalLM`` built from them, the reference every compiled version is checked
against. torch and transformers (the ``llm`` extra) are imported only by the functions that need them.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from .generate import generate
from .tokenizer import BOS_ID, EOS_ID, PAD_ID, VOCAB_SIZE, decode, encode

HERE = Path(__file__).resolve().parent
CONFIG_PATH = HERE / "config.json"
WEIGHTS_PATH = HERE / "weights.npz"


@dataclasses.dataclass(frozen=True)
class TinyLlamaConfig:
    """The model's shape. The first eleven fields are those of the ``LlamaConfig`` in TVM's
    ``optimize_llm.py`` tutorial, with its names, so the tutorial's model can be built from them."""

    hidden_size: int = 256
    intermediate_size: int = 512
    num_attention_heads: int = 8
    num_hidden_layers: int = 4
    rms_norm_eps: float = 1e-5
    vocab_size: int = VOCAB_SIZE
    rope_theta: int = 10000
    context_window_size: int = 256  # the training sequences' length: RoPE positions past it were never seen
    prefill_chunk_size: int = 256
    num_key_value_heads: int = 4  # grouped-query attention: two query heads share a key/value head
    head_dim: int = 32
    bos_token_id: int = BOS_ID
    eos_token_id: int = EOS_ID
    pad_token_id: int = PAD_ID

    def tutorial_fields(self) -> dict:
        """The fields of the tutorial's ``LlamaConfig`` (``LlamaConfig(**cfg.tutorial_fields())``)."""
        names = [f.name for f in dataclasses.fields(self)][:11]
        return {n: getattr(self, n) for n in names}

    def to_hf(self):
        """The same model as a ``transformers.LlamaConfig``."""
        from transformers import LlamaConfig

        return LlamaConfig(
            vocab_size=self.vocab_size, hidden_size=self.hidden_size, intermediate_size=self.intermediate_size,
            num_hidden_layers=self.num_hidden_layers, num_attention_heads=self.num_attention_heads,
            num_key_value_heads=self.num_key_value_heads, head_dim=self.head_dim, hidden_act="silu",
            rms_norm_eps=self.rms_norm_eps, rope_theta=float(self.rope_theta),
            max_position_embeddings=self.context_window_size, tie_word_embeddings=False,
            attention_bias=False, mlp_bias=False, bos_token_id=self.bos_token_id,
            eos_token_id=self.eos_token_id, pad_token_id=self.pad_token_id)


def load_config(path: Path | str = CONFIG_PATH) -> TinyLlamaConfig:
    """The config stored in ``path``'s ``"model"`` entry (its ``"training"`` entry records how the
    weights were made and is not needed to use them)."""
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    fields = {f.name for f in dataclasses.fields(TinyLlamaConfig)}
    unknown = set(raw.get("model", {})) - fields
    if "model" not in raw or unknown:
        raise ValueError(f"{path}: expected a 'model' entry with the fields of TinyLlamaConfig; "
                         f"unknown fields: {sorted(unknown)}")
    return TinyLlamaConfig(**raw["model"])


def save_config(config: TinyLlamaConfig, path: Path | str, training: dict | None = None) -> None:
    """Write ``config`` (and a record of the training run) as JSON."""
    body = {"model": dataclasses.asdict(config), "training": training or {}}
    Path(path).write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")


def expected_shapes(config: TinyLlamaConfig) -> dict[str, tuple[int, ...]]:
    """Every weight's name (Hugging Face's) and shape: what the weights file must hold, exactly."""
    h, i, d = config.hidden_size, config.intermediate_size, config.head_dim
    shapes = {"model.embed_tokens.weight": (config.vocab_size, h)}
    for n in range(config.num_hidden_layers):
        p = f"model.layers.{n}."
        shapes |= {
            p + "self_attn.q_proj.weight": (config.num_attention_heads * d, h),
            p + "self_attn.k_proj.weight": (config.num_key_value_heads * d, h),
            p + "self_attn.v_proj.weight": (config.num_key_value_heads * d, h),
            p + "self_attn.o_proj.weight": (h, config.num_attention_heads * d),
            p + "mlp.gate_proj.weight": (i, h), p + "mlp.up_proj.weight": (i, h), p + "mlp.down_proj.weight": (h, i),
            p + "input_layernorm.weight": (h,), p + "post_attention_layernorm.weight": (h,),
        }
    return shapes | {"model.norm.weight": (h,), "lm_head.weight": (config.vocab_size, h)}


def load_weights(path: Path | str = WEIGHTS_PATH, config: TinyLlamaConfig | None = None) -> dict[str, np.ndarray]:
    """The weights as float32 arrays by Hugging Face name, checked against ``config``'s shapes
    (the committed config by default). The file is an ``.npz`` read with ``allow_pickle=False``:
    data, never code."""
    config = config or load_config()
    with np.load(path, allow_pickle=False) as f:
        weights = {k: f[k].astype(np.float32) for k in f.files}
    want = expected_shapes(config)
    missing, extra = sorted(set(want) - set(weights)), sorted(set(weights) - set(want))
    wrong = [f"{k}: {weights[k].shape} (expected {want[k]})" for k in want
             if k in weights and weights[k].shape != want[k]]
    if missing or extra or wrong:
        raise ValueError(f"{path} does not fit the config: missing {missing}, unexpected {extra}, "
                         f"wrong shapes {wrong}")
    return weights


def save_weights(weights: dict[str, np.ndarray], path: Path | str, dtype: str = "float16") -> None:
    """Write ``weights`` as an ``.npz`` of ``dtype`` arrays (float16 halves the file; the loader
    widens them back to float32, so the stored values are the model)."""
    np.savez(path, **{k: np.asarray(v, dtype=dtype) for k, v in sorted(weights.items())})


def build_hf_model(config: TinyLlamaConfig, weights: dict[str, np.ndarray] | None = None):
    """A float32 ``transformers.LlamaForCausalLM`` of ``config`` in eval mode, holding ``weights``
    (by Hugging Face name) or, without them, the library's random initialisation (seed torch first)."""
    import torch
    from transformers import LlamaForCausalLM

    model = LlamaForCausalLM(config.to_hf()).to(torch.float32)
    if weights is not None:
        state = {k: torch.from_numpy(np.ascontiguousarray(v, dtype=np.float32)) for k, v in weights.items()}
        model.load_state_dict(state, strict=True)
    return model.eval()


def load_hf_model(config_path: Path | str = CONFIG_PATH, weights_path: Path | str = WEIGHTS_PATH):
    """The committed trained model as a float32 ``LlamaForCausalLM``: the torch reference."""
    config = load_config(config_path)
    return build_hf_model(config, load_weights(weights_path, config))


def hf_weights(model) -> dict[str, np.ndarray]:
    """A ``LlamaForCausalLM``'s weights as float32 numpy arrays by name."""
    return {k: v.detach().to("cpu").float().numpy().copy() for k, v in model.state_dict().items()}


def hf_step_fn(model):
    """A ``step_fn`` for ``generate.generate`` over a ``LlamaForCausalLM`` and its KV cache
    (``past_key_values``, ``cache`` from transformers 5.24): each call feeds the new tokens and
    returns the next token's logits. A fresh step function starts an empty cache."""
    import inspect

    import torch

    # transformers 5.24 renamed ``past_key_values`` (argument and output) to ``cache``
    name = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    cache = None

    def step(token_ids: list[int]) -> np.ndarray:
        nonlocal cache
        with torch.no_grad():
            out = model(input_ids=torch.tensor([token_ids]), use_cache=True, **{name: cache})
        cache = getattr(out, name)
        return out.logits[0, -1].float().numpy()

    return step


def continue_text(model, text: str, max_new_tokens: int = 200, temperature: float = 0.0, top_p: float = 1.0,
                  seed: int | None = None) -> str:
    """The model's continuation of ``text`` (after ``<bos>``), up to its ``<eos>``."""

    ids = generate(hf_step_fn(model), encode(text, bos=True), max_new_tokens, temperature, top_p, seed,
                   stop_tokens=[EOS_ID])
    return decode(ids)
