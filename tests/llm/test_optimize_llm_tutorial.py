"""TVM's tutorial ``docs/how_to/tutorials/optimize_llm.py``, adapted for a CPU and no network
(``tests/llm/optimize_llm_tutorial.py`` lists what is changed), run with
``import minitvm as tvm``.

The check: prefill's logits and every decode step's equal HF's (rtol 1e-4), and the generated tokens
are HF's greedy ``generate``'s.
"""

from __future__ import annotations

import numpy as np
import optimize_llm_tutorial as tutorial
import pytest


def test_optimize_llm_tutorial_matches_hugging_face(tmp_path):
    model_config = tutorial.LlamaConfig()
    hf_model = tutorial.hf_model_for(model_config)
    hf_model.save_pretrained(tmp_path)  # what the tutorial's HF_WEIGHT_PATH would hold
    vm, named_params = tutorial.build(model_config)
    with pytest.raises(ValueError, match="opt_llm"):  # a second registration is refused, as TVM refuses it
        tutorial.register_opt_llm_pipeline()
    params = tutorial.load_params(model_config, named_params, tmp_path)
    prompt, output_tokens, all_logits = tutorial.generate(vm, params, tutorial.ByteTokenizer())

    ref_tokens, ref_logits = tutorial.hf_reference(hf_model, prompt)
    tutorial.compare_with_reference(all_logits, output_tokens, ref_tokens, ref_logits, model_config.vocab_size)


def test_the_comparison_refuses_a_step_off_by_more_than_rtol():
    """The check above can fail: one decode step's logits off by 1e-3 relative, or one token off."""
    rng = np.random.default_rng(0)
    ref = [rng.standard_normal(256).astype("float32") for _ in range(17)]
    tokens = [int(np.argmax(r)) for r in ref]
    ours = [r.reshape(1, 1, 256).copy() for r in ref]
    tutorial.compare_with_reference(ours, tokens, tokens, ref, 256)  # equal: passes
    ours[5][0, 0, 7] *= 1.001
    with pytest.raises(AssertionError, match="step 5 .decode."):
        tutorial.compare_with_reference(ours, tokens, tokens, ref, 256)
    with pytest.raises(AssertionError, match="greedy tokens differ"):
        tutorial.compare_with_reference([r.reshape(1, 1, 256) for r in ref], tokens[:-1] + [tokens[-1] + 1],
                                        tokens, ref, 256)
