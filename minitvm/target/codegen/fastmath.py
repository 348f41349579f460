"""exp, tanh, sigmoid and erf for float32 as plain LLVM arithmetic, so that they vectorize.

LLVM's ``llvm.exp`` / ``llvm.tanh`` become calls of the C library's ``expf`` / ``tanhf`` (and
``erf`` is ``erff``), one element at a time: a vectorized loop around them is scalar again, and ``tanh`` alone cost
16 ns per element (LeNet's activations took 80% of its run time).  Written as a few
multiply-adds and bit operations, the same functions run on 16 lanes at once.

Accuracy (measured against float64 on a dense grid): ``exp`` within 1.0e-7 relative, ``tanh``
within 4e-7, ``erf`` within 4.5e-7 -- about 1-2 units in the last place of a float32, as SLEEF or Eigen's fast paths.

* ``exp(x)``: ``x = n ln2 + r`` with ``n = round(x / ln2)`` and ``|r| <= ln2 / 2``; ``exp(r)``
  is its Taylor polynomial of degree 7 (error below ``r^8 / 8!``, 5e-9), and ``2^n`` is made
  by writing ``n + 127`` into the exponent bits of a float, in two halves so that ``2^n`` may
  reach the subnormals.  Below -103.97 the result is 0, above 88.7 infinity (between -103.97 and
  -87.3 it is subnormal, never flushed to zero), and NaN stays NaN.
* ``tanh(x)``: an odd rational function ``x P(x^2) / Q(x^2)`` (degrees 13 and 6) on
  [-7.9, 7.9], where tanh reaches +-1 in float32; ``x`` itself below 4e-4.
* ``sigmoid(x) = 1 / (1 + exp(-x))``.
* ``erf(x)``: an odd rational function of the same kind (degrees 13 and 8) on [-4, 4], where
  erf reaches +-1 in float32.

Every function takes the builder, the value (a ``float`` or a vector of them) and ``declare``,
which declares an LLVM intrinsic in the module (``declare(name, ret_type, arg_types)``).
"""

from __future__ import annotations

from typing import Any, Callable

from llvmlite import ir

from ...tir import expr as _e
from ...tir.semantics import FAST_FLOAT32_MATH, llvm_overload

__all__ = ["exp_f32", "tanh_f32", "sigmoid_f32", "erf_f32", "FAST_FLOAT32", "call_intrinsic", "integral_exponent",
           "power_by_multiplying"]

Declare = Callable[[str, ir.Type, list], ir.Function]

_LOG2E = 1.44269504088896341
_LN2_HI = 0.693359375  # ln 2 split in two: n * _LN2_HI is exact for the n that occur
_LN2_LO = -2.12194440e-4
# beyond: infinity; below: 0 -- ln(2^-150), where even the smallest subnormal float32 rounds to 0
# (results under 2^-126 are subnormal, as numpy's and the C library's expf give them: no flush)
_EXP_HI, _EXP_LO = 88.7228391, -103.972077
_TANH_CLAMP = 7.90531110763549805
_TANH_P = (-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11, 5.12229709037114e-08,
           1.48572235717979e-05, 6.37261928875436e-04, 4.89352455891786e-03)  # x^13 ... x^1 over x
_TANH_Q = (1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03, 4.89352518554385e-03)
_ERF_CLAMP = 4.0
_ERF_P = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
          -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02)
_ERF_Q = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
          -1.42647390514189e-02)


def _splat(like: ir.Type, value: float | int) -> ir.Constant:
    """``value`` as a constant of ``like``'s type (every lane of a vector)."""
    if isinstance(like, ir.VectorType):
        return ir.Constant(like, [ir.Constant(like.element, value)] * like.count)
    return ir.Constant(like, value)


def _with_element(like: ir.Type, element: ir.Type) -> ir.Type:
    return ir.VectorType(element, like.count) if isinstance(like, ir.VectorType) else element


def call_intrinsic(b: ir.IRBuilder, declare: Declare, name: str, args: list[ir.Value]) -> ir.Value:
    """Call an overloaded intrinsic on scalars or vectors of the first argument's type
    (``llvm.exp`` -> ``llvm.exp.f32`` or ``llvm.exp.v16f32``, ``llvm.ctpop`` -> ``llvm.ctpop.i32``)."""
    ty = args[0].type
    return b.call(declare(f"{name}.{llvm_overload(ty)}", ty, [ty] * len(args)), args)


def _horner(b: ir.IRBuilder, x: ir.Value, coefficients: tuple[float, ...]) -> ir.Value:
    """``c0 x^n + c1 x^(n-1) + ... + cn`` (highest power first), as multiply-adds."""
    acc = _splat(x.type, coefficients[0])
    for c in coefficients[1:]:
        acc = b.fadd(b.fmul(acc, x, flags=("contract",)), _splat(x.type, c), flags=("contract",))
    return acc


def exp_f32(b: ir.IRBuilder, x: ir.Value, declare: Declare) -> ir.Value:
    ty = x.type
    i32 = _with_element(ty, ir.IntType(32))
    clamped = b.select(b.fcmp_ordered(">", x, _splat(ty, _EXP_HI)), _splat(ty, _EXP_HI), x)
    # a lane whose result is 0 computes exp(0) on the way: from _EXP_LO the last multiplication
    # would round into the subnormals, which x86 computes ~3x slower (a causal mask's -3.4e38
    # scores: GPT-2's softmax)
    clamped = b.select(b.fcmp_ordered("<", clamped, _splat(ty, _EXP_LO)), _splat(ty, 0.0), clamped)
    n = call_intrinsic(b, declare, "llvm.roundeven", [b.fmul(clamped, _splat(ty, _LOG2E))])
    r = b.fsub(clamped, b.fmul(n, _splat(ty, _LN2_HI)))
    r = b.fsub(r, b.fmul(n, _splat(ty, _LN2_LO)))
    poly = _horner(b, r, (1 / 5040, 1 / 720, 1 / 120, 1 / 24, 1 / 6, 0.5, 1.0, 1.0))
    # 2^n as 2^(n >> 1) * 2^(n - n >> 1): n runs from -150 to 128, one power alone would not
    # fit a float's exponent at the ends (the last multiplication rounds into the subnormals)
    n_int = b.fptosi(n, i32)
    half = b.ashr(n_int, _splat(i32, 1))
    result = poly
    for part in (half, b.sub(n_int, half)):
        power = b.bitcast(b.shl(b.add(part, _splat(i32, 127)), _splat(i32, 23)), ty)
        result = b.fmul(result, power)
    result = b.select(b.fcmp_ordered(">", x, _splat(ty, _EXP_HI)), _splat(ty, float("inf")), result)
    result = b.select(b.fcmp_ordered("<", x, _splat(ty, _EXP_LO)), _splat(ty, 0.0), result)
    return b.select(b.fcmp_unordered("uno", x, x), x, result)  # NaN in, NaN out


def _odd_rational(b: ir.IRBuilder, x: ir.Value, clamp: float, p: tuple, q: tuple) -> ir.Value:
    """``c P(c^2) / Q(c^2)`` with ``c`` = ``x`` clamped to [-clamp, clamp] (NaN passes through)."""
    ty = x.type
    c = b.select(b.fcmp_ordered(">", x, _splat(ty, clamp)), _splat(ty, clamp), x)
    c = b.select(b.fcmp_ordered("<", c, _splat(ty, -clamp)), _splat(ty, -clamp), c)
    c2 = b.fmul(c, c)
    return b.fdiv(b.fmul(c, _horner(b, c2, p)), _horner(b, c2, q))


def tanh_f32(b: ir.IRBuilder, x: ir.Value, declare: Declare) -> ir.Value:
    ty = x.type
    ratio = _odd_rational(b, x, _TANH_CLAMP, _TANH_P, _TANH_Q)
    tiny = b.fcmp_ordered("<", call_intrinsic(b, declare, "llvm.fabs", [x]), _splat(ty, 4e-4))
    return b.select(tiny, x, ratio)  # (NaN: the comparisons fail and NaN flows through)


def sigmoid_f32(b: ir.IRBuilder, x: ir.Value, declare: Declare) -> ir.Value:
    one = _splat(x.type, 1.0)
    return b.fdiv(one, b.fadd(one, exp_f32(b, b.fneg(x), declare)))


def erf_f32(b: ir.IRBuilder, x: ir.Value, declare: Declare) -> ir.Value:
    return _odd_rational(b, x, _ERF_CLAMP, _ERF_P, _ERF_Q)


_IMPLEMENTATIONS = {"exp": exp_f32, "tanh": tanh_f32, "sigmoid": sigmoid_f32, "erf": erf_f32}
#: TIR intrinsic -> its float32 implementation here: one for each row the semantics table marks
#: (semantics.FAST_FLOAT32_MATH; a marked row without one fails here, at import)
FAST_FLOAT32: dict[str, Callable[[ir.IRBuilder, ir.Value, Declare], ir.Value]] = {
    f"tir.{name}": _IMPLEMENTATIONS[name] for name in FAST_FLOAT32_MATH
}


#: ``pow(x, n)`` with a constant whole exponent up to this is emitted as multiplications
MAX_MULTIPLIED_EXPONENT = 4


def integral_exponent(e: Any) -> int | None:
    """``n`` when ``e`` is ``T.pow(x, n)`` of floats with ``n`` a constant 2, 3 or 4 (GPT-2's
    GELU cubes its input): as multiplications it vectorizes, where ``llvm.pow`` is a C library
    call per element (that GELU ran at ~9 ns an element, 1.1 ms for 128 x 1024)."""
    if not isinstance(e, _e.Call) or getattr(e.op, "name", e.op) != "tir.pow" or len(e.args) != 2:
        return None
    n = e.args[1]
    if not isinstance(n, _e.FloatImm) or not e.dtype.startswith("float") or e.args[0].dtype != e.dtype:
        return None
    value = float(n.value)
    return int(value) if value.is_integer() and 2 <= value <= MAX_MULTIPLIED_EXPONENT else None


def power_by_multiplying(b: ir.IRBuilder, x: ir.Value, n: int) -> ir.Value:
    """``x ** n`` for a whole ``n >= 2`` as ``n - 1`` multiplications, left to right as numpy's
    repeated product (within an ulp or two of ``powf``)."""
    result = x
    for _ in range(n - 1):
        result = b.fmul(result, x)
    return result
