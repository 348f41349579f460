"""Small helpers shared by the TOPI modules: axes, shapes and constants."""

from __future__ import annotations

from typing import Any, Sequence

from ..tir import op as _op
from ..tir.expr import IntImm, PrimExpr, const, convert

__all__ = ["normalize_axes", "const_int", "is_one", "prod", "as_expr", "ravel_index", "unravel_index"]


def normalize_axes(axis: Any, ndim: int, who: str) -> list[int]:
    """``axis`` (None, an int or a sequence, negatives counted from the end) as sorted
    non-negative ints; None means every axis."""
    if axis is None:
        return list(range(ndim))
    axes = [axis] if isinstance(axis, int) else list(axis)
    out = []
    for a in axes:
        a = int(a)
        if not -ndim <= a < ndim:
            raise ValueError(f"{who}: axis {a} is out of range for a {ndim}-d tensor")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{who}: axis {list(axes)} repeats an axis")
    return sorted(out)


def const_int(e: Any) -> int | None:
    """The value of a constant integer dimension, else None."""
    if isinstance(e, int):
        return e
    if isinstance(e, IntImm):
        return e.value
    return None


def is_one(e: Any) -> bool:
    return const_int(e) == 1


def as_expr(value: Any, dtype: str) -> PrimExpr:
    """A Python number or PrimExpr as an expression of ``dtype``."""
    if isinstance(value, PrimExpr):
        return _op.cast(value, dtype)
    return const(value, dtype)


def prod(dims: Sequence[Any]) -> PrimExpr:
    """The product of dimensions (1 for none), in the widest index dtype present."""
    out: Any = None
    for d in dims:
        out = convert(d) if out is None else _op.mul(out, d)
    return const(1, "int64") if out is None else out


def ravel_index(indices: Sequence[Any], shape: Sequence[Any]) -> PrimExpr:
    """Row-major flat offset of ``indices`` in a tensor of ``shape``."""
    flat: Any = None
    for i, d in zip(indices, shape):
        flat = convert(i) if flat is None else _op.add(_op.mul(flat, d), i)
    return const(0, "int64") if flat is None else flat


def unravel_index(flat: Any, shape: Sequence[Any]) -> list[PrimExpr]:
    """Indices of the row-major flat offset ``flat`` in a tensor of ``shape``."""
    out = []
    for d in reversed(list(shape)):
        out.append(_op.floormod(flat, d))
        flat = _op.floordiv(flat, d)
    return list(reversed(out))
