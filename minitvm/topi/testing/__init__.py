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
from .norm import (
    batch_norm,
    group_norm_python,
    instance_norm_python,
    l2_normalize_python,
    layer_norm_python,
    rms_norm_python,
)
from .pool import adaptive_pool, poolnd_python
from .softmax import log_softmax_python, nll_loss, softmax_python
from .transform import (
    depth_to_space_python,
    dilate_python,
    gather_nd_python,
    gather_python,
    one_hot,
    searchsorted_ref,
    space_to_depth_python,
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
    "batch_norm", "group_norm_python", "instance_norm_python", "l2_normalize_python",
    "layer_norm_python", "rms_norm_python",
    "adaptive_pool", "poolnd_python",
    "log_softmax_python", "nll_loss", "softmax_python",
    "depth_to_space_python", "dilate_python", "searchsorted_ref", "space_to_depth_python",
    "gather_nd_python", "gather_python", "one_hot", "strided_set_python", "strided_slice_python",
    "get_valid_counts_python", "non_max_suppression_python",
]
