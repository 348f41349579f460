"""Relax operators: builders returning ``relax.Call``s, each op registered with its
struct-info inference (``relax.op.add(x, y)``, ``relax.op.nn.relu(x)``).

Legalization (``FLegalize``: a Relax op call to ``R.call_tir`` of a TOPI PrimFunc) is
registered by :mod:`minitvm.relax.transform.legalize_ops`.
"""

from ...tir.op_table import ELEMENTWISE
from . import (
    _op_gradient,  # noqa: F401, E402 - registers each op's FPrimalGradient
    binary,
    builtin,
    grad,
    inspect,
    memory,
    nn,
    unary,
    vm,
)
from .base import (
    assert_op,
    call_builtin_with_ctx,
    call_dps_packed,
    call_inplace_packed,
    call_pure_packed,
    call_py_func,
    call_tir,
    call_tir_inplace,
    call_tir_with_grad,
    null_value,
    print,  # noqa: A004 - R.print
    shape_of,
    shape_to_tensor,
    tensor_to_shape,
)
from .create import arange, full, full_like, ones, ones_like, tril, triu, zeros, zeros_like
from .datatype import astype, wrap_param
from .index import dynamic_strided_slice, gather_elements, scatter_elements, scatter_nd, strided_slice, take
from .layout import layout_transform
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
    stack,
    tile,
)
from .qdq import dequantize, quantize
from .registry import OpPattern, register
from .search import argmax, argmin, where
from .sorting import argsort, sort, topk
from .statistical import cumprod, cumsum, max, mean, median, min, prod, std, sum, variance
from .ternary import ewise_fma
from .unary import clip

__all__ = [
    "nn", "image", "grad", "builtin", "memory", "vm", "call_tir", "call_tir_inplace", "call_tir_with_grad",
    "print", "assert_op",
    "call_dps_packed",
    "call_pure_packed", "call_py_func", "call_builtin_with_ctx", "null_value", "call_inplace_packed",
    "OpPattern", "register",
    # element-wise (besides the table's, added below)
    "where", "ewise_fma", "clip", "astype", "wrap_param",
    # linear algebra
    "matmul", "linear", "einsum",
    # shapes and indexing
    "permute_dims", "reshape", "flatten", "expand_dims", "squeeze", "concat", "stack", "split",
    "broadcast_to", "layout_transform", "take", "strided_slice", "gather_elements", "scatter_elements",
    "scatter_nd", "dynamic_strided_slice", "tensor_to_shape", "shape_of", "shape_to_tensor", "null_value",
    "repeat", "tile", "flip", "collapse_sum_like", "collapse_sum_to",
    # reductions and search
    "sum", "mean", "max", "min", "prod", "variance", "std", "median", "cumsum", "cumprod", "argmax", "argmin",
    # sorting
    "sort", "argsort", "topk",
    # quantization
    "quantize", "dequantize",
    # creation
    "zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "arange", "tril", "triu",
]

# every element-wise operator of the table (minitvm.tir.op_table): relax.op.exp ... relax.op.atan2
globals().update({_row.name: getattr(binary if _row.arity == 2 else unary, _row.name) for _row in ELEMENTWISE})
__all__ += [_row.name for _row in ELEMENTWISE]
from .vdevice import hint_on_device, to_vdevice  # noqa: E402 - virtual devices

__all__ += ["hint_on_device", "to_vdevice"]
from . import image  # noqa: E402 - relax.op.image (resize2d), apart so branches adding ops merge cleanly
from .set import nonzero, unique  # noqa: E402 - set operators, run by a packed function (FCallPacked)

__all__ += ["unique", "nonzero"]
from . import vision  # noqa: E402 - relax.op.vision: non-maximum suppression, run by a packed function

__all__ += ["vision"]
from . import ccl  # noqa: E402 - relax.op.ccl: collectives between workers (struct info only)

__all__ += ["ccl"]

from .closure import invoke_closure, invoke_pure_closure, make_closure  # noqa: E402 - closures (LambdaLift)

__all__ += ["make_closure", "invoke_closure", "invoke_pure_closure"]

from .create import eye, eye_like  # noqa: E402 - eye, gather_nd, meshgrid, one_hot: TVM's later ops
from .index import gather_nd  # noqa: E402
from .manipulate import meshgrid, one_hot  # noqa: E402

__all__ += ["gather_nd", "meshgrid", "one_hot", "eye", "eye_like"]

# last: it reads every operator registered above
from . import _op_mixed_precision  # noqa: E402, F401 - each op's TMixedPrecisionPolicy
