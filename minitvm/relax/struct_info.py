"""StructInfo: what is statically known about a Relax value.

``TensorStructInfo((n, 784), "float32")`` says "a float32 tensor whose first dimension
is the symbolic ``n`` and second is 784"; less precise forms know only the number of
dimensions (``ndim=2``) or nothing (``ObjectStructInfo``).  Symbolic dimensions are
``tir.Var``s of dtype int64, shared between the struct infos that use them.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..error import TVMError
from ..ir.node import Node, defines, node
from ..ir.structural import StructuralEqMixin
from ..ir.type import PrimType
from ..tir.expr import IntImm, PrimExpr
from ..tir.function import PrimFunc
from ..tir.functor import post_order_visit
from ..tir.stmt import BufferStore
from .expr import Expr, ShapeExpr, Var, _set_struct_info, _shape_value

__all__ = [
    "StructInfo", "ObjectStructInfo", "PrimStructInfo", "ShapeStructInfo", "TensorStructInfo",
    "TupleStructInfo", "FuncStructInfo", "TensorType", "StructInfoError", "shape_text", "dim_text",
    "get_shape_of",
]

_UNKNOWN_DTYPES = (None, "", "void")


class StructInfoError(TVMError, ValueError):
    """Struct info of a call cannot be inferred: wrong shapes, dtypes or arguments."""


class StructInfoTypeError(StructInfoError, TypeError):
    """Operands whose dtypes cannot combine (TVM reports these as a ``TypeError``)."""


class StructInfo(StructuralEqMixin, Node):
    """Base of struct infos.  As in TVM, ``==`` compares structurally (a symbolic dimension
    matches only the same ``tir.Var``); ``same_as`` compares identity."""

    __slots__ = ()

    def is_base_of(self, derived: "StructInfo") -> bool:
        """True when every value described by ``derived`` is also described by ``self``."""
        # lazy: cycle -- relax.analysis builds on this module (and on expr)
        from .analysis.struct_info_analysis import is_base_of
        return is_base_of(self, derived)

    def as_struct_info(self, dict_globals: Any = None) -> "StructInfo":
        """Itself: TVMScript's ``R.Tensor(...)`` in TVM is a proxy converted by this method;
        minitvm's makers return the struct info directly, so TVM's conversion is the identity."""
        return self

    def __repr__(self) -> str:
        return struct_info_text(self)


@node
class ObjectStructInfo(StructInfo):
    """Any value at all."""


@node
class PrimStructInfo(StructInfo):
    """A scalar of ``dtype``; with ``value`` known exactly (``R.Prim(value=n)``)."""

    dtype: Any = None
    value: Any = None

    def __post_init__(self) -> None:
        value = self.value
        if isinstance(value, int) and not isinstance(value, bool):
            value = IntImm(self.dtype or "int64", value)
            object.__setattr__(self, "value", value)
        if value is not None and not isinstance(value, PrimExpr):
            raise TypeError(f"PrimStructInfo: value must be a PrimExpr or int, got {value!r}")
        if self.dtype is None:
            object.__setattr__(self, "dtype", value.dtype if value is not None else "void")


@node
class ShapeStructInfo(StructInfo):
    """A shape: its dimensions when known (``values``), else only ``ndim`` (-1: unknown)."""

    values: Any = None  # tuple of int64 PrimExprs, or None
    ndim: int = -1

    def __post_init__(self) -> None:
        if self.values is not None:
            values = tuple(_shape_value(v, "ShapeStructInfo") for v in self.values)
            if self.ndim not in (-1, len(values)):
                raise ValueError(f"ShapeStructInfo: ndim={self.ndim} but {len(values)} values given")
            object.__setattr__(self, "values", values)
            object.__setattr__(self, "ndim", len(values))
        elif not isinstance(self.ndim, int) or self.ndim < -1:
            raise ValueError(f"ShapeStructInfo: ndim must be an int >= -1, got {self.ndim!r}")


@node
class TensorStructInfo(StructInfo):
    """A tensor of ``dtype`` with ``shape`` (a ShapeExpr, or a shape-valued Var) when known,
    else ``ndim`` dimensions (-1: unknown)."""

    shape: Any = None
    dtype: str = "float32"
    vdevice: Any = None
    ndim: int = -1

    def __post_init__(self) -> None:
        shape = self.shape
        if shape is not None and not isinstance(shape, (ShapeExpr, Var)):
            if isinstance(shape, Expr) or isinstance(shape, (int, PrimExpr)):
                raise TypeError(f"TensorStructInfo: shape must be a list of dimensions or a "
                                f"ShapeExpr, got {shape!r}")
            shape = ShapeExpr(list(shape))
            object.__setattr__(self, "shape", shape)
        if isinstance(shape, Var):
            sinfo = shape.struct_info
            if not isinstance(sinfo, ShapeStructInfo):
                raise TypeError(f"TensorStructInfo: shape variable {shape.name} is not a shape")
            ndim = sinfo.ndim
        else:
            ndim = len(shape.values) if shape is not None else self.ndim
        if shape is not None and self.ndim not in (-1, ndim):
            raise ValueError(f"TensorStructInfo: ndim={self.ndim} disagrees with shape {shape!r}")
        if not isinstance(ndim, int) or ndim < -1:
            raise ValueError(f"TensorStructInfo: ndim must be an int >= -1, got {ndim!r}")
        object.__setattr__(self, "ndim", ndim)
        dtype = "void" if self.dtype in _UNKNOWN_DTYPES else str(self.dtype)
        object.__setattr__(self, "dtype", dtype)

    @property
    def is_unknown_dtype(self) -> bool:
        return self.dtype == "void"

    @property
    def is_unknown_ndim(self) -> bool:
        return self.ndim == -1

    @property
    def shape_values(self) -> tuple | None:
        """The dimensions as PrimExprs when the shape is known, else None."""
        if isinstance(self.shape, ShapeExpr):
            return self.shape.values
        if isinstance(self.shape, Var) and isinstance(self.shape.struct_info, ShapeStructInfo):
            return self.shape.struct_info.values
        return None

    @property
    def static_shape(self) -> tuple[int, ...] | None:
        """The dimensions as Python ints when every one is a number, else None (unknown or symbolic)."""
        dims = self.shape_values
        if dims is None or not all(isinstance(d, IntImm) for d in dims):
            return None
        return tuple(int(d.value) for d in dims)


def TensorType(shape: Any = None, dtype: str = "float32", vdevice: Any = None,
               ndim: int = -1) -> TensorStructInfo:  # noqa: N802 - mirrors relax.TensorType
    """Older/newer spelling of a tensor annotation; an int first argument is ``ndim``."""
    if isinstance(shape, int) and not isinstance(shape, bool):
        return TensorStructInfo(None, dtype, vdevice, shape)
    return TensorStructInfo(shape, dtype, vdevice, ndim)


@node
class TupleStructInfo(StructInfo):
    """A tuple with one struct info per field."""

    fields: tuple = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        for f in self.fields:
            if not isinstance(f, StructInfo):
                raise TypeError(f"TupleStructInfo: fields must be StructInfo, got {f!r}")


@node
class FuncStructInfo(StructInfo):
    """A function: its parameters' and result's struct info (``params=None``: opaque, any
    arguments), and whether calling it is free of side effects."""

    # a definition site (as TVM's): symbolic variables the parameters name are the function's
    # own, so two signatures alike up to their renaming are structurally equal
    params: Any = defines(default=None)  # tuple of StructInfo, or None for an opaque function
    ret: Any = None
    purity: bool = True
    # an opaque function's result may be worked out per call by the global function of this
    # name, called with (call, block_builder) (TVM's derive_func: runtime.TVMTensorCreateView's)
    derive_func: Any = None

    def __post_init__(self) -> None:
        if self.params is not None:
            object.__setattr__(self, "params", tuple(self.params))
        if self.ret is None:
            object.__setattr__(self, "ret", ObjectStructInfo())

    @staticmethod
    def opaque_func(ret: StructInfo | None = None, purity: bool = False,
                    derive_func: str | None = None) -> "FuncStructInfo":
        """A function whose parameters are unknown (packed functions, extern functions)."""
        return FuncStructInfo(None, ret or ObjectStructInfo(), purity, derive_func)

    @property
    def is_opaque(self) -> bool:
        return self.params is None


# -- text, for messages and repr (the TVMScript printer lives in minitvm.script) ----------

def shape_text(values: Sequence[PrimExpr] | None) -> str:
    """``(n, 784)`` — a shape as people write it, for error messages."""
    if values is None:
        return "(?)"
    dims = [dim_text(v) for v in values]
    return f"({dims[0]},)" if len(dims) == 1 else f"({', '.join(dims)})"


_INFIX = {"Add": "+", "Sub": "-", "Mul": "*", "FloorDiv": "//", "FloorMod": "%"}


def dim_text(v: PrimExpr) -> str:
    """``n * 2 + 1`` — a dimension as people write it (constants without their dtype)."""
    if isinstance(v, IntImm):
        return str(v.value)
    name = getattr(v, "name", None)
    if isinstance(name, str):
        return name
    infix = _INFIX.get(type(v).__name__)
    if infix is not None:
        def side(e: PrimExpr) -> str:
            text = dim_text(e)
            return f"({text})" if type(e).__name__ in _INFIX and infix in ("*", "//", "%") else text
        return f"{side(v.a)} {infix} {side(v.b)}"
    try:
        return v.script()
    except Exception:
        return repr(v)


def struct_info_text(s: Any) -> str:
    """``R.Tensor((n, 4), "float32")`` style text of a struct info."""
    if isinstance(s, TensorStructInfo):
        vals = s.shape_values
        if vals is not None:
            return f'R.Tensor({shape_text(vals)}, "{s.dtype}")'
        return f'R.Tensor(ndim={s.ndim}, dtype="{s.dtype}")'
    if isinstance(s, ShapeStructInfo):
        return f"R.Shape({shape_text(s.values)})" if s.values is not None else f"R.Shape(ndim={s.ndim})"
    if isinstance(s, PrimStructInfo):
        return f'R.Prim(value={dim_text(s.value)})' if s.value is not None else f'R.Prim("{s.dtype}")'
    if isinstance(s, TupleStructInfo):
        return f"R.Tuple({', '.join(struct_info_text(f) for f in s.fields)})"
    if isinstance(s, FuncStructInfo):
        if s.params is None:
            return f"R.Callable(ret={struct_info_text(s.ret)})"
        params = ", ".join(struct_info_text(p) for p in s.params)
        return f"R.Callable(({params}), {struct_info_text(s.ret)})"
    if isinstance(s, ObjectStructInfo):
        return "R.Object"
    return repr(s)


for _cls in (ObjectStructInfo, PrimStructInfo, ShapeStructInfo, TensorStructInfo, TupleStructInfo,
             FuncStructInfo):
    _cls.__repr__ = StructInfo.__repr__  # the node decorator gave each its generic repr


def get_shape_of(expr: Expr) -> Expr:
    """The shape of a tensor-valued ``expr`` as a Relax expression (``relax.get_shape_of``):
    the ``ShapeExpr`` (or shape-valued Var) its struct info records."""
    sinfo = getattr(expr, "struct_info_", None)
    if sinfo is None:
        raise ValueError(f"relax.get_shape_of: {expr!r} has no struct info yet; normalize it first "
                         "(bb.emit / bb.normalize)")
    if not isinstance(sinfo, TensorStructInfo):
        raise TypeError(f"relax.get_shape_of: expected a tensor, got {struct_info_text(sinfo)}")
    if sinfo.shape is None:  # known only at run time: relax.shape_of reads it
        from .op.base import shape_of  # lazy: the ops build on this module

        call = shape_of(expr)
        _set_struct_info(call, ShapeStructInfo(ndim=sinfo.ndim))
        return call
    return sinfo.shape


def prim_func_struct_info(func: Any) -> FuncStructInfo:
    """A PrimFunc's signature as Relax sees it (TVM's ``PrimFunc.struct_info``): a buffer
    parameter is a tensor, a scalar one a prim value; it returns its ``ret_type`` scalar or
    nothing (an empty tuple); it is pure unless it writes a parameter's buffer (writing its
    own allocations is no visible effect)."""
    params = []
    for p in func.params:
        buffer = func.buffer_map.get(p)
        params.append(TensorStructInfo(list(buffer.shape), buffer.dtype) if buffer is not None
                      else ObjectStructInfo() if p.dtype == "handle" else PrimStructInfo(p.dtype))
    argument_memory = {id(b.data) for b in func.buffer_map.values()}
    written = []
    post_order_visit(func.body, lambda n: written.append(n.buffer.data) if isinstance(n, BufferStore) else None)
    pure = not any(id(data) in argument_memory for data in written)
    ret = PrimStructInfo(func.ret_type.dtype) if isinstance(func.ret_type, PrimType) else TupleStructInfo([])
    return FuncStructInfo(params, ret, pure)


# TVM's PrimFunc.struct_info: a property of the TIR node that only Relax can answer, installed
# here (the floor that knows struct info) as minitvm.tir installs ir.Range
PrimFunc.struct_info = property(prim_func_struct_info)
