"""Collective communication between the workers of a distributed program (``relax.op.ccl``,
TVM's ``relax.ccl.*``): ``allreduce``, ``allgather``, ``broadcast_from_worker0`` and
``scatter_from_worker0``.

minitvm runs on one CPU and has no workers (TVM runs these through NCCL/RCCL on GPUs), so the
operators exist for their struct info -- what sharding passes and TVM's tests reason about --
and are not legalized.
"""

from __future__ import annotations

from typing import Any

from ...tir.expr import IntImm
from ...tir.op import div
from ..expr import Call, Expr, ShapeExpr
from ..struct_info import StructInfo, StructInfoError, TensorStructInfo
from ._utils import attrs_of, simplify
from .registry import OpPattern, check_num_args, make_call, register, tensor_arg

__all__ = ["allreduce", "allgather", "broadcast_from_worker0", "scatter_from_worker0"]

_REDUCE_KINDS = ("sum", "prod", "min", "max", "avg")


def _input(call: Call, op: str) -> TensorStructInfo:
    check_num_args(call, op, 1)
    return tensor_arg(call, 0, op, "x")


@register("relax.ccl.allreduce", pattern=OpPattern.OPAQUE, num_inputs=1)
def _infer_allreduce(call: Call, ctx: Any) -> StructInfo:
    """Every worker ends with the reduction of all workers' tensors: the input's struct info."""
    return _input(call, "relax.ccl.allreduce")


def allreduce(x: Expr, op_type: str = "sum", in_group: bool = True) -> Call:
    """Reduce ``x`` over the workers (``op_type``: sum, prod, min, max or avg); ``in_group``:
    among the workers of this group, else all of them."""
    if op_type not in _REDUCE_KINDS:
        raise ValueError(f"relax.ccl.allreduce: op_type must be one of {', '.join(_REDUCE_KINDS)}, got {op_type!r}")
    return make_call("relax.ccl.allreduce", x, attrs={"op_type": op_type, "in_group": bool(in_group)})


@register("relax.ccl.allgather", pattern=OpPattern.OPAQUE, num_inputs=1)
def _infer_allgather(call: Call, ctx: Any) -> StructInfo:
    """The workers' tensors stacked along axis 0: that axis grows ``num_workers`` times."""
    x = _input(call, "relax.ccl.allgather")
    dims = x.shape_values
    if dims is None:
        return x
    out = [dims[0] * int(attrs_of(call)["num_workers"]), *dims[1:]]
    return TensorStructInfo(ShapeExpr(out), x.dtype, x.vdevice)


def allgather(x: Expr, num_workers: int, in_group: bool = True) -> Call:
    """Gather ``x`` from ``num_workers`` workers, concatenated along axis 0."""
    return make_call("relax.ccl.allgather", x, attrs={"num_workers": int(num_workers), "in_group": bool(in_group)})


@register("relax.ccl.broadcast_from_worker0", pattern=OpPattern.OPAQUE, num_inputs=1)
def _infer_broadcast(call: Call, ctx: Any) -> StructInfo:
    """Worker 0's tensor on every worker: the input's struct info."""
    return _input(call, "relax.ccl.broadcast_from_worker0")


def broadcast_from_worker0(x: Expr) -> Call:
    """Send worker 0's ``x`` to every worker."""
    return make_call("relax.ccl.broadcast_from_worker0", x)


@register("relax.ccl.scatter_from_worker0", pattern=OpPattern.OPAQUE, num_inputs=1)
def _infer_scatter(call: Call, ctx: Any) -> StructInfo:
    """One of ``num_workers`` equal parts of worker 0's tensor along ``axis``: that axis shrinks
    ``num_workers`` times; a length that is provably not divisible is an error."""
    op = "relax.ccl.scatter_from_worker0"
    x = _input(call, op)
    dims = x.shape_values
    if dims is None:
        raise StructInfoError(f"{op}: the input's shape must be known, got {x}")
    attrs = attrs_of(call)
    workers, axis = int(attrs["num_workers"]), int(attrs["axis"])
    if not -len(dims) <= axis < len(dims):
        raise StructInfoError(f"{op}: axis {axis} is out of range for a tensor of {len(dims)} dimensions")
    remainder = simplify(dims[axis] % workers)
    if isinstance(remainder, IntImm) and remainder.value != 0:
        raise StructInfoError(f"{op}: axis {axis} of the input (length {dims[axis]}) is not divisible by "
                              f"num_workers={workers}")
    out = list(dims)
    out[axis] = div(dims[axis], workers)
    return TensorStructInfo(ShapeExpr(out), x.dtype, x.vdevice)


def scatter_from_worker0(x: Expr, num_workers: int, axis: int = 0) -> Call:
    """Split worker 0's ``x`` into ``num_workers`` equal parts along ``axis``, one per worker."""
    return make_call("relax.ccl.scatter_from_worker0", x, attrs={"num_workers": int(num_workers), "axis": int(axis)})
