"""Element-wise binary operators with numpy broadcasting (``topi.add(A, B)``).

Either operand may be a Python number or a scalar PrimExpr.  An input dimension of
constant size 1 is read at index 0; a symbolic dimension is assumed to match the
output's (Relax's shape inference has checked what it could).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from .. import te
from ..arith import Analyzer
from ..ir.structural import structural_equal
from ..tir import op as _op
from ..tir.expr import PrimExpr, const, convert
from ..tir.op_table import BINARY
from .utils import is_one

__all__ = ["broadcast_shape", "broadcast_to", "where"]


def _same_dim(a: Any, b: Any) -> bool:
    """TVM's EqualCheck: the same expression, or a difference that folds to 0."""
    if a is b or structural_equal(a, b):
        return True
    diff = Analyzer().simplify(_op.sub(a, b))
    return getattr(diff, "value", None) == 0


def broadcast_shape(a: Sequence[Any], b: Sequence[Any], who: str = "broadcast") -> list[PrimExpr]:
    """The numpy broadcast of two shapes (a 1 gives way to the other dimension)."""
    out = []
    for k in range(1, max(len(a), len(b)) + 1):
        da = a[-k] if k <= len(a) else None
        db = b[-k] if k <= len(b) else None
        if da is None or (is_one(da) and db is not None):
            out.append(db)
        elif db is None or is_one(db):
            out.append(da)
        else:
            ca, cb = getattr(da, "value", None), getattr(db, "value", None)
            if ca is not None and cb is not None and ca != cb:
                raise ValueError(f"{who}: cannot broadcast shapes {list(a)} and {list(b)}")
            if ca is None and cb is None and not _same_dim(da, db):
                out.append(_op.max(da, db))  # as TVM's TOPI: two different symbolic sizes give their max
            else:
                out.append(da if ca is not None or cb is None else db)
    return list(reversed(out))


def _reader(t: Any, out_shape: Sequence[Any]) -> Callable[[Sequence[Any]], PrimExpr]:
    """A function from output indices to the element of ``t`` they broadcast from.

    A dimension of size 1 is read at 0 only where the output is wider; where the output is
    1 too, the output index is used, so ``(1, n) + (n,)`` stays an element-wise read of the
    first operand (which keeps it fusable as elementwise/broadcast, as in TVM)."""
    if not isinstance(t, te.Tensor):
        value = convert(t)
        return lambda idx: value
    shape = t.shape
    offset = len(out_shape) - len(shape)
    pinned = [is_one(d) and not is_one(out_shape[offset + k]) for k, d in enumerate(shape)]

    def read(idx: Sequence[Any]) -> PrimExpr:
        return t[tuple(const(0, d.dtype) if pin else idx[offset + k]
                       for k, (d, pin) in enumerate(zip(shape, pinned)))]

    return read


def _shape_of(x: Any) -> tuple:
    return tuple(x.shape) if isinstance(x, te.Tensor) else ()


def _binary(fop: Callable[[PrimExpr, PrimExpr], PrimExpr], name: str, doc: str) -> Callable:
    def compute(lhs: Any, rhs: Any) -> Any:
        if not isinstance(lhs, te.Tensor) and not isinstance(rhs, te.Tensor):
            return fop(convert(lhs), convert(rhs))
        # a Python number takes the dtype of the tensor on the other side
        if not isinstance(lhs, te.Tensor) and not isinstance(lhs, PrimExpr):
            lhs = const(lhs, rhs.dtype)
        if not isinstance(rhs, te.Tensor) and not isinstance(rhs, PrimExpr):
            rhs = const(rhs, lhs.dtype)
        shape = broadcast_shape(_shape_of(lhs), _shape_of(rhs), f"topi.{name}")
        ra, rb = _reader(lhs, shape), _reader(rhs, shape)
        return te.compute(shape, lambda *idx: fop(ra(idx), rb(idx)), name=f"T_{name}")

    compute.__name__ = compute.__qualname__ = name
    compute.__doc__ = (f"{doc}\n\n``lhs`` and ``rhs`` are ``te.Tensor``s or scalars (a Python number takes the "
                       "other side's dtype); the result is a ``te.Tensor`` of the broadcast shape.")
    return compute


# every binary row of the operator table (minitvm.tir.op_table): topi.add ... topi.atan2
for _row in BINARY:
    globals()[_row.name] = _binary(_row.compute, _row.name, _row.doc)
__all__ += [row.name for row in BINARY]


def broadcast_to(data: te.Tensor, shape: Sequence[Any]) -> te.Tensor:
    """``data`` repeated along the dimensions where it is 1 (or missing) to ``shape``."""
    shape = list(shape)
    if len(shape) < data.ndim:
        raise ValueError(f"topi.broadcast_to: cannot broadcast {list(data.shape)} to fewer "
                         f"dimensions {shape}")
    read = _reader(data, shape)
    return te.compute(shape, lambda *idx: read(idx), name="T_broadcast_to")


def where(condition: Any, x: Any, y: Any) -> te.Tensor:
    """``x`` where ``condition`` holds, else ``y``, all three broadcast together."""
    shape = broadcast_shape(_shape_of(condition), _shape_of(x), "topi.where")
    shape = broadcast_shape(shape, _shape_of(y), "topi.where")
    rc, rx, ry = (_reader(t, shape) for t in (condition, x, y))

    def fcompute(*idx: Any) -> PrimExpr:
        cond = rc(idx)
        if cond.dtype == "bool":  # TVM's kernels test a bool condition as 0 < int64(c)
            cond = _op.less(const(0, "int64"), _op.cast(cond, "int64"))
        else:
            cond = _op.not_equal(cond, const(0, cond.dtype))
        return _op.Select(cond, *_op._promote(rx(idx), ry(idx)))

    return te.compute(shape, fcompute, name="T_where")


def _install_tensor_operators() -> None:
    """``A + 1``, ``A * B`` on ``te.Tensor``s: the broadcasting topi op, as TVM's topi installs
    them on import (te sits below topi, so topi adds them)."""
    ops = {"add": globals()["add"], "sub": globals()["subtract"], "mul": globals()["multiply"],
           "truediv": globals()["divide"]}
    for name, fn in ops.items():
        setattr(te.Tensor, f"__{name}__", lambda a, b, fn=fn: fn(a, b))
        setattr(te.Tensor, f"__r{name}__", lambda a, b, fn=fn: fn(b, a))


_install_tensor_operators()
