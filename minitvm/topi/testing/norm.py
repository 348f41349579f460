"""Normalization references: layer, group, instance and RMS norm."""

import numpy as np


def _normalize(data, axis, epsilon):
    mean = np.mean(data, axis=axis, keepdims=True)
    var = np.var(data, axis=axis, keepdims=True)
    return (data - mean) / np.sqrt(var + epsilon)


def layer_norm_python(data, gamma, beta, axis, epsilon=1e-5):
    """Normalize over ``axis`` (int or tuple) in float32, back to the input dtype, then scale/shift."""
    axis = tuple(axis) if isinstance(axis, list | tuple) else axis
    result = _normalize(data.astype("float32"), axis, epsilon).astype(data.dtype)
    result = result * gamma
    return result if beta is None else result + beta


def instance_norm_python(data, gamma, beta, axis, epsilon=1e-5):
    """As layer_norm_python, computed in the input's own dtype (as TVM's reference)."""
    axis = tuple(axis) if isinstance(axis, list | tuple) else axis
    result = _normalize(data, axis, epsilon) * gamma
    return result if beta is None else result + beta


def group_norm_python(data, gamma, beta, num_groups, channel_axis, axes, epsilon=1e-5):
    """Split ``channel_axis`` into (num_groups, C // num_groups); normalize each group over its
    channels and ``axes``; then per-channel gamma/beta."""
    shape = list(data.shape)
    grouped = list(shape)
    grouped[channel_axis:channel_axis + 1] = [num_groups, shape[channel_axis] // num_groups]
    x = data.reshape(grouped).astype("float32")
    red = [channel_axis + 1] + [a if a < channel_axis else a + 1 for a in axes]
    x = _normalize(x, tuple(red), epsilon).reshape(shape).astype(data.dtype)
    per_channel = [1] * len(shape)
    per_channel[channel_axis] = shape[channel_axis]
    x = x * np.reshape(gamma, per_channel)
    return x if beta is None else x + np.reshape(beta, per_channel)


def rms_norm_python(data, weight, axis, epsilon=1e-5):
    """data * weight / sqrt(mean(data**2 over axis) + eps), in float32, back to the input dtype."""
    axis = tuple(axis) if isinstance(axis, list | tuple) else axis
    x = data.astype("float32")
    rms = np.sqrt(np.mean(x * x, axis=axis, keepdims=True) + epsilon)
    return (x * weight.astype("float32") / rms).astype(data.dtype)


def batch_norm(x, gamma, beta, moving_mean, moving_var, axis, epsilon, center, scale, training,
               momentum):
    """[out, new moving_mean, new moving_var]; training normalizes with the batch's own
    statistics over every axis but ``axis`` and moves the running ones by ``momentum``."""
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    if training:
        others = tuple(a for a in range(x.ndim) if a != axis % x.ndim)
        mean, var = np.mean(x, axis=others), np.var(x, axis=others)
    else:
        mean, var = moving_mean, moving_var
    out = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + epsilon)
    if scale:
        out = out * gamma.reshape(shape)
    if center:
        out = out + beta.reshape(shape)
    if not training:
        return [out, moving_mean, moving_var]
    return [out, (1 - momentum) * moving_mean + momentum * mean,
            (1 - momentum) * moving_var + momentum * var]


def l2_normalize_python(a_np, eps, axis=None):
    """a / sqrt(max(sum(a**2 over axis), eps))."""
    axis = tuple(axis) if isinstance(axis, list | tuple) else axis
    return a_np / np.sqrt(np.maximum(np.sum(a_np * a_np, axis=axis, keepdims=True), eps))
