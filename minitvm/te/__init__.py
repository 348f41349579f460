"""Tensor expressions (TE): describe a kernel as math over indices, get TensorIR back.

    A = te.placeholder((128, 128), "float32", name="A")
    k = te.reduce_axis((0, 128), "k")
    Y = te.compute((128, 128), lambda i, j: te.sum(A[i, k] * A[k, j], axis=k), name="Y")
    func = te.create_prim_func([A, Y])

The scalar math (``te.exp``, ``te.if_then_else`` ...) is TIR's; ``te.max``/``te.min``
reduce over an axis, or take the element-wise maximum of two expressions.
"""

from __future__ import annotations

import functools as _functools
from typing import Any as _Any

from ..tir import op as _tir_op
from ..tir.expr import Range, const
from ..tir.op import (
    abs,
    cast,
    div,
    floordiv,
    floormod,
    if_then_else,
    max_value,
    min_value,
    truncdiv,
    truncmod,
)
from ..tir.op import logical_and as _and
from ..tir.op import logical_or as _or
from .create_primfunc import create_prim_func
from .operation import compute, placeholder, reduce_axis, size_var, var
from .reduction import CommReducer, Reduce, comm_reducer, max, min, sum
from .tensor import ComputeOp, IterVar, Operation, PlaceholderOp, ProducerLoad, Tensor

# the scalar math of TIR: every math row of the semantics table (te.exp, te.log1p, te.atan2 ...)
globals().update({_name: getattr(_tir_op, _name) for _name in _tir_op.MATH_INTRINSICS})
power = _tir_op.pow


def all(*conditions: _Any):  # noqa: A001 - mirrors te.all
    """The logical and of bool expressions."""
    if not conditions:
        raise ValueError("te.all needs at least one condition")
    return _functools.reduce(_and, conditions, const(True, "bool"))


def any(*conditions: _Any):  # noqa: A001 - mirrors te.any
    """The logical or of bool expressions."""
    if not conditions:
        raise ValueError("te.any needs at least one condition")
    return _functools.reduce(_or, conditions, const(False, "bool"))


__all__ = [
    # building tensors
    "placeholder", "compute", "reduce_axis", "var", "size_var", "const", "create_prim_func",
    # reductions
    "sum", "max", "min", "comm_reducer",
    # scalar math from TIR
    *_tir_op.MATH_INTRINSICS, "abs", "power", "if_then_else", "max_value", "min_value", "div",
    "floordiv", "floormod", "truncdiv", "truncmod", "all", "any", "cast",
    # node classes
    "Tensor", "Operation", "PlaceholderOp", "ComputeOp", "ProducerLoad", "IterVar", "Reduce",
    "CommReducer", "Range",
]
