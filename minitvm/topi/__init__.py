"""TOPI: the operator library in tensor expressions — what Relax ops legalize to.

    A = te.placeholder((n, 784), "float32", name="A")
    W = te.placeholder((128, 784), "float32", name="W")
    Y = topi.nn.relu(topi.nn.dense(A, W))
    func = te.create_prim_func([A, W, Y])

Every function takes ``te.Tensor``s (and plain attributes) and returns ``te.Tensor``s;
compute definitions are the plain math, with no schedule.
"""

from ..tir.op_table import ELEMENTWISE
from . import broadcast, elemwise, nn, utils, x86
from .broadcast import broadcast_to, where
from .einsum import einsum
from .elemwise import cast, clip, full, full_like, identity, ones, zeros
from .reduction import argmax, argmin, collapse_sum, cumprod, cumsum, max, mean, min, prod, sum
from .scatter import gather, scatter_elements, scatter_nd
from .sort import argsort, sort, topk
from .transform import (
    arange,
    concatenate,
    dynamic_strided_slice,
    dynamic_strided_slice_shape,
    expand_dims,
    flatten,
    flip,
    repeat,
    reshape,
    split,
    squeeze,
    strided_slice,
    take,
    tile,
    transpose,
    trilu,
)

__all__ = [
    "nn", "utils", "einsum",
    # element-wise (besides the table's, added below)
    "where", "broadcast_to", "identity", "cast", "clip", "full", "full_like",
    "zeros", "ones",
    "sum", "max", "min", "prod", "mean", "argmax", "argmin", "collapse_sum", "cumsum", "cumprod",
    "transpose", "reshape", "flatten", "expand_dims", "squeeze", "concatenate", "split",
    "strided_slice", "dynamic_strided_slice", "dynamic_strided_slice_shape",
    "take", "arange", "trilu", "repeat", "tile", "flip",
    "gather", "scatter_elements", "scatter_nd", "sort", "argsort", "topk",
]

# every element-wise operator of the table (minitvm.tir.op_table): topi.exp ... topi.atan2
globals().update({_row.name: getattr(broadcast if _row.arity == 2 else elemwise, _row.name) for _row in ELEMENTWISE})
__all__ += [_row.name for _row in ELEMENTWISE]
