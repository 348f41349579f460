"""Constant padding: ``pad(x, pad_before, pad_after, pad_value)``."""

from __future__ import annotations

from typing import Any, Sequence

from ... import te
from ...tir import op as _op
from ..utils import as_expr, const_int


def pad(data: te.Tensor, pad_before: Sequence[Any], pad_after: Sequence[Any] | None = None,
        pad_value: Any = 0.0, name: str = "PadInput") -> te.Tensor:
    """``data`` surrounded by ``pad_value``: ``pad_before[k]`` elements before dimension k,
    ``pad_after[k]`` after (missing trailing entries are 0)."""
    n = data.ndim
    before = list(pad_before) + [0] * (n - len(pad_before))
    after = list(pad_before if pad_after is None else pad_after)
    after += [0] * (n - len(after))
    shape = [_op.add(_op.add(d, b), a) for d, b, a in zip(data.shape, before, after)]
    value = as_expr(pad_value, data.dtype)

    def fcompute(*idx: Any) -> Any:
        conds, src = [], []
        for k, i in enumerate(idx):
            b, a = before[k], after[k]
            if const_int(b) == 0 and const_int(a) == 0:
                src.append(i)
                continue
            src.append(_op.sub(i, b))
            # TVM's kernels test b <= i and i < b + n (folded when constant)
            if const_int(b) != 0:
                conds.append(_op.less_equal(as_expr(b, i.dtype), i))
            if const_int(a) != 0:
                end = const_int(data.shape[k]) + const_int(b) if const_int(data.shape[k]) is not None and \
                    const_int(b) is not None else None
                conds.append(_op.less(i, as_expr(end, i.dtype) if end is not None else _op.add(b, data.shape[k])))
        if not conds:
            return data[tuple(src)]
        return _op.if_then_else(te.all(*conds), data[tuple(src)], value)

    return te.compute(shape, fcompute, name=name)


__all__ = ["pad"]
