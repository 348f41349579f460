"""The example NPU's patterns (TVM's ``relax.backend.contrib.example_npu.patterns``).

Names and priorities as TVM's: single operators first, then ``depthwise_conv2d`` (a conv2d
with ``groups > 1``) over ``conv2d``, then the fused ``matmul_relu`` / ``conv2d_relu`` last,
so the larger match wins.  Operators minitvm does not define are left out, as TVM leaves out
those its build lacks.  The checks stand for an NPU's limits: the operand dtypes must be ones
it computes in (int8, int16, float16, float32).
"""

from __future__ import annotations

from typing import Any

from ....dpl.pattern import is_op, wildcard
from ....struct_info import TensorStructInfo
from ....transform.fuse_ops_by_pattern import PatternCheckContext
from ...pattern_registry import register_patterns
from ...utils import has_op

__all__ = ["SUPPORTED_DTYPES", "npu_patterns"]

#: the dtypes the example NPU computes in
SUPPORTED_DTYPES = ("int8", "int16", "float16", "float32")


def _dtypes_supported(context: PatternCheckContext) -> bool:
    """Every tensor the match reads or returns is in a dtype the NPU computes in."""
    for expr in context.annotated_expr.values():
        sinfo = getattr(expr, "struct_info_", None) or getattr(expr, "struct_info", None)
        if isinstance(sinfo, TensorStructInfo) and sinfo.dtype not in SUPPORTED_DTYPES:
            return False
    return True


def _grouped(context: PatternCheckContext) -> bool:
    return int(context.annotated_expr["root"].attrs.groups) > 1 and _dtypes_supported(context)


def _single(name: str, op_name: str, arity: int, check: Any = _dtypes_supported) -> tuple:
    """``example_npu.<name>``: one call of ``op_name`` on ``arity`` operands."""
    args = [wildcard() for _ in range(arity)]
    root = is_op(op_name)(*args)
    keys = ["input", "weight"] if arity == 2 and name not in ("add", "multiply", "subtract", "divide") else \
        [f"input{k + 1}" for k in range(arity)] if arity > 1 else ["input"]
    return (f"example_npu.{name}", root, {**dict(zip(keys, args)), "root": root}, check)


def _fused_relu(name: str, op_name: str) -> tuple:
    """``example_npu.<name>_relu_fused``: ``relu(op(input, weight))``, one NPU pass."""
    data, weight = wildcard(), wildcard()
    inner = is_op(op_name)(data, weight)
    root = is_op("relax.nn.relu")(inner)
    return (f"example_npu.{name}_relu_fused", root,
            {"input": data, "weight": weight, name: inner, "root": root}, _dtypes_supported)


def npu_patterns() -> list[tuple]:
    """The table, lowest priority first (the order :func:`register_patterns` wants)."""
    singles = [("quantize", "relax.quantize", 1), ("dequantize", "relax.dequantize", 1)]
    singles += [(op, f"relax.{op}", 2) for op in ("add", "multiply", "subtract", "divide")]
    singles += [(op, f"relax.nn.{op}", 1) for op in ("relu", "relu6", "sigmoid", "tanh", "gelu")]
    singles += [("softmax", "relax.nn.softmax", 1), ("batch_norm", "relax.nn.batch_norm", 5),
                ("max_pool2d", "relax.nn.max_pool2d", 1), ("avg_pool2d", "relax.nn.avg_pool2d", 1),
                ("dense", "relax.matmul", 2), ("matmul", "relax.matmul", 2),
                ("conv1d", "relax.nn.conv1d", 2), ("conv2d", "relax.nn.conv2d", 2)]
    table = [_single(name, op, arity) for name, op, arity in singles if has_op(op)]
    table.append(_single("depthwise_conv2d", "relax.nn.conv2d", 2, _grouped))
    table += [_fused_relu("matmul", "relax.matmul"), _fused_relu("conv2d", "relax.nn.conv2d")]
    return table


register_patterns(npu_patterns())
