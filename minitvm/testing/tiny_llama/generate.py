"""A decode loop a learner can read: the prompt goes through the model once (prefill), then each new
token goes through alone (decode), the model's KV cache remembering the rest; the next token is the
most likely one (greedy) or a draw from the most likely few (temperature and top-p sampling).

The model is reached only through ``step_fn(token_ids) -> logits``: called once with the whole prompt,
then with one token at a time, it returns the logits of the token that comes next. The caller owns the
cache, so the same loop drives Hugging Face's model (``model.hf_step_fn``) and a compiled one. For
the functions of TVM's ``optimize_llm.py`` tutorial, the step function is, in outline::

    def step(token_ids):
        hidden = embed(runtime.tensor(np.array(token_ids, "int32")), params)  # (1, n, hidden_size)
        begin_forward(kv_cache, ShapeTuple([seq_id]), ShapeTuple([len(token_ids)]))
        logits, _ = vm["prefill" if len(token_ids) > 1 else "decode"](hidden, kv_cache, params)
        end_forward(kv_cache)
        return logits.numpy()  # (1, 1, vocab)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

StepFn = Callable[[list[int]], "np.ndarray"]


def _next_token_logits(logits) -> np.ndarray:
    """``step_fn``'s answer as a vector over the vocabulary (it may come as ``(1, 1, vocab)``)."""
    logits = np.asarray(logits, dtype=np.float64)
    if logits.ndim == 0 or any(n != 1 for n in logits.shape[:-1]):
        raise ValueError(f"step_fn returned logits of shape {logits.shape}; expected the next token's logits "
                         "only: (vocab,) or (1, 1, vocab)")
    return logits.reshape(-1)


def softmax(logits: np.ndarray) -> np.ndarray:
    """Probabilities from logits (the largest is subtracted first so ``exp`` cannot overflow)."""
    e = np.exp(logits - logits.max())
    return e / e.sum()


def nucleus(probs: np.ndarray, top_p: float) -> np.ndarray:
    """The top-p nucleus: the fewest most-probable tokens whose probabilities add up to ``top_p`` or
    more, most probable first (ties keep the lower id first)."""
    order = np.argsort(-probs, kind="stable")
    mass = np.cumsum(probs[order])
    # the first position where the running mass reaches top_p ends the nucleus (rounding can leave the
    # total a hair under 1.0, hence the min)
    size = min(int(np.searchsorted(mass, top_p)) + 1, len(order))
    return order[:size]


def sample_next_token(logits, temperature: float = 0.0, top_p: float = 1.0,
                      rng: np.random.Generator | None = None) -> int:
    """The next token from its logits: the most likely one when ``temperature`` is 0, else a draw
    from the top-p nucleus of ``softmax(logits / temperature)``, renormalised."""
    logits = _next_token_logits(logits)
    if temperature < 0 or not 0 < top_p <= 1:
        raise ValueError(f"need temperature >= 0 and 0 < top_p <= 1; got temperature={temperature}, top_p={top_p}")
    if temperature == 0:
        return int(np.argmax(logits))
    probs = softmax(logits / temperature)
    keep = nucleus(probs, top_p)
    kept = probs[keep] / probs[keep].sum()
    rng = rng if rng is not None else np.random.default_rng()
    return int(keep[rng.choice(len(keep), p=kept)])


def generate(step_fn: StepFn, prompt: Sequence[int], max_new_tokens: int, temperature: float = 0.0,
             top_p: float = 1.0, seed: int | None = None, stop_tokens: Sequence[int] = ()) -> list[int]:
    """Up to ``max_new_tokens`` token ids that continue ``prompt`` (ids), stopping after one of
    ``stop_tokens`` (e.g. the tokenizer's ``eos_token_id``). Greedy when ``temperature`` is 0;
    otherwise sampled, the same tokens again for the same ``seed``."""
    if len(prompt) == 0:
        raise ValueError("generate needs a prompt of at least one token (e.g. the <bos> token)")
    rng = np.random.default_rng(seed)
    logits = step_fn(list(prompt))  # prefill: the whole prompt in one call, filling the cache
    new_tokens: list[int] = []
    while len(new_tokens) < max_new_tokens:
        token = sample_next_token(logits, temperature, top_p, rng)
        new_tokens.append(token)
        if token in stop_tokens or len(new_tokens) == max_new_tokens:
            break  # no decode step for a token nobody will continue
        logits = step_fn([token])  # decode: one token; the cache grows by one position
    return new_tokens
