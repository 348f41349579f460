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
