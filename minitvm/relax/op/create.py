"""Tensors made from nothing: zeros, ones, full, arange (and the ``*_like`` forms)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...ir import dtype as _dt
from ...tir import op as tir_op
from ...tir.expr import FloatImm, IntImm
from ...tir.expr import const as tir_const
from ..expr import Call, Expr, PrimValue, const, struct_info_of
from ..struct_info import PrimStructInfo, StructInfo, StructInfoError, TensorStructInfo, struct_info_text
from ._utils import as_shape_expr, shape_arg, simplify
from .registry import OpPattern, check_num_args, make_call, register, tensor_arg

__all__ = ["zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "arange", "tril", "triu"]


def _shape_sinfo(call: Call, op: str, dtype: str) -> StructInfo:
    vals = shape_arg(call, 0, op)
    if vals is None:
        return TensorStructInfo(None, dtype, None, struct_info_of(call.args[0]).ndim)
    return TensorStructInfo(list(vals), dtype)


@register("relax.zeros", pattern=OpPattern.ELEMWISE, num_inputs=1)
def _infer_zeros(call: Call, ctx: Any) -> StructInfo:
    """A tensor of ``shape`` and ``dtype`` filled with 0."""
    check_num_args(call, "relax.zeros", 1)
    return _shape_sinfo(call, "relax.zeros", call.attrs["dtype"])


@register("relax.ones", pattern=OpPattern.ELEMWISE, num_inputs=1)
def _infer_ones(call: Call, ctx: Any) -> StructInfo:
    """A tensor of ``shape`` and ``dtype`` filled with 1."""
    check_num_args(call, "relax.ones", 1)
    return _shape_sinfo(call, "relax.ones", call.attrs["dtype"])


@register("relax.full", pattern=OpPattern.ELEMWISE, num_inputs=2)
def _infer_full(call: Call, ctx: Any) -> StructInfo:
    """A tensor of ``shape`` filled with the 0-d tensor ``fill_value`` (dtype: the attribute,
    else the fill value's)."""
    op = "relax.full"
    check_num_args(call, op, 2)
    fill = tensor_arg(call, 1, op, "fill_value")
    if fill.ndim not in (-1, 0):
        raise StructInfoError(f"{op}: fill_value must be a scalar (0-d tensor), got {struct_info_text(fill)}")
    dtype = call.attrs.get("dtype") or fill.dtype
    return _shape_sinfo(call, op, dtype)


def zeros(shape: Any, dtype: str = "float32") -> Call:
    """``shape`` of zeros."""
    return make_call("relax.zeros", as_shape_expr(shape, "relax.zeros"), attrs={"dtype": _dt.check(dtype)})


def ones(shape: Any, dtype: str = "float32") -> Call:
    """``shape`` of ones."""
    return make_call("relax.ones", as_shape_expr(shape, "relax.ones"), attrs={"dtype": _dt.check(dtype)})


def _fill(value: Any, dtype: str | None) -> Expr:
    """A fill value as a 0-d Relax tensor (a Python number becomes a constant of ``dtype``)."""
    if isinstance(value, Expr):
        return value

    return const(np.array(value, dtype or "float32"))


def full(shape: Any, fill_value: Any, dtype: str | None = None) -> Call:
    """``shape`` filled with ``fill_value`` (a 0-d tensor such as ``relax.const(2.5)``, or
    a Python number)."""
    return make_call("relax.full", as_shape_expr(shape, "relax.full"), _fill(fill_value, dtype),
                     attrs={"dtype": None if dtype is None else _dt.check(dtype)})


def _like(name: str, doc: str) -> None:
    op = f"relax.{name}"

    def infer(call: Call, ctx: Any) -> StructInfo:
        check_num_args(call, op, 2 if name == "full_like" else 1)
        x = tensor_arg(call, 0, op, "x")
        dtype = call.attrs.get("dtype") or x.dtype
        return TensorStructInfo(x.shape, dtype, None, x.ndim if x.shape is None else -1)

    infer.__doc__ = doc
    register(op, pattern=OpPattern.ELEMWISE)(infer)


_like("zeros_like", "A tensor like x filled with 0.")
_like("ones_like", "A tensor like x filled with 1.")
_like("full_like", "A tensor like x filled with a 0-d fill value.")


def zeros_like(x: Expr, dtype: str | None = None) -> Call:
    """A tensor like ``x`` filled with 0."""
    dtype = None if dtype == "void" else dtype  # TVM's void dtype: none given, x's
    return make_call("relax.zeros_like", x, attrs={"dtype": dtype})


def ones_like(x: Expr, dtype: str | None = None) -> Call:
    """A tensor like ``x`` filled with 1."""
    dtype = None if dtype == "void" else dtype  # TVM's void dtype: none given, x's
    return make_call("relax.ones_like", x, attrs={"dtype": dtype})


def full_like(x: Expr, fill_value: Any, dtype: str | None = None) -> Call:
    """A tensor like ``x`` (dtype: ``dtype`` or ``x``'s) filled with ``fill_value``."""
    dtype = None if dtype == "void" else dtype  # TVM's void dtype: none given, x's
    fill_dtype = dtype or getattr(getattr(x, "struct_info_", None), "dtype", None)
    return make_call("relax.full_like", x, _fill(fill_value, fill_dtype if fill_dtype != "void" else None),
                     attrs={"dtype": dtype})


@register("relax.arange", pattern=OpPattern.INJECTIVE, num_inputs=3)
def _infer_arange(call: Call, ctx: Any) -> StructInfo:
    """``start, start + step, ...`` below ``end``: length ``ceil((end - start) / step)``."""
    op = "relax.arange"
    check_num_args(call, op, 3)
    values = []
    for k, name in enumerate(("start", "end", "step")):
        sinfo = struct_info_of(call.args[k])
        if not isinstance(sinfo, PrimStructInfo):
            raise StructInfoError(f"{op}: {name} must be a PrimValue, got {struct_info_text(sinfo)}")
        values.append(sinfo.value)
    dtype = call.attrs["dtype"]
    if any(v is None for v in values):
        return TensorStructInfo(None, dtype, None, 1)
    if not all(isinstance(v, (IntImm, FloatImm)) for v in values):
        # symbolic integer bounds with a constant positive step: ceil((end - start) / step)
        step = values[2]
        if isinstance(step, IntImm) and step.value > 0 and all(v.dtype.startswith("int") for v in values):
            lo, hi = (tir_op.cast(v, "int64") for v in values[:2])
            length = tir_op.floordiv(hi - lo + (step.value - 1), step.value)
            return TensorStructInfo([simplify(length)], dtype)
        return TensorStructInfo(None, dtype, None, 1)
    values = [v.value for v in values]
    start, end, step = values
    if step == 0:
        raise StructInfoError(f"{op}: step must not be 0")
    return TensorStructInfo([max(0, math.ceil((end - start) / step))], dtype)


def arange(start: Any, end: Any = None, step: Any = 1, dtype: str = "int64") -> Call:
    """``numpy.arange(start, end, step)`` as a 1-D tensor of ``dtype``."""
    if end is None:
        start, end = 0, start

    def prim(v: Any) -> Expr:
        if isinstance(v, Expr):
            return v
        return PrimValue(tir_const(v, "float64" if isinstance(v, float) else "int64"))

    return make_call("relax.arange", prim(start), prim(end), prim(step), attrs={"dtype": _dt.check(dtype)})


def _infer_trilu(op: str) -> Any:
    def infer(call: Call, ctx: Any) -> StructInfo:
        check_num_args(call, op, 2)
        x = tensor_arg(call, 0, op, "x")
        k = struct_info_of(call.args[1])
        if not isinstance(k, PrimStructInfo) or not k.dtype.startswith("int"):
            raise StructInfoError(f"{op}: the diagonal offset k must be an integer (R.prim_value), "
                                  f"got {struct_info_text(k)}")
        if x.ndim != -1 and x.ndim < 2:
            raise StructInfoError(f"{op} needs a tensor of at least 2 dimensions, got {struct_info_text(x)}")
        return x
    infer.__doc__ = f"The {'lower' if op.endswith('l') else 'upper'} triangle of the last two dimensions."
    return infer


register("relax.tril", pattern=OpPattern.INJECTIVE, num_inputs=2)(_infer_trilu("relax.tril"))
register("relax.triu", pattern=OpPattern.INJECTIVE, num_inputs=2)(_infer_trilu("relax.triu"))


def _diagonal(k: Any) -> Expr:
    return k if isinstance(k, Expr) else PrimValue(k)


def tril(x: Expr, k: Any = 0) -> Call:
    """``x`` with the elements above diagonal ``k`` of its last two dimensions set to 0
    (k > 0: above the main diagonal, k < 0: below)."""
    return make_call("relax.tril", x, _diagonal(k))


def triu(x: Expr, k: Any = 0) -> Call:
    """``x`` with the elements below diagonal ``k`` of its last two dimensions set to 0."""
    return make_call("relax.triu", x, _diagonal(k))
