"""The element-wise operators, one row each: every layer that offers an element-wise operator
reads this table.

A row (:class:`ElementwiseOp`) says, for one operator,

* ``name`` -- its name everywhere: ``relax.op.<name>`` / ``R.<name>`` (the op ``relax.<name>``),
  ``topi.<name>``, the legalized kernel, and the test that checks it;
* ``arity`` -- 1 (unary: the result has the input's shape) or 2 (binary: numpy broadcasting);
* ``doc`` -- one sentence, the first line of every generated docstring;
* ``compute`` -- one element of the result from the operands' elements (TIR expressions built with
  :mod:`minitvm.tir.op`): the TOPI compute, hence the legalization, the LLVM code, the reference
  interpreter and the emulated GPU, all of which evaluate TIR through :mod:`.semantics`;
* ``dtypes`` -- the operand dtypes Relax's struct-info inference accepts: ``"any"``, ``"float"``,
  ``"bool"`` or ``"int_or_bool"``; ``result`` -- the result dtype when it is not the operands'
  (``"bool"`` for comparisons and checks);
* ``intrinsic`` -- the math intrinsic it lowers to (``"exp"``: the semantics row ``tir.exp``,
  written ``T.exp`` in TVMScript and ``expf`` in CUDA); None when ``compute`` is built of other TIR;
* ``kernel`` -- ``"tir"``: the legalized PrimFunc is named ``tir_<name>`` as TVM names the kernels
  of unary math ops; None: TVM's default name for it;
* ``aten`` -- the torch ATen ops the importer converts to it (a hand-written converter in
  ``relax/frontend/torch`` takes precedence where torch's dtype rules need more than the op);
* ``onnx`` -- the ONNX operators (``op_type``) ``relax.frontend.onnx`` converts to it one to one (ONNX
  operators with attributes, e.g. ``Mod``'s ``fmod``, have hand-written converters there instead);
* ``reference`` / ``domain`` -- numpy's function of the same meaning and an interval of float
  inputs inside the op's domain: what ``tests/relax/test_op_table.py`` checks every layer against
  (independent of :mod:`.semantics`, so that the two are compared, not assumed equal).

Adding an element-wise operator is adding a row (a new math intrinsic also needs its meaning: one
entry of ``semantics._NUMPY_MATH``).  The scalar meaning stays in :mod:`.semantics`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..ir import dtype as _dt
from . import op as _op
from .expr import PrimExpr, const

__all__ = ["ElementwiseOp", "ELEMENTWISE", "UNARY", "BINARY", "BY_NAME"]


@dataclass(frozen=True)
class ElementwiseOp:
    """One element-wise operator (see the module docstring for the fields)."""

    name: str
    arity: int
    doc: str
    compute: Callable[..., PrimExpr]
    dtypes: str = "any"
    result: str | None = None
    intrinsic: str | None = None
    kernel: str | None = None
    aten: tuple[str, ...] = ()
    onnx: tuple[str, ...] = ()
    reference: Callable[..., np.ndarray] | None = None
    domain: tuple[float, float] = (-3.0, 3.0)

    @property
    def relax_name(self) -> str:
        return f"relax.{self.name}"


# -- computes built of other TIR (the rest call their intrinsic) ----------------------------------


def _integers_unchanged(fop: Callable[[PrimExpr], PrimExpr]) -> Callable[[PrimExpr], PrimExpr]:
    # rounding an integer gives it back (TVM's te.floor etc. return an integer operand as is)
    def compute(v: PrimExpr) -> PrimExpr:
        return v if _dt.is_int(v.dtype) or _dt.is_uint(v.dtype) else fop(v)
    return compute


def _sign(v: PrimExpr) -> PrimExpr:
    one, zero = const(1, v.dtype), const(0, v.dtype)
    if _dt.is_uint(v.dtype):
        return _op.Select(v > zero, one, zero)
    return _op.Select(v > zero, one, _op.Select(v < zero, const(-1, v.dtype), zero))


def _isinf(v: PrimExpr) -> PrimExpr:
    if not _dt.is_float(v.dtype):
        return const(False, "bool")
    return _op.equal(_op.fabs(v), const(math.inf, v.dtype))


def _isfinite(v: PrimExpr) -> PrimExpr:
    if not _dt.is_float(v.dtype):
        return const(True, "bool")
    return _op.logical_and(_op.logical_not(_op.isnan(v)), _op.logical_not(_isinf(v)))


def _bitwise_not(v: PrimExpr) -> PrimExpr:
    return _op.logical_not(v) if v.dtype == "bool" else _op.bitwise_not(v)


def _both_bool(a: PrimExpr, b: PrimExpr) -> bool:
    return a.dtype == "bool" and b.dtype == "bool"


def _add(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    # bool + bool is "or" (numpy and torch); a 1-bit add would wrap True + True to False
    return _op.logical_or(a, b) if _both_bool(a, b) else _op.add(a, b)


def _sub(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    if _both_bool(a, b):
        raise TypeError("topi.subtract: subtracting two bool tensors is not supported (numpy and "
                        "torch refuse it too); use logical_xor (not_equal) or cast to an integer dtype")
    return _op.sub(a, b)


def _mul(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    return _op.logical_and(a, b) if _both_bool(a, b) else _op.mul(a, b)


def _floor_div(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    # floats divide then round down (TVM's topi spells it floor(a / b)); integers floordiv
    if a.dtype.startswith(("float", "bfloat")):
        return _op.floor(_op.div(a, b))
    return _op.floordiv(a, b)


def _greater(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    # TVM's TOPI writes a > b as b < a (and a >= b as b <= a); the kernels print that way
    return _op.less(b, a)


def _greater_equal(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    return _op.less_equal(b, a)


def _bitwise(fop: Callable[[PrimExpr, PrimExpr], PrimExpr], on_bools: Callable) -> Callable:
    # two bool tensors: the logical operation (``&`` of two masks is ``and``)
    def compute(a: PrimExpr, b: PrimExpr) -> PrimExpr:
        return on_bools(a, b) if _both_bool(a, b) else fop(a, b)
    return compute


def _np_sign(x: np.ndarray) -> np.ndarray:
    return np.sign(x)


def _np_sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _np_erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[x.dtype])(x)


# -- the table ------------------------------------------------------------------------------------


def _math(name: str, doc: str, reference: Callable, domain: tuple[float, float] = (-3.0, 3.0),
          aten: tuple[str, ...] | None = None, kernel: str | None = "tir", onnx: tuple[str, ...] | None = None
          ) -> ElementwiseOp:
    """A unary float op computed by the math intrinsic of the same name (ONNX's name: capitalized)."""
    return ElementwiseOp(name, 1, doc, getattr(_op, name), "float", intrinsic=name, kernel=kernel,
                         aten=(f"aten.{name}.default",) if aten is None else aten,
                         onnx=(name.capitalize(),) if onnx is None else onnx, reference=reference, domain=domain)


def _rounding(name: str, doc: str, reference: Callable, aten: tuple[str, ...], onnx: tuple[str, ...] = ()
              ) -> ElementwiseOp:
    return ElementwiseOp(name, 1, doc, _integers_unchanged(getattr(_op, name)), intrinsic=name,
                         kernel="tir", aten=aten, onnx=onnx, reference=reference)


UNARY: tuple[ElementwiseOp, ...] = (
    _math("exp", "``e ** x`` element-wise.", np.exp),
    _math("log", "The natural logarithm, element-wise.", np.log, (0.1, 5.0)),
    _math("log2", "The base-2 logarithm, element-wise.", np.log2, (0.1, 5.0), onnx=()),
    _math("sqrt", "The square root, element-wise.", np.sqrt, (0.0, 5.0)),
    _math("rsqrt", "``1 / sqrt(x)`` element-wise.", lambda x: 1 / np.sqrt(x), (0.1, 5.0), onnx=()),
    _math("tanh", "The hyperbolic tangent, element-wise.", np.tanh),
    _math("sigmoid", "``1 / (1 + e ** -x)`` element-wise.", _np_sigmoid),
    _math("erf", "The Gauss error function, element-wise.", _np_erf, kernel=None),
    _math("acos", "The arc cosine, element-wise.", np.arccos, (-0.95, 0.95)),
    _math("acosh", "The inverse hyperbolic cosine, element-wise.", np.arccosh, (1.05, 5.0)),
    _math("asin", "The arc sine, element-wise.", np.arcsin, (-0.95, 0.95)),
    _math("asinh", "The inverse hyperbolic sine, element-wise.", np.arcsinh),
    _math("atan", "The arc tangent, element-wise.", np.arctan),
    _math("atanh", "The inverse hyperbolic tangent, element-wise.", np.arctanh, (-0.95, 0.95)),
    _math("cos", "The cosine, element-wise.", np.cos),
    _math("cosh", "The hyperbolic cosine, element-wise.", np.cosh),
    _math("sin", "The sine, element-wise.", np.sin),
    _math("sinh", "The hyperbolic sine, element-wise.", np.sinh),
    _math("tan", "The tangent, element-wise.", np.tan, (-1.4, 1.4)),
    ElementwiseOp("negative", 1, "``-x`` element-wise.", _op.neg, kernel="tir", aten=("aten.neg.default",),
                  onnx=("Neg",),
                  reference=np.negative),
    ElementwiseOp("abs", 1, "``|x|`` element-wise.", _op.abs, kernel="tir", aten=("aten.abs.default",), onnx=("Abs",),
                  reference=np.abs),
    _rounding("ceil", "Rounding up to an integer value, element-wise.", np.ceil, ("aten.ceil.default",), ("Ceil",)),
    _rounding("floor", "Rounding down to an integer value, element-wise.", np.floor, ("aten.floor.default",),
              ("Floor",)),
    _rounding("round", "Rounding to the nearest integer value (half to even), element-wise.", np.round,
              ("aten.round.default",), ("Round",)),
    _rounding("trunc", "Rounding towards zero, element-wise.", np.trunc, ("aten.trunc.default", "aten.fix.default")),
    ElementwiseOp("sign", 1, "The sign of each element: -1, 0 or 1.", _sign, kernel="tir",
                  aten=("aten.sign.default", "aten.sgn.default"), onnx=("Sign",), reference=_np_sign),
    ElementwiseOp("square", 1, "``x * x`` element-wise.", lambda v: v * v, kernel="tir",
                  aten=("aten.square.default",), reference=np.square),
    ElementwiseOp("isfinite", 1, "True where the element is neither infinite nor NaN.", _isfinite, result="bool",
                  aten=("aten.isfinite.default",), reference=np.isfinite),
    ElementwiseOp("isinf", 1, "True where the element is +inf or -inf.", _isinf, result="bool",
                  aten=("aten.isinf.default",), reference=np.isinf),
    ElementwiseOp("isnan", 1, "True where the element is NaN.", _op.isnan, result="bool",
                  aten=("aten.isnan.default",), onnx=("IsNaN",), reference=np.isnan),
    ElementwiseOp("logical_not", 1, "``not x`` element-wise on a bool tensor.", _op.logical_not, "bool",
                  kernel="tir", aten=("aten.logical_not.default",), onnx=("Not",), reference=np.logical_not),
    ElementwiseOp("bitwise_not", 1, "``~x`` bit by bit (integer or bool tensors).", _bitwise_not, "int_or_bool",
                  aten=("aten.bitwise_not.default",), onnx=("BitwiseNot",), reference=np.invert),
)


def _binary(name: str, doc: str, compute: Callable, reference: Callable, dtypes: str = "any",
            result: str | None = None, aten: tuple[str, ...] = (), intrinsic: str | None = None,
            domain: tuple[float, float] = (-3.0, 3.0), onnx: tuple[str, ...] = ()) -> ElementwiseOp:
    return ElementwiseOp(name, 2, doc, compute, dtypes, result, intrinsic, aten=aten, onnx=onnx, reference=reference,
                         domain=domain)


BINARY: tuple[ElementwiseOp, ...] = (
    _binary("add", "``x1 + x2`` element-wise, with numpy broadcasting.", _add, np.add, aten=("aten.add.Tensor",),
            onnx=("Add",)),
    _binary("subtract", "``x1 - x2`` element-wise, with numpy broadcasting.", _sub, np.subtract,
            aten=("aten.sub.Tensor",), onnx=("Sub",)),
    _binary("multiply", "``x1 * x2`` element-wise, with numpy broadcasting.", _mul, np.multiply,
            aten=("aten.mul.Tensor",), onnx=("Mul",)),
    _binary("divide", "``x1 / x2`` element-wise, with numpy broadcasting.", _op.div, np.divide,
            aten=("aten.div.Tensor",), onnx=("Div",), domain=(0.5, 3.0)),
    _binary("floor_divide", "``floor(x1 / x2)`` element-wise, with numpy broadcasting.", _floor_div,
            np.floor_divide, aten=("aten.floor_divide.default",), domain=(0.5, 3.0)),
    _binary("power", "``x1 ** x2`` element-wise, with numpy broadcasting.", _op.pow, np.power,
            aten=("aten.pow.Tensor_Tensor",), intrinsic="pow", domain=(0.5, 2.0)),
    _binary("maximum", "The larger of ``x1`` and ``x2`` element-wise, with numpy broadcasting.", _op.max,
            np.maximum, aten=("aten.maximum.default",)),
    _binary("minimum", "The smaller of ``x1`` and ``x2`` element-wise, with numpy broadcasting.", _op.min,
            np.minimum, aten=("aten.minimum.default",)),
    _binary("mod", "The remainder of ``x1 / x2`` with the dividend's sign (C's ``%``, ``fmod`` for floats).",
            _op.truncmod, np.fmod, aten=("aten.fmod.Tensor",), domain=(0.5, 3.0)),
    _binary("floor_mod", "The remainder of the floor division, with the divisor's sign (Python's ``%``).",
            _op.floormod, np.mod, aten=("aten.remainder.Tensor",), domain=(0.5, 3.0)),
    _binary("atan2", "The angle of the point ``(x2, x1)``, element-wise (``arctan(x1 / x2)`` in the right "
            "quadrant), with numpy broadcasting.", _op.atan2, np.arctan2, "float", aten=("aten.atan2.default",),
            intrinsic="atan2"),
    _binary("equal", "``x1 == x2`` element-wise (a bool tensor), with numpy broadcasting.", _op.equal, np.equal,
            result="bool", aten=("aten.eq.Tensor",), onnx=("Equal",)),
    _binary("not_equal", "``x1 != x2`` element-wise (a bool tensor).", _op.not_equal, np.not_equal,
            result="bool", aten=("aten.ne.Tensor",)),
    _binary("less", "``x1 < x2`` element-wise (a bool tensor).", _op.less, np.less, result="bool",
            aten=("aten.lt.Tensor",), onnx=("Less",)),
    _binary("less_equal", "``x1 <= x2`` element-wise (a bool tensor).", _op.less_equal, np.less_equal,
            result="bool", aten=("aten.le.Tensor",), onnx=("LessOrEqual",)),
    _binary("greater", "``x1 > x2`` element-wise (a bool tensor).", _greater, np.greater, result="bool",
            aten=("aten.gt.Tensor",), onnx=("Greater",)),
    _binary("greater_equal", "``x1 >= x2`` element-wise (a bool tensor).", _greater_equal, np.greater_equal,
            result="bool", aten=("aten.ge.Tensor",), onnx=("GreaterOrEqual",)),
    _binary("logical_and", "``x1 and x2`` element-wise on bool tensors, with numpy broadcasting.",
            _op.logical_and, np.logical_and, "bool", aten=("aten.logical_and.default",), onnx=("And",)),
    _binary("logical_or", "``x1 or x2`` element-wise on bool tensors, with numpy broadcasting.",
            _op.logical_or, np.logical_or, "bool", aten=("aten.logical_or.default",), onnx=("Or",)),
    _binary("logical_xor", "``x1 != x2`` element-wise on bool tensors (exactly one is true).",
            _op.not_equal, np.logical_xor, "bool"),
    _binary("bitwise_and", "``x1 & x2`` bit by bit (integer or bool tensors).",
            _bitwise(_op.bitwise_and, _op.logical_and), np.bitwise_and, "int_or_bool",
            aten=("aten.bitwise_and.Tensor",), onnx=("BitwiseAnd",)),
    _binary("bitwise_or", "``x1 | x2`` bit by bit (integer or bool tensors).",
            _bitwise(_op.bitwise_or, _op.logical_or), np.bitwise_or, "int_or_bool", aten=("aten.bitwise_or.Tensor",),
            onnx=("BitwiseOr",)),
    _binary("bitwise_xor", "``x1 ^ x2`` bit by bit (integer or bool tensors).",
            _bitwise(_op.bitwise_xor, _op.not_equal), np.bitwise_xor, "int_or_bool",
            aten=("aten.bitwise_xor.Tensor",), onnx=("BitwiseXor", "Xor")),
    _binary("left_shift", "``x1 << x2`` element-wise (integers).", _op.shift_left, np.left_shift, "int_or_bool",
            aten=("aten.bitwise_left_shift.Tensor",)),
    _binary("right_shift", "``x1 >> x2`` element-wise, arithmetic for signed integers.", _op.shift_right,
            np.right_shift, "int_or_bool", aten=("aten.bitwise_right_shift.Tensor",)),
)

#: every element-wise operator, unary then binary
ELEMENTWISE: tuple[ElementwiseOp, ...] = UNARY + BINARY
#: the row of each operator, by name
BY_NAME: dict[str, ElementwiseOp] = {op.name: op for op in ELEMENTWISE}
