"""The TVMScript namespace for TensorIR: ``from minitvm.script import tir as T``.

Inside a ``@T.prim_func`` the parser (:mod:`minitvm.script.parser`) walks the
function's Python syntax tree and evaluates each expression it meets, so every
``T.*`` name here is an ordinary Python object:

* expression helpers (``T.max``, ``T.exp``, ``T.float32(0)``, ``T.Cast`` ...) build
  PrimExprs through :mod:`minitvm.tir.op`, the same constructors generated code uses;
* declarations (``T.block``, ``T.axis.spatial``, ``T.reads``, ``T.alloc_buffer``,
  ``T.grid`` ...) return small *declaration records*; the parser turns a record into
  IR where it appears (an assignment names a buffer or an iteration variable, a
  ``with`` opens a block, a ``for`` makes loops).  Records carry no global state, so
  calling ``T.grid(4, 4)`` at the Python prompt is harmless and shows what it means.
"""

from __future__ import annotations

import builtins
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from ..arith import Analyzer
from ..ir import dtype as _dt
from ..ir.structural import structural_equal
from ..ir.type import PointerType, PrimType, TupleType
from ..tir import expr as _ex
from ..tir import op as _op
from ..tir.buffer import Buffer as _TirBuffer
from ..tir.buffer import BufferRegion
from ..tir.buffer import decl_buffer as tir_decl_buffer
from ..tir.expr import And as _AndNode
from ..tir.expr import BufferLoad, PrimExpr, Var, const, convert
from ..tir.expr import Cast as _CastNode
from ..tir.expr import Let as _LetNode
from ..tir.expr import Not as _NotNode
from ..tir.expr import Or as _OrNode
from ..tir.expr import Range as _RangeNode
from ..tir.expr import Select as _SelectNode
from ..tir.function import PrimFunc
from ..tir.index_map import IndexMap
from ..tir.stmt import Evaluate, ForKind
from .diagnostics import TVMScriptError
from .parser import DeferredFunction, parse_python_function

__all__ = [
    "prim_func", "Buffer", "match_buffer", "alloc_buffer", "allocate", "grid", "serial", "parallel",
    "vectorized", "unroll", "thread_binding", "block", "sblock", "sblock_alloc_buffer", "axis", "reads",
    "writes", "init",
    "where", "block_attr", "sblock_attr", "func_attr", "meta_var", "handle", "evaluate", "Cast", "cast", "Select",
    "if_then_else", "max", "min", "abs", "floordiv", "floormod", "truncdiv",
    "truncmod", "max_value", "min_value", "call_intrin", "call_extern", "call_llvm_pure_intrin",
    "call_packed", "tvm_call_packed", "let",
    "And", "Or", "Not", "Let", "Range", "Assert", "target", "comm_reducer", "reinterpret",
    "Add", "Sub", "Mul", "Div", "Mod", "FloorDiv", "FloorMod", "Min", "Max", "EQ", "NE", "LT", "LE", "GT", "GE",
    "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
    "uint64", *_dt.CUSTOM_FLOATS, "bool", "boolean", "Var", "SizeVar", "likely", "ret", "decl_buffer",
    "Ramp", "Broadcast", "ramp", "broadcast", "IntImm", "FloatImm", "StringImm",
    "allocate_const", "macro", "buffer", "LetStmt", "launch_thread", "env_thread", "attr",
    # the math the printer writes as T.<name>(...): every math row of the semantics table
    *_op.MATH_INTRINSICS, "isnan", "popcount",
    "ceildiv", "shift_left", "shift_right", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
    *_op.BUILTINS,
]

SizeVar = _ex.SizeVar


# -- scalar types: T.float32(0), T.float32(x), and `n: T.int32` annotations ------------------------


class ScalarType:
    """``T.int32`` & co: a constant or cast when called, a scalar type as an annotation.

    ``T.float32(0)`` is a constant, ``T.float32(x)`` casts a PrimExpr, and
    ``n = T.int32()`` (no argument) declares a fresh scalar variable named ``n``.
    """

    def __init__(self, dtype: str):
        self.dtype = dtype
        self.__name__ = dtype

    def __call__(self, value: Any = None, is_size_var: Any = False) -> Any:
        if self.dtype == "handle" and value is not None:
            # T.handle("float32", "shared"): a pointer, as TVM's -- a handle variable whose type
            # annotation names what it points to (a parameter or let annotation, or a variable)
            return Var("", "handle", _pointer_type(value, is_size_var))
        if value is None:
            if _PARSING[0]:
                return ScalarVarDecl(self.dtype, builtins.bool(is_size_var))
            # at the Python prompt (e.g. a dimension shared by several prim funcs'
            # T.Buffer annotations), as TVM: an unnamed variable
            return (_ex.SizeVar if is_size_var else Var)("v", self.dtype)
        if isinstance(value, PrimExpr):
            return _op.cast(value, self.dtype)
        if isinstance(value, str) and _dt.is_float(self.dtype):  # T.float32("inf")
            return const(float(value), self.dtype)
        return const(value, self.dtype)

    def __repr__(self) -> str:
        return f"T.{self.dtype}"


float16, float32, float64 = ScalarType("float16"), ScalarType("float32"), ScalarType("float64")
int8, int16, int32, int64 = ScalarType("int8"), ScalarType("int16"), ScalarType("int32"), ScalarType("int64")
uint8, uint16 = ScalarType("uint8"), ScalarType("uint16")
uint32, uint64 = ScalarType("uint32"), ScalarType("uint64")
bool = ScalarType("bool")  # noqa: A001 - TVMScript spells it T.bool
boolean = bool  # TVM's other spelling of the same type
# TVM's narrow floats, T.float8_e4m3fn(0.0) & co: constants the IR and printer carry
for _name in _dt.CUSTOM_FLOATS:
    globals()[_name] = ScalarType(_name)
#: the type of a raw array parameter that ``T.match_buffer`` later gives a shape
handle = ScalarType("handle")


def Let(expr: Any, where: dict) -> _LetNode:  # noqa: N802 - TVMScript's spelling
    """``T.Let(x + 1, where={x: 1})``: ``expr`` with ``x`` bound to ``1`` (a let expression; ``x``
    is declared before, ``x = T.int32()``).  Several bindings nest, the first outermost."""
    if not isinstance(where, dict) or not where:
        raise TypeError("T.Let(expr, where={var: value}) needs at least one binding")
    body = convert(expr)
    for var, value in reversed(list(where.items())):
        if not isinstance(var, Var):
            raise TypeError(f"T.Let: where= binds variables declared with T.int32() & co, got {var!r}")
        value = convert(value)
        if value.dtype != var.dtype:
            raise TypeError(f"T.Let: {var.name} is {var.dtype} but its value is {value.dtype}")
        body = _LetNode(var, value, body)
    return body


def _pointer_type(dtype: Any, scope: Any = False) -> PointerType:
    dtype = str(dtype)
    scope = "" if scope is False or scope is None else str(scope)
    # a void pointer points to TVM's void, the empty tuple type
    element = TupleType(()) if dtype == "void" else PrimType(_dt.check(dtype))
    return PointerType(element, scope)


def is_pointer(value: Any) -> bool:
    """Whether ``value`` is what ``T.handle("float32")`` gives (a typed handle annotation)."""
    return isinstance(value, Var) and value.type_annotation is not None


class LetAnnotation:
    """``x: T.let[T.int32] = value`` (or ``x: T.let = value``, its dtype the value's): TVM 0.27's
    spelling of a let-bound variable, the same LetStmt as ``x: T.int32 = value``."""

    def __init__(self, type_spec: Any = None) -> None:
        self.type_spec = type_spec

    def __getitem__(self, item: Any) -> "LetAnnotation":
        return LetAnnotation(item)

    def dtype(self, value: Any) -> str:
        """The let variable's dtype: the annotation's, else the value's."""
        spec = self.type_spec
        if spec is None:
            return value.dtype
        if isinstance(spec, ScalarType):
            return spec.dtype
        if isinstance(spec, Var):  # T.let[T.handle("float32")]
            return spec.dtype
        if isinstance(spec, str):
            return _dt.check(spec)
        raise TypeError(f"T.let[...] takes a scalar type like T.int32, got {spec!r}")

    def __repr__(self) -> str:
        return "T.let" if self.type_spec is None else f"T.let[{self.type_spec!r}]"


let = LetAnnotation()


# -- declaration records -----------------------------------------------------------------------


@dataclass(frozen=True)
class BufferSpec:
    """What ``T.Buffer(shape, dtype)`` says; a parameter or ``T.alloc_buffer`` gives it a name."""

    shape: tuple
    dtype: str = "float32"
    strides: tuple = ()
    elem_offset: Any = None
    scope: str = "global"
    data: Any = None  # a handle Var: this buffer views existing memory (e.g. `data=A.data`)
    axis_separators: tuple = ()
    offset_factor: int = 0
    align: int = -1

    def make(self, name: str) -> _TirBuffer:
        return tir_decl_buffer(self.shape, self.dtype, name, data=self.data, strides=self.strides,
                           elem_offset=self.elem_offset, scope=self.scope,
                           axis_separators=self.axis_separators, offset_factor=self.offset_factor,
                           data_alignment=self.align)


@dataclass(frozen=True)
class ScalarVarDecl:
    """``n = T.int32()``: a new scalar variable (e.g. a symbolic shape)."""

    dtype: str
    is_size_var: Any = False

    def make(self, name: str) -> Var:
        return (_ex.SizeVar if self.is_size_var else Var)(name, self.dtype)


#: > 0 while a TVMScript parser evaluates a function body (``T.int64()`` declares a name there)
_PARSING = [0]


@contextmanager
def parsing() -> Iterator[None]:
    _PARSING[0] += 1
    try:
        yield
    finally:
        _PARSING[0] -= 1


@dataclass(frozen=True)
class AllocBufferDecl:
    spec: BufferSpec


@dataclass(frozen=True)
class AllocateDecl:
    """``A = T.allocate(shape, dtype, scope)`` in lowered IR: storage live for the rest of the body."""

    spec: BufferSpec


@dataclass(frozen=True)
class MatchBufferDecl:
    """``A = T.match_buffer(a, shape)``: a handle parameter (or a block's region) viewed as a buffer."""

    source: Any  # a handle Var or a BufferRegion
    spec: BufferSpec


@dataclass(frozen=True)
class LoopSpec:
    """One loop of a ``for``: its range, kind and annotations."""

    min: PrimExpr
    extent: PrimExpr
    kind: str = ForKind.SERIAL
    annotations: dict = field(default_factory=dict)
    thread: str | None = None


@dataclass(frozen=True)
class BlockSpec:
    name: str


@dataclass(frozen=True)
class InitSpec:
    pass


@dataclass(frozen=True)
class AxisDecl:
    """``vi = T.axis.spatial(128, i)``: iteration variable kind, domain and bound value."""

    kind: str
    dom: Any  # extent, (begin, end) or Range; resolved by the parser once the dtype is known
    binding: PrimExpr


@dataclass(frozen=True)
class RemapDecl:
    """``vi, vj = T.axis.remap("SS", [i, j])``."""

    kinds: str
    bindings: tuple


@dataclass(frozen=True)
class ReadsDecl:
    regions: tuple


@dataclass(frozen=True)
class WritesDecl:
    regions: tuple


@dataclass(frozen=True)
class WhereDecl:
    predicate: PrimExpr


@dataclass(frozen=True)
class BlockAttrDecl:
    attrs: dict


@dataclass(frozen=True)
class FuncAttrDecl:
    attrs: dict


@dataclass(frozen=True)
class MetaVar:
    """``x = T.meta_var(expr)`` binds the Python name ``x`` to ``expr`` (no LetStmt)."""

    value: Any

    def __iter__(self) -> Any:
        """``a, b = T.meta_var([3, 4])`` (TVM's): one meta variable per element."""
        if not isinstance(self.value, (list, tuple)):
            raise TypeError(f"T.meta_var({self.value!r}) is not a sequence to unpack")
        return iter([MetaVar(v) for v in self.value])


@dataclass(frozen=True)
class EnvThreadDecl:
    """``tx = T.env_thread("threadIdx.x")``: a GPU thread index, launched by ``T.launch_thread``."""

    tag: str
    dtype: str = "int32"


@dataclass(frozen=True)
class LaunchThreadDecl:
    """``T.launch_thread(thread, extent)``: ``extent`` GPU threads run the rest of the body (or
    the ``with`` body); ``thread`` is a tag like ``"blockIdx.x"`` or a ``T.env_thread`` variable."""

    thread: Any
    extent: PrimExpr


@dataclass(frozen=True)
class AttrDecl:
    """``T.attr(node, key, value)``: an attribute statement (TVM's AttrStmt) over a body."""

    node: Any
    key: str
    value: PrimExpr


@dataclass(frozen=True)
class AssertDecl:
    """``with T.Assert(condition, "message"):``: an AssertStmt guarding the ``with`` body (the
    form TVM prints where ``assert`` would also guard the statements after it)."""

    condition: PrimExpr
    message: str


def Assert(condition: Any, message: str) -> AssertDecl:  # noqa: N802 - TVM's name
    condition = convert(condition)
    if condition.dtype != "bool":
        raise TypeError(f"T.Assert: the condition must be a boolean expression, got {condition.dtype}")
    if not isinstance(message, str):
        raise TypeError(f"T.Assert: the message must be a string, got {message!r}")
    return AssertDecl(condition, message)


def comm_reducer(combiner: Callable, identity: Any) -> Any:
    """``T.comm_reducer(lambda x, y: x + y, [T.float32(0)])``: a commutative reducer (TVM's
    CommReducer), as a cross-thread reduction's ``reduce_scope`` attribute names it.  With n
    identity values the lambda takes 2n arguments, n accumulated then n new, and returns n values."""
    from ..te.reduction import CommReducer  # lazy: te sits on the floor below; only reducers need it

    identity = [convert(e) for e in (identity if isinstance(identity, (list, tuple)) else [identity])]
    names = combiner.__code__.co_varnames[:combiner.__code__.co_argcount]
    if len(names) != 2 * len(identity):
        raise TypeError(f"T.comm_reducer: {len(identity)} identity value(s) need a combiner of "
                        f"{2 * len(identity)} arguments, got {len(names)}")
    dtypes = [e.dtype for e in identity] * 2
    args = [Var(n, d) for n, d in zip(names, dtypes)]
    result = combiner(*args)
    result = [convert(r) for r in (result if isinstance(result, (list, tuple)) else [result])]
    if len(result) != len(identity):
        raise TypeError(f"T.comm_reducer: the combiner returns {len(result)} value(s), the identity has "
                        f"{len(identity)}")
    n = len(identity)
    return CommReducer(tuple(args[:n]), tuple(args[n:]), tuple(result), tuple(identity))


def reinterpret(*args: Any, dtype: Any = None) -> PrimExpr:
    """``T.reinterpret("float32", x)`` (or ``T.reinterpret(x, dtype="handle")``): ``x``'s bits read
    as ``dtype``; the value itself when it has that dtype already, as TVM."""
    if dtype is None:
        if len(args) != 2:
            raise TypeError("T.reinterpret(dtype, value) takes a dtype and a value")
        dtype, value = args
    elif len(args) == 1:
        value = args[0]
    else:
        raise TypeError("T.reinterpret(value, dtype=...) takes one value")
    value, dtype = convert(value), str(dtype)
    if value.dtype == dtype:
        return value
    if dtype != "handle" and _dt.bits(dtype) != _dt.bits(value.dtype):
        raise TypeError(f"T.reinterpret: {value.dtype} ({_dt.bits(value.dtype)} bits) cannot be read as "
                        f"{dtype} ({_dt.bits(dtype)} bits)")
    return _ex.Call(dtype, "tir.reinterpret", (value,))


def target(target: Any, host: Any = None) -> Any:
    """``T.target("llvm")`` / ``T.target({"kind": "cuda", ...}, host="llvm")``: a Target as an
    attribute value (``T.func_attr({"target": T.target("llvm")})``)."""
    from ..target import Target  # lazy: the target floor sits beside script's, imported on use

    return Target(target, host=host)


def env_thread(thread_tag: str, dtype: str = "int32") -> EnvThreadDecl:
    """A GPU thread index variable (``blockIdx.x``, ``threadIdx.y``, ``vthread`` ...); minitvm
    parses and prints it, and refuses to build it (it compiles for the CPU)."""
    if not isinstance(thread_tag, str):
        raise TypeError(f"T.env_thread takes a thread tag string like \"threadIdx.x\", got {thread_tag!r}")
    return EnvThreadDecl(thread_tag, _dt.check(str(dtype)))


def launch_thread(thread: Any, extent: Any) -> LaunchThreadDecl:
    """Launch ``extent`` GPU threads along ``thread`` (a tag or a ``T.env_thread`` variable)."""
    if not isinstance(thread, (str, Var)):
        raise TypeError(f"T.launch_thread takes a thread tag or a T.env_thread variable, got {thread!r}")
    extent = convert(extent)
    if not _dt.is_int(extent.dtype):
        raise TypeError(f"T.launch_thread: the extent must be an integer, got {extent.dtype}")
    return LaunchThreadDecl(thread, extent)


def attr(node: Any, attr_key: str, value: Any) -> AttrDecl:
    """``T.attr(node, "key", value)``: annotate the rest of the body (or the ``with`` body)."""
    if not isinstance(attr_key, str):
        raise TypeError(f"T.attr: the attribute key must be a string, got {attr_key!r}")
    if isinstance(node, str):
        node = _ex.StringImm(node)
    elif isinstance(node, (int, float)) and not isinstance(node, builtins.bool):
        node = convert(node)
    value = _ex.StringImm(value) if isinstance(value, str) else convert(value)
    return AttrDecl(node, attr_key, value)


# -- buffers --------------------------------------------------------------------------------------


def _shape(shape: Any) -> tuple:
    if isinstance(shape, (list, tuple)):
        return tuple(shape)
    return (shape,)


def _check_unsupported(where: str, buffer_type: Any) -> None:
    """Refuse, by name, the buffer arguments minitvm has no meaning for (their defaults pass)."""
    if buffer_type not in ("", "default"):
        raise NotImplementedError(f"{where}(buffer_type={buffer_type!r}): minitvm has only default buffers "
                                  "(no auto-broadcast); leave buffer_type out")


def _align(value: Any) -> int:
    """``align=``: the data pointer's alignment in bytes (-1 or 0: TVM's default, 64)."""
    value = value.value if isinstance(value, _ex.IntImm) else value
    if isinstance(value, builtins.bool) or not isinstance(value, int):
        raise TypeError(f"align takes an int (bytes), got {value!r}")
    return value


def _offset_factor(value: Any) -> int:
    value = value.value if isinstance(value, _ex.IntImm) else value
    if isinstance(value, builtins.bool) or not isinstance(value, int) or value < 0:
        raise TypeError(f"offset_factor takes an int >= 0, got {value!r}")
    return value


class _BufferProxy:
    """``T.Buffer((128, 128), "float32")`` or ``T.Buffer[(128, 128), "float32"]``."""

    def __call__(self, shape: Any, dtype: str = "float32", data: Any = None, strides: Any = None,
                 elem_offset: Any = None, scope: str = "global", align: int = -1,
                 offset_factor: int = 0, buffer_type: str = "", axis_separators: Any = None) -> BufferSpec:
        _check_unsupported("T.Buffer", buffer_type)
        if isinstance(data, _TirBuffer):  # T.allocate's storage (TVM returns its pointer)
            data = data.data
        if data is not None and not (isinstance(data, Var) and data.dtype == "handle"):
            raise TypeError(f"T.Buffer(data=...) takes a handle such as A.data, got {data!r}")
        return BufferSpec(_shape(shape), _dt.check(dtype), tuple(strides or ()), elem_offset, scope, data,
                          tuple(axis_separators or ()), _offset_factor(offset_factor), _align(align))

    def __getitem__(self, key: Any) -> BufferSpec:
        if isinstance(key, tuple) and len(key) == 2 and isinstance(key[1], str):
            return self(key[0], key[1])
        return self(key)

    def __repr__(self) -> str:
        return "T.Buffer"


Buffer = _BufferProxy()
buffer = Buffer  # TVM's older lowercase spelling


@dataclass(frozen=True)
class LetStmtDecl:
    """``T.LetStmt(value, var=v)`` as a statement: ``v`` is ``value`` in the rest of the body."""

    value: PrimExpr
    var: Var
    named: Any = True  # False: the variable was made here (``with T.LetStmt(v) as x`` names it x)


def LetStmt(value: Any, var: Any = None, type_annotation: Any = None) -> LetStmtDecl:  # noqa: N802
    """TVM's explicit let statement (kept even where ``v = value`` would be inlined)."""
    value = convert(value)
    named = var is not None
    if var is None:
        var = Var("v", value.dtype)
    if not isinstance(var, Var):
        raise TypeError(f"T.LetStmt(var=...) takes a variable declared with T.{value.dtype}(), got {var!r}")
    if var.dtype != value.dtype:
        raise TypeError(f"T.LetStmt: the variable is {var.dtype} but the value is {value.dtype}")
    return LetStmtDecl(value, var, named)


def alloc_buffer(shape: Any, dtype: str = "float32", data: Any = None, strides: Any = None,
                 elem_offset: Any = None, scope: str = "global", align: int = -1,
                 offset_factor: int = 0, buffer_type: str = "default",
                 axis_separators: Any = None) -> AllocBufferDecl:
    """An intermediate buffer of the enclosing block (the function's root block at top level)."""
    _check_unsupported("T.alloc_buffer", buffer_type)
    if data is not None:
        raise NotImplementedError("T.alloc_buffer(data=...): an allocated buffer owns its memory; view "
                                  "existing memory with T.Buffer(shape, dtype, data=A.data) instead")
    return AllocBufferDecl(Buffer(shape, dtype, strides=strides, elem_offset=elem_offset, scope=scope, align=align,
                                  offset_factor=offset_factor, axis_separators=axis_separators))


#: TVM 0.27's name for a block's buffer allocation (its ``T.alloc_buffer`` is a lower-level one)
sblock_alloc_buffer = alloc_buffer


def allocate(shape: Any, dtype: str = "float32", scope: str = "global") -> AllocateDecl:
    """Lowered IR: storage for a buffer, live for the rest of the enclosing body.

    minitvm's ``Allocate`` node carries its buffer, so unlike TVM's ``T.allocate`` (which
    returns a pointer for ``T.decl_buffer``) this names the buffer directly.
    """
    return AllocateDecl(Buffer(shape, dtype, scope=scope))


def decl_buffer(shape: Any, dtype: str = "float32", data: Any = None, strides: Any = None,
                elem_offset: Any = None, scope: str = "global", align: int = 0, offset_factor: int = 0,
                buffer_type: str = "", axis_separators: Any = None) -> Any:
    """``A = T.decl_buffer(shape, dtype)`` in a function body: a buffer for the rest of the body.

    With ``data=B.data`` it views existing memory (as ``T.Buffer(..., data=...)``); without,
    it allocates its own storage (the same statement as ``T.allocate``).
    """
    _check_unsupported("T.decl_buffer", buffer_type)
    spec = Buffer(shape, dtype, data=data, strides=strides, elem_offset=elem_offset, scope=scope, align=align,
                  offset_factor=offset_factor, axis_separators=axis_separators)
    return spec if data is not None else AllocateDecl(spec)


def match_buffer(param: Any, shape: Any, dtype: str = "float32", data: Any = None, strides: Any = None,
                 elem_offset: Any = None, scope: str = "global", align: int = -1,
                 offset_factor: int = 0, buffer_type: str = "default",
                 axis_separators: Any = None) -> MatchBufferDecl:
    """Give a ``T.handle`` parameter (or, in a block, a buffer region) a buffer view."""
    if isinstance(param, BufferLoad):  # A[i, j]: the one-element region
        param = BufferRegion.from_indices(param.buffer, param.indices)
    if not (isinstance(param, BufferRegion) or (isinstance(param, Var) and param.dtype == "handle")):
        raise TypeError("T.match_buffer needs a T.handle parameter or a buffer region like A[0:4, vi]")
    _check_unsupported("T.match_buffer", buffer_type)
    if data is not None:
        raise NotImplementedError("T.match_buffer(data=...): the matched parameter or region is the "
                                  "buffer's memory; leave data out")
    return MatchBufferDecl(param, Buffer(shape, dtype, strides=strides, elem_offset=elem_offset, align=align,
                                         offset_factor=offset_factor, axis_separators=axis_separators,
                                         scope=scope))


# -- loops --------------------------------------------------------------------------------------


def extent_between(begin: PrimExpr, end: PrimExpr) -> PrimExpr:
    """``end - begin``, recognising ``end`` written as ``begin + extent``.

    The printer writes a range as ``begin:begin + extent``; reading ``extent`` back
    (instead of the unsimplified ``begin + extent - begin``) makes the round trip exact.
    """
    begin, end = convert(begin), convert(end)
    if isinstance(end, _ex.Add) and structural_equal(end.a, begin):
        return end.b

    return Analyzer().simplify(_op.sub(end, begin))  # as TVM's Buffer.__getitem__ simplifies it


def _loop(kind: str, start: Any, stop: Any, annotations: dict | None, thread: str | None = None
          ) -> LoopSpec:
    if stop is None:
        extent = convert(start)
        begin = const(0, extent.dtype)
    else:
        begin, end = _op._promote(start, stop)
        extent = extent_between(begin, end)
    if not (_dt.is_int(extent.dtype) and _dt.is_int(begin.dtype)):
        raise TypeError(f"loop bounds must be integers, got {extent.dtype}")
    return LoopSpec(begin, extent, kind, dict(annotations or {}), thread)


def serial(start: Any, stop: Any = None, *, annotations: dict | None = None) -> LoopSpec:
    """``for i in T.serial(n)`` (same as ``range(n)``) or ``T.serial(begin, end)``."""
    return _loop(ForKind.SERIAL, start, stop, annotations)


def parallel(start: Any, stop: Any = None, *, annotations: dict | None = None) -> LoopSpec:
    """A loop whose iterations run on several threads."""
    return _loop(ForKind.PARALLEL, start, stop, annotations)


def vectorized(start: Any, stop: Any = None, *, annotations: dict | None = None) -> LoopSpec:
    """A loop turned into vector instructions."""
    return _loop(ForKind.VECTORIZED, start, stop, annotations)


def unroll(start: Any, stop: Any = None, *, annotations: dict | None = None) -> LoopSpec:
    """A loop copied out ``extent`` times."""
    return _loop(ForKind.UNROLLED, start, stop, annotations)


def thread_binding(start: Any, stop: Any = None, thread: str | None = None, *,
                   annotations: dict | None = None) -> LoopSpec:
    """A loop bound to a GPU thread axis (kept for TVM compatibility; CPU code ignores it)."""
    if thread is None and isinstance(stop, str):
        start, stop, thread = start, None, stop
    if thread is None:
        raise TypeError('T.thread_binding needs thread="threadIdx.x" (or similar)')
    return _loop(ForKind.THREAD_BINDING, start, stop, annotations, thread)


def grid(*extents: Any) -> list[LoopSpec]:
    """``for i, j in T.grid(n, m)``: nested serial loops starting at 0."""
    if not extents:
        raise TypeError("T.grid needs at least one extent")
    return [serial(e) for e in extents]


# -- blocks ---------------------------------------------------------------------------------------


def block(name: str = "", no_realize: Any = False) -> BlockSpec:
    """``with T.block("C"):`` opens a block: its own iteration space, reads and writes."""
    if not isinstance(name, str):
        raise TypeError(f"T.block needs a name string, got {name!r}")
    return BlockSpec(name)


#: newer TVM spelling of T.block
sblock = block


def init() -> InitSpec:
    """``with T.init():`` the statement that initialises a reduction's output."""
    return InitSpec()


def _kind_of(letter: str) -> str:
    kinds = {"S": "spatial", "R": "reduce", "O": "opaque"}
    if letter not in kinds:
        raise ValueError(f"unknown axis kind {letter!r} in T.axis.remap; use 'S' (spatial) or 'R' (reduce)")
    return kinds[letter]


class _Axis:
    """``T.axis.spatial / reduce / opaque / remap``."""

    @staticmethod
    def spatial(dom: Any, binding: Any, dtype: str = "int32") -> AxisDecl:
        """A data-parallel iteration variable over ``dom`` bound to ``binding``."""
        return AxisDecl("spatial", dom, convert(binding))

    @staticmethod
    def reduce(dom: Any, binding: Any, dtype: str = "int32") -> AxisDecl:
        """A reduction iteration variable (the output does not depend on it)."""
        return AxisDecl("reduce", dom, convert(binding))

    @staticmethod
    def opaque(dom: Any, binding: Any, dtype: str = "int32") -> AxisDecl:
        return AxisDecl("opaque", dom, convert(binding))

    @staticmethod
    def scan(dom: Any, binding: Any, dtype: str = "int32") -> AxisDecl:
        """An iteration variable whose iterations depend on earlier ones (run in order)."""
        return AxisDecl("scan", dom, convert(binding))

    S, R = spatial, reduce

    @staticmethod
    def remap(kinds: str, bindings: Any, dtype: str = "int32") -> RemapDecl:
        """``vi, vj, vk = T.axis.remap("SSR", [i, j, k])``: one iteration variable per loop."""
        bindings = tuple(bindings) if isinstance(bindings, (list, tuple)) else (bindings,)
        if len(kinds) != len(bindings):
            raise ValueError(f"T.axis.remap kinds {kinds!r} do not match {len(bindings)} loop variables")
        for k in kinds:
            _kind_of(k)
        return RemapDecl(kinds, bindings)


axis = _Axis()


def _regions(args: tuple, what: str) -> tuple:
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = tuple(args[0])
    regions = []
    for a in args:
        if isinstance(a, BufferRegion):
            regions.append(a)
        elif isinstance(a, _TirBuffer):
            regions.append(BufferRegion.full_region(a))
        elif type(a).__name__ == "BufferLoad":
            regions.append(BufferRegion(a.buffer, tuple(_RangeNode(i, const(1, i.dtype)) for i in a.indices)))
        else:
            raise TypeError(f"T.{what} takes buffer regions like A[vi, 0:128], got {a!r}")
    return tuple(regions)


def reads(*regions: Any) -> ReadsDecl:
    """The buffer regions a block reads (inferred from its body when not given)."""
    return ReadsDecl(_regions(regions, "reads"))


def writes(*regions: Any) -> WritesDecl:
    """The buffer regions a block writes (inferred from its body when not given)."""
    return WritesDecl(_regions(regions, "writes"))


def where(predicate: Any) -> WhereDecl:
    """The block runs only where ``predicate`` holds (e.g. after a split that overhangs)."""
    predicate = convert(predicate)
    if predicate.dtype != "bool":
        raise TypeError(f"T.where needs a boolean condition, got {predicate.dtype}")
    return WhereDecl(predicate)


def block_attr(attrs: dict) -> BlockAttrDecl:
    return BlockAttrDecl(dict(attrs))


sblock_attr = block_attr  # TVM 0.27's name (see minitvm.eras)


def func_attr(attrs: dict) -> FuncAttrDecl:
    """Attributes of the function (``"global_symbol"``, ``"tir.noalias"`` ...)."""
    if not isinstance(attrs, dict):
        raise TypeError("T.func_attr takes a dict")
    return FuncAttrDecl(dict(attrs))


def meta_var(value: Any) -> MetaVar:
    """Bind a Python name to a value without a LetStmt (``x = T.meta_var(i * 4)``)."""
    return MetaVar(value)


# -- expressions --------------------------------------------------------------------------------


def evaluate(value: Any) -> Evaluate:
    """A statement evaluating ``value`` (a call with a side effect, or ``T.evaluate(0)``)."""
    return Evaluate(convert(value))


def Cast(dtype: str, value: Any) -> PrimExpr:  # noqa: N802 - TVMScript node constructor
    """The ``Cast`` node itself (``T.cast`` folds constants; this never does)."""
    return _CastNode(_dt.check(dtype), convert(value))


def cast(value: Any, dtype: str) -> PrimExpr:
    return _op.cast(value, _dt.check(dtype))


def Select(condition: Any, true_value: Any, false_value: Any) -> PrimExpr:  # noqa: N802
    """``condition ? true_value : false_value`` with both sides evaluated."""
    true_value, false_value = _op._promote(true_value, false_value)
    return _SelectNode(convert(condition), true_value, false_value)


def And(a: Any, b: Any) -> PrimExpr:  # noqa: N802 - TVMScript node constructors
    return _AndNode(convert(a), convert(b))


def Or(a: Any, b: Any) -> PrimExpr:  # noqa: N802
    return _OrNode(convert(a), convert(b))


def Not(a: Any) -> PrimExpr:  # noqa: N802
    return _NotNode(convert(a))


def _binary_node(cls: type) -> Callable[[Any, Any], PrimExpr]:
    """``T.Add(a, b)`` & co: the node itself, never folded (``a + 0`` is folded to ``a``);
    the printer writes these where the operator would fold, so the text parses back exactly."""
    def make(a: Any, b: Any) -> PrimExpr:
        a, b = _op._promote(a, b)
        if a.dtype != b.dtype:
            raise TypeError(f"T.{cls.__name__}: operands have dtypes {a.dtype} and {b.dtype}; they must match")
        return cls(a, b)

    make.__name__ = make.__qualname__ = cls.__name__
    return make


Add = _binary_node(_ex.Add)
Sub = _binary_node(_ex.Sub)
Mul = _binary_node(_ex.Mul)
Div = _binary_node(_ex.Div)
Mod = _binary_node(_ex.Mod)
FloorDiv = _binary_node(_ex.FloorDiv)
FloorMod = _binary_node(_ex.FloorMod)
Min = _binary_node(_ex.Min)
Max = _binary_node(_ex.Max)
EQ = _binary_node(_ex.EQ)
NE = _binary_node(_ex.NE)
LT = _binary_node(_ex.LT)
LE = _binary_node(_ex.LE)
GT = _binary_node(_ex.GT)
GE = _binary_node(_ex.GE)


def call_intrin(dtype: str, op_name: str, *args: Any) -> PrimExpr:
    """A call of a named intrinsic, e.g. ``T.call_intrin("float32", "tir.exp", x)``."""
    return _op.call_intrin(dtype, op_name, *args)


def call_extern(*args: Any, dtype: str | None = None) -> PrimExpr:
    """``T.call_extern("float32", "expf", x)`` (or ``T.call_extern("expf", x, dtype="float32")``):
    a call of an external C function, for its value or its side effect."""
    if dtype is not None:
        args = (dtype,) + args
    if len(args) < 2:
        raise TypeError("T.call_extern needs a dtype and a function name: T.call_extern(\"float32\", \"expf\", x)")
    return _op.call_extern(*args)


def call_packed(*args: Any, dtype: str = "int32") -> PrimExpr:
    """``T.call_packed("name", A, x)``: call a registered global function from the kernel (buffers
    reach it as NDArrays; see :func:`minitvm.tir.op.call_packed`).  ``T.tvm_call_packed`` is its
    other name, as in TVM."""
    return _op.call_packed(*args, dtype=dtype)


tvm_call_packed = call_packed


def call_llvm_pure_intrin(*args: Any, dtype: str | None = None) -> PrimExpr:
    """``T.call_llvm_pure_intrin("float32", "llvm.fma", a, b, c)`` (or with ``dtype=`` last, as
    TVM's tests write it): a pure LLVM intrinsic (see :func:`minitvm.tir.op.call_llvm_pure_intrin`)."""
    if dtype is not None:
        args = (dtype,) + args
    if len(args) < 2:
        raise TypeError('T.call_llvm_pure_intrin needs a dtype and an intrinsic name: '
                        'T.call_llvm_pure_intrin("float32", "llvm.fma", a, b, c)')
    return _op.call_llvm_pure_intrin(*args)


# vector expressions: an index that reads several lanes, a scalar repeated over lanes (as TVM's)
Ramp = ramp = _ex.Ramp
Broadcast = broadcast = _ex.Broadcast
# constants spelled as their nodes (T.FloatImm("float32", 0.1)), as TVM's scripts may
IntImm, FloatImm, StringImm = _ex.IntImm, _ex.FloatImm, _ex.StringImm


@dataclass(frozen=True)
class AllocateConstDecl:
    """``c = T.allocate_const(values, dtype, extents)``: constant data for the rest of the body."""

    dtype: str
    extents: tuple
    data: tuple
    annotations: dict = field(default_factory=dict)


def allocate_const(data: Any, dtype: str, extents: Any, annotations: dict | None = None) -> AllocateConstDecl:
    """Constant ``data`` (a nested list or array) of ``dtype`` with shape ``extents``; name it
    and view it through ``T.decl_buffer(extents, dtype, data=c)``.  minitvm parses, prints and
    schedules it; its code generators refuse it."""

    dtype = _dt.check(str(dtype))
    extents = tuple(convert(e) for e in (extents if isinstance(extents, (list, tuple)) else [extents]))
    values = np.asarray(data, dtype=_dt.to_numpy(dtype)).ravel()
    size = 1
    for e in extents:
        if not isinstance(e, _ex.IntImm):
            raise TypeError(f"T.allocate_const needs constant extents, got {e}")
        size *= e.value
    if values.size != size:
        raise ValueError(f"T.allocate_const: {values.size} values do not fill extents "
                         f"{[e.value for e in extents]} ({size} elements)")
    return AllocateConstDecl(dtype, extents, tuple(values.tolist()), dict(annotations or {}))


# T.tvm_load_matrix_sync, T.tvm_access_ptr, T.type_annotation, T.ptx_mma ...: TVM's builtin
# intrinsics (one table, minitvm.tir.op.BUILTINS); they parse and print, the CPU build refuses them
globals().update(_op.BUILTINS)


def Range(begin: Any, end: Any) -> _RangeNode:  # noqa: N802
    """``T.Range(begin, end)``: the half-open range [begin, end)."""
    begin = convert(begin)
    return _RangeNode(begin, extent_between(begin, end))


def _dtype_checked(fn: Callable[..., PrimExpr]) -> Callable[..., PrimExpr]:
    """TVMScript lets every intrinsic take ``dtype=`` (``T.sqrt(x, dtype="float32")``); the
    result's dtype follows from the arguments, so a ``dtype`` that disagrees is an error."""
    def call(*args: Any, dtype: str | None = None) -> PrimExpr:
        result = fn(*args)
        if dtype is not None and convert(result).dtype != _dt.check(str(dtype)):
            raise TypeError(f"T.{fn.__name__}(..., dtype={dtype!r}): the result is {convert(result).dtype}; "
                            f"cast the arguments to {dtype} first")
        return result

    call.__name__ = call.__qualname__ = fn.__name__
    call.__doc__ = fn.__doc__
    return call


if_then_else = _dtype_checked(_op.if_then_else)
max, min = _dtype_checked(_op.max), _dtype_checked(_op.min)  # noqa: A001
# every math intrinsic of the semantics table: T.exp, T.log1p, T.atan2 ...
globals().update({_name: _dtype_checked(getattr(_op, _name)) for _name in _op.MATH_INTRINSICS})
abs = _dtype_checked(_op.abs)  # noqa: A001 - T.abs: fabs for floats, a select for integers
floordiv, floormod, truncdiv, truncmod = (_dtype_checked(f) for f in (_op.floordiv, _op.floormod,
                                                                      _op.truncdiv, _op.truncmod))
likely, ret = _dtype_checked(_op.likely), _dtype_checked(_op.ret)
isnan, popcount = _dtype_checked(_op.isnan), _dtype_checked(_op.popcount)
shift_left, shift_right = _dtype_checked(_op.shift_left), _dtype_checked(_op.shift_right)
bitwise_and, bitwise_or = _dtype_checked(_op.bitwise_and), _dtype_checked(_op.bitwise_or)
bitwise_xor, bitwise_not = _dtype_checked(_op.bitwise_xor), _dtype_checked(_op.bitwise_not)
ceildiv = _dtype_checked(_op.ceildiv)
max_value, min_value = _op.max_value, _op.min_value


# -- macros -----------------------------------------------------------------------------------------


class Macro:
    """``@T.macro``: a TVMScript fragment pasted where it is called inside a prim func.

    The parser expands ``f(a, b)`` by parsing ``f``'s body with its parameters bound to the
    arguments.  ``hygienic=True`` (the default) resolves the body's other names where the
    macro was defined; ``hygienic=False`` where it is called (so it sees loop variables there).
    """

    def __init__(self, func: Callable, hygienic: Any, namespace: dict):
        self.func = func
        self.hygienic = builtins.bool(hygienic)
        self.namespace = namespace  # names visible where the macro was defined
        self.__name__ = getattr(func, "__name__", "macro")

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        return self if obj is None else BoundMacro(self, obj)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"T.macro {self.__name__} can only be called inside a @T.prim_func")

    def __repr__(self) -> str:
        return f"T.macro {self.__name__}"


@dataclass(frozen=True)
class BoundMacro:
    """A macro defined in a class, reached through an instance (``obj.load(A)``)."""

    macro: Macro
    obj: Any

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"T.macro {self.macro.__name__} can only be called inside a @T.prim_func")


def macro(*args: Any, hygienic: Any = True) -> Any:
    """``@T.macro`` or ``@T.macro(hygienic=False)``: define a TVMScript macro."""
    caller = sys._getframe(1)
    if len(args) > 1 or (args and not callable(args[0])):
        raise ValueError("T.macro takes only keyword arguments: @T.macro or @T.macro(hygienic=...)")

    def decorate(f: Callable) -> Macro:
        namespace = dict(getattr(f, "__globals__", {}))
        namespace.update(_caller_namespace(caller))
        if getattr(f, "__closure__", None):
            for name, cell in zip(f.__code__.co_freevars, f.__closure__):
                try:
                    namespace[name] = cell.cell_contents
                except ValueError:
                    pass
        return Macro(f, hygienic, namespace)

    return decorate(args[0]) if args else decorate


# -- the decorator --------------------------------------------------------------------------------


def prim_func(func: Callable | None = None, *, private: Any = False,
              check_well_formed: Any = True, s_tir: Any = False, persistent: Any = False) -> Any:
    """Parse the decorated Python function as TensorIR and return a ``tir.PrimFunc``.

    ``@T.prim_func(private=True)`` leaves out the ``global_symbol`` attribute (the
    function is not exported); ``check_well_formed=False`` skips the check (TVM's) that every
    variable the function uses is defined.  Inside an ``@I.ir_module`` class, parsing waits for
    the module decorator, which knows every function of the module.  ``s_tir=True`` is how TVM
    0.27 marks a function of schedulable blocks (``T.sblock``) -- the only TIR minitvm has, so
    both values read the same text; TVM 0.27's ``persistent`` kernels are not supported.
    """
    if persistent:
        raise NotImplementedError("T.prim_func(persistent=True): minitvm has no persistent kernels")
    caller = sys._getframe(1)
    options = {"private": private, "check_well_formed": builtins.bool(check_well_formed)}

    def decorate(f: Callable) -> Any:
        result = _parse_decorated(f, options, caller)
        if isinstance(result, Exception):
            raise result.with_traceback(None) from None  # the learner needs the message, not our stack
        if isinstance(result, PrimFunc):  # TVM's decorator keeps the Python name (func.__name__)
            object.__setattr__(result, "__name__", f.__name__)
        return result

    return decorate if func is None else decorate(func)


def _parse_decorated(f: Callable, options: dict, caller: Any) -> Any:
    """The PrimFunc (or, in a class body, a deferred function), or the TVMScriptError to raise."""

    if _defined_in_class_body(f):
        return DeferredFunction(f, "tir", options, _caller_namespace(caller))
    try:
        return parse_python_function(f, private=options["private"], extra_vars=_caller_namespace(caller),
                                     check_well_formed=options["check_well_formed"])
    except TVMScriptError as err:
        return err


def _defined_in_class_body(f: Callable) -> bool:
    parts = getattr(f, "__qualname__", "").split(".")
    return len(parts) > 1 and parts[-2] != "<locals>"


def _caller_namespace(frame: Any) -> dict:
    """Local names visible where the decorator ran (a class body also sees its enclosing function)."""
    names: dict = {}
    chain = []
    while frame is not None and len(chain) < 2:
        chain.append(frame)
        if frame.f_code.co_flags & 0x02 == 0 and "__module__" in frame.f_locals:  # a class body
            frame = frame.f_back
            continue
        break
    for fr in reversed(chain):
        if fr.f_globals is fr.f_locals:  # module level: already the function's globals
            continue
        names.update(fr.f_locals)
    return names


def index_map(mapping: Any, *, inverse_index_map: Any = None, index_dtype: str = "int64") -> Any:
    """``T.index_map(lambda i, j: (j, i))``: the text an IndexMap prints as, read back."""

    return IndexMap.from_func(mapping, inverse_index_map=inverse_index_map, index_dtype=index_dtype)
