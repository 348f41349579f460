"""Helpers the op definitions share: axes, dtypes, simplified dimensions."""

from __future__ import annotations

from typing import Any, Sequence

from ...arith import Analyzer
from ...tir.expr import IntImm, PrimExpr
from ..expr import Call, Expr, ShapeExpr, struct_info_of
from ..struct_info import ShapeStructInfo, StructInfoError, TensorStructInfo, struct_info_text

__all__ = ["attrs_of", "normalize_axis", "normalize_axes", "simplify", "const_dim", "shape_arg",
           "as_shape_expr", "same_dtype", "product", "AttrInt", "expr_dims", "normalize_axes_ordered"]

_ANALYZER = Analyzer()


class AttrInt(int):
    """An integer attribute that also answers as TVM's ``IntImm`` does (``.dtype`` int64,
    ``.value``): TVM keeps such attributes as int64 immediates, and code reads those fields;
    it stays an ``int`` so arithmetic, printing and hashing are a plain integer's."""

    dtype = "int64"

    @property
    def value(self) -> int:
        return int(self)


def attrs_of(call: Call) -> dict:
    return dict(call.attrs or {})


def normalize_axis(op_name: str, axis: int, ndim: int) -> int:
    """``axis`` counted from 0, or an error naming the op."""
    if not -ndim <= axis < ndim:
        raise StructInfoError(f"{op_name}: axis {axis} is out of range for a tensor of {ndim} "
                              f"dimension{'s' if ndim != 1 else ''}")
    return axis % ndim


def normalize_axes(op_name: str, axes: Sequence[int] | None, ndim: int) -> list[int]:
    """Sorted non-negative axes (None: all of them); repeats are errors."""
    if axes is None:
        return list(range(ndim))
    out = [normalize_axis(op_name, int(a), ndim) for a in axes]
    if len(set(out)) != len(out):
        raise StructInfoError(f"{op_name}: axes {list(axes)} repeat an axis")
    return sorted(out)


def normalize_axes_ordered(op_name: str, axes: Sequence[int], ndim: int) -> list[int]:
    """Non-negative axes in the order given; repeats are errors (TVM's NormalizeAxes)."""
    out = [normalize_axis(op_name, int(a), ndim) for a in axes]
    if len(set(out)) != len(out):
        raise StructInfoError(f"{op_name}: axes {list(axes)} repeat an axis")
    return out


def expr_dims(x: TensorStructInfo) -> tuple | None:
    """The dimensions only when the shape is written out (a ShapeExpr): as TVM, a shape held
    in a shape variable counts as unknown for ops whose output shape differs from it."""
    return x.shape.values if isinstance(x.shape, ShapeExpr) else None


def simplify(e: PrimExpr) -> PrimExpr:
    return _ANALYZER.simplify(e)


def const_dim(d: Any) -> int | None:
    return d.value if isinstance(d, IntImm) else None


def product(dims: Sequence[PrimExpr]) -> PrimExpr:
    out: PrimExpr = IntImm("int64", 1)
    for d in dims:
        out = out * d
    return simplify(out)


def as_shape_expr(shape: Any, op_name: str) -> Expr:
    """A shape argument as a Relax expression (a list of ints/PrimExprs becomes a ShapeExpr)."""
    if isinstance(shape, Expr):
        return shape
    if isinstance(shape, (int, PrimExpr)):
        shape = [shape]
    try:
        return ShapeExpr(list(shape))
    except TypeError as err:
        raise TypeError(f"{op_name}: shape must be a list of ints or PrimExprs, got {shape!r}") from err


def shape_arg(call: Call, index: int, op_name: str) -> tuple | None:
    """The dimensions of the shape-valued argument ``index`` when known, else None."""
    sinfo = struct_info_of(call.args[index])
    if not isinstance(sinfo, ShapeStructInfo):
        raise StructInfoError(f"{op_name} expects a shape (R.shape([...])) as argument {index}, "
                              f"got {struct_info_text(sinfo)}")
    return sinfo.values


def same_dtype(op_name: str, xs: Sequence[TensorStructInfo]) -> str:
    """The one dtype of ``xs`` ("void" when some are unknown); different dtypes are errors."""
    known = [x.dtype for x in xs if not x.is_unknown_dtype]
    if len(set(known)) > 1:
        raise StructInfoError(f"{op_name}: operands have different dtypes {' and '.join(dict.fromkeys(known))}")
    return known[0] if known and len(known) == len(xs) else "void"
