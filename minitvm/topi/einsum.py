"""``topi.einsum("ij,jk->ik", A, B)``: one compute that multiplies the operands and sums
over the letters missing from the output (no ``...`` broadcasting)."""

from __future__ import annotations

from typing import Any

from .. import te
from .utils import const_int

__all__ = ["einsum", "parse_subscripts"]


def parse_subscripts(subscripts: str, ndims: list[int]) -> tuple[list[str], str]:
    """The letters of each operand and of the output (implicit: the letters used once,
    sorted, as numpy); errors name what does not fit."""
    spec = subscripts.replace(" ", "")
    if "." in spec:
        raise NotImplementedError(f"einsum: ellipsis ('...') in {subscripts!r} is not supported")
    lhs, arrow, out = spec.partition("->")
    inputs = lhs.split(",")
    if len(inputs) != len(ndims):
        raise ValueError(f"einsum: {subscripts!r} names {len(inputs)} operands, got {len(ndims)}")
    for letters, nd in zip(inputs, ndims):
        if not letters.isalpha() and letters:
            raise ValueError(f"einsum: {letters!r} in {subscripts!r} is not a list of letters")
        if nd != -1 and len(letters) != nd:
            raise ValueError(f"einsum: {letters!r} in {subscripts!r} has {len(letters)} letters for a "
                             f"{nd}-d operand")
    if not arrow:
        counts: dict[str, int] = {}
        for ch in "".join(inputs):
            counts[ch] = counts.get(ch, 0) + 1
        out = "".join(sorted(ch for ch, n in counts.items() if n == 1))
    if any(ch not in "".join(inputs) for ch in out) or len(set(out)) != len(out):
        raise ValueError(f"einsum: the output {out!r} of {subscripts!r} must use input letters once each")
    return inputs, out


def einsum(subscripts: str, *operands: te.Tensor) -> te.Tensor:
    """The Einstein summation ``subscripts`` of ``operands``."""
    inputs, out = parse_subscripts(subscripts, [t.ndim for t in operands])
    size: dict[str, Any] = {}
    for letters, t in zip(inputs, operands):
        for ch, d in zip(letters, t.shape):
            old = size.get(ch)
            if old is None or const_int(old) == 1:  # a size of 1 broadcasts
                size[ch] = d
            elif const_int(d) not in (None, 1) and const_int(old) is not None and const_int(old) != const_int(d):
                raise ValueError(f"einsum: letter {ch!r} of {subscripts!r} has sizes {old} and {d}")
    summed = [ch for ch in dict.fromkeys("".join(inputs)) if ch not in out]

    def fcompute(*idx: Any) -> Any:
        raxes = {ch: te.reduce_axis((0, size[ch]), ch) for ch in summed}
        where = {ch: i for ch, i in zip(out, idx)} | {ch: r.var for ch, r in raxes.items()}
        value: Any = None
        for letters, t in zip(inputs, operands):
            # a dimension of 1 along a longer letter is broadcast (read at 0)
            v = t[tuple(0 if const_int(d) == 1 and const_int(size[ch]) != 1 else where[ch]
                        for ch, d in zip(letters, t.shape))]
            value = v if value is None else value * v
        return te.sum(value, axis=list(raxes.values())) if raxes else value

    return te.compute([size[ch] for ch in out], fcompute, name="T_einsum")
