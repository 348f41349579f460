"""A byte-level tokenizer: token ids 0-255 are the bytes of the UTF-8 text, then three specials.

No vocabulary file and no merges: every text encodes, and a learner can read the ids as bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

BOS_ID = 256  # begins a document
EOS_ID = 257  # ends one: the model learns to emit it, and a decode loop may stop there
PAD_ID = 258  # fills a batch's short rows; never trained on
VOCAB_SIZE = 259
SPECIAL_TOKENS = {"<bos>": BOS_ID, "<eos>": EOS_ID, "<pad>": PAD_ID}
_SPECIAL_NAMES = {i: name for name, i in SPECIAL_TOKENS.items()}


def encode(text: str, bos: bool = False, eos: bool = False) -> list[int]:
    """The token ids of ``text``: its UTF-8 bytes, with ``<bos>`` before and ``<eos>`` after on request."""
    ids = list(text.encode("utf-8"))
    return ([BOS_ID] if bos else []) + ids + ([EOS_ID] if eos else [])


def decode(ids: Iterable[int], skip_special: bool = True) -> str:
    """The text of token ids: bytes decoded as UTF-8 (a broken sequence, which a sampled model can
    emit, becomes U+FFFD); special tokens are dropped, or written as ``<eos>`` etc. when not skipped."""
    out, run = [], bytearray()
    for i in ids:
        i = int(i)
        if 0 <= i < 256:
            run.append(i)
            continue
        if i not in _SPECIAL_NAMES:
            raise ValueError(f"token id {i} is outside the byte tokenizer's vocabulary (0..{VOCAB_SIZE - 1})")
        out.append(run.decode("utf-8", errors="replace"))
        run = bytearray()
        if not skip_special:
            out.append(_SPECIAL_NAMES[i])
    out.append(run.decode("utf-8", errors="replace"))
    return "".join(out)


class ByteTokenizer:
    """The byte tokenizer with the attribute names of a Hugging Face tokenizer, so code written for
    one (TVM's ``optimize_llm.py`` tutorial) runs with this stand-in."""

    bos_token_id = BOS_ID
    eos_token_id = EOS_ID
    pad_token_id = PAD_ID
    vocab_size = VOCAB_SIZE

    def encode(self, text: str, bos: bool = True, eos: bool = False) -> list[int]:
        return encode(text, bos=bos, eos=eos)

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = True) -> str:
        return decode(ids, skip_special=skip_special_tokens)

    def apply_chat_template(self, messages: Sequence[dict]) -> list[int]:
        """``<bos>`` and the messages' contents, one per line: the model knows no chat format, so the
        prompt is the plain text it continues."""
        return encode("\n".join(m["content"] for m in messages), bos=True)
