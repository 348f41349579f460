"""Set operators: ``relax.unique`` and ``relax.nonzero`` (TVM's ``relax.op.unique`` /
``relax.op.nonzero``).

Their output lengths depend on the data, so neither is legalized to a kernel: as in TVM each
names a packed function (the op attribute ``FCallPacked``, ``relax.run.unique`` /
``relax.run.nonzero``) that the VM calls on the whole tensor, computed with numpy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir.op import Op
from ...runtime.ndarray import NDArray, array
from ...runtime.registry import register_func
from ...tir.expr import IntImm
from ..expr import Call, Expr, PrimValue, ShapeExpr
from ..struct_info import StructInfo, StructInfoError, TensorStructInfo, TupleStructInfo
from ._utils import normalize_axis
from .registry import OpPattern, make_call, register, tensor_arg

__all__ = ["unique", "nonzero"]


class SetOpInputError(StructInfoError, TypeError):
    """The input of a set operator is not a tensor (TVM: a TypeError from its downcast)."""


def _tensor_input(call: Call, op: str) -> TensorStructInfo:
    try:
        return tensor_arg(call, 0, op, "x")
    except StructInfoError as err:
        raise SetOpInputError(str(err)) from None


def _flag(value: Expr, op: str, name: str) -> bool:
    v = value.value if isinstance(value, PrimValue) else None
    if not isinstance(v, IntImm):
        raise StructInfoError(f"{op}: {name} must be a constant bool, got {value!r}")
    return bool(v.value)


@register("relax.unique", pattern=OpPattern.OPAQUE)
def _infer_unique(call: Call, ctx: Any) -> StructInfo:
    """The unique values (1-D, or the input's rank with an axis; shape (1,) for a scalar), then
    an int64 vector for each of index, inverse and counts that is asked for."""
    op = "relax.unique"
    if len(call.args) not in (5, 6):
        raise StructInfoError(f"{op} takes 5 or 6 arguments (x, sorted, return_index, return_inverse, "
                              f"return_counts[, axis]), got {len(call.args)}")
    x = _tensor_input(call, op)
    axis = call.args[5].value if len(call.args) == 6 and isinstance(call.args[5], PrimValue) else None
    if axis is not None and x.ndim != -1 and isinstance(axis, IntImm):
        normalize_axis(op, int(axis.value), x.ndim)
    extra = sum(_flag(call.args[i], op, name) for i, name in
                ((2, "return_index"), (3, "return_inverse"), (4, "return_counts")))
    if x.ndim == 0:  # a scalar has one unique value
        one = ShapeExpr([1])
        fields = [TensorStructInfo(one, x.dtype, x.vdevice)] + \
            [TensorStructInfo(ShapeExpr([1]), "int64", x.vdevice) for _ in range(extra)]
    else:
        ndim = x.ndim if axis is not None else 1
        fields = [TensorStructInfo(None, x.dtype, x.vdevice, ndim)] + \
            [TensorStructInfo(None, "int64", x.vdevice, 1) for _ in range(extra)]
    return fields[0] if len(fields) == 1 else TupleStructInfo(fields)


def unique(x: Expr, sorted: Any = True, return_index: Any = False,  # noqa: A002 - TVM's name
           return_inverse: Any = False, return_counts: Any = False, axis: Any = None) -> Call:
    """The unique elements of ``x`` (of the flattened tensor, or slices along ``axis``), in
    ascending order unless ``sorted`` is False (then in order of first appearance); with the
    flags, also the index of each one's first appearance, the index into the result of every
    input element, and how often each appears."""
    def prim(v: Any) -> Any:
        return PrimValue(bool(v)) if isinstance(v, (bool, int, np.bool_)) else v
    args = [x, prim(sorted), prim(return_index), prim(return_inverse), prim(return_counts)]
    if axis is not None:
        args.append(PrimValue(int(axis)) if isinstance(axis, int) else axis)
    return make_call("relax.unique", *args)


@register("relax.nonzero", pattern=OpPattern.OPAQUE, num_inputs=1)
def _infer_nonzero(call: Call, ctx: Any) -> StructInfo:
    """An int64 matrix: one row per input dimension, one column per nonzero element."""
    x = _tensor_input(call, "relax.nonzero")
    return TensorStructInfo(None, "int64", x.vdevice, 2)


def nonzero(x: Expr) -> Call:
    """The indices of the nonzero elements of ``x``, one row per dimension (ONNX's NonZero)."""
    return make_call("relax.nonzero", x)


def run_unique(x: NDArray, sorted: int, return_index: int, return_inverse: int,  # noqa: A002
               return_counts: int, axis: int | None = None) -> Any:
    """``relax.unique`` at run time (numpy's unique; first-appearance order unless sorted)."""
    data = x.numpy()
    values, first, inverse, counts = np.unique(data, return_index=True, return_inverse=True,
                                               return_counts=True, axis=axis)
    inverse = np.asarray(inverse).reshape(-1)
    if not sorted:
        order = np.argsort(first, kind="stable")  # the unique values as they first appear
        values = np.take(values, order, axis=0 if axis is None else axis)
        first, counts = first[order], counts[order]
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        inverse = rank[inverse]
    if data.ndim == 0:
        values = values.reshape(1)
    outs = [values] + [a.astype("int64") for a, want in ((first, return_index), (inverse, return_inverse),
                                                          (counts, return_counts)) if want]
    return array(outs[0]) if len(outs) == 1 else tuple(array(o) for o in outs)


def run_nonzero(x: NDArray) -> NDArray:
    """``relax.nonzero`` at run time: numpy's nonzero, stacked into one int64 matrix (a scalar
    counts as a one-element vector: numpy refuses the nonzero of a 0-d array)."""
    data = np.atleast_1d(x.numpy())
    return array(np.stack(np.nonzero(data)).astype("int64").reshape(data.ndim, -1))


Op.get("relax.unique").set_attr("FCallPacked", "relax.run.unique")
Op.get("relax.nonzero").set_attr("FCallPacked", "relax.run.nonzero")
# override: re-importing the module (autoreload) registers the same functions again
register_func("relax.run.unique", run_unique, override=True)
register_func("relax.run.nonzero", run_nonzero, override=True)
