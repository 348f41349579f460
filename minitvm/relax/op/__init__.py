"""Relax operators: builders returning ``relax.Call``s, each op registered with its
struct-info inference (``relax.op.add(x, y)``, ``relax.op.nn.relu(x)``).

Legalization (``FLegalize``: a Relax op call to ``R.call_tir`` of a TOPI PrimFunc) is
registered by :mod:`minitvm.relax.transform.legalize_ops`.
"""

from . import builtin, grad, memory, nn, vm
from .base import (
    assert_op,
    call_dps_packed,
    call_pure_packed,
    call_py_func,
    call_tir,
    call_tir_inplace,
    print,  # noqa: A004 - R.print
)
from .binary import (
    add,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    divide,
    equal,
    floor_divide,
    floor_mod,
    greater,
    greater_equal,
    left_shift,
    less,
    less_equal,
    logical_and,
    logical_or,
    maximum,
    minimum,
    mod,
    multiply,
    not_equal,
    power,
    right_shift,
    subtract,
)
from .create import arange, full, full_like, ones, ones_like, tril, triu, zeros, zeros_like
from .datatype import astype
from .index import gather_elements, scatter_elements, strided_slice, take
from .linear_algebra import einsum, linear, matmul
from .manipulate import (
    broadcast_to,
    collapse_sum_like,
    collapse_sum_to,
    concat,
    expand_dims,
    flatten,
    flip,
    permute_dims,
    repeat,
    reshape,
    split,
    squeeze,
    tile,
)
from .qdq import dequantize, quantize
from .registry import OpPattern, register
from .search import argmax, argmin, where
from .statistical import cumprod, cumsum, max, mean, min, prod, std, sum, variance
from .ternary import ewise_fma
from .unary import (
    abs,
    acos,
    acosh,
    asin,
    asinh,
    atan,
    atanh,
    bitwise_not,
    ceil,
    clip,
    cos,
    cosh,
    erf,
    exp,
    floor,
    isfinite,
    isinf,
    isnan,
    log,
    logical_not,
    negative,
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
)

__all__ = [
    "nn", "grad", "builtin", "memory", "vm", "call_tir", "call_tir_inplace", "print", "assert_op",
    "call_dps_packed",
    "call_pure_packed", "call_py_func", "OpPattern", "register",
    # element-wise
    "add", "subtract", "multiply", "divide", "floor_divide", "power", "maximum", "minimum",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "where", "ewise_fma",
    "logical_and", "logical_or", "logical_not", "clip", "mod", "floor_mod",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "left_shift", "right_shift",
    "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "negative", "abs", "astype",
    "acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "sin", "sinh", "tan",
    "ceil", "floor", "round", "trunc", "sign", "square", "isfinite", "isinf", "isnan",
    # linear algebra
    "matmul", "linear", "einsum",
    # shapes and indexing
    "permute_dims", "reshape", "flatten", "expand_dims", "squeeze", "concat", "split",
    "broadcast_to", "take", "strided_slice", "gather_elements", "scatter_elements",
    "repeat", "tile", "flip", "collapse_sum_like", "collapse_sum_to",
    # reductions and search
    "sum", "mean", "max", "min", "prod", "variance", "std", "cumsum", "cumprod", "argmax", "argmin",
    # quantization
    "quantize", "dequantize",
    # creation
    "zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "arange", "tril", "triu",
]
