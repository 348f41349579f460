"""TensorIR expressions (PrimExpr): scalars computed inside kernels.

Python operators on a PrimExpr build new expressions (``i * 4 + j`` is an ``Add`` of a
``Mul``), folding constants as TVM does, so hand-written and generated programs agree.
``a == b`` builds an ``EQ`` node whose truth value is identity, like TVM's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import dtype as _dt
from ..ir.node import Node, node, renamed_keywords

__all__ = [
    "PrimExpr", "Var", "SizeVar", "IntImm", "FloatImm", "StringImm", "Cast",
    "BinaryOp", "Add", "Sub", "Mul", "Div", "Mod", "FloorDiv", "FloorMod", "Min", "Max",
    "CmpOp", "EQ", "NE", "LT", "LE", "GT", "GE", "And", "Or", "Not",
    "Select", "BufferLoad", "Ramp", "Broadcast", "Call", "Let", "Range", "IterVar", "const", "convert",
    "is_const_int", "shape_const",
]


class PrimExpr(Node):
    """Base of scalar expressions; every one has a ``dtype``."""

    __slots__ = ()
    dtype: str

    # arithmetic ----------------------------------------------------------------
    def __add__(self, o): return _op.add(self, o)
    def __radd__(self, o): return _op.add(o, self)
    def __sub__(self, o): return _op.sub(self, o)
    def __rsub__(self, o): return _op.sub(o, self)
    def __mul__(self, o): return _op.mul(self, o)
    def __rmul__(self, o): return _op.mul(o, self)
    def __truediv__(self, o): return _op.div(self, o)
    def __rtruediv__(self, o): return _op.div(o, self)
    def __floordiv__(self, o): return _op.floordiv(self, o)
    def __rfloordiv__(self, o): return _op.floordiv(o, self)
    def __mod__(self, o): return _op.floormod(self, o)
    def __rmod__(self, o): return _op.floormod(o, self)
    def __neg__(self): return _op.neg(self)
    def __lt__(self, o): return _op.less(self, o)
    def __le__(self, o): return _op.less_equal(self, o)
    def __gt__(self, o): return _op.greater(self, o)
    def __ge__(self, o): return _op.greater_equal(self, o)
    # & | ~ are logical on bools, bitwise on integers
    def __and__(self, o): return _op.and_(self, o)
    def __rand__(self, o): return _op.and_(o, self)
    def __or__(self, o): return _op.or_(self, o)
    def __ror__(self, o): return _op.or_(o, self)
    def __invert__(self): return _op.invert(self)
    def __xor__(self, o): return _op.bitwise_xor(self, o)
    def __rxor__(self, o): return _op.bitwise_xor(o, self)
    def __lshift__(self, o): return _op.shift_left(self, o)
    def __rlshift__(self, o): return _op.shift_left(o, self)
    def __rshift__(self, o): return _op.shift_right(self, o)
    def __rrshift__(self, o): return _op.shift_right(o, self)

    def __eq__(self, o):  # type: ignore[override]
        return _op.equal(self, o)

    def __ne__(self, o):  # type: ignore[override]
        return _op.not_equal(self, o)

    __hash__ = Node.__hash__

    def __bool__(self) -> bool:
        raise ValueError(
            f"cannot use the symbolic expression {self} as a Python bool; "
            "use T.if_then_else / T.Select or an `if` inside TVMScript"
        )

    def astype(self, dtype: str) -> "PrimExpr":
        return _op.cast(self, dtype)


@node(binds=True)
class Var(PrimExpr):
    """A scalar variable: loop variable, block iterator or scalar parameter."""

    name: str
    dtype: str = "int32"
    # a handle's pointee: ir.PointerType (``T.handle("float32", "shared")``), as TVM's Var carries
    type_annotation: Any = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.name, str):
            raise TypeError(f"tir.Var: the name must be a str, got {self.name!r}")
        if self.type_annotation is not None and self.dtype != "handle":
            raise TypeError(f"tir.Var {self.name}: only a handle has a pointer type, not a {self.dtype}")

    def __repr__(self) -> str:
        return f"Var({self.name!r}, {self.dtype!r})"

    @property
    def name_hint(self) -> str:
        return self.name


# TVM 0.27 spells the dtype ``ty`` (``Var("x", ty="int32")``) and TVM the name ``name_hint``
for _var_cls in (Var,):
    renamed_keywords(_var_cls, {"ty": "dtype", "name_hint": "name"})


@node(binds=True)
class SizeVar(Var):
    """A variable known to be non-negative (a symbolic shape dimension)."""


@node
class IntImm(PrimExpr):
    dtype: str
    value: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", _wrap_int(self.dtype, int(self.value)))

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value

    def __bool__(self) -> bool:  # a constant has a truth value (``i == i`` folds to one), as in TVM
        return self.value != 0

    def __repr__(self) -> str:
        return f"{self.value}" if self.dtype == "int32" else f"IntImm({self.dtype!r}, {self.value})"


@node
class FloatImm(PrimExpr):
    dtype: str
    value: float

    def __float__(self) -> float:
        return self.value

    def __repr__(self) -> str:
        return f"FloatImm({self.dtype!r}, {self.value!r})"


@node
class StringImm(PrimExpr):
    value: str
    dtype: str = "handle"


@node
class Cast(PrimExpr):
    dtype: str
    value: PrimExpr


@node
class BinaryOp(PrimExpr):
    a: PrimExpr
    b: PrimExpr

    def __post_init__(self) -> None:
        super().__post_init__()
        _cache_dtype(self, self.a)

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return _cached_dtype(self, self.a)


class Add(BinaryOp): pass
class Sub(BinaryOp): pass
class Mul(BinaryOp): pass
class Div(BinaryOp): pass  # noqa: E701  float division, or C-style truncating int division
class Mod(BinaryOp): pass  # noqa: E701  C-style remainder
class FloorDiv(BinaryOp): pass
class FloorMod(BinaryOp): pass
class Min(BinaryOp): pass
class Max(BinaryOp): pass


for _cls in (Add, Sub, Mul, Div, Mod, FloorDiv, FloorMod, Min, Max):
    node(_cls)


@node
class CmpOp(PrimExpr):
    a: PrimExpr
    b: PrimExpr

    def __post_init__(self) -> None:
        super().__post_init__()
        _cache_vector_bool(self, self.a)

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return self.__dict__.get("_dtype", "bool")  # "boolx4" comparing vectors of 4 lanes


class EQ(CmpOp):
    def __bool__(self) -> bool:  # `a == b` on nodes used as Python bool: identity, like TVM
        return self.a is self.b


class NE(CmpOp):
    def __bool__(self) -> bool:
        return self.a is not self.b


class LT(CmpOp): pass
class LE(CmpOp): pass
class GT(CmpOp): pass
class GE(CmpOp): pass
class And(CmpOp): pass
class Or(CmpOp): pass


for _cls in (EQ, NE, LT, LE, GT, GE, And, Or):
    node(_cls)


def _cache_dtype(e: PrimExpr, source: Any) -> None:
    """Remember the dtype an expression takes from a child, when it is built: reading it up a
    chain of N operators would otherwise recurse N deep (and cost O(N) per read)."""
    dtype = getattr(source, "dtype", None)
    if dtype is not None:
        object.__setattr__(e, "_dtype", dtype)


def _cache_vector_bool(e: PrimExpr, source: Any) -> None:
    """A comparison (or not) of vectors is a vector of bools: remember its lanes."""
    dtype = getattr(source, "dtype", None)
    if dtype is not None and "x" in dtype and _dt.lanes(dtype) > 1:
        object.__setattr__(e, "_dtype", f"boolx{_dt.lanes(dtype)}")


def _cached_dtype(e: PrimExpr, source: Any) -> str:
    # (getattr, not __dict__.get: reading __dict__ makes CPython give the node a real dict, and
    # every later field read of the node slower)
    dtype = getattr(e, "_dtype", None)
    return source.dtype if dtype is None else dtype


@node
class Not(PrimExpr):
    a: PrimExpr

    def __post_init__(self) -> None:
        super().__post_init__()
        _cache_vector_bool(self, self.a)

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return self.__dict__.get("_dtype", "bool")


@node
class Select(PrimExpr):
    """``condition ? true_value : false_value`` (both sides evaluated)."""

    condition: PrimExpr
    true_value: PrimExpr
    false_value: PrimExpr

    def __post_init__(self) -> None:
        # Python values become constants, as TVM's constructor converts them (True: T.bool(True))
        for name in ("condition", "true_value", "false_value"):
            value = getattr(self, name)
            if isinstance(value, (bool, int, float)):
                object.__setattr__(self, name, const(value))
        super().__post_init__()
        _cache_dtype(self, self.true_value)

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return _cached_dtype(self, self.true_value)


@node
class BufferLoad(PrimExpr):
    """``buffer[indices]``."""

    buffer: Any  # tir.Buffer
    indices: tuple
    predicate: Any = None  # a vector load: a bool vector of the lanes read (TVM's predicated load)

    def __post_init__(self) -> None:
        super().__post_init__()
        # a vector index (T.Ramp) loads that many lanes: A[T.Ramp(0, 1, 4)] is float32x4
        for i in self.indices:
            dtype = getattr(i, "dtype", None)
            if dtype is not None and "x" in dtype and _dt.lanes(dtype) > 1:
                object.__setattr__(self, "_dtype", _dt.with_lanes(self.buffer.dtype, _dt.lanes(dtype)))

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return self.__dict__.get("_dtype") or self.buffer.dtype


def _const_lanes(lanes: Any, where: str) -> int:
    """A vector's lane count: a constant (TVM's scalable vectors, ``4 * T.vscale()`` lanes, are not
    minitvm's)."""
    if isinstance(lanes, (int, IntImm)) and not isinstance(lanes, bool):
        return int(lanes)
    raise TypeError(f"{where}: the number of lanes must be a constant int, got {lanes}; scalable vectors "
                    "(a multiple of T.vscale() lanes, for Arm SVE) are not supported by minitvm")


@node
class Ramp(PrimExpr):
    """The vector ``[base, base + stride, ..., base + (lanes - 1) * stride]`` (TVM's Ramp): an
    index that loads or stores ``lanes`` elements at once."""

    base: PrimExpr
    stride: PrimExpr
    lanes: int

    def __post_init__(self) -> None:
        base = convert(self.base)
        stride = self.stride
        stride = const(stride, base.dtype) if isinstance(stride, int) else convert(stride)
        lanes = _const_lanes(self.lanes, "tir.Ramp")
        if lanes < 1:
            raise ValueError(f"tir.Ramp: lanes must be positive, got {lanes}")
        if _dt.lanes(base.dtype) != 1 or stride.dtype != base.dtype:
            raise TypeError(f"tir.Ramp: base and stride must be scalars of one dtype, got {base.dtype} "
                            f"and {stride.dtype}")
        object.__setattr__(self, "base", base)
        object.__setattr__(self, "stride", stride)
        object.__setattr__(self, "lanes", lanes)
        super().__post_init__()

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return _dt.with_lanes(self.base.dtype, self.lanes)


@node
class Broadcast(PrimExpr):
    """``value`` repeated in ``lanes`` lanes (TVM's Broadcast)."""

    value: PrimExpr
    lanes: int

    def __post_init__(self) -> None:
        value = convert(self.value)
        lanes = _const_lanes(self.lanes, "tir.Broadcast")
        if lanes < 1 or _dt.lanes(value.dtype) != 1:
            raise TypeError(f"tir.Broadcast: a scalar over a positive number of lanes, got {value.dtype} "
                            f"over {lanes}")
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "lanes", lanes)
        super().__post_init__()

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return _dt.with_lanes(self.value.dtype, self.lanes)


@node
class Call(PrimExpr):
    """A call of a named intrinsic: ``Call("float32", "tir.exp", (x,))``."""

    dtype: str
    op: str
    args: tuple


@node
class Let(PrimExpr):
    var: Var
    value: PrimExpr
    body: PrimExpr

    def __post_init__(self) -> None:
        super().__post_init__()
        _cache_dtype(self, self.body)

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return _cached_dtype(self, self.body)


@node
class Range(Node):
    """``[min, min + extent)``; ``Range(begin, end)`` in TVM's spelling via :meth:`from_min_extent`."""

    min: PrimExpr
    extent: PrimExpr

    @staticmethod
    def from_min_extent(min_value: Any, extent: Any) -> "Range":
        return Range(convert(min_value), convert(extent))

    def __repr__(self) -> str:
        return f"Range({self.min!r}, {self.extent!r})"


def ir_range(begin: Any, end: Any = None) -> Range:
    """TVM's ``tvm.ir.Range(begin, end)`` (``Range(n)`` = ``[0, n)``): a :class:`Range` of
    ``min=begin, extent=end - begin``.  The node lives here, on the tir floor; ``minitvm.ir``
    names this constructor ``Range`` (installed by :mod:`minitvm.tir`, since ir cannot import tir)."""
    if end is None:
        begin, end = 0, begin
    end = convert(end)
    begin = const(begin, end.dtype) if isinstance(begin, int) else convert(begin)
    return Range(begin, end - begin)


ir_range.from_min_extent = Range.from_min_extent  # type: ignore[attr-defined]


@node
class IterVar(Node):
    """An iteration variable with its domain and kind: a block's, or a GPU thread index
    (``T.launch_thread``, with its ``thread_tag``)."""

    dom: Range
    var: Var
    iter_type: str  # "spatial" (DataPar), "reduce" (CommReduce), "opaque" or "thread" (ThreadIndex)
    thread_tag: str = ""  # for a thread index: "blockIdx.x", "threadIdx.x", "vthread" ...

    DataPar = "spatial"
    CommReduce = "reduce"
    ThreadIndex = "thread"
    Ordered = "scan"
    Opaque = "opaque"

    def __post_init__(self) -> None:
        super().__post_init__()
        dom = self.dom
        dtype = self.var.dtype if isinstance(self.var, Var) else "int32"
        if isinstance(dom, (tuple, list)) and len(dom) == 2:  # IterVar((0, 8), ...): [begin, end)
            begin, end = (const(x, dtype) if isinstance(x, int) else x for x in dom)
            object.__setattr__(self, "dom", Range(begin, end - begin))
        if isinstance(self.var, str):  # IterVar(dom, "i", ...): TVM makes the variable
            dtype = self.dom.extent.dtype if isinstance(self.dom, Range) else dtype
            object.__setattr__(self, "var", Var(self.var, dtype))
        if isinstance(self.iter_type, int):  # TVM's enum values
            kinds = {0: "spatial", 1: "thread", 2: "reduce", 3: "scan", 4: "opaque"}
            if self.iter_type not in kinds:
                raise ValueError(f"IterVar: unknown iter_type {self.iter_type}")
            object.__setattr__(self, "iter_type", kinds[self.iter_type])


# the variable of a Let and of an IterVar is defined there
def _mark_defining(cls: type, *names: str) -> None:
    cls._def_fields = frozenset(cls._def_fields | set(names))


_mark_defining(Let, "var")
_mark_defining(IterVar, "var")


# -- constants -------------------------------------------------------------------

def _wrap_int(dtype: str, value: int) -> int:
    if -0x80000000 <= value <= 0x7FFFFFFF and (dtype == "int32" or dtype == "int64"):
        return value  # the common case, in range already (every index and extent)
    if dtype == "bool":
        return int(bool(value))
    if _dt.is_int(dtype):
        nbits = _dt.bits(dtype)
        if _dt.is_uint(dtype):
            return value % (1 << nbits)
        value = (value + (1 << (nbits - 1))) % (1 << nbits) - (1 << (nbits - 1))
    return value


def const(value: Any, dtype: str | None = None) -> PrimExpr:
    """A constant of ``dtype`` (int32 / float32 / bool inferred from the Python value)."""
    if value.__class__ is int and (dtype == "int32" or dtype == "int64") and dtype.__class__ is str:
        return IntImm(dtype, value)  # the common case: every index and extent the passes build
    if dtype is None:
        if isinstance(value, bool):
            dtype = "bool"
        elif isinstance(value, int):
            dtype = "int32" if -(2**31) <= value < 2**31 else "int64"
        elif isinstance(value, float):
            dtype = "float32"
        else:
            raise TypeError(f"cannot make a constant from {value!r}")
    dtype = str(dtype)
    if "x" in dtype and _dt.lanes(dtype) > 1:  # a vector constant is the scalar broadcast, as TVM's
        return Broadcast(const(value, _dt.element(dtype)), _dt.lanes(dtype))
    if _dt.is_float(dtype) or dtype in _dt.CUSTOM_FLOATS:
        return FloatImm(dtype, float(value))
    if _dt.is_int(dtype) or _dt.is_bool(dtype):
        if isinstance(value, float) and not value.is_integer():
            raise TypeError(f"cannot make a {dtype} constant from {value!r}")
        return IntImm(dtype, int(value))
    raise TypeError(f"cannot make a constant of dtype {dtype!r}")


def shape_const(value: int) -> IntImm:
    """A Python int as a shape dimension or extent: int32 when it fits, else int64 (TVM's
    ``T.int64(...)``) -- the one conversion every shape constructor uses, so that no size
    of 2**31 or more wraps around."""
    value = int(value)
    if not -(2**63) <= value < 2**63:
        raise ValueError(f"the shape dimension {value} does not fit int64")
    return IntImm("int32" if -(2**31) <= value < 2**31 else "int64", value)


def is_const_int(e: Any, value: int) -> bool:
    """True when ``e`` is the integer constant ``value`` (TVM's ``is_const_int``)."""
    return isinstance(e, IntImm) and e.value == value


def convert(value: Any, dtype: str | None = None) -> PrimExpr:
    """Turn a Python number (or an existing PrimExpr) into a PrimExpr."""
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, IterVar):  # an iteration variable stands for its variable, as in TVM
        return value.var
    as_prim_expr = getattr(value, "as_prim_expr", None)  # a buffer slice (BufferRegion) is its vector load
    if as_prim_expr is not None:
        return as_prim_expr()
    if isinstance(value, (bool, int, float)):
        return const(value, dtype)
    try:
        if isinstance(value, np.generic):
            return const(value.item(), dtype or str(value.dtype))
    except ImportError:  # pragma: no cover
        pass
    raise TypeError(f"expected a PrimExpr or a number, got {type(value).__name__}: {value!r}")


from . import op as _op  # noqa: E402  (op builds on the classes above)
