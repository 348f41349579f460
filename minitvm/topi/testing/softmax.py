"""softmax / log_softmax references."""

import numpy as np


def softmax_python(a_np, axis=1):
    """softmax along ``axis`` (TVM's default axis is 1), max-subtracted for stability."""
    shifted = a_np - np.max(a_np, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax_python(a_np, axis=1):
    """log(softmax(a)) along ``axis``, computed as shifted - log(sum(exp(shifted)))."""
    shifted = a_np - np.max(a_np, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))
