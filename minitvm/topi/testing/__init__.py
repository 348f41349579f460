"""numpy reference implementations of operators, under TVM's names (``tvm.topi.testing``).

TVM's own tests compare compiled results with these; each is plain numpy, written for
clarity rather than speed, with TVM's signatures, layouts and argument order.
"""

from .attention import attention_python
from .conv import (
    conv2d_nchw_python,
    conv2d_nhwc_python,
    depthwise_conv2d_python_nchw,
    depthwise_conv2d_python_nhwc,
    get_pad_tuple,
)
from .image import affine_grid_python
from .matmul import batch_matmul, dense
from .norm import group_norm_python, instance_norm_python, layer_norm_python, rms_norm_python
from .softmax import log_softmax_python, softmax_python
from .transform import (
    gather_nd_python,
    gather_python,
    one_hot,
    strided_set_python,
    strided_slice_python,
)
from .vision import get_valid_counts_python, non_max_suppression_python

__all__ = [
    "attention_python",
    "conv2d_nchw_python", "conv2d_nhwc_python", "depthwise_conv2d_python_nchw",
    "depthwise_conv2d_python_nhwc", "get_pad_tuple",
    "affine_grid_python",
    "batch_matmul", "dense",
    "group_norm_python", "instance_norm_python", "layer_norm_python", "rms_norm_python",
    "log_softmax_python", "softmax_python",
    "gather_nd_python", "gather_python", "one_hot", "strided_set_python", "strided_slice_python",
    "get_valid_counts_python", "non_max_suppression_python",
]
