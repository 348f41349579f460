"""Tensors made from nothing: zeros, ones, full, arange (and the ``*_like`` forms)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...ir import dtype as _dt
from ...tir import op as tir_op
from ...tir.expr import FloatImm, IntImm, PrimExpr
from ...tir.expr import const as tir_const
from ..expr import Call, Expr, PrimValue, ShapeExpr, Var, const, struct_info_of
from ..struct_info import (
    PrimStructInfo,
    StructInfo,
    StructInfoError,
    StructInfoTypeError,
    TensorStructInfo,
    struct_info_text,
)
from ._utils import as_shape_expr, shape_arg, simplify
from .registry import OpPattern, check_num_args, make_call, register, tensor_arg

__all__ = ["zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "arange", "tril", "triu"]


def _shape_sinfo(call: Call, op: str, dtype: str, vdevice: Any = None) -> StructInfo:
    """A tensor whose shape is the shape argument itself (a shape variable stays one, as TVM)."""
    shape_arg(call, 0, op)
    arg = call.args[0]
    if isinstance(arg, (ShapeExpr, Var)):
        return TensorStructInfo(arg, dtype, vdevice)
    sinfo = struct_info_of(arg)
    if sinfo.values is not None:
        return TensorStructInfo(list(sinfo.values), dtype, vdevice)
    return TensorStructInfo(None, dtype, vdevice, sinfo.ndim)


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


def _scalar_fill(call: Call, op: str) -> TensorStructInfo:
    """The fill value argument, which must be a 0-d tensor (an unknown rank is refused too)."""
    fill = tensor_arg(call, 1, op, "fill_value")
    if fill.ndim != 0:
        raise StructInfoError(f"{op}: fill_value must be a scalar (0-d tensor), got {struct_info_text(fill)}")
    return fill


@register("relax.full", pattern=OpPattern.ELEMWISE, num_inputs=2)
def _infer_full(call: Call, ctx: Any) -> StructInfo:
    """A tensor of ``shape`` filled with the 0-d tensor ``fill_value`` (dtype: the attribute,
    else the fill value's; device: the fill value's)."""
    op = "relax.full"
    check_num_args(call, op, 2)
    fill = _scalar_fill(call, op)
    dtype = call.attrs.get("dtype") or fill.dtype
    return _shape_sinfo(call, op, dtype, fill.vdevice)


def _shape_of(shape: Any, op: str) -> Expr:
    """A shape argument: a tuple of dimensions or a shape-valued expression; a lone number
    is a TypeError (as TVM)."""
    if isinstance(shape, (int, PrimExpr)):
        raise StructInfoTypeError(f"{op}: shape must be a tuple of dimensions or a shape expression, "
                                  f"got {shape!r}")
    return as_shape_expr(shape, op)


def _dtype_of(dtype: Any, op: str) -> str:
    if str(dtype) in ("", "void", "None"):
        raise StructInfoError(f"{op}: dtype must be given, got {dtype!r}")
    return _dt.check(dtype)


def zeros(shape: Any, dtype: str) -> Call:
    """``shape`` of zeros of ``dtype`` (required, as TVM)."""
    return make_call("relax.zeros", _shape_of(shape, "relax.zeros"), attrs={"dtype": _dtype_of(dtype, "relax.zeros")})


def ones(shape: Any, dtype: str) -> Call:
    """``shape`` of ones of ``dtype`` (required, as TVM)."""
    return make_call("relax.ones", _shape_of(shape, "relax.ones"), attrs={"dtype": _dtype_of(dtype, "relax.ones")})


def _fill(value: Any, dtype: str | None) -> Expr:
    """A fill value as a 0-d Relax tensor (a Python number becomes a constant of ``dtype``)."""
    if isinstance(value, Expr):
        return value

    return const(np.array(value, dtype or "float32"))


def full(shape: Any, fill_value: Any, dtype: str | None = None) -> Call:
    """``shape`` filled with ``fill_value`` (a 0-d tensor such as ``relax.const(2.5)``, or
    a Python number)."""
    return make_call("relax.full", _shape_of(shape, "relax.full"), _fill(fill_value, dtype),
                     attrs={"dtype": None if dtype is None else _dt.check(dtype)})


def _like(name: str, doc: str) -> None:
    op = f"relax.{name}"

    def infer(call: Call, ctx: Any) -> StructInfo:
        check_num_args(call, op, 2 if name == "full_like" else 1)
        x = tensor_arg(call, 0, op, "x")
        if name == "full_like":
            _scalar_fill(call, op)
        dtype = call.attrs.get("dtype") or x.dtype
        return TensorStructInfo(x.shape, dtype, x.vdevice, x.ndim if x.shape is None else -1)

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
    if all(isinstance(v, (IntImm, FloatImm)) for v in values):
        start, end, step = (v.value for v in values)
        if step == 0:
            raise StructInfoError(f"{op}: step must not be 0")
        return TensorStructInfo([max(0, math.ceil((end - start) / step))], dtype)
    # as TVM: integer bounds give (end - start + step - 1) // step, others ceil((end - start) / step)
    start, end, step = values
    if all(_dt.is_int(v.dtype) for v in values):
        length = tir_op.floordiv(end - start + step - 1, step)
    else:
        length = tir_op.cast(tir_op.ceil(tir_op.cast(end - start, "float32") / step), "int64")
    return TensorStructInfo([simplify(length)], dtype)


def arange(start: Any, end: Any = None, step: Any = 1, dtype: str | None = None) -> Call:
    """``numpy.arange(start, end, step)`` as a 1-D tensor of ``dtype`` (default, as TVM:
    int64 when every bound is an integer, else float32)."""
    if end is None:
        start, end = 0, start

    def is_int(v: Any) -> bool:
        if isinstance(v, PrimValue):
            v = v.value
        if isinstance(v, PrimExpr):
            return _dt.is_int(v.dtype)
        return isinstance(v, int) and not isinstance(v, bool)

    if dtype is None:
        dtype = "int64" if all(is_int(v) for v in (start, end, step)) else "float32"

    def prim(v: Any) -> Expr:
        if isinstance(v, Expr):
            return v
        if isinstance(v, PrimExpr):
            return PrimValue(v)
        return PrimValue(tir_const(v, "float32" if isinstance(v, float) else "int64"))

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


# -- eye / eye_like -------------------------------------------------------------------------------

def _prim_arg(call: Call, k: int, op: str, name: str) -> Any:
    sinfo = struct_info_of(call.args[k])
    if not isinstance(sinfo, PrimStructInfo):
        raise StructInfoTypeError(f"{op}: {name} must be a scalar (R.prim_value), got {struct_info_text(sinfo)}")
    return sinfo


@register("relax.eye", pattern=OpPattern.INJECTIVE, num_inputs=3)
def _infer_eye(call: Call, ctx: Any) -> StructInfo:
    """An (n, m) tensor of ``dtype``."""
    op = "relax.eye"
    check_num_args(call, op, 3)
    n, m = (_prim_arg(call, k, op, name).value for k, name in ((0, "n"), (1, "m")))
    _prim_arg(call, 2, op, "k")
    if n is None or m is None:
        return TensorStructInfo(None, call.attrs["dtype"], None, 2)
    return TensorStructInfo([n, m], call.attrs["dtype"])


@register("relax.eye_like", pattern=OpPattern.INJECTIVE, num_inputs=2)
def _infer_eye_like(call: Call, ctx: Any) -> StructInfo:
    """A 2-D tensor like ``x`` (dtype: the attribute, else ``x``'s)."""
    op = "relax.eye_like"
    check_num_args(call, op, 2)
    x = tensor_arg(call, 0, op, "x")
    if x.ndim not in (-1, 2):
        raise StructInfoError(f"{op} needs a 2-D tensor, got {struct_info_text(x)}")
    _prim_arg(call, 1, op, "k")
    dtype = call.attrs.get("dtype") or x.dtype
    return TensorStructInfo(x.shape, dtype, x.vdevice, x.ndim if x.shape is None else -1)


def _prim(v: Any) -> Expr:
    return v if isinstance(v, Expr) else PrimValue(v)


def eye(n: Any, m: Any = None, k: Any = 0, dtype: str = "float32") -> Call:
    """An (n, m) tensor with ones on diagonal ``k`` (0: the main one, > 0 above, < 0 below)
    and zeros elsewhere (numpy.eye); ``m`` defaults to ``n``."""
    m = n if m is None else m
    return make_call("relax.eye", _prim(n), _prim(m), _prim(k), attrs={"dtype": _dtype_of(dtype, "relax.eye")})


def eye_like(x: Expr, k: Any = 0, dtype: str | None = None) -> Call:
    """``eye`` of the shape of the 2-D tensor ``x`` (dtype: ``dtype``, else ``x``'s)."""
    return make_call("relax.eye_like", x, _prim(k), attrs={"dtype": None if dtype is None else _dt.check(dtype)})


__all__ += ["eye", "eye_like"]
