"""Tensors and the operations that produce them.

A :class:`Tensor` is one output of an :class:`Operation`: a :class:`PlaceholderOp` (an
input) or a :class:`ComputeOp` (an element-wise rule, possibly a reduction).  Indexing a
tensor, ``A[i, j]``, builds a :class:`ProducerLoad` expression; ``te.create_prim_func``
later turns every producer load into a load of the tensor's buffer.

Tensors and operations are handles, not IR nodes: the IR functors stop at them, so
walking one compute body never walks the whole graph above it.
"""

from __future__ import annotations

from typing import Any

from ..ir import dtype as _dt
from ..ir.node import node
from ..tir import IterVar as _TirIterVar
from ..tir import op as _op
from ..tir.expr import IntImm, PrimExpr, Var, convert, shape_const
from ..tir.functor import post_order_visit

__all__ = ["Tensor", "Operation", "PlaceholderOp", "ComputeOp", "ProducerLoad", "IterVar",
           "as_shape"]


@node
class IterVar(_TirIterVar):
    """A ``tir.IterVar`` that also works as its variable in index arithmetic (``y + ry``).

    ``te.reduce_axis`` and the axes of a compute op are of this kind, as in TVM, where an
    iteration variable can be used wherever an expression is expected.
    """

    def __repr__(self) -> str:
        return f"IterVar({self.var.name!r}, {self.dom!r}, {self.iter_type!r})"

    @property
    def dtype(self) -> str:
        return self.var.dtype

    def __add__(self, o): return _op.add(self.var, o)
    def __radd__(self, o): return _op.add(o, self.var)
    def __sub__(self, o): return _op.sub(self.var, o)
    def __rsub__(self, o): return _op.sub(o, self.var)
    def __mul__(self, o): return _op.mul(self.var, o)
    def __rmul__(self, o): return _op.mul(o, self.var)
    def __truediv__(self, o): return _op.div(self.var, o)
    def __rtruediv__(self, o): return _op.div(o, self.var)
    def __floordiv__(self, o): return _op.floordiv(self.var, o)
    def __rfloordiv__(self, o): return _op.floordiv(o, self.var)
    def __mod__(self, o): return _op.floormod(self.var, o)
    def __rmod__(self, o): return _op.floormod(o, self.var)
    def __neg__(self): return _op.neg(self.var)
    def __lt__(self, o): return _op.less(self.var, o)
    def __le__(self, o): return _op.less_equal(self.var, o)
    def __gt__(self, o): return _op.greater(self.var, o)
    def __ge__(self, o): return _op.greater_equal(self.var, o)

    # like PrimExpr: `k == 0` builds an EQ node (whose truth value is identity)
    def __eq__(self, o):  # type: ignore[override]
        return _op.equal(self.var, o)

    def __ne__(self, o):  # type: ignore[override]
        return _op.not_equal(self.var, o)

    __hash__ = object.__hash__

    def astype(self, dtype: str) -> PrimExpr:
        return _op.cast(self.var, dtype)


def as_shape(shape: Any) -> tuple[PrimExpr, ...]:
    """A shape as a tuple of integer PrimExprs (Python ints become int32 constants, int64 when
    they do not fit)."""
    if isinstance(shape, (int, PrimExpr, _TirIterVar)):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise TypeError(f"a shape must be a tuple of ints or integer expressions, got {shape!r}") from None
    out = []
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, (int, PrimExpr, _TirIterVar)):
            raise TypeError(f"shape {shape!r}: dimension {d!r} is not an int or an integer expression")
        e = shape_const(d) if isinstance(d, int) else convert(d)
        if not _dt.is_int(e.dtype):
            raise TypeError(f"shape {shape!r}: dimension {d!r} has dtype {e.dtype}, expected an integer")
        if isinstance(e, IntImm) and e.value < 0:
            raise ValueError(f"shape {shape!r}: dimension {e.value} is negative")
        out.append(e)
    return tuple(out)


class Operation:
    """Something that produces tensors (TVM's ``te.Operation``)."""

    __slots__ = ("name", "tag", "attrs")
    name: str
    tag: str
    attrs: dict

    @property
    def num_outputs(self) -> int:
        raise NotImplementedError

    @property
    def input_tensors(self) -> list["Tensor"]:
        raise NotImplementedError

    def output(self, index: int) -> "Tensor":
        """The ``index``-th output tensor of this operation."""
        if not 0 <= index < self.num_outputs:
            raise IndexError(f"operation {self.name} has {self.num_outputs} outputs, asked for {index}")
        return Tensor(self, index)

    def output_shape(self, index: int) -> tuple[PrimExpr, ...]:
        raise NotImplementedError

    def output_dtype(self, index: int) -> str:
        raise NotImplementedError

    def __setattr__(self, name: str, value: Any) -> None:
        if hasattr(self, name):
            raise AttributeError(f"{type(self).__name__} is immutable")
        object.__setattr__(self, name, value)


class PlaceholderOp(Operation):
    """An input tensor: only a shape, a dtype and a name."""

    __slots__ = ("shape", "dtype")

    def __init__(self, name: str, shape: tuple[PrimExpr, ...], dtype: str):
        self.name, self.tag, self.attrs = name, "", {}
        self.shape, self.dtype = shape, dtype

    @property
    def num_outputs(self) -> int:
        return 1

    @property
    def input_tensors(self) -> list["Tensor"]:
        return []

    def output_shape(self, index: int) -> tuple[PrimExpr, ...]:
        return self.shape

    def output_dtype(self, index: int) -> str:
        return self.dtype

    def __repr__(self) -> str:
        return f"PlaceholderOp({self.name!r}, {list(self.shape)}, {self.dtype!r})"


class ComputeOp(Operation):
    """``out[axis] = body`` for every point of the output domain.

    ``axis`` are the spatial iteration variables (one per output dimension, named after
    the arguments of the ``fcompute`` lambda), ``reduce_axis`` those a reduction in the
    body runs over, ``body`` one expression per output.
    """

    __slots__ = ("axis", "reduce_axis", "body")

    def __init__(self, name: str, tag: str, attrs: dict, axis: tuple[IterVar, ...],
                 reduce_axis: tuple[IterVar, ...], body: tuple[PrimExpr, ...]):
        self.name, self.tag, self.attrs = name, tag, dict(attrs)
        self.axis, self.reduce_axis, self.body = tuple(axis), tuple(reduce_axis), tuple(body)

    @property
    def num_outputs(self) -> int:
        return len(self.body)

    @property
    def shape(self) -> tuple[PrimExpr, ...]:
        return tuple(iv.dom.extent for iv in self.axis)

    def output_shape(self, index: int) -> tuple[PrimExpr, ...]:
        return self.shape

    def output_dtype(self, index: int) -> str:
        return self.body[index].dtype

    @property
    def input_tensors(self) -> list["Tensor"]:
        """The tensors the body reads, in order of first use."""

        found: list[Tensor] = []

        def visit(n: Any) -> None:
            if isinstance(n, ProducerLoad) and n.producer not in found:
                found.append(n.producer)

        post_order_visit(self.body, visit)
        return found

    def __repr__(self) -> str:
        return f"ComputeOp({self.name!r}, axis={[iv.var.name for iv in self.axis]}, " \
               f"reduce_axis={[iv.var.name for iv in self.reduce_axis]})"


class Tensor:
    """The ``value_index``-th output of ``op``; index it (``A[i, j]``) to read an element."""

    __slots__ = ("op", "value_index")

    def __init__(self, op: Operation, value_index: int = 0):
        object.__setattr__(self, "op", op)
        object.__setattr__(self, "value_index", value_index)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Tensor is immutable")

    @property
    def shape(self) -> tuple[PrimExpr, ...]:
        return self.op.output_shape(self.value_index)

    @property
    def dtype(self) -> str:
        return self.op.output_dtype(self.value_index)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def name(self) -> str:
        if self.op.num_outputs == 1:
            return self.op.name
        return f"{self.op.name}.v{self.value_index}"

    def __getitem__(self, indices: Any) -> "ProducerLoad":
        if not isinstance(indices, tuple):
            indices = (indices,)
        return self._load(indices)

    def __call__(self, *indices: Any) -> "ProducerLoad":
        return self._load(indices)

    def _load(self, indices: tuple) -> "ProducerLoad":
        if len(indices) != self.ndim:
            shown = ", ".join(_short(i) for i in indices)
            raise IndexError(
                f"tensor {self.name} has {self.ndim} dimension{'s' if self.ndim != 1 else ''} "
                f"but is indexed with {len(indices)} ind{'ices' if len(indices) != 1 else 'ex'}: "
                f"{self.name}[{shown}]"
            )
        converted = []
        for k in indices:
            if isinstance(k, slice):
                raise IndexError(f"tensor {self.name}: slices are not supported in te, index each element")
            e = convert(k)
            if not _dt.is_int(e.dtype):
                raise TypeError(f"tensor {self.name} indexed with {e} of dtype {e.dtype}; "
                                "indices must be integers")
            converted.append(e)
        return ProducerLoad(self, tuple(converted))

    # Tensors are handles: equal when they name the same output of the same operation.
    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Tensor) and other.op is self.op and other.value_index == self.value_index

    def __ne__(self, other: Any) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((id(self.op), self.value_index))

    def __bool__(self) -> bool:
        return True

    def __iter__(self):
        raise TypeError(f"tensor {self.name} is not iterable; index it with {self.name}[i, ...]")

    def __repr__(self) -> str:
        return f"Tensor(shape={list(self.shape)}, op.name={self.op.name}, dtype={self.dtype})"


@node
class ProducerLoad(PrimExpr):
    """``producer[indices]``: an element of a TE tensor (becomes a ``BufferLoad``)."""

    producer: Tensor
    indices: tuple

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return self.producer.dtype

    def __repr__(self) -> str:
        return f"{self.producer.name}[{', '.join(_short(i) for i in self.indices)}]"


def _short(e: Any) -> str:
    """A compact text of an index for messages (variables by name)."""
    if isinstance(e, _TirIterVar):
        e = e.var
    if isinstance(e, Var):
        return e.name
    if isinstance(e, IntImm):
        return str(e.value)
    return str(e)
