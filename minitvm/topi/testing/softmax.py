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


def nll_loss(predictions, targets, weights, reduction="mean", ignore_index=-100):
    """Negative log-likelihood: -predictions[n, target, ...] * weights[target]; "mean" divides
    by the summed weights of the targets that are not ``ignore_index``."""
    keep = targets != ignore_index
    safe = np.where(keep, targets, 0).astype("int64")
    picked = np.take_along_axis(predictions, np.expand_dims(safe, 1), axis=1)[:, 0]
    w = np.where(keep, np.asarray(weights)[safe], 0.0)
    losses = -picked * w
    if reduction == "mean":
        return np.sum(losses) / np.sum(w)
    if reduction == "sum":
        return np.sum(losses)
    return losses
