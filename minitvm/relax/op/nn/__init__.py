"""Neural-network operators (``relax.op.nn``, TVM's ``relax.op.nn``), one module per kind:
activations (with softmax and dropout), convolutions, pooling, normalization, padding and
losses.  Each module registers its operators' struct-info rules; their legalizations are in
:mod:`minitvm.relax.transform.legalize_ops.nn`."""

from .activation import dropout, gelu, gelu_tanh, leakyrelu, log_softmax, prelu, relu, relu6, silu, softmax, softplus
from .conv import conv1d, conv1d_transpose, conv2d, conv2d_transpose, conv3d
from .loss import cross_entropy_with_logits, nll_loss
from .norm import batch_norm, group_norm, layer_norm, rms_norm
from .pad import pad
from .pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    max_pool1d,
    max_pool2d,
    max_pool3d,
)
from .shuffle import pixel_shuffle

__all__ = [
    # activations
    "relu", "relu6", "softplus", "gelu", "gelu_tanh", "silu", "leakyrelu", "prelu", "softmax", "log_softmax",
    "dropout", "pixel_shuffle",
    # convolutions
    "conv1d", "conv2d", "conv3d", "conv1d_transpose", "conv2d_transpose",
    # pooling
    "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
    # normalization
    "batch_norm", "layer_norm", "rms_norm", "group_norm",
    # padding, losses
    "pad", "cross_entropy_with_logits", "nll_loss",
]
