"""Multi-head attention reference (grouped-query heads, causal masks, sliding window)."""

import numpy as np

from .softmax import softmax_python


def _causal_keep(s, s_kv, causal, window_size):
    """Boolean [s, s_kv]: which scores a causal (and optionally windowed) mask keeps."""
    if causal == "TopLeft":
        offset = 0
    elif causal == "BottomRight":
        offset = abs(s - s_kv)
    else:
        raise ValueError(f"attention_python: unsupported causal {causal!r} "
                         "(expected 'none', 'TopLeft' or 'BottomRight')")
    row = np.arange(s)[:, None]
    col = np.arange(s_kv)[None, :]
    keep = col - row <= offset
    if window_size:
        keep &= col - row >= 1 - window_size
    return keep


def attention_python(q, k, v, bias, qk_scale, causal, window_size=None, layout="BSNH"):
    """softmax(q @ k^T * scale + bias) @ v, in ``layout`` (BSNH, BNSH or SBNH).

    ``qk_scale="none"`` scales by 1/sqrt(head_dim); fewer kv heads than query heads repeat
    each kv head over its group; a masked row's masked scores are zeros, not -inf, and take
    part in the row's max (as TVM's reference).
    """
    if layout not in ("BSNH", "BNSH", "SBNH"):
        raise ValueError(f"attention_python: unsupported layout {layout!r}")
    to_bnsh = [layout.find(c) for c in "BNSH"]
    q, k, v = (t.transpose(to_bnsh) for t in (q, k, v))
    groups = q.shape[1] // k.shape[1]
    if groups != 1:
        k, v = np.repeat(k, groups, axis=1), np.repeat(v, groups, axis=1)
    scale = 1.0 / np.sqrt(q.shape[-1]) if isinstance(qk_scale, str) and qk_scale == "none" \
        else qk_scale
    score = (q @ np.swapaxes(k, -1, -2)) * scale
    if bias is not None:
        score = score + bias
    if causal == "none":
        attn = softmax_python(score, -1)
    else:
        keep = _causal_keep(score.shape[-2], score.shape[-1], causal, window_size)
        score = np.where(keep, score, 0)
        e = np.where(keep, np.exp(score - np.max(score, axis=-1, keepdims=True)), 0)
        attn = e / np.sum(e, axis=-1, keepdims=True)
    return (attn @ v).transpose(np.argsort(to_bnsh))
