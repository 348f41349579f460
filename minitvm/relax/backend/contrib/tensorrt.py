"""TensorRT's BYOC pattern table and ``partition_for_tensorrt`` (TVM's
``relax.backend.contrib.tensorrt``).

Importing it registers one ``"tensorrt.<op>"`` pattern per operator TensorRT converts;
:func:`partition_for_tensorrt` groups what they match into composite functions and merges
neighbouring ones into functions annotated ``Codegen="tensorrt"``.  minitvm has no TensorRT
runtime (``get_global_func("relax.ext.tensorrt", True)`` is None): the partitioned module can
be printed and inspected, not built for TensorRT.  Operators minitvm does not define
(``image.resize2d``, the 3-D pools ...) are left out of the table.
"""

from __future__ import annotations

from ....ir.module import IRModule
from ...dpl.pattern import is_op, wildcard
from ...transform.fuse_ops_by_pattern import FuseOpsByPattern
from ...transform.merge_composite_functions import MergeCompositeFunctions
from ..pattern_registry import get_patterns_with_prefix, register_patterns
from ..utils import has_op

__all__ = ["partition_for_tensorrt", "tensorrt_patterns"]

_UNARY = {"nn.relu": "nn.relu", "sigmoid": "sigmoid", "nn.silu": "nn.silu", "tanh": "tanh", "exp": "exp",
          "log": "log", "sqrt": "sqrt", "abs": "abs", "negative": "negative", "sin": "sin", "cos": "cos",
          "atan": "atan", "ceil": "ceil", "floor": "floor", "erf": "erf", "nn.softmax": "nn.softmax",
          "nn.batch_flatten": "nn.batch_flatten", "expand_dims": "expand_dims", "squeeze": "squeeze",
          "transpose": "permute_dims", "layout_transform": "layout_transform", "nn.max_pool2d": "nn.max_pool2d",
          "nn.avg_pool2d": "nn.avg_pool2d", "nn.max_pool3d": "nn.max_pool3d", "nn.avg_pool3d": "nn.avg_pool3d",
          "nn.adaptive_avg_pool2d": "nn.adaptive_avg_pool2d", "sum": "sum", "prod": "prod", "max": "max",
          "min": "min", "mean": "mean", "concatenate": "concat", "split": "split"}
_BINARY = {"add": "add", "subtract": "subtract", "multiply": "multiply", "divide": "divide", "power": "power",
           "maximum": "maximum", "minimum": "minimum", "nn.conv1d": "nn.conv1d", "nn.conv2d": "nn.conv2d",
           "nn.conv3d": "nn.conv3d", "nn.conv2d_transpose": "nn.conv2d_transpose",
           "nn.conv3d_transpose": "nn.conv3d_transpose", "nn.batch_matmul": "matmul", "reshape": "reshape"}
#: (composite name, operator, operand counts): layer_norm (data, gamma, beta), clip (data, min,
#: max), strided_slice with or without its strides
_OTHERS = [("nn.layer_norm", "nn.layer_norm", (3,)), ("clip", "clip", (3,)),
           ("strided_slice", "strided_slice", (5, 4))]


def tensorrt_patterns() -> list[tuple]:
    """``(name, pattern, {})`` for each operator, one call on wildcard operands."""
    rows = [(name, op, (1,)) for name, op in _UNARY.items()] + \
        [(name, op, (2,)) for name, op in _BINARY.items()] + _OTHERS
    return [(f"tensorrt.{name}", is_op(f"relax.{op}")(*[wildcard() for _ in range(n)]), {})
            for name, op, arities in rows if has_op(f"relax.{op}") for n in arities]


register_patterns(tensorrt_patterns())


def partition_for_tensorrt(mod: IRModule) -> IRModule:
    """Offload what TensorRT converts: each matched operator becomes a composite function, and
    neighbouring composites merge into one function for the ``tensorrt`` codegen.  Bind the
    weights first (``relax.transform.BindParams``) so they reach TensorRT as constants."""
    mod = FuseOpsByPattern(get_patterns_with_prefix("tensorrt"), bind_constants=True, annotate_codegen=False)(mod)
    return MergeCompositeFunctions()(mod)
