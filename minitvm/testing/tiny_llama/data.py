"""The training text: ``pydoc_data.topics``, the help pages every Python ships (``help("for")``).

Each topic is one document, ``<bos> text <eos>``. Every 16th topic (in name order) is held out, so
a loss or perplexity can be measured on help text the model has not trained on.
"""

from __future__ import annotations

import hashlib

import numpy as np

from .tokenizer import encode

HOLD_OUT_EVERY = 16


def help_topics() -> dict[str, str]:
    """The interpreter's help topics, name -> text, in name order."""
    from pydoc_data.topics import topics

    return dict(sorted(topics.items()))


def split_topics() -> tuple[list[str], list[str]]:
    """(training topic names, held-out topic names)."""
    names = list(help_topics())
    held_out = names[::HOLD_OUT_EVERY]
    return [n for n in names if n not in held_out], held_out


def token_stream(names: list[str]) -> np.ndarray:
    """The topics' documents as one int64 array of token ids, ``<bos> text <eos>`` each."""
    topics = help_topics()
    return np.array([i for n in names for i in encode(topics[n], bos=True, eos=True)], dtype=np.int64)


def text_digest() -> str:
    """sha256 of the help text: it differs between Python versions, so the training record names it."""
    h = hashlib.sha256()
    for name, text in help_topics().items():
        h.update(name.encode() + b"\0" + text.encode() + b"\0")
    return h.hexdigest()
