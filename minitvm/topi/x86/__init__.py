"""x86 kernels and their schedules (TVM's ``topi.x86``): compute definitions that assume a
layout the CPU likes (weights packed at compile time), with the schedule rule for each."""

from .conv2d import (
    conv1d_ncw_packed,
    conv2d_nchw_packed,
    pack_conv1d_weight,
    pack_conv2d_weight,
    schedule_conv2d_nchw_packed,
    stem_block,
)
from .pooling import max_pool2d_separable, schedule_max_pool2d_separable, separable_max_pool2d

__all__ = ["conv1d_ncw_packed", "conv2d_nchw_packed", "pack_conv1d_weight", "pack_conv2d_weight",
           "schedule_conv2d_nchw_packed", "stem_block",
           "max_pool2d_separable", "schedule_max_pool2d_separable", "separable_max_pool2d"]
