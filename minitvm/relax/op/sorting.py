"""Sorting along an axis: ``relax.sort``, ``relax.argsort`` and ``relax.topk`` (TVM's
``relax.op.sort``/``argsort``/``topk``, legalized to :mod:`minitvm.topi.sort`)."""

from __future__ import annotations

from typing import Any

from ...tir.expr import IntImm
from ..expr import Call, Expr
from ..struct_info import StructInfo, StructInfoError, TensorStructInfo, TupleStructInfo
from ._utils import normalize_axis
from .registry import OpPattern, check_num_args, make_call, register, tensor_arg

__all__ = ["sort", "argsort", "topk"]

_RET_TYPES = ("both", "values", "indices")


def _data(call: Call, op: str) -> TensorStructInfo:
    check_num_args(call, op, 1)
    return tensor_arg(call, 0, op, "data")


def _like(x: TensorStructInfo, dtype: str, shape: Any = None) -> TensorStructInfo:
    """``x``'s shape (or ``shape``), ``dtype``, ``x``'s device."""
    if shape is None and x.shape is not None:
        shape = x.shape
    return TensorStructInfo(shape, dtype, x.vdevice, -1 if shape is not None else x.ndim)


@register("relax.sort", pattern=OpPattern.OPAQUE, num_inputs=1)
def _infer_sort(call: Call, ctx: Any) -> StructInfo:
    """The data's struct info: sorting keeps shape and dtype."""
    return _data(call, "relax.sort")


def sort(data: Expr, axis: int = -1, descending: bool = False) -> Call:
    """``data`` sorted along ``axis`` (stable), ascending unless ``descending``."""
    return make_call("relax.sort", data, attrs={"axis": int(axis), "descending": bool(descending)})


@register("relax.argsort", pattern=OpPattern.OPAQUE, num_inputs=1)
def _infer_argsort(call: Call, ctx: Any) -> StructInfo:
    """The data's shape, in the index dtype asked for (the data's when it is void)."""
    x = _data(call, "relax.argsort")
    return _like(x, call.attrs["dtype"] or x.dtype)


def argsort(data: Expr, axis: int = -1, descending: bool = False, dtype: str = "int32") -> Call:
    """The indices that sort ``data`` along ``axis`` (stable), as ``dtype``."""
    return make_call("relax.argsort", data, attrs={"axis": int(axis), "descending": bool(descending),
                                                   "dtype": str(dtype) if dtype else ""})


@register("relax.topk", pattern=OpPattern.OPAQUE, num_inputs=1)
def _infer_topk(call: Call, ctx: Any) -> StructInfo:
    """(values, indices), or one of them: the axis shrinks to ``k`` when ``0 < k`` and
    ``k`` is below its known length."""
    op = "relax.topk"
    x = _data(call, op)
    a = call.attrs
    if a["ret_type"] not in _RET_TYPES:
        raise StructInfoError(f"{op}: ret_type must be one of {', '.join(_RET_TYPES)}, got {a['ret_type']!r}")
    index_dtype = a["dtype"] or x.dtype
    shape = x.shape_values
    if shape is None:  # only the rank is known (even of a shape variable: k may change it)
        outs = [TensorStructInfo(None, dtype, x.vdevice, x.ndim) for dtype in (x.dtype, index_dtype)]
    else:
        shape = list(shape)
        axis = normalize_axis(op, a["axis"], len(shape))
        k, n = a["k"], shape[axis]
        if k > 0 and (not isinstance(n, IntImm) or k < n.value):
            shape[axis] = IntImm("int64", k)
        outs = [_like(x, x.dtype, shape), _like(x, index_dtype, shape)]
    return {"both": TupleStructInfo(outs), "values": outs[0], "indices": outs[1]}[a["ret_type"]]


def topk(data: Expr, k: int = 1, axis: int = -1, ret_type: str = "both", largest: bool = True,
         dtype: str = "int32") -> Call:
    """The ``k`` largest (or, unless ``largest``, smallest) elements along ``axis`` in order,
    and their indices as ``dtype``; ``ret_type`` "values" or "indices" keeps one."""
    if ret_type not in _RET_TYPES:
        raise ValueError(f"relax.topk: ret_type must be one of {', '.join(_RET_TYPES)}, got {ret_type!r}")
    return make_call("relax.topk", data, attrs={"k": int(k), "axis": int(axis), "ret_type": ret_type,
                                                "largest": bool(largest), "dtype": str(dtype) if dtype else ""})
