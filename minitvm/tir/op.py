"""Constructors for TIR expressions, with dtype promotion and constant folding.

The Python operators of :class:`PrimExpr` and the ``T.*`` helpers of TVMScript both
come here, so ``i * 1`` folds to ``i`` wherever it is written (as TVM's TryConstFold).
"""

from __future__ import annotations

from typing import Any

from ..ir import dtype as _dt
from .expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    IterVar,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Select,
    StringImm,
    Sub,
    const,
    convert,
)
from .semantics import (
    BY_LLVM_INTRIN,
    BY_NODE,
    BY_OP,
    LLVM_PURE_INTRIN,
    MATH_INTRINSICS,
    IntegerDivisionByZero,
    Semantics,
    llvm_intrin_base,
)

__all__ = [
    "add", "sub", "mul", "div", "truncdiv", "truncmod", "floordiv", "floormod", "min", "max",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_not", "neg", "cast", "if_then_else", "Select",
    "abs", "max_value", "min_value", "call_intrin", "INTRINSICS",
    "likely", "all", "any", "ret", "call_extern", "call_packed", "tvm_call_packed", "call_llvm_pure_intrin",
    "isnan", "popcount", "ceildiv",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "shift_left", "shift_right",
    "Builtin", "BUILTINS", "BUILTIN_OPS", "call_builtin", "access_ptr", "ACCESS_READ", "ACCESS_WRITE",
]

#: the semantics row of each operation, by name
_ROW: dict[str, Semantics] = {row.name: row for row in (*BY_NODE.values(), *BY_OP.values())}

#: intrinsics available in kernels: every intrinsic row of the semantics table (codegen and the
#: interpreter implement each through it)
INTRINSICS = tuple(op.removeprefix("tir.") for op in BY_OP)


def _is_const(x: PrimExpr, value: Any = None) -> bool:
    if not isinstance(x, (IntImm, FloatImm)):
        return False
    return value is None or x.value == value


def _promote(a: Any, b: Any) -> tuple[PrimExpr, PrimExpr]:
    """Make both operands PrimExprs of one dtype (Python numbers adopt the other side's)."""
    if isinstance(a, PrimExpr) and isinstance(b, PrimExpr) and a.dtype == b.dtype:
        return a, b  # the common case: every index the schedules and passes build
    a = a.var if isinstance(a, IterVar) else a  # an IterVar stands for its variable
    b = b.var if isinstance(b, IterVar) else b
    if not isinstance(a, PrimExpr) and hasattr(a, "as_prim_expr"):  # a buffer slice: its vector load
        a = a.as_prim_expr()
    if not isinstance(b, PrimExpr) and hasattr(b, "as_prim_expr"):
        b = b.as_prim_expr()
    if not isinstance(a, PrimExpr) and not isinstance(b, PrimExpr):
        a, b = convert(a), convert(b)
    if not isinstance(a, PrimExpr):
        a = _const_like(a, b)
    if not isinstance(b, PrimExpr):
        b = _const_like(b, a)
    if a.dtype != b.dtype:
        a, b = _match_lanes(a, b)
        if a.dtype != b.dtype:
            target = _wider(a.dtype, b.dtype)
            a, b = cast(a, target), cast(b, target)
    return a, b


def _match_lanes(a: PrimExpr, b: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
    """A scalar beside a vector is broadcast to its lanes (as TVM's operators do)."""
    la, lb = _dt.lanes(a.dtype), _dt.lanes(b.dtype)
    if la == lb:
        return a, b
    if la == 1:
        return Broadcast(a, lb), b
    if lb == 1:
        return a, Broadcast(b, la)
    raise TypeError(f"cannot combine a vector of {la} lanes ({a.dtype}) with one of {lb} ({b.dtype})")


def _is_vector(x: Any) -> bool:
    return isinstance(x, PrimExpr) and _dt.lanes(x.dtype) > 1


def _const_like(value: Any, other: PrimExpr) -> PrimExpr:
    value = value.item() if hasattr(value, "item") and not isinstance(value, PrimExpr) else value
    if isinstance(value, float) and not _dt.is_float(other.dtype):
        return const(value, "float32")
    if isinstance(value, bool) and other.dtype != "bool":
        return const(int(value), other.dtype)
    return const(value, other.dtype)


def _wider(a: str, b: str) -> str:
    fa, fb = _dt.is_float(a), _dt.is_float(b)
    if fa != fb:
        return a if fa else b
    if a == "bool":
        return b
    if b == "bool":
        return a
    return a if _dt.bits(a) >= _dt.bits(b) else b


def cast(x: Any, dtype: str) -> PrimExpr:
    x = convert(x)
    dtype = str(dtype)
    if x.dtype == dtype:
        return x
    if isinstance(x, IntImm) and (_dt.is_int(dtype) or _dt.is_bool(dtype)):
        return IntImm(dtype, x.value)
    if isinstance(x, (IntImm, FloatImm)) and _dt.is_float(dtype):
        return FloatImm(dtype, float(x.value))
    return Cast(dtype, x)


def _fold(row: Semantics, a: PrimExpr, b: PrimExpr) -> PrimExpr | None:
    """``row`` applied to two constants (its meaning from the semantics table), else None."""
    if _is_const(a) and _is_const(b):
        return const(row.fold(a.dtype, a.value, b.value), row.result_dtype(a.dtype))
    return None


def _binary_operands(row: Semantics, a: Any, b: Any) -> tuple[PrimExpr, PrimExpr]:
    """Promoted operands of ``row``; refuses operand kinds it does not take (``bool - bool``)."""
    a, b = _promote(a, b)
    row.check(a.dtype, f"tir.{row.name}")
    return a, b


def _divisor_checked(row: Semantics, a: PrimExpr, b: PrimExpr) -> bool:
    """Refuse a constant integer zero divisor when the expression is built, as TVM's folder
    ("Divide by zero"); True when the division is a float one by constant zero (left unfolded:
    it is IEEE infinity or NaN at run time)."""
    if _is_const(b, 0):
        if not _dt.is_float(a.dtype):
            raise IntegerDivisionByZero(f"Divide by zero: {row.name}({a}, {b})")
        return True
    return False


def add(a: Any, b: Any) -> PrimExpr:
    a, b = _binary_operands(_ROW["add"], a, b)
    folded = _fold(_ROW["add"], a, b)
    if folded is not None:
        return folded
    if _is_const(a, 0):
        return b
    if _is_const(b, 0):
        return a
    return Add(a, b)


def sub(a: Any, b: Any) -> PrimExpr:
    a, b = _binary_operands(_ROW["sub"], a, b)
    folded = _fold(_ROW["sub"], a, b)
    if folded is not None:
        return folded
    if _is_const(b, 0):
        return a
    return Sub(a, b)


def mul(a: Any, b: Any) -> PrimExpr:
    a, b = _binary_operands(_ROW["mul"], a, b)
    folded = _fold(_ROW["mul"], a, b)
    if folded is not None:
        return folded
    if _is_const(a, 1):
        return b
    if _is_const(b, 1):
        return a
    if (_is_const(a, 0) or _is_const(b, 0)) and not _dt.is_float(a.dtype):
        return const(0, a.dtype)
    return Mul(a, b)


def _division(name: str, node: type, unit_result: str):
    """The constructor of one division node: folds constants, refuses a constant integer zero
    divisor, and simplifies a divisor of 1 (``unit_result``: "a" for quotients, "0" for
    integer remainders)."""
    row = _ROW[name]

    def build(a: Any, b: Any) -> PrimExpr:
        a, b = _binary_operands(row, a, b)
        if _divisor_checked(row, a, b):
            return node(a, b)
        folded = _fold(row, a, b)
        if folded is not None:
            return folded
        if _is_const(b, 1):
            if unit_result == "a":
                return a
            if not _dt.is_float(a.dtype):
                return const(0, a.dtype)
        return node(a, b)

    build.__name__ = name
    return build


div = _division("div", Div, "a")
div.__doc__ = "``a / b``: true division for floats, truncating division for integers (as in C)."
truncdiv = div
truncmod = _division("mod", Mod, "0")
truncmod.__name__ = "truncmod"
floordiv = _division("floordiv", FloorDiv, "a")
floormod = _division("floormod", FloorMod, "0")


def _binary_folding(name: str, node: type):
    row = _ROW[name]

    def build(a: Any, b: Any) -> PrimExpr:
        a, b = _binary_operands(row, a, b)
        folded = _fold(row, a, b)
        return folded if folded is not None else node(a, b)

    build.__name__ = name
    return build


min = _binary_folding("min", Min)  # noqa: A001 - mirrors tvm.tir.min
max = _binary_folding("max", Max)  # noqa: A001
equal = _binary_folding("eq", EQ)
not_equal = _binary_folding("ne", NE)
less = _binary_folding("lt", LT)
less_equal = _binary_folding("le", LE)
greater = _binary_folding("gt", GT)
greater_equal = _binary_folding("ge", GE)
for _f, _n in ((equal, "equal"), (not_equal, "not_equal"), (less, "less"), (less_equal, "less_equal"),
               (greater, "greater"), (greater_equal, "greater_equal")):
    _f.__name__ = _n


def _int_call(name: str, a: Any, b: Any) -> PrimExpr:
    """``tir.<name>(a, b)`` on integers (bitwise operations and shifts), folded on constants."""
    row = _ROW[name]
    a, b = _promote(a, b)
    if _is_vector(a):  # lane by lane: the lanes' type decides (bool lanes too, as TVM's masks)
        if _dt.element(a.dtype) != "bool":
            row.check(_dt.element(a.dtype), f"tir.{name}")
        return Call(a.dtype, row.op, (a, b))
    row.check(a.dtype, f"tir.{name}")
    if name.startswith("shift") and _is_const(b) and not 0 <= b.value < _dt.bits(a.dtype):
        raise ValueError(f"tir.{name}: the shift amount {b.value} must be non-negative and less than "
                         f"{_dt.bits(a.dtype)} for type {a.dtype}")
    folded = _fold(row, a, b)
    return folded if folded is not None else Call(a.dtype, row.op, (a, b))


def bitwise_and(a: Any, b: Any) -> PrimExpr:
    """``a & b`` bit by bit (integers)."""
    return _int_call("bitwise_and", a, b)


def bitwise_or(a: Any, b: Any) -> PrimExpr:
    """``a | b`` bit by bit (integers)."""
    return _int_call("bitwise_or", a, b)


def bitwise_xor(a: Any, b: Any) -> PrimExpr:
    """``a ^ b`` bit by bit (integers)."""
    return _int_call("bitwise_xor", a, b)


def shift_left(a: Any, b: Any) -> PrimExpr:
    """``a << b``; a constant amount outside ``[0, bits)`` is refused, as TVM does."""
    return _int_call("shift_left", a, b)


def shift_right(a: Any, b: Any) -> PrimExpr:
    """``a >> b`` (arithmetic for signed types); a constant amount outside ``[0, bits)`` is refused."""
    return _int_call("shift_right", a, b)


def bitwise_not(a: Any) -> PrimExpr:
    """``~a`` bit by bit (integers)."""
    a = convert(a)
    row = _ROW["bitwise_not"]
    row.check(a.dtype, "tir.bitwise_not")
    if _is_const(a):
        return const(row.fold(a.dtype, a.value), a.dtype)
    return Call(a.dtype, row.op, (a,))


def and_(a: Any, b: Any) -> PrimExpr:
    """``a & b``: logical for bools, bitwise for integers (PrimExpr's ``&``)."""
    a, b = convert(a), convert(b)
    return logical_and(a, b) if a.dtype == "bool" and b.dtype == "bool" else bitwise_and(a, b)


def or_(a: Any, b: Any) -> PrimExpr:
    """``a | b``: logical for bools, bitwise for integers (PrimExpr's ``|``)."""
    a, b = convert(a), convert(b)
    return logical_or(a, b) if a.dtype == "bool" and b.dtype == "bool" else bitwise_or(a, b)


def invert(a: Any) -> PrimExpr:
    """``~a``: logical not for a bool, bitwise not for an integer (PrimExpr's ``~``)."""
    a = convert(a)
    return logical_not(a) if a.dtype == "bool" else bitwise_not(a)


def _as_bool(x: Any) -> PrimExpr:
    x = convert(x)
    if x.dtype != "bool":
        raise TypeError(f"logical operators need bool operands, got {x.dtype} ({x})")
    return x


def _vector_bool_call(name: str, a: Any, b: Any) -> PrimExpr:
    """``and``/``or`` of boolean vectors: lane by lane, TVM's ``tir.bitwise_and``/``bitwise_or``."""
    a, b = _promote(a, b)
    if _dt.element(a.dtype) != "bool":
        raise TypeError(f"logical operators need bool operands, got {a.dtype}")
    return Call(a.dtype, f"tir.{name}", (a, b))


def logical_and(a: Any, b: Any) -> PrimExpr:
    if _is_vector(a) or _is_vector(b):
        return _vector_bool_call("bitwise_and", a, b)
    a, b = _as_bool(a), _as_bool(b)
    if _is_const(a):
        return b if a.value else a
    if _is_const(b):
        return a if b.value else b
    return And(a, b)


def logical_or(a: Any, b: Any) -> PrimExpr:
    if _is_vector(a) or _is_vector(b):
        return _vector_bool_call("bitwise_or", a, b)
    a, b = _as_bool(a), _as_bool(b)
    if _is_const(a):
        return a if a.value else b
    if _is_const(b):
        return b if b.value else a
    return Or(a, b)


def logical_not(a: Any) -> PrimExpr:
    a = _as_bool(a)
    if _is_const(a):
        return const(not a.value, "bool")
    return Not(a)


def neg(a: Any) -> PrimExpr:
    a = convert(a)
    if _is_vector(a):  # TVM negates a vector by multiplying by a broadcast -1
        return Mul(a, const(-1, a.dtype))
    if _is_const(a):
        return const(-a.value, a.dtype)
    return Sub(const(0, a.dtype), a)


def if_then_else(cond: Any, t: Any, f: Any) -> PrimExpr:
    """``cond ? t : f`` — like TVM's ``tir.if_then_else`` (only the taken side matters)."""
    cond = _as_bool(cond)
    t, f = _promote(t, f)
    if _is_const(cond):
        return t if cond.value else f
    return Call(t.dtype, "tir.if_then_else", (cond, t, f))


def call_intrin(dtype: str, op: str, *args: Any) -> PrimExpr:
    """A call of the intrinsic ``op`` (``"tir.exp"``); string arguments become StringImms."""
    return Call(_void(dtype), op, tuple(_builtin_arg(a) for a in args))


def call_extern(dtype: str, func_name: str, *args: Any) -> PrimExpr:
    """A call of the external C function ``func_name`` (e.g. libm's ``"expf"``) returning ``dtype``."""
    if not isinstance(func_name, str):
        raise TypeError(f"call_extern: the function name must be a string, got {func_name!r}")
    return Call(_dt.check(_void(dtype)), "tir.call_extern",
                (StringImm(func_name),) + tuple(convert(a) for a in args))


def _pack_buffer(buf: Any) -> PrimExpr:
    """A buffer as a packed-call argument, as TVM packs it: ``tvm_stack_make_array(data, shape,
    strides, ndim, a zero of its dtype, elem_offset)``."""
    strides = call_builtin("tvm_stack_make_shape", *buf.strides) if buf.strides else IntImm("int32", 0)
    return call_builtin("tvm_stack_make_array", buf.data, call_builtin("tvm_stack_make_shape", *buf.shape),
                        strides, IntImm("int32", len(buf.shape)), const(0, buf.dtype), buf.elem_offset)


def call_packed(*args: Any, dtype: str = "int32") -> PrimExpr:
    """``call_packed("name", A, x, ...)``: call the function registered as ``name`` (a global
    function, e.g. ``tvm.register_global_func``) from inside a kernel.  A buffer argument reaches
    it as an NDArray over the buffer's memory, a number as a number; the call's value is what the
    function returns, as ``dtype`` (TVM's ``tvm_call_packed``; TVM 0.27 prints it ``T.call_packed``)."""
    if not args or not isinstance(args[0], (str, StringImm)):
        raise TypeError(f"call_packed: the first argument is the registered function's name (a string), "
                        f"got {args[0] if args else 'nothing'!r}")
    packed = tuple(_pack_buffer(a) if type(a).__name__ == "Buffer" else _builtin_arg(a) for a in args)
    return Call(_dt.check(_void(dtype)), "tir.tvm_call_packed", packed)


tvm_call_packed = call_packed


def call_llvm_pure_intrin(dtype: str, name: str, *args: Any) -> PrimExpr:
    """A call of the pure LLVM intrinsic ``name`` (``"llvm.fma"``) returning ``dtype``.

    The intrinsics minitvm knows are the ``llvm_intrin`` rows of the semantics table (so the
    interpreter, the folder and both LLVM emitters agree on them).  A vector form
    (``"float32x16"``, ``"llvm.fma.v16f32"``) is read and printed, as TVM's, but only the scalar
    form compiles: write it inside a ``T.vectorized`` loop, and the vector emitter calls
    ``llvm.fma.v16f32`` for 16 lanes.
    """
    if not isinstance(name, str):
        raise TypeError(f"call_llvm_pure_intrin: the intrinsic name must be a string, got {name!r}")
    dtype = _void(dtype)
    lanes, scalar = _dt.lanes(dtype), _dt.element(dtype)
    _dt.check(scalar)
    row = BY_LLVM_INTRIN.get(llvm_intrin_base(name))
    if row is None:
        raise ValueError(f"Unknown llvm intrinsic function {name} (minitvm knows "
                         f"{', '.join(sorted(BY_LLVM_INTRIN))})")
    args = tuple(convert(a) for a in args)
    if len(args) != row.arity:
        raise TypeError(f"call_llvm_pure_intrin({name!r}): takes {row.arity} operands, got {len(args)}")
    row.check(scalar, f"call_llvm_pure_intrin({name!r})")
    for a in args:
        if a.dtype != dtype:
            raise TypeError(f"call_llvm_pure_intrin({name!r}): operand {a} is {a.dtype}, the call returns {dtype}")
    if name != row.llvm_intrin:
        want = {"float16": "f16", "float32": "f32", "float64": "f64"}.get(scalar, f"i{_dt.bits(scalar)}")
        want = want if lanes == 1 else f"v{lanes}{want}"  # LLVM's suffix of a vector: .v4f32
        if name != f"{row.llvm_intrin}.{want}":
            raise NotImplementedError(f"call_llvm_pure_intrin: {name!r} on {dtype} operands: the type suffix "
                                      f"must be .{want}")
    return Call(dtype, LLVM_PURE_INTRIN, (StringImm(name),) + args)


def likely(cond: Any) -> PrimExpr:
    """``cond``, marked as probably true (a hint for branch layout; the value is unchanged)."""
    cond = _as_bool(cond)
    if _is_const(cond):
        return cond
    return Call("bool", "tir.likely", (cond,))


def all(*args: Any) -> PrimExpr:  # noqa: A001 - mirrors tvm.tir.all
    """The conjunction of one or more boolean expressions."""
    if not args:
        raise ValueError("tir.all needs at least one condition")
    result = _as_bool(args[0])
    for a in args[1:]:
        result = logical_and(result, a)
    return result


def any(*args: Any) -> PrimExpr:  # noqa: A001 - mirrors tvm.tir.any
    """The disjunction of one or more boolean expressions."""
    if not args:
        raise ValueError("tir.any needs at least one condition")
    result = _as_bool(args[0])
    for a in args[1:]:
        result = logical_or(result, a)
    return result


def ret(value: Any) -> PrimExpr:
    """``return value`` from a prim func (TVM's ``tir.ret``)."""
    value = convert(value)
    return Call(value.dtype, "tir.ret", (value,))


def _math_unary(row: Semantics):
    def build(x: Any) -> PrimExpr:
        x = convert(x)
        if not _dt.is_float(x.dtype):
            raise TypeError(f"T.{row.name} needs a float argument, got {x.dtype} ({x})")
        return Call(x.dtype, row.op, (x,))
    return build


def _math_binary(row: Semantics):
    def build(x: Any, y: Any) -> PrimExpr:
        x, y = _promote(x, y)
        if not _dt.is_float(x.dtype):
            raise TypeError(f"T.{row.name} needs float arguments, got {x.dtype}")
        return Call(x.dtype, row.op, (x, y))
    return build


def _math(name: str):
    """``tir.<name>``: a call of the math intrinsic whose meaning is the semantics row ``name``."""
    row = _ROW[name]
    build = (_math_unary if row.arity == 1 else _math_binary)(row)
    build.__name__ = build.__qualname__ = name
    operands = "a float expression" if row.arity == 1 else "two float expressions"
    build.__doc__ = f"``{name}`` of {operands} (the intrinsic ``{row.op}``): {row.doc}"
    return build


# every math row of the semantics table is a function here: tir.exp, tir.atan2 ... (T.<name> too)
_MATH_FNS = {_name: _math(_name) for _name in MATH_INTRINSICS}
globals().update(_MATH_FNS)
__all__ += list(MATH_INTRINSICS)


def ceildiv(a: Any, b: Any) -> PrimExpr:
    """``ceil(a / b)``: for integers ``(a + b - 1) // b`` (floor division), as TVM builds it."""
    a, b = _promote(a, b)
    if _dt.is_float(a.dtype):
        return _MATH_FNS["ceil"](div(a, b))
    return floordiv(add(a, sub(b, const(1, b.dtype))), b)


def isnan(x: Any) -> PrimExpr:
    """Whether a float expression is NaN (always false for integers)."""
    x = convert(x)
    if not _dt.is_float(x.dtype):
        return const(False, "bool")
    return Call("bool", "tir.isnan", (x,))


def popcount(x: Any) -> PrimExpr:
    """The number of set bits of an integer expression."""
    x = convert(x)
    if not _dt.is_int(x.dtype) or x.dtype == "bool":
        raise TypeError(f"T.popcount needs an integer argument, got {x.dtype}")
    return Call(x.dtype, "tir.popcount", (x,))


def abs(x: Any) -> PrimExpr:  # noqa: A001
    x = convert(x)
    if _dt.is_float(x.dtype):
        return Call(x.dtype, "tir.fabs", (x,))
    return Select(x >= 0, x, neg(x)) if not _dt.is_uint(x.dtype) else x


def max_value(dtype: str) -> PrimExpr:
    """The largest finite value of ``dtype`` (the identity of a min-reduction)."""
    import numpy as np
    dtype = str(dtype)
    if _dt.is_float(dtype):
        return FloatImm(dtype, float(np.finfo(dtype).max))
    if dtype == "bool":
        return IntImm("bool", 1)
    return IntImm(dtype, int(np.iinfo(dtype).max))


def min_value(dtype: str) -> PrimExpr:
    import numpy as np
    dtype = str(dtype)
    if _dt.is_float(dtype):
        return FloatImm(dtype, float(np.finfo(dtype).min))
    if dtype == "bool":
        return IntImm("bool", 0)
    return IntImm(dtype, int(np.iinfo(dtype).min))



# -- TVM's builtin intrinsics for GPUs and its C runtime --------------------------------------------
#
# TVMScript written for TVM (tensor-core kernels, lowered IR with access pointers, thread
# reductions ...) calls these.  minitvm parses, prints and transforms them like any call,
# but its code generators target the CPU and implement none of them: a build that meets one
# is refused (minitvm.target.codegen.check_buildable) with the intrinsic's name.


class Builtin:
    """One builtin intrinsic: ``T.<name>(params...)`` builds ``Call(dtype, "tir.<name>", args)``.

    ``dtype`` says how the call's dtype is found: a fixed dtype (``"void"`` for none), ``"first"``
    (the first argument is the dtype, and prints first, as ``T.ptx_mma("float32", ...)``),
    ``"last"`` (the last argument, printed last) or ``"arg:N"`` (the dtype of argument N).
    A parameter named ``*rest`` takes any number of trailing arguments.
    """

    __slots__ = ("name", "params", "dtype", "family")

    def __init__(self, name: str, params: str, dtype: str, family: str):
        self.name = name
        self.params = tuple(params.split()) if params else ()
        self.dtype = dtype
        self.family = family

    @property
    def op(self) -> str:
        return "tir." + self.name

    @property
    def variadic(self) -> bool:
        return bool(self.params) and self.params[-1].startswith("*")

    def __repr__(self) -> str:
        return f"Builtin({self.name}({', '.join(self.params)}) -> {self.dtype})"

    def __call__(self, *args: Any, dtype: Any = None) -> PrimExpr:
        return call_builtin(self.name, *args, dtype=dtype)


_WMMA = "a CUDA tensor-core (WMMA) intrinsic"
_PTX = "a CUDA PTX intrinsic"
_THREAD = "a GPU thread intrinsic"
_SIMD = "a Metal simdgroup intrinsic"
_RUNTIME = "a TVM C-runtime intrinsic"
_FIXED = "a fixed-point intrinsic TVM lowers with target-specific passes"
_SVE = "an ARM scalable-vector (SVE) intrinsic"
_FRAG_LOAD = "fragment m n k index buffer_ptr stride layout"
_MMA = "fragment_d index_d fragment_a index_a fragment_b index_b fragment_c index_c"
_SIMD_MEM = "d index ptr stride col row transpose_matrix"

#: every builtin TVM's ``T`` namespace offers beyond arithmetic, by name (``tir.<name>`` ops)
BUILTINS: dict[str, Builtin] = {b.name: b for b in (
    Builtin("tvm_load_matrix_sync", _FRAG_LOAD, "handle", _WMMA),
    Builtin("tvm_store_matrix_sync", _FRAG_LOAD, "handle", _WMMA),
    Builtin("tvm_mma_sync", _MMA, "handle", _WMMA),
    Builtin("tvm_bmma_sync", _MMA, "handle", _WMMA),
    Builtin("tvm_fill_fragment", "fragment m n k index value", "handle", _WMMA),
    Builtin("ptx_mma", "dtype shape A_layout B_layout A_dtype B_dtype C_dtype multiplicand_a a_index "
                       "multiplicand_b b_index accumulator c_index saturate *operator", "first", _PTX),
    Builtin("ptx_mma_sp", "dtype shape A_layout B_layout A_dtype B_dtype C_dtype multiplicand_a a_index "
                          "multiplicand_b b_index accumulator c_index metadata meta_index sparse_selector "
                          "saturate", "first", _PTX),
    Builtin("ptx_ldmatrix", "dtype trans num type local_ptr local_offset smem_ptr smem_offset", "first", _PTX),
    Builtin("ptx_cp_async", "dtype shared_ptr shared_offset global_ptr global_offset bytes", "first", _PTX),
    Builtin("ptx_cp_async_bulk", "dtype shared_ptr shared_offset global_ptr global_offset bytes barrier_id",
            "first", _PTX),
    Builtin("ptx_commit_group", "", "void", _PTX),
    Builtin("ptx_wait_group", "num", "void", _PTX),
    Builtin("ptx_cp_async_barrier", "barrier_id", "void", _PTX),
    Builtin("ptx_init_barrier_thread_count", "barrier_id thread_count", "void", _PTX),
    Builtin("ptx_arrive_barrier", "barrier_id", "void", _PTX),
    Builtin("ptx_arrive_barrier_expect_tx", "barrier_id byte_count", "void", _PTX),
    Builtin("ptx_wait_barrier", "barrier_id", "void", _PTX),
    Builtin("create_barriers", "barrier_count", "void", _PTX),
    Builtin("mma_store", "dtype m n dst_ptr src_ptr src_offset dst_stride", "first", _PTX),
    Builtin("mma_fill", "dtype local_size local_ptr offset", "first", _PTX),
    Builtin("tvm_thread_allreduce", "*freduce_args", "handle", _THREAD),
    Builtin("tvm_thread_invariant", "cond", "arg:0", _THREAD),
    Builtin("tvm_storage_sync", "storage_scope", "int32", _THREAD),
    Builtin("tvm_warp_shuffle", "mask value warp_id width warp_size", "arg:1", _THREAD),
    Builtin("tvm_warp_shuffle_up", "mask value offset width warp_size", "arg:1", _THREAD),
    Builtin("tvm_warp_shuffle_down", "mask value offset width warp_size", "arg:1", _THREAD),
    Builtin("tvm_warp_activemask", "", "uint32", _THREAD),
    Builtin("make_filled_simdgroup_matrix", "d index value col row", "handle", _SIMD),
    Builtin("simdgroup_load", _SIMD_MEM, "handle", _SIMD),
    Builtin("simdgroup_store", _SIMD_MEM, "handle", _SIMD),
    Builtin("simdgroup_multiply_accumulate", "d index_d a index_a b index_b c index_c", "handle", _SIMD),
    Builtin("tvm_access_ptr", "ptype data offset extent rw_mask", "handle", _RUNTIME),
    Builtin("type_annotation", "dtype", "first", _RUNTIME),
    Builtin("address_of", "buffer_load", "handle", _RUNTIME),
    Builtin("prefetch", "address rw locality cache_type", "int32", _RUNTIME),
    Builtin("tvm_stack_alloca", "dtype_str num", "handle", _RUNTIME),
    Builtin("tvm_stack_make_shape", "*shape", "handle", _RUNTIME),
    Builtin("tvm_stack_make_array", "data shape strides ndim arr_dtype elem_offset", "handle", _RUNTIME),
    Builtin("tvm_struct_get", "arr index field dtype", "last", _RUNTIME),
    Builtin("tvm_struct_set", "arr index field value", "int32", _RUNTIME),
    Builtin("tvm_tuple", "*value", "handle", _RUNTIME),
    Builtin("handle_add_byte_offset", "handle offset", "handle", _RUNTIME),
    Builtin("tvm_throw_last_error", "", "handle", _RUNTIME),
    Builtin("lookup_param", "param_name", "handle", _RUNTIME),
    Builtin("TVMBackendAllocWorkspace", "device_type device_id nbytes dtype_code_hint dtype_bits_hint",
            "handle", _RUNTIME),
    Builtin("TVMBackendFreeWorkspace", "device_type device_id ptr", "int32", _RUNTIME),
    Builtin("q_multiply_shift", "x y q s", "int32", _FIXED),
    Builtin("q_multiply_shift_per_axis", "x y ls rs q is_lshift_required is_rshift_required", "int32", _FIXED),
    Builtin("vscale", "", "int32", _SVE),
    # T.assume(cond): a fact the simplifier may use; TVM removes it (RemoveAssume) before codegen
    Builtin("assume", "cond", "int32", "an assumption for the simplifier (TVM's RemoveAssume drops it)"),
)}

#: ``tir.<name>`` op -> its Builtin
BUILTIN_OPS: dict[str, Builtin] = {b.op: b for b in BUILTINS.values()}
# tir.tvm_fill_fragment(...) & co, as in TVM's tvm.tir
globals().update(BUILTINS)
__all__ += list(BUILTINS)


def _builtin_arg(value: Any) -> PrimExpr:
    if isinstance(value, str):
        return StringImm(value)
    if type(value).__name__ == "Buffer":  # a whole buffer stands for its data pointer
        return value.data
    return convert(value)


def call_builtin(name: str, *args: Any, dtype: Any = None) -> PrimExpr:
    """``Call`` of the builtin ``name`` (see :data:`BUILTINS`), checking its arguments.

    ``dtype=`` (TVMScript lets every intrinsic take it) names the dtype of a ``"first"``/``"last"``
    builtin; for the others it must agree with the dtype the builtin returns.
    """
    spec = BUILTINS.get(name)
    if spec is None:
        raise ValueError(f"unknown builtin intrinsic {name!r}")
    args = list(args)
    if spec.dtype in ("first", "last") and dtype is not None:
        # TVM forwards dtype= into the dtype parameter's place
        args = [dtype, *args] if spec.dtype == "first" else [*args, dtype]
        dtype = None
    fixed = len(spec.params) - (1 if spec.variadic else 0)
    if len(args) < fixed or (len(args) > fixed and not spec.variadic):
        want = f"at least {fixed}" if spec.variadic else str(fixed)
        raise TypeError(f"T.{name}({', '.join(spec.params)}) takes {want} arguments, got {len(args)}")
    if spec.dtype in ("first", "last"):
        result = _dt.check(_void(args.pop(0 if spec.dtype == "first" else -1)))
        if name == "type_annotation":
            return Call(result, spec.op, ())
    if name == "address_of":
        load = args[0]
        if type(load).__name__ == "Buffer":
            load = load.vload([0] * load.ndim)
        if not isinstance(load, BufferLoad):
            raise TypeError(f"T.address_of takes a buffer element like A[i], got {load!r}")
        args = [load]
    converted = tuple(_builtin_arg(a) for a in args)
    if spec.dtype.startswith("arg:"):
        result = converted[int(spec.dtype[4:])].dtype
    elif spec.dtype not in ("first", "last"):
        result = spec.dtype
    if dtype is not None and _void(dtype) != result:
        raise TypeError(f"T.{name} returns {result}, not dtype={dtype!r}")
    return Call(result, spec.op, converted)


def _void(dtype: Any) -> str:
    """TVM spells the dtype of a call with no value ``""`` or ``"void"``."""
    dtype = str(dtype)
    return "void" if dtype == "" else dtype


#: access masks of ``Buffer.access_ptr`` (TVM's ``Buffer.READ`` / ``Buffer.WRITE``)
ACCESS_READ, ACCESS_WRITE = 1, 2


def access_ptr(buffer: Any, access_mask: Any, ptr_type: str = "handle", content_lanes: int = 1,
               offset: Any = 0, extent: Any = None) -> PrimExpr:
    """``tvm_access_ptr`` to ``buffer``'s data from element ``offset`` on (TVM's ``Buffer.access_ptr``).

    ``access_mask`` is ``"r"``, ``"w"``, ``"rw"`` or the bits ``ACCESS_READ | ACCESS_WRITE``; the
    extent defaults to the rest of the buffer after ``offset``.
    """
    if isinstance(access_mask, str):
        mask = 0
        for ch in access_mask:
            if ch not in "rw":
                raise ValueError(f"access_ptr: unknown access mask {access_mask!r}; use 'r', 'w' or 'rw'")
            mask |= ACCESS_READ if ch == "r" else ACCESS_WRITE
        access_mask = mask
    if not isinstance(access_mask, int) or isinstance(access_mask, bool):
        raise TypeError(f"access_ptr: the access mask is 'r', 'w', 'rw' or an int, got {access_mask!r}")
    if content_lanes != 1:
        raise NotImplementedError("access_ptr(content_lanes=...) is not supported by minitvm: TIR has no "
                                  "vector dtypes")
    offset = convert(offset)
    if buffer.ndim == 0:
        whole = const(1, "int32")
    elif len(buffer.strides) == buffer.ndim:
        whole = mul(buffer.strides[0], buffer.shape[0])
    else:
        whole = const(1, "int32")
        for dim in buffer.shape:
            whole = mul(whole, dim)
    size = sub(whole, offset) if extent is None else convert(extent)
    return Call(_dt.check(str(ptr_type)), "tir.tvm_access_ptr",
                (Call(buffer.dtype, "tir.type_annotation", ()), buffer.data, add(buffer.elem_offset, offset),
                 size, const(access_mask, "int32")))
