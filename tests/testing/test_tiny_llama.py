"""The trained tiny Llama (minitvm.testing.tiny_llama): its byte tokenizer, the committed weights and
their loader, the Hugging Face reference against a numpy forward pass, and the decode loop."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
import torch

from minitvm.testing.tiny_llama import (
    BOS_ID,
    EOS_ID,
    PAD_ID,
    VOCAB_SIZE,
    ByteTokenizer,
    TinyLlamaConfig,
    continue_text,
    data,
    decode,
    encode,
    generate,
    hf_step_fn,
    load_config,
    load_hf_model,
    load_weights,
    nucleus,
    reference,
    sample_next_token,
)
from minitvm.testing.tiny_llama.model import CONFIG_PATH, WEIGHTS_PATH, expected_shapes, save_weights


@pytest.fixture(scope="module")
def hf_model():
    return load_hf_model()


def test_byte_tokenizer_round_trips_text_and_names_specials():
    rng = np.random.default_rng(0)
    text = "The for statement — ünïcödé ✓ " + "".join(chr(c) for c in rng.integers(32, 0x3000, 200))
    ids = encode(text, bos=True, eos=True)
    assert ids[0] == BOS_ID and ids[-1] == EOS_ID and max(ids[1:-1]) < 256
    assert ids[1:-1] == list(text.encode("utf-8"))
    assert decode(ids) == text
    assert decode([BOS_ID, 72, 105, EOS_ID, PAD_ID], skip_special=False) == "<bos>Hi<eos><pad>"
    assert decode([0xE2, 0x80]) == "\ufffd"  # a cut UTF-8 sequence, as a sampled model may emit
    with pytest.raises(ValueError, match="outside the byte tokenizer's vocabulary"):
        decode([65, VOCAB_SIZE])
    tok = ByteTokenizer()
    prompt = tok.apply_chat_template([{"role": "user", "content": "What is a for loop?"}])
    assert prompt[0] == tok.bos_token_id and tok.decode(prompt) == "What is a for loop?"


def test_committed_files_are_data_and_fit_the_config():
    config = load_config()
    raw = json.loads(CONFIG_PATH.read_text())
    assert raw["training"]["final_train_loss"] < 2.0 and raw["training"]["held_out_loss"] < 2.0
    assert config.vocab_size == VOCAB_SIZE and config.num_attention_heads % config.num_key_value_heads == 0
    assert set(config.tutorial_fields()) >= {"hidden_size", "head_dim", "rope_theta", "context_window_size"}
    with np.load(WEIGHTS_PATH, allow_pickle=False) as f:  # no pickled objects inside
        assert {f[k].dtype for k in f.files} == {np.dtype("float16")}
    weights = load_weights()
    assert {k: v.shape for k, v in weights.items()} == expected_shapes(config)
    assert all(v.dtype == np.float32 for v in weights.values())
    assert 1e6 < sum(v.size for v in weights.values()) < 5e6 and WEIGHTS_PATH.stat().st_size < 8e6


def test_loader_refuses_weights_that_do_not_fit(tmp_path):
    weights = load_weights()
    weights.pop("model.layers.1.mlp.up_proj.weight")
    weights["model.norm.weight"] = weights["model.norm.weight"][:-1]
    save_weights(weights, tmp_path / "bad.npz")
    with pytest.raises(ValueError, match=r"missing \['model.layers.1.mlp.up_proj.weight'\].*model.norm.weight"):
        load_weights(tmp_path / "bad.npz")
    (tmp_path / "bad.json").write_text('{"model": {"hidden_sise": 256}}')
    with pytest.raises(ValueError, match="hidden_sise"):
        load_config(tmp_path / "bad.json")


def test_hf_logits_equal_the_numpy_forward(hf_model):
    ids = encode("The for statement is used to", bos=True)
    with torch.no_grad():
        hf = hf_model(input_ids=torch.tensor([ids])).logits[0].numpy()
    ours = reference.forward(load_weights(), load_config(), ids)
    np.testing.assert_allclose(hf, ours, rtol=1e-4, atol=1e-4)


def test_the_model_is_trained_on_help_text(hf_model):
    # eight rows of the context window's length: the model never saw positions past it
    held_out = torch.from_numpy(data.token_stream(data.split_topics()[1])[:8 * 256 + 1])
    with torch.no_grad():
        logits = hf_model(input_ids=held_out[:-1].reshape(8, 256)).logits
    loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), held_out[1:]).item()
    assert loss < 1.8, f"held-out loss {loss:.3f} nats/byte: these are not the trained weights"  # random: 5.56
    words = continue_text(hf_model, "The for statement", max_new_tokens=200).split()
    known = set(" ".join(data.help_topics().values()).split())
    assert len(words) > 10 and sum(w in known for w in words) >= 0.8 * len(words), words


def test_cached_decode_steps_equal_the_full_forward(hf_model):
    ids = encode("Assignment statements", bos=True)
    step = hf_step_fn(hf_model)
    got = [step(ids[:10])] + [step([t]) for t in ids[10:]]
    with torch.no_grad():
        full = hf_model(input_ids=torch.tensor([ids])).logits[0].numpy()
    np.testing.assert_allclose(np.stack(got), full[9:], rtol=1e-4, atol=1e-4)


def test_greedy_generate_equals_hf_generate_for_64_steps(hf_model):
    prompt = encode("The for statement", bos=True)
    ours = generate(hf_step_fn(hf_model), prompt, 64)
    config = copy.deepcopy(hf_model.generation_config)
    config.eos_token_id = None  # 64 steps on both sides, whatever the model writes
    with torch.no_grad():
        out = hf_model.generate(torch.tensor([prompt]), max_new_tokens=64, do_sample=False,
                                generation_config=config, pad_token_id=PAD_ID)
    assert ours == out[0, len(prompt):].tolist() and len(ours) == 64


def test_top_p_samples_only_the_nucleus_and_repeats_with_a_seed():
    rng = np.random.default_rng(1)
    logits = rng.normal(size=40) * 3
    probs = np.exp(logits - logits.max()); probs /= probs.sum()
    order = np.argsort(-probs)
    inside = set(order[: int(np.searchsorted(np.cumsum(probs[order]), 0.6)) + 1].tolist())
    assert set(nucleus(probs, 0.6).tolist()) == inside and 1 < len(inside) < 40
    draws = [sample_next_token(logits, 1.0, 0.6, rng) for _ in range(3000)]
    assert set(draws) == inside  # every nucleus token drawn, none outside
    freq = np.bincount(draws, minlength=40)[sorted(inside)] / len(draws)
    np.testing.assert_allclose(freq, probs[sorted(inside)] / probs[sorted(inside)].sum(), atol=0.04)
    assert nucleus(np.array([0.1, 0.5, 0.4]), 0.5).tolist() == [1]  # the top token alone reaches 0.5
    assert nucleus(np.array([0.1, 0.5, 0.4]), 1.0).tolist() == [1, 2, 0]

    from transformers.generation.logits_process import TopPLogitsWarper

    for top_p in (0.3, 0.75, 0.95):  # the same nucleus as Hugging Face's sampler keeps
        kept = TopPLogitsWarper(top_p)(None, torch.from_numpy(logits[None]))[0].isfinite().numpy()
        assert set(nucleus(probs, top_p).tolist()) == set(np.flatnonzero(kept).tolist())

    fake = _counting_step_fn(logits)
    a = generate(fake, [BOS_ID], 50, temperature=0.8, top_p=0.9, seed=7)
    b = generate(fake, [BOS_ID], 50, temperature=0.8, top_p=0.9, seed=7)
    c = generate(fake, [BOS_ID], 50, temperature=0.8, top_p=0.9, seed=8)
    assert a == b and a != c
    assert set(a) <= set(nucleus(np.exp(logits / 0.8) / np.exp(logits / 0.8).sum(), 0.9).tolist())


def _counting_step_fn(logits):
    """A step function that always returns ``logits`` shaped as the tutorial's VM does, (1, 1, vocab)."""
    def step(token_ids):
        assert len(token_ids) >= 1
        return logits.reshape(1, 1, -1)
    return step


def test_generate_prefills_once_decodes_per_token_and_stops_at_eos():
    calls = []
    logits = np.full(VOCAB_SIZE, -5.0)

    def step(token_ids):
        calls.append(list(token_ids))
        out = logits.copy()
        out[EOS_ID if len(calls) == 4 else 65 + len(calls)] = 5.0
        return out

    prompt = encode("abc", bos=True)
    assert generate(step, prompt, 10, stop_tokens=[EOS_ID]) == [66, 67, 68, EOS_ID]
    assert calls == [prompt, [66], [67], [68]]  # no decode after the last token
    calls.clear()
    assert generate(step, prompt, 2) == [66, 67] and len(calls) == 2
    with pytest.raises(ValueError, match="at least one token"):
        generate(step, [], 4)
    with pytest.raises(ValueError, match=r"shape \(2, 259\)"):
        generate(lambda ids: np.zeros((2, VOCAB_SIZE)), [BOS_ID], 4)
    with pytest.raises(ValueError, match="top_p"):
        sample_next_token(logits, 1.0, 0.0)


def test_config_maps_onto_hf_llama():
    hf = TinyLlamaConfig().to_hf()
    assert (hf.hidden_size, hf.num_key_value_heads, hf.head_dim, hf.vocab_size) == (256, 4, 32, VOCAB_SIZE)
    assert hf.tie_word_embeddings is False and hf.rms_norm_eps == 1e-5
