"""TOPI: the operator library in tensor expressions — what Relax ops legalize to.

    A = te.placeholder((n, 784), "float32", name="A")
    W = te.placeholder((128, 784), "float32", name="W")
    Y = topi.nn.relu(topi.nn.dense(A, W))
    func = te.create_prim_func([A, W, Y])

Every function takes ``te.Tensor``s (and plain attributes) and returns ``te.Tensor``s;
compute definitions are the plain math, with no schedule.
"""

from . import nn, utils, x86
from .broadcast import (
    add,
    broadcast_to,
    divide,
    equal,
    floor_divide,
    greater,
    greater_equal,
    less,
    less_equal,
    logical_and,
    logical_or,
    maximum,
    minimum,
    multiply,
    not_equal,
    power,
    subtract,
    where,
)
from .einsum import einsum
from .elemwise import (
    abs,
    acos,
    acosh,
    asin,
    asinh,
    atan,
    atanh,
    cast,
    ceil,
    clip,
    cos,
    cosh,
    erf,
    exp,
    floor,
    full,
    full_like,
    identity,
    isfinite,
    isinf,
    isnan,
    log,
    logical_not,
    negative,
    ones,
    round,
    rsqrt,
    sigmoid,
    sign,
    sin,
    sinh,
    sqrt,
    square,
    tan,
    tanh,
    trunc,
    zeros,
)
from .reduction import argmax, argmin, collapse_sum, cumprod, cumsum, max, mean, min, prod, sum
from .transform import (
    arange,
    concatenate,
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
    "add", "subtract", "multiply", "divide", "floor_divide", "power", "maximum", "minimum",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
    "logical_or", "where", "broadcast_to",
    "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "negative", "abs", "floor", "ceil",
    "round", "trunc", "sin", "cos", "identity", "logical_not", "cast", "clip", "full", "full_like",
    "zeros", "ones",
    "sum", "max", "min", "prod", "mean", "argmax", "argmin", "collapse_sum", "cumsum", "cumprod",
    "transpose", "reshape", "flatten", "expand_dims", "squeeze", "concatenate", "split",
    "strided_slice", "take", "arange", "trilu", "repeat", "tile", "flip",
]
