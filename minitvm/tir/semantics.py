"""The meaning of every TIR operation, written once: one :class:`Semantics` row per node or
intrinsic.

A row holds, for one operation,

* ``numpy`` -- the meaning itself, as a function of scalars (Python numbers or numpy scalars
  of the operand dtype, which wrap like the machine): the reference interpreter calls it,
  and the constant folder (:meth:`Semantics.fold`) evaluates it on constants;
* ``llvm`` -- its LLVM IR, through the small :class:`LLVMContext` interface that both the
  scalar emitter (``target/codegen/llvm_emit.py``) and the vector emitter
  (``target/codegen/vector.py``) provide; the same instructions serve scalars and vectors
  (``vector`` says for which dtypes vectors are allowed);
* ``bound`` -- the interval of integer results given the operands' intervals
  (:mod:`minitvm.arith`'s bound analysis);
* ``kinds`` -- the operand kinds it accepts (``int`` signed, ``uint``, ``float``, ``bool``).
* ``llvm_intrin`` -- for an LLVM intrinsic written ``T.call_llvm_pure_intrin(dtype, "llvm.fma",
  ...)`` (TVM's way to reach an instruction), its name: the call's row is found by it;
* ``dtypes`` -- when only some dtypes of its kinds make sense (``vpdpbusd`` reads an int32 as
  four bytes), those dtypes.

Adding an operator is adding a row: the folder, the interpreter, both LLVM emitters, the bound
analysis and the differential fuzzer (``minitvm.testing.fuzz.semantics_cases``) pick it up.

The edge cases have one meaning each, decided here (see each row's ``doc``):

* integer division and modulo by zero: an error (TVM's folder refuses a constant zero divisor
  at construction; at run time the compiled code returns an error instead of trapping);
* ``Div``/``Mod`` truncate, ``FloorDiv``/``FloorMod`` round down; ``INT_MIN / -1`` wraps;
* ``min``/``max`` of floats propagate NaN and order ``-0.0 < +0.0`` (IEEE 754-2019 minimum):
  ``min(-0.0, 0.0)`` and ``min(0.0, -0.0)`` are both -0.0 (TVM's ``select(a < b, a, b)`` gives
  the second operand for either, and drops a NaN in the first);
* float -> int casts saturate, NaN -> 0 (TVM emits ``fptosi``, whose out-of-range result is
  undefined: x86 gives INT_MIN);
* ``exp`` & co. underflow gradually: a result below the normal range is subnormal in the folder,
  the interpreter and LLVM code alike (no flush to zero; numpy's and the C library's meaning);
* bool arithmetic: ``+`` is or, ``*`` is and (numpy's and torch's meaning), ``-``, ``/`` and
  ``%`` of bools are refused;
* shifts by an amount outside ``[0, bits)``: all bits shifted out (numpy's meaning);
  a constant such amount is refused at construction, as TVM does.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Protocol

import numpy as np

from ..error import TVMError
from ..ir import dtype as _dt
from . import expr as _e

__all__ = ["Semantics", "ROWS", "BY_NODE", "BY_OP", "BY_LLVM_INTRIN", "LLVM_PURE_INTRIN", "llvm_intrin_base",
           "row_of", "IntegerDivisionByZero", "LLVMContext",
           "kind_of", "cast_value", "emit_cast", "cast_bound", "dtype_range", "Interval", "node_operands",
           "llvm_overload", "FLOAT_ONLY", "BOOL_ONLY", "VNNI_FEATURE", "MATH_INTRINSICS", "FAST_FLOAT32_MATH",
           "int_array_meaning"]

Interval = tuple[int, int]
#: the bound of an unbounded value (as TVM's ConstIntBound reports it)
POS_INF, NEG_INF = 2**63 - 1, -(2**63 - 1)


class IntegerDivisionByZero(TVMError, ZeroDivisionError):
    """Integer division or modulo by zero (a ``TVMError``, as TVM's "Divide by zero")."""


def kind_of(dtype: str) -> str:
    """``"bool"``, ``"uint"``, ``"int"`` (signed) or ``"float"``."""
    known = _KINDS.get(dtype)
    if known is None:
        known = _KINDS[dtype] = _kind_of(str(dtype))
    return known


#: kind by dtype, filled as asked: every operator an expression is built with asks (a few dtypes)
_KINDS: dict[str, str] = {}


def _kind_of(dtype: str) -> str:
    if dtype == "bool":
        return "bool"
    if _dt.is_float(dtype):
        return "float"
    return "uint" if _dt.is_uint(dtype) else "int"


def dtype_range(dtype: str) -> Interval:
    """All values a scalar of ``dtype`` can hold (floats: unbounded)."""
    dtype = str(dtype)
    if dtype == "bool":
        return (0, 1)
    if _dt.is_uint(dtype):
        return (0, (1 << _dt.bits(dtype)) - 1)
    if _dt.is_int(dtype):
        half = 1 << (_dt.bits(dtype) - 1)
        return (-half, half - 1)
    return (NEG_INF, POS_INF)


class LLVMContext(Protocol):
    """What a row's ``llvm`` function may use; the operands may be scalars or vectors."""

    b: Any  # llvmlite's IRBuilder

    def intrinsic(self, name: str, args: list) -> Any:
        """An overloaded float intrinsic (``llvm.floor``) on the operands' type."""

    def libm(self, name: str, args: list, dtype: str) -> Any:
        """A C math library call (scalars only)."""

    def fast_f32(self, op: str, x: Any) -> Any:
        """The vectorizable float32 form of ``tir.exp`` & co, or None."""

    def fail_if(self, bad: Any, message: str) -> None:
        """Return an error from the function when ``bad`` (an i1) is true (scalars only)."""

    def target_intrinsic(self, name: str, feature: str, args: list) -> Any:
        """A call of the CPU-specific intrinsic ``name`` (its exact LLVM name, returning the
        first operand's type) when the target has ``feature``; else None (emit plain IR)."""


@dataclass(frozen=True)
class Semantics:
    """One TIR operation's meaning (see the module docstring for the fields)."""

    name: str
    kinds: frozenset[str]
    numpy: Callable[..., Any]  # (dtype, *operands) -> result
    llvm: Callable[..., Any]  # (ctx, dtype, *operands) -> result
    bound: Callable[..., Interval] | None = None  # (dtype, *operand intervals) -> interval
    node: type | None = None
    op: str | None = None
    arity: int = 2
    result: str | None = None  # the result dtype when it is not the operands' ("bool")
    llvm_intrin: str | None = None  # reached as T.call_llvm_pure_intrin(dtype, llvm_intrin, ...)
    vector: Callable[[str], bool] = lambda dtype: True
    doc: str = ""
    dtypes: frozenset[str] | None = None  # only these dtypes of its kinds (None: all of them)

    def takes(self, dtype: str) -> bool:
        """Whether this operation is defined on ``dtype`` operands."""
        return kind_of(dtype) in self.kinds and (self.dtypes is None or str(dtype) in self.dtypes)

    def result_dtype(self, dtype: str) -> str:
        return self.result or dtype

    def check(self, dtype: str, where: str = "") -> None:
        """Refuse operands of a kind this operation does not take (TypeError naming both)."""
        if not self.takes(dtype):
            accepted = ", ".join(sorted(self.dtypes or self.kinds))
            raise TypeError(f"{where or self.name}: {self.name} does not take {dtype} operands "
                            f"(it takes {accepted})")

    def fold(self, dtype: str, *values: Any) -> Any:
        """The result on constants: a Python int/bool, or a float computed in ``dtype``'s own
        precision (float32 math rounds to float32 after every step)."""
        if _dt.is_float(dtype):
            scalar = np.dtype(dtype).type
            with np.errstate(all="ignore"):
                out = self.numpy(dtype, *(scalar(v) for v in values))
            return bool(out) if self.result == "bool" else float(out)
        out = self.numpy(dtype, *(int(v) for v in values))
        if self.result == "bool" or dtype == "bool":
            return bool(out)
        return _e._wrap_int(dtype, int(out))


# -- shared pieces -----------------------------------------------------------------------------


def _const(like: Any, value: Any) -> Any:
    """An LLVM constant of ``like``'s type (splat over the lanes of a vector)."""
    ty = like.type
    count = getattr(ty, "count", None)
    return ty([value] * count) if count is not None else ty(value)


def _width(x: Any) -> int:
    ty = x.type
    return getattr(ty, "element", ty).width


def _signed(dtype: str) -> bool:
    return kind_of(dtype) == "int"


def _icmp(ctx: LLVMContext, dtype: str, op: str, x: Any, y: Any) -> Any:
    return (ctx.b.icmp_signed if _signed(dtype) else ctx.b.icmp_unsigned)(op, x, y)


def _corners(op: Callable[[int, int], int], a: Interval, b: Interval) -> Interval:
    values = [op(x, y) for x in a for y in b]
    return (min(values), max(values))


_NUMBERS = frozenset({"int", "uint", "float"})
_INTS = frozenset({"int", "uint"})
_ALL = frozenset({"int", "uint", "float", "bool"})
#: the kinds of rows that take only floats (math) or only bools (logic)
FLOAT_ONLY = _FLOATS = frozenset({"float"})
BOOL_ONLY = _BOOL = frozenset({"bool"})


def node_operands(e: Any) -> tuple:
    """The operands of an expression node that has a row (a Call's are its ``args``, after the
    intrinsic's name for ``T.call_llvm_pure_intrin``)."""
    if isinstance(e, _e.Call):
        return e.args[1:] if e.op == LLVM_PURE_INTRIN else e.args
    if isinstance(e, _e.Select):
        return (e.condition, e.true_value, e.false_value)
    if isinstance(e, _e.Not):
        return (e.a,)
    return (e.a, e.b)


# -- arithmetic --------------------------------------------------------------------------------


def _add_np(dtype: str, a: Any, b: Any) -> Any:
    return (a or b) if dtype == "bool" else a + b


def _add_llvm(ctx: LLVMContext, dtype: str, a: Any, b: Any) -> Any:
    k = kind_of(dtype)
    if k == "float":
        return ctx.b.fadd(a, b, flags=("contract",))
    return ctx.b.or_(a, b) if k == "bool" else ctx.b.add(a, b)


def _mul_np(dtype: str, a: Any, b: Any) -> Any:
    return (a and b) if dtype == "bool" else a * b


def _mul_llvm(ctx: LLVMContext, dtype: str, a: Any, b: Any) -> Any:
    k = kind_of(dtype)
    if k == "float":
        return ctx.b.fmul(a, b, flags=("contract",))
    return ctx.b.and_(a, b) if k == "bool" else ctx.b.mul(a, b)


def _sub_llvm(ctx: LLVMContext, dtype: str, a: Any, b: Any) -> Any:
    return ctx.b.fsub(a, b) if kind_of(dtype) == "float" else ctx.b.sub(a, b)


# -- division ----------------------------------------------------------------------------------
#
# Integer x / 0 is undefined in C and traps on x86; TVM refuses a constant zero divisor when the
# expression is built ("Divide by zero") and leaves a run-time zero undefined.  minitvm refuses the
# constant the same way (tir.op) and makes the run-time case an error everywhere: the interpreter
# raises IntegerDivisionByZero, compiled code returns an error code the runtime raises as a
# RuntimeError -- never a silent 0 or a crash.  INT_MIN / -1 wraps to INT_MIN (remainder 0),
# as numpy's int arithmetic does.

_ZERO_MESSAGE = "integer division by zero"


def _nonzero(b: Any, name: str) -> None:
    if b == 0:
        raise IntegerDivisionByZero(f"{_ZERO_MESSAGE} ({name})")


def _truncdiv_int(a: Any, b: Any) -> Any:
    """C's quotient (rounds toward zero), exact on Python ints and wrapping on numpy scalars."""
    q = a // b
    return q + 1 if q < 0 and q * b != a else q


def _int_or_float(int_fn: Callable, float_fn: Callable, name: str) -> Callable:
    def meaning(dtype: str, a: Any, b: Any) -> Any:
        if _dt.is_float(dtype):
            return float_fn(a, b)
        _nonzero(b, name)
        with np.errstate(over="ignore"):
            return int_fn(a, b)
    return meaning


def _float_floordiv(a: Any, b: Any) -> Any:
    return np.floor(a / b)


def _float_floormod(a: Any, b: Any) -> Any:
    return a - np.floor(a / b) * b


def _divisor(ctx: LLVMContext, dtype: str, a: Any, b: Any, name: str) -> Any:
    """``b``, checked: zero fails the function; ``INT_MIN / -1`` (which traps) divides by 1."""
    constant = getattr(b, "constant", None)
    if isinstance(constant, int) and constant not in (0, -1):
        return b
    bld = ctx.b
    ctx.fail_if(bld.icmp_unsigned("==", b, _const(b, 0)), f"{_ZERO_MESSAGE} ({name})")
    if not _signed(dtype):
        return b
    int_min = _const(a, -(1 << (_width(a) - 1)))
    overflow = bld.and_(bld.icmp_signed("==", b, _const(b, -1)), bld.icmp_signed("==", a, int_min))
    return bld.select(overflow, _const(b, 1), b)


def _int_divmod_llvm(ctx: LLVMContext, dtype: str, a: Any, b: Any, want: str) -> Any:
    bld = ctx.b
    b = _divisor(ctx, dtype, a, b, want)
    if not _signed(dtype):
        return bld.udiv(a, b) if want in ("div", "floordiv") else bld.urem(a, b)
    q, rem = bld.sdiv(a, b), bld.srem(a, b)
    if want in ("div", "mod"):
        return q if want == "div" else rem
    # floor: adjust when the remainder is nonzero and its sign differs from the divisor's
    zero = _const(a, 0)
    adjust = bld.and_(bld.icmp_signed("!=", rem, zero),
                      bld.icmp_signed("!=", bld.icmp_signed("<", rem, zero), bld.icmp_signed("<", b, zero)))
    if want == "floordiv":
        return bld.select(adjust, bld.sub(q, _const(a, 1)), q)
    return bld.select(adjust, bld.add(rem, b), rem)


def _div_llvm(want: str) -> Callable:
    def emit(ctx: LLVMContext, dtype: str, a: Any, b: Any) -> Any:
        if kind_of(dtype) != "float":
            return _int_divmod_llvm(ctx, dtype, a, b, want)
        bld = ctx.b
        if want == "div":
            return bld.fdiv(a, b)
        if want == "mod":
            return bld.frem(a, b)
        q = ctx.intrinsic("llvm.floor", [bld.fdiv(a, b)])
        return q if want == "floordiv" else bld.fsub(a, bld.fmul(q, b))
    return emit


def _div_bound(divide: Callable[[int, int], int]) -> Callable[..., Interval]:
    def bound(dtype: str, a: Interval, b: Interval) -> Interval:
        if b[0] > 0 or b[1] < 0:
            return _corners(divide, a, b)
        # the divisor may be zero or change sign: |a / b| <= |a| for any nonzero integer b
        largest = max(abs(a[0]), abs(a[1]))
        return (-largest, largest)
    return bound


def _floormod_bound(dtype: str, a: Interval, b: Interval) -> Interval:
    if b[0] > 0:
        if b[0] == b[1]:
            c = b[0]
            # all of a inside one period [k*c, k*c + c): the result is a shifted copy of a
            if a[0] // c == a[1] // c:
                shift = (a[0] // c) * c
                return (a[0] - shift, a[1] - shift)
        return (0, b[1] - 1)
    largest = max(abs(b[0]), abs(b[1]))
    return (-(largest - 1), largest - 1) if largest > 0 else (0, 0)


def _truncmod_bound(dtype: str, a: Interval, b: Interval) -> Interval:
    largest = max(abs(b[0]), abs(b[1])) - 1
    if largest < 0:
        return (0, 0)
    if a[0] >= 0:
        return (0, min(a[1], largest))
    if a[1] <= 0:
        return (max(a[0], -largest), 0)
    return (-largest, largest)


def _trunc_div_exact(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y >= 0) else -q


# -- min and max -------------------------------------------------------------------------------


def _min_np(dtype: str, a: Any, b: Any) -> Any:
    """IEEE 754-2019 minimum for floats: NaN wins, and -0.0 < +0.0."""
    if kind_of(dtype) != "float":
        return a if a <= b else b
    if a != a or b != b:
        return a if a != a else b
    if a == b:
        return a if np.signbit(a) else b
    return a if a < b else b


def _max_np(dtype: str, a: Any, b: Any) -> Any:
    if kind_of(dtype) != "float":
        return a if a >= b else b
    if a != a or b != b:
        return a if a != a else b
    if a == b:
        return b if np.signbit(a) else a
    return a if a > b else b


def _minmax_llvm(is_min: bool) -> Callable:
    def emit(ctx: LLVMContext, dtype: str, a: Any, b: Any) -> Any:
        if kind_of(dtype) == "float":
            return ctx.intrinsic("llvm.minimum" if is_min else "llvm.maximum", [a, b])
        return ctx.b.select(_icmp(ctx, dtype, "<" if is_min else ">", a, b), a, b)
    return emit


def _float32_or_64(dtype: str) -> bool:
    return kind_of(dtype) != "float" or dtype in ("float32", "float64")


# -- comparisons and logic ---------------------------------------------------------------------

_COMPARE = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
            "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def _compare_row(name: str, node: type, symbol: str) -> Semantics:
    py = _COMPARE[symbol]

    def meaning(dtype: str, a: Any, b: Any) -> bool:
        return bool(py(a, b))

    def emit(ctx: LLVMContext, dtype: str, a: Any, b: Any) -> Any:
        if kind_of(dtype) == "float":  # NaN compares false, except NaN != x
            return ctx.b.fcmp_unordered(symbol, a, b) if symbol == "!=" else ctx.b.fcmp_ordered(symbol, a, b)
        return _icmp(ctx, dtype, symbol, a, b)

    return Semantics(name, _ALL, meaning, emit, _bool_bound, node=node, result="bool",
                     doc=f"``a {symbol} b``: ordered for floats (NaN compares false) except ``!=``; "
                         "bools and unsigned integers compare unsigned.")


def _bool_bound(dtype: str, *intervals: Interval) -> Interval:
    return (0, 1)


# -- bitwise operations and shifts -------------------------------------------------------------
#
# A shift by an amount outside [0, bits) shifts every bit out: << gives 0, >> gives 0 or, for a
# negative signed value, -1 (numpy's meaning; C and LLVM leave it undefined).  TVM refuses such a
# constant amount when the shift is built ("Shift amount must be non-negative and less than ...");
# tir.op does too.


def _shift_left_np(dtype: str, a: Any, n: Any) -> Any:
    if not 0 <= n < _dt.bits(dtype):
        return type(a)(0)
    with np.errstate(over="ignore"):
        return a << type(a)(n)


def _shift_right_np(dtype: str, a: Any, n: Any) -> Any:
    if not 0 <= n < _dt.bits(dtype):
        return type(a)(-1 if a < 0 else 0)
    return a >> type(a)(n)


def _shift_llvm(left: bool) -> Callable:
    def emit(ctx: LLVMContext, dtype: str, a: Any, n: Any) -> Any:
        bld = ctx.b
        width = _width(a)
        in_range = bld.icmp_unsigned("<", n, _const(n, width))  # negative amounts are huge unsigned
        safe = bld.select(in_range, n, _const(n, 0))
        if left:
            return bld.select(in_range, bld.shl(a, safe), _const(a, 0))
        if not _signed(dtype):
            return bld.select(in_range, bld.lshr(a, safe), _const(a, 0))
        return bld.ashr(a, bld.select(in_range, n, _const(n, width - 1)))
    return emit


def _bitwise_row(name: str, np_fn: Callable, method: str) -> Semantics:
    return Semantics(name, _INTS | _BOOL, lambda dtype, a, b: np_fn(a, b),
                     lambda ctx, dtype, a, b: getattr(ctx.b, method)(a, b),
                     lambda dtype, a, b: dtype_range(dtype), op=f"tir.{name}",
                     doc=f"``a {name.split('_')[1]} b`` bit by bit.")


def _bitwise_not_np(dtype: str, a: Any) -> Any:
    return (not a) if dtype == "bool" else ~a


# -- math intrinsics ---------------------------------------------------------------------------

#: float intrinsics with an LLVM intrinsic of the same meaning (vectorizable)
_LLVM_INTRINSIC = {"exp": "llvm.exp", "exp2": "llvm.exp2", "log": "llvm.log", "log2": "llvm.log2",
                   "sqrt": "llvm.sqrt", "fabs": "llvm.fabs", "floor": "llvm.floor", "ceil": "llvm.ceil",
                   "round": "llvm.roundeven", "nearbyint": "llvm.roundeven", "trunc": "llvm.trunc",
                   "sin": "llvm.sin", "cos": "llvm.cos", "tanh": "llvm.tanh", "pow": "llvm.pow"}
#: the math intrinsics of two operands (the others take one)
_BINARY_MATH = ("pow", "atan2", "nextafter", "hypot", "copysign", "fmod")
#: intrinsics LLVM's vector emitter can take (llvm.sin & co become scalar calls; the C library's
#: functions are scalar)
_VECTOR_INTRINSICS = ("exp", "exp2", "log", "log2", "sqrt", "fabs", "floor", "ceil", "round", "nearbyint",
                      "trunc")


def _rsqrt(x: Any) -> Any:
    return x.dtype.type(1) / np.sqrt(x)


def _sigmoid(x: Any) -> Any:
    one = x.dtype.type(1)
    return one / (one + np.exp(-x))


def _erf(x: Any) -> Any:
    return x.dtype.type(math.erf(float(x)))


def _exp10(x: Any) -> Any:
    return np.power(x.dtype.type(10), x)


_NUMPY_MATH: dict[str, Callable[..., Any]] = {
    "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sqrt": np.sqrt, "rsqrt": _rsqrt,
    "tanh": np.tanh, "sigmoid": _sigmoid, "erf": _erf, "fabs": np.abs, "pow": np.power, "floor": np.floor,
    "ceil": np.ceil, "trunc": np.trunc, "round": np.rint, "nearbyint": np.rint,  # half to even, as C
    "sin": np.sin, "cos": np.cos, "exp10": _exp10, "log1p": np.log1p, "log10": np.log10, "tan": np.tan,
    "acos": np.arccos, "acosh": np.arccosh, "asin": np.arcsin, "asinh": np.arcsinh, "atan": np.arctan,
    "atanh": np.arctanh, "sinh": np.sinh, "cosh": np.cosh, "atan2": np.arctan2, "nextafter": np.nextafter,
    "hypot": np.hypot, "copysign": np.copysign, "fmod": np.fmod,
}


def _math_llvm(name: str) -> Callable:
    op = f"tir.{name}"

    def emit(ctx: LLVMContext, dtype: str, *args: Any) -> Any:
        if dtype == "float32":
            fast = ctx.fast_f32(op, args[0])
            if fast is not None:
                return fast
        if name in _LLVM_INTRINSIC:
            return ctx.intrinsic(_LLVM_INTRINSIC[name], list(args))
        if name == "rsqrt":
            return ctx.b.fdiv(_const(args[0], 1.0), ctx.intrinsic("llvm.sqrt", list(args)))
        if name == "sigmoid":
            one = _const(args[0], 1.0)
            return ctx.b.fdiv(one, ctx.b.fadd(one, ctx.intrinsic("llvm.exp", [ctx.b.fneg(args[0])])))
        return ctx.libm(name, list(args), dtype)
    return emit


#: math rows LLVM code computes in float32 with a polynomial of plain arithmetic, so that they
#: vectorize (``target/codegen/fastmath.py`` implements each; its table is made from this one)
FAST_FLOAT32_MATH = ("exp", "tanh", "sigmoid", "erf")


def _math_vector(name: str) -> Callable[[str], bool]:
    fast = name in FAST_FLOAT32_MATH

    def ok(dtype: str) -> bool:
        return (dtype == "float32" and fast) or (name in _VECTOR_INTRINSICS and dtype in ("float32", "float64"))
    return ok


#: what a math row's doc adds to "numpy's <name>"
_MATH_NOTES = {
    "exp": " Results below the normal range are subnormal (gradual underflow), never flushed to zero: "
           "LLVM's vectorizable float32 exp returns 0 only below ln(2^-150), where numpy does.",
}


def _math_row(name: str) -> Semantics:
    np_fn = _NUMPY_MATH[name]
    arity = 2 if name in _BINARY_MATH else 1
    return Semantics(name, _FLOATS, lambda dtype, *args: np_fn(*args), _math_llvm(name), None,
                     op=f"tir.{name}", arity=arity, vector=_math_vector(name),
                     doc=f"numpy's {getattr(np_fn, '__name__', name)}; float16 is computed in float32."
                         + _MATH_NOTES.get(name, ""))


def _isnan_llvm(ctx: LLVMContext, dtype: str, x: Any) -> Any:
    return ctx.b.fcmp_unordered("uno", x, x)


def _popcount_np(dtype: str, x: Any) -> Any:
    return bin(int(x) & ((1 << _dt.bits(dtype)) - 1)).count("1")


def _popcount_llvm(ctx: LLVMContext, dtype: str, x: Any) -> Any:
    return ctx.intrinsic("llvm.ctpop", [x])


# -- LLVM intrinsics (T.call_llvm_pure_intrin) ------------------------------------------------------

#: the op of ``T.call_llvm_pure_intrin(dtype, "llvm.fma", a, b, c)``: its first argument names the
#: LLVM intrinsic (a StringImm; TVM keeps LLVM's numeric id there, minitvm the name)
LLVM_PURE_INTRIN = "tir.call_llvm_pure_intrin"


def _fma_np(dtype: str, a: Any, b: Any, c: Any) -> Any:
    """``a * b + c`` rounded once (IEEE 754 fusedMultiplyAdd): the exact value, then one rounding."""
    scalar = np.dtype(dtype).type
    if not (np.isfinite(a) and np.isfinite(b)):
        with np.errstate(all="ignore"):
            return scalar(np.float64(a) * np.float64(b) + np.float64(c))  # inf/NaN: no rounding question
    if not np.isfinite(c):
        return scalar(c)  # the exact product is finite, so c (inf or NaN) decides
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    if exact == 0:  # the sign of an exact zero: the addends' common sign, else +0 (round to nearest)
        product_negative = (math.copysign(1.0, float(a)) * math.copysign(1.0, float(b))) < 0
        # (c == 0 here means the product is an exact zero too)
        both_negative = c == 0 and product_negative and math.copysign(1.0, float(c)) < 0
        return scalar(-0.0) if both_negative else scalar(0.0)
    try:
        near = float(exact)  # correctly rounded to float64
    except OverflowError:
        return scalar(math.copysign(math.inf, exact))
    with np.errstate(all="ignore"):
        first = scalar(near)
    if scalar is np.float64 or not np.isfinite(first):
        return first
    # float64 -> narrower rounds a second time: pick the nearest of the neighbours (ties to even)
    candidates = [first, np.nextafter(first, scalar(np.inf)), np.nextafter(first, scalar(-np.inf))]
    candidates = [x for x in candidates if np.isfinite(x)]
    bits = "uint32" if scalar is np.float32 else "uint16"

    def key(x: Any) -> tuple:
        return (abs(Fraction(float(x)) - exact), int(np.array(x).view(bits)) & 1)

    return min(candidates, key=key)


def _fma_llvm(ctx: LLVMContext, dtype: str, a: Any, b: Any, c: Any) -> Any:
    return ctx.intrinsic("llvm.fma", [a, b, c])


#: LLVM's name of the CPU feature (AVX-512 VNNI) that vpdpbusd needs
VNNI_FEATURE = "avx512vnni"
#: the extreme sums of four u8 x s8 products (255 * -128 * 4, 255 * 127 * 4)
_DOT4_RANGE = (4 * 255 * -128, 4 * 255 * 127)


def _vpdpbusd_np(dtype: str, acc: Any, a: Any, b: Any) -> Any:
    """``acc`` plus the dot product of ``a``'s four bytes read unsigned and ``b``'s read signed
    (byte 0 the lowest), wrapping to int32 -- one lane of x86's ``vpdpbusd``."""
    total = int(acc)
    for t in range(4):
        ua = (int(a) >> (8 * t)) & 0xFF
        sb = (int(b) >> (8 * t)) & 0xFF
        total += ua * (sb - 256 if sb >= 128 else sb)
    return np.int32(_e._wrap_int(dtype, total))


def _vpdpbusd_llvm(ctx: LLVMContext, dtype: str, acc: Any, a: Any, b: Any) -> Any:
    if getattr(acc.type, "count", None) == 16:  # one zmm register: the instruction itself
        out = ctx.target_intrinsic("llvm.x86.avx512.vpdpbusd.512", VNNI_FEATURE, [acc, a, b])
        if out is not None:
            return out
    bld = ctx.b
    for t in range(4):  # the same sum byte by byte, correct for any width and CPU
        ua = bld.and_(bld.lshr(a, _const(a, 8 * t)), _const(a, 0xFF))
        sb = bld.ashr(bld.shl(b, _const(b, 24 - 8 * t)), _const(b, 24))
        acc = bld.add(acc, bld.mul(ua, sb))
    return acc


def _vpdpbusd_bound(dtype: str, acc: Interval, a: Interval, b: Interval) -> Interval:
    lo, hi = acc[0] + _DOT4_RANGE[0], acc[1] + _DOT4_RANGE[1]
    full = dtype_range(dtype)
    return (lo, hi) if full[0] <= lo and hi <= full[1] else full  # it may wrap: anything


# -- casts --------------------------------------------------------------------------------------
#
# Float -> int is undefined in C (and poison in LLVM) for values outside the integer type;
# minitvm saturates (NaN -> 0), as LLVM's fptosi.sat, Rust's `as` and Java do: a cast never
# produces a value that depends on the machine (TVM emits plain fptosi: INT_MIN on x86).
# Float -> narrower float rounds once, to nearest even (float64 -> float16 directly, never
# through float32).  int -> int wraps, anything -> bool is "nonzero"
# (NaN is nonzero), bool -> number is 0 or 1.


def cast_value(value: Any, src: str, dst: str) -> Any:
    """``value`` (a Python or numpy scalar of ``src``) as a numpy scalar of ``dst``."""
    to = np.dtype("bool" if dst == "bool" else dst).type
    if dst == "bool":
        return to(value != 0)
    if _dt.is_float(src) and not _dt.is_float(dst):
        if value != value:
            return to(0)
        lo, hi = dtype_range(dst)
        return to(lo if value <= lo else hi if value >= hi else int(value))
    if _dt.is_float(dst):
        with np.errstate(over="ignore"):
            return to(value)
    return to(_e._wrap_int(dst, int(value)))


def emit_cast(b: Any, value: Any, src: str, dst: str, to: Any, declare: Callable) -> Any:
    """``value`` converted from ``src`` to ``dst`` (LLVM type ``to``, a scalar or vector type);
    ``declare(name, ret, args)`` declares the saturating conversion intrinsic."""
    if src == dst:
        return value
    if dst == "bool":
        if _dt.is_float(src):
            return b.fcmp_unordered("!=", value, _const(value, 0.0))
        return b.icmp_unsigned("!=", value, _const(value, 0))
    if _dt.is_float(dst):
        if _dt.is_float(src):
            return b.fpext(value, to) if _dt.bits(src) < _dt.bits(dst) else b.fptrunc(value, to)
        return b.uitofp(value, to) if kind_of(src) in ("uint", "bool") else b.sitofp(value, to)
    if _dt.is_float(src):
        name = "llvm.fptoui.sat" if _dt.is_uint(dst) else "llvm.fptosi.sat"
        return b.call(declare(f"{name}.{llvm_overload(to)}.{llvm_overload(value.type)}", to, [value.type]), [value])
    sbits, dbits = _width(value), getattr(to, "element", to).width
    if sbits == dbits:
        return value
    if sbits > dbits:
        return b.trunc(value, to)
    return b.zext(value, to) if kind_of(src) in ("uint", "bool") else b.sext(value, to)


def llvm_overload(ty: Any) -> str:
    """LLVM's name suffix of an overloaded intrinsic's type (``i32``, ``f32``, ``v8f32``)."""
    count = getattr(ty, "count", None)
    element = getattr(ty, "element", ty)
    text = {"float": "f32", "double": "f64", "half": "f16"}.get(str(element), str(element))
    return f"v{count}{text}" if count is not None else text


def cast_bound(src: str, dst: str, value: Interval) -> Interval:
    """The interval of a cast: the value's when it fits ``dst``, else all of ``dst``."""
    target = dtype_range(dst)
    if not _dt.is_float(src) and target[0] <= value[0] and value[1] <= target[1]:
        return value
    return target


# -- the table ---------------------------------------------------------------------------------


def _select_llvm(ctx: LLVMContext, dtype: str, c: Any, t: Any, f: Any) -> Any:
    return ctx.b.select(c, t, f)


def _rows() -> list[Semantics]:
    """Every row (a function so that the table reads top to bottom without module clutter)."""
    no_bool = _NUMBERS
    rows = [
        Semantics("add", _ALL, _add_np, _add_llvm, lambda d, a, b: (a[0] + b[0], a[1] + b[1]), node=_e.Add,
                  doc="``a + b``; integers wrap; for bools it is ``a or b``."),
        Semantics("sub", no_bool, lambda d, a, b: a - b, _sub_llvm, lambda d, a, b: (a[0] - b[1], a[1] - b[0]),
                  node=_e.Sub, doc="``a - b``; integers wrap; refused for bools (as numpy and torch)."),
        Semantics("mul", _ALL, _mul_np, _mul_llvm, lambda d, a, b: _corners(lambda x, y: x * y, a, b),
                  node=_e.Mul, doc="``a * b``; integers wrap; for bools it is ``a and b``."),
        Semantics("div", no_bool, _int_or_float(_truncdiv_int, lambda a, b: a / b, "div"), _div_llvm("div"),
                  _div_bound(_trunc_div_exact), node=_e.Div, vector=lambda d: kind_of(d) == "float",
                  doc="Float division, or C's integer division (rounds toward zero); an integer "
                      "divisor of 0 is an error (see the division note)."),
        Semantics("mod", no_bool, _int_or_float(lambda a, b: a - _truncdiv_int(a, b) * b, np.fmod, "mod"),
                  _div_llvm("mod"), _truncmod_bound, node=_e.Mod, vector=lambda d: False,
                  doc="C's remainder (the dividend's sign); ``fmod`` for floats; modulo 0 is an error."),
        Semantics("floordiv", no_bool, _int_or_float(lambda a, b: a // b, _float_floordiv, "floordiv"),
                  _div_llvm("floordiv"), _div_bound(lambda x, y: x // y), node=_e.FloorDiv,
                  vector=lambda d: False,
                  doc="Division rounding down (``-7 // 2 == -4``); an integer divisor of 0 is an error."),
        Semantics("floormod", no_bool, _int_or_float(lambda a, b: a % b, _float_floormod, "floormod"),
                  _div_llvm("floormod"), _floormod_bound, node=_e.FloorMod, vector=lambda d: False,
                  doc="The remainder of floordiv (the divisor's sign); modulo 0 is an error."),
        Semantics("min", _ALL, _min_np, _minmax_llvm(True),
                  lambda d, a, b: (min(a[0], b[0]), min(a[1], b[1])), node=_e.Min, vector=_float32_or_64,
                  doc="The smaller; for floats NaN wins and -0.0 < +0.0, so min(-0.0, 0.0) is -0.0 in "
                      "either order (numpy's and torch's minimum propagate NaN too; keeping it makes a "
                      "NaN visible instead of dropping it)."),
        Semantics("max", _ALL, _max_np, _minmax_llvm(False),
                  lambda d, a, b: (max(a[0], b[0]), max(a[1], b[1])), node=_e.Max, vector=_float32_or_64,
                  doc="The larger; for floats NaN wins and -0.0 < +0.0."),
        _compare_row("eq", _e.EQ, "=="), _compare_row("ne", _e.NE, "!="), _compare_row("lt", _e.LT, "<"),
        _compare_row("le", _e.LE, "<="), _compare_row("gt", _e.GT, ">"), _compare_row("ge", _e.GE, ">="),
        Semantics("and", _BOOL, lambda d, a, b: bool(a and b), lambda ctx, d, a, b: ctx.b.and_(a, b),
                  _bool_bound, node=_e.And, result="bool", doc="Logical and of bools."),
        Semantics("or", _BOOL, lambda d, a, b: bool(a or b), lambda ctx, d, a, b: ctx.b.or_(a, b),
                  _bool_bound, node=_e.Or, result="bool", doc="Logical or of bools."),
        Semantics("not", _BOOL, lambda d, a: not a, lambda ctx, d, a: ctx.b.xor(a, _const(a, 1)), _bool_bound,
                  node=_e.Not, arity=1, result="bool", doc="Logical not of a bool."),
        Semantics("select", _ALL, lambda d, c, t, f: t if c else f, _select_llvm,
                  lambda d, c, t, f: (min(t[0], f[0]), max(t[1], f[1])), node=_e.Select, arity=3,
                  doc="``c ? t : f`` with both sides evaluated (``if_then_else`` evaluates one)."),
        _bitwise_row("bitwise_and", lambda a, b: a & b, "and_"),
        _bitwise_row("bitwise_or", lambda a, b: a | b, "or_"),
        _bitwise_row("bitwise_xor", lambda a, b: a ^ b, "xor"),
        Semantics("bitwise_not", _INTS | _BOOL, _bitwise_not_np, lambda ctx, d, a: ctx.b.xor(a, _const(a, -1)),
                  lambda d, a: dtype_range(d), op="tir.bitwise_not", arity=1, doc="Every bit flipped."),
        Semantics("shift_left", _INTS, _shift_left_np, _shift_llvm(True), lambda d, a, b: dtype_range(d),
                  op="tir.shift_left", doc="``a << n``; n outside [0, bits) shifts every bit out (0)."),
        Semantics("shift_right", _INTS, _shift_right_np, _shift_llvm(False), lambda d, a, b: dtype_range(d),
                  op="tir.shift_right",
                  doc="``a >> n``, arithmetic for signed types; n outside [0, bits) gives 0, or -1 for "
                      "a negative signed a."),
        Semantics("isnan", _FLOATS, lambda d, x: bool(np.isnan(x)), _isnan_llvm, _bool_bound, op="tir.isnan",
                  arity=1, result="bool", vector=lambda d: False, doc="Whether a float is NaN."),
        Semantics("fma", _FLOATS, _fma_np, _fma_llvm, None, arity=3, llvm_intrin="llvm.fma",
                  doc="``a * b + c`` rounded once, LLVM's ``llvm.fma`` (one ``vfmadd`` on x86 with FMA); "
                      "written ``T.call_llvm_pure_intrin(dtype, \"llvm.fma\", a, b, c)``."),
        Semantics("vpdpbusd", frozenset({"int"}), _vpdpbusd_np, _vpdpbusd_llvm, _vpdpbusd_bound, arity=3,
                  llvm_intrin="llvm.x86.avx512.vpdpbusd", dtypes=frozenset({"int32"}),
                  doc="``acc + sum(zext(a.byte[t]) * sext(b.byte[t]) for t in 0..3)`` on int32 words "
                      "(wrapping): x86's ``vpdpbusd`` (AVX-512 VNNI), written ``T.call_llvm_pure_intrin("
                      "\"int32\", \"llvm.x86.avx512.vpdpbusd\", acc, a, b)``; 16 lanes on a CPU with "
                      "avx512vnni are one instruction, 64 multiply-adds; elsewhere plain integer IR."),
        Semantics("popcount", _INTS, _popcount_np, _popcount_llvm, lambda d, a: (0, _dt.bits(d)),
                  op="tir.popcount", arity=1, vector=lambda d: False, doc="The number of set bits."),
    ]
    rows += [_math_row(name) for name in _NUMPY_MATH]
    return rows


#: every row, in the order of the table
ROWS: tuple[Semantics, ...] = tuple(_rows())
#: the float math intrinsics (``tir.exp`` ... ``tir.atan2``): ``tir.<name>`` / ``T.<name>`` are made
#: from these rows, the printer writes them as ``T.<name>(...)`` and CUDA calls ``<name>f``
MATH_INTRINSICS: tuple[str, ...] = tuple(_NUMPY_MATH)
#: the row of each expression node class
BY_NODE: dict[type, Semantics] = {row.node: row for row in ROWS if row.node is not None}
#: the row of each intrinsic call (``"tir.exp"``)
BY_OP: dict[str, Semantics] = {row.op: row for row in ROWS if row.op is not None}
#: the row of each LLVM intrinsic reachable through ``T.call_llvm_pure_intrin`` (``"llvm.fma"``)
BY_LLVM_INTRIN: dict[str, Semantics] = {row.llvm_intrin: row for row in ROWS if row.llvm_intrin is not None}


# -- the same meaning on arrays of integers ------------------------------------------------------
#
# The GPU emulator's race check evaluates index expressions for every thread and loop iteration at
# once (millions of points): it needs the meaning of the integer rows on numpy arrays.  These are
# the rows' meanings above, vectorized -- a divisor of 0 anywhere is the same IntegerDivisionByZero
# (tests/tir/test_semantics.py checks that each agrees with its row's scalar meaning).


def _truncdiv_array(a: Any, b: Any) -> Any:
    q = np.abs(a) // np.abs(b)
    return np.where((np.asarray(a) < 0) != (np.asarray(b) < 0), -q, q)


def _checked_division(name: str, fn: Callable) -> Callable:
    def meaning(a: Any, b: Any) -> Any:
        if np.any(np.asarray(b) == 0):
            raise IntegerDivisionByZero(f"{_ZERO_MESSAGE} ({name})")
        return fn(a, b)
    return meaning


_INT_ARRAY: dict[str, Callable[..., Any]] = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply,
    "div": _checked_division("div", _truncdiv_array),
    "mod": _checked_division("mod", lambda a, b: a - _truncdiv_array(a, b) * b),
    "floordiv": _checked_division("floordiv", np.floor_divide),
    "floormod": _checked_division("floormod", np.mod),
    "min": np.minimum, "max": np.maximum, "eq": np.equal, "ne": np.not_equal, "lt": np.less,
    "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal, "and": np.logical_and,
    "or": np.logical_or, "not": np.logical_not, "select": np.where,
}


def int_array_meaning(row: Semantics) -> Callable[..., Any] | None:
    """The meaning of an integer (or bool) row on numpy arrays, operands in the row's order; None
    for a row without one (floats, intrinsics)."""
    return _INT_ARRAY.get(row.name)


def row_of(e: Any) -> Semantics | None:
    """The row of expression ``e`` (a node or an intrinsic call), or None."""
    row = BY_NODE.get(type(e))
    if row is None and isinstance(e, _e.Call):
        op = e.op if isinstance(e.op, str) else getattr(e.op, "name", "")
        if op == LLVM_PURE_INTRIN:
            name = e.args[0].value if e.args and isinstance(e.args[0], _e.StringImm) else None
            return BY_LLVM_INTRIN.get(llvm_intrin_base(name)) if name else None
        row = BY_OP.get(op)
    return row


def llvm_intrin_base(name: str) -> str:
    """``"llvm.fma.v16f32"`` -> ``"llvm.fma"``: an intrinsic's name without its type suffix (or
    x86's register width, ``"llvm.x86.avx512.vpdpbusd.512"``)."""
    parts = name.split(".")
    while len(parts) > 2 and _is_type_suffix(parts[-1]):
        parts.pop()
    return ".".join(parts)


def _is_type_suffix(part: str) -> bool:
    return re.fullmatch(r"(v\d+)?(f16|f32|f64|i\d+)|128|256|512", part) is not None
