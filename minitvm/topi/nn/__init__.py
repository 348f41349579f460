"""Neural-network operators in TE: ``topi.nn.relu``, ``topi.nn.matmul``, ``topi.nn.dense``,
``topi.nn.softmax``, ``topi.nn.conv2d_nchw``, ``topi.nn.pool2d`` ..."""

from ..transform import flatten
from .conv2d import conv, conv1d, conv2d, conv2d_nchw
from .conv_transpose import conv_transpose
from .dense import batch_matmul, dense, matmul
from .elemwise import dropout, gelu, gelu_tanh, leaky_relu, pixel_shuffle, prelu, relu, silu, softplus
from .loss import nll_loss
from .norm import batch_norm, group_norm, layer_norm, rms_norm
from .pad import pad
from .pooling import adaptive_pool, adaptive_pool1d, adaptive_pool3d, pool1d, pool2d, pool3d, pool_grad
from .softmax import log_softmax, softmax

__all__ = ["relu", "leaky_relu", "gelu", "gelu_tanh", "silu", "dropout", "matmul", "dense",
           "batch_matmul", "softmax", "log_softmax", "conv2d", "conv2d_nchw", "pool2d",
           "adaptive_pool", "pad", "layer_norm", "rms_norm", "batch_norm", "flatten", "prelu", "nll_loss",
           "conv", "conv1d", "conv_transpose", "group_norm", "pool1d", "pool3d", "pool_grad", "adaptive_pool1d",
           "adaptive_pool3d", "softplus", "pixel_shuffle"]
