"""The trained tiny Llama (``minitvm.testing.tiny_llama``, trained on Python's help text) writes
through minitvm what it writes through torch.

TVM's tutorial model (the classes of ``optimize_llm_tutorial.py`` here, TVM's ``optimize_llm.py``
as written) is built at the trained model's configuration, compiled with the tutorial's
``opt_llm`` pipeline, loaded with the trained weights the tutorial's way, and driven by
``tiny_llama.generate`` over ``embed`` / ``prefill`` / ``decode`` and the paged KV cache: its 64
greedy tokens must equal Hugging Face's ``generate`` on the same weights.
"""

from __future__ import annotations

import copy

import numpy as np
import optimize_llm_tutorial as tutorial
import torch

import minitvm as tvm
from minitvm.testing.tiny_llama import PAD_ID, decode, encode, generate, load_config, load_hf_model
from minitvm_ffi import Shape

STEPS = 64


def compiled_step_fn(vm, params, config):
    """``step_fn`` for ``generate``: the prompt through ``prefill``, then one token at a time
    through ``decode``, both on one sequence of the tutorial's paged KV cache."""
    kv_cache = vm["create_tir_paged_kv_cache"](Shape([1]), Shape([config.context_window_size]),
                                               Shape([config.prefill_chunk_size]), Shape([16]))
    tvm.get_global_func("vm.builtin.kv_state_add_sequence")(kv_cache, 0)
    begin = tvm.get_global_func("vm.builtin.kv_state_begin_forward")
    end = tvm.get_global_func("vm.builtin.kv_state_end_forward")
    view = tvm.get_global_func("vm.builtin.reshape")

    def step(token_ids):
        embedded = vm["embed"](tvm.runtime.tensor(np.array(token_ids, "int32")), params)
        hidden = view(embedded, Shape([1, embedded.shape[0], embedded.shape[1]]))
        begin(kv_cache, Shape([0]), Shape([len(token_ids)]))
        logits, _ = vm["prefill" if len(token_ids) > 1 else "decode"](hidden, kv_cache, params)
        end(kv_cache)
        return logits.numpy()

    return step


def test_the_trained_model_writes_through_minitvm_what_it_writes_through_torch(tmp_path):
    trained = load_config()
    hf_model = load_hf_model()
    hf_model.save_pretrained(tmp_path)  # the tutorial's weight-loading cell reads it from here
    config = tutorial.LlamaConfig(**trained.tutorial_fields())
    vm, named_params = tutorial.build(config)
    params = tutorial.load_params(config, named_params, tmp_path)

    prompt = encode("The for statement", bos=True)
    ours = generate(compiled_step_fn(vm, params, config), prompt, STEPS)
    generation = copy.deepcopy(hf_model.generation_config)
    generation.eos_token_id = None  # 64 steps on both sides, whatever the model writes
    with torch.no_grad():
        out = hf_model.generate(torch.tensor([prompt]), max_new_tokens=STEPS, do_sample=False,
                                generation_config=generation, pad_token_id=PAD_ID)
    assert ours == out[0, len(prompt):].tolist(), decode(ours)
    assert len(ours) == STEPS and decode(ours).strip(), decode(ours)
