"""Data layouts as operators name them (TVM's ``tir.Layout``): ``NCHW``, ``NHWC``, ``NCHW16c``.

An upper-case letter is a dimension; a lower-case letter with a factor (``16c``) is an inner
block of the dimension its upper case names, so ``NCHW16c`` is 5-D with ``C`` cut into
``C // 16`` blocks of 16.  Shapes convert between a layout and a canonical one (``NCHW``)
with the same dimensions: an op infers its output in the canonical layout and lays it out as
asked, as TVM's ``BijectiveLayout.ForwardShape``/``BackwardShape`` do.
"""

from __future__ import annotations

from typing import Sequence

from ...tir import op as _op
from ...tir.expr import IntImm, PrimExpr
from ..struct_info import StructInfoError
from ._utils import simplify

__all__ = ["parse_layout", "check_layout", "to_canonical", "from_canonical"]


def parse_layout(name: str) -> list[tuple[str, int | None]] | None:
    """``[(letter, factor or None), ...]``, or None when ``name`` is not a layout."""
    axes: list[tuple[str, int | None]] = []
    digits = ""
    for ch in name:
        if ch.isdigit():
            digits += ch
            continue
        if not ch.isalpha() or (ch.isupper() and digits):
            return None
        axes.append((ch, int(digits) if digits else None))
        digits = ""
    letters = [a for a, _ in axes]
    if digits or len(set(letters)) != len(letters) or any(a.upper() not in letters for a in letters):
        return None
    return axes


def check_layout(op: str, name: str, canonical: str, what: str) -> list[tuple[str, int | None]]:
    """The parsed layout ``name`` of ``what`` (data, output), which must name exactly the
    dimensions of ``canonical``."""
    axes = parse_layout(name)
    if axes is None or sorted(a for a, _ in axes if a.isupper()) != sorted(canonical):
        raise StructInfoError(f"{op}: the {what} layout {name!r} must name the dimensions of "
                              f"{canonical} once each (as {canonical}, a permutation or with "
                              f"inner blocks such as {canonical}16c)")
    return axes


def _factor(axes: list[tuple[str, int | None]], letter: str, op: str) -> int | None:
    for a, f in axes:
        if a == letter.lower():
            if f is None:
                raise StructInfoError(f"{op}: the inner block {a!r} of the layout needs a size "
                                      f"(e.g. 16{a}) to relate shapes")
            return f
    return None


def to_canonical(op: str, axes: list, shape: Sequence[PrimExpr], canonical: str) -> list[PrimExpr]:
    """``shape`` (laid out as ``axes``) in the ``canonical`` order, blocks folded back in."""
    letters = [a for a, _ in axes]
    out = []
    for dim in canonical:
        size = shape[letters.index(dim)]
        f = _factor(axes, dim, op)
        out.append(size if f is None else simplify(_op.mul(size, IntImm(size.dtype, f))))
    return out


def from_canonical(op: str, axes: list, shape: Sequence[PrimExpr], canonical: str) -> list[PrimExpr]:
    """The ``canonical`` ``shape`` laid out as ``axes``: a blocked dimension counts its
    blocks (rounded up), a block its factor."""
    out: list[PrimExpr] = []
    for a, f in axes:
        if a.islower():
            out.append(IntImm("int64", f))
            continue
        size = shape[canonical.index(a)]
        block = _factor(axes, a, op)
        out.append(size if block is None else
                   simplify(_op.floordiv(_op.add(size, IntImm(size.dtype, block - 1)), IntImm(size.dtype, block))))
    return out
