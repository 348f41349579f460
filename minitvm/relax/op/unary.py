"""Element-wise unary operators: the result has the input's struct info."""

from __future__ import annotations

from typing import Any, Callable

from ...ir import dtype as _dt
from ...ir.node import replace
from ..expr import Call, Expr
from ..struct_info import StructInfo, StructInfoError
from .registry import OpPattern, check_num_args, make_call, register, tensor_arg

__all__ = ["exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "negative", "abs", "logical_not", "clip",
           "acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "sin", "sinh", "tan",
           "ceil", "floor", "round", "trunc", "sign", "square", "isfinite", "isinf", "isnan",
           "unary_sinfo"]


def unary_sinfo(call: Call, op_name: str, require_float: bool = False) -> StructInfo:
    """Struct info of an element-wise unary op: the input's, unchanged."""
    check_num_args(call, op_name, 1)
    x = tensor_arg(call, 0, op_name, "x")
    if require_float and not x.is_unknown_dtype and not _dt.is_float(x.dtype):
        raise StructInfoError(f"{op_name} needs a floating-point tensor, got dtype {x.dtype}")
    return x


def _register_unary(name: str, doc: str, require_float: bool) -> None:
    op_name = f"relax.{name}"

    def infer(call: Call, ctx: Any) -> StructInfo:
        return unary_sinfo(call, op_name, require_float)

    infer.__doc__ = doc
    register(op_name, pattern=OpPattern.ELEMWISE, num_inputs=1)(infer)


for _name, _doc, _float in [
    ("exp", "Element-wise e**x.", True),
    ("log", "Element-wise natural logarithm.", True),
    ("sqrt", "Element-wise square root.", True),
    ("rsqrt", "Element-wise 1 / sqrt(x).", True),
    ("tanh", "Element-wise hyperbolic tangent.", True),
    ("sigmoid", "Element-wise 1 / (1 + e**-x).", True),
    ("erf", "Element-wise Gauss error function.", True),
    ("negative", "Element-wise -x.", False),
    ("abs", "Element-wise |x|.", False),
]:
    _register_unary(_name, _doc, _float)


def exp(x: Expr) -> Call:
    """``e ** x`` element-wise."""
    return make_call("relax.exp", x)


def log(x: Expr) -> Call:
    """Natural logarithm, element-wise."""
    return make_call("relax.log", x)


def sqrt(x: Expr) -> Call:
    """Square root, element-wise."""
    return make_call("relax.sqrt", x)


def rsqrt(x: Expr) -> Call:
    """``1 / sqrt(x)`` element-wise."""
    return make_call("relax.rsqrt", x)


def tanh(x: Expr) -> Call:
    """Hyperbolic tangent, element-wise."""
    return make_call("relax.tanh", x)


def sigmoid(x: Expr) -> Call:
    """``1 / (1 + exp(-x))`` element-wise."""
    return make_call("relax.sigmoid", x)


def erf(x: Expr) -> Call:
    """The Gauss error function, element-wise."""
    return make_call("relax.erf", x)


def negative(x: Expr) -> Call:
    """``-x`` element-wise."""
    return make_call("relax.negative", x)


def abs(x: Expr) -> Call:  # noqa: A001 - TVM's name
    """``|x|`` element-wise."""
    return make_call("relax.abs", x)


@register("relax.logical_not", pattern=OpPattern.ELEMWISE, num_inputs=1)
def _infer_logical_not(call: Call, ctx: Any) -> StructInfo:
    """Element-wise not of a bool tensor."""
    x = unary_sinfo(call, "relax.logical_not")
    if not x.is_unknown_dtype and x.dtype != "bool":
        raise StructInfoError(f"relax.logical_not needs a bool tensor, got dtype {x.dtype}")
    return x


def logical_not(x: Expr) -> Call:
    """``not x`` element-wise on a bool tensor."""
    return make_call("relax.logical_not", x)


@register("relax.clip", pattern=OpPattern.ELEMWISE, num_inputs=1)
def _infer_clip(call: Call, ctx: Any) -> StructInfo:
    """Element-wise ``min(max(x, min), max)``: the input's struct info."""
    op = "relax.clip"
    x = unary_sinfo(call, op)
    lo, hi = call.attrs["min"], call.attrs["max"]
    if lo is not None and hi is not None and lo > hi:
        raise StructInfoError(f"{op}: min {lo} is larger than max {hi}")
    return x


def clip(x: Expr, min: float | None = None, max: float | None = None) -> Call:  # noqa: A002 - TVM's names
    """``x`` limited to ``[min, max]`` element-wise (None: no bound on that side), as
    ``torch.clamp`` and ``hardtanh`` / ``relu6``."""
    return make_call("relax.clip", x, attrs={"min": None if min is None else float(min),
                                             "max": None if max is None else float(max)})


# -- more element-wise math, as TVM registers it: the trigonometric family needs floats,
# the rounding family and sign/square take any dtype ------------------------------------------

def _unary_builder(name: str, doc: str) -> Callable[[Expr], Call]:
    op_name = f"relax.{name}"

    def build(x: Expr) -> Call:
        return make_call(op_name, x)

    build.__name__ = build.__qualname__ = name
    build.__doc__ = doc
    return build


_MORE_UNARY = [
    ("acos", "Element-wise arc cosine.", True),
    ("acosh", "Element-wise inverse hyperbolic cosine.", True),
    ("asin", "Element-wise arc sine.", True),
    ("asinh", "Element-wise inverse hyperbolic sine.", True),
    ("atan", "Element-wise arc tangent.", True),
    ("atanh", "Element-wise inverse hyperbolic tangent.", True),
    ("cos", "Element-wise cosine.", True),
    ("cosh", "Element-wise hyperbolic cosine.", True),
    ("sin", "Element-wise sine.", True),
    ("sinh", "Element-wise hyperbolic sine.", True),
    ("tan", "Element-wise tangent.", True),
    ("ceil", "Element-wise rounding up to an integer.", False),
    ("floor", "Element-wise rounding down to an integer.", False),
    ("round", "Element-wise rounding to the nearest integer.", False),
    ("trunc", "Element-wise rounding towards zero.", False),
    ("sign", "Element-wise sign: -1, 0 or 1.", False),
    ("square", "Element-wise x * x.", False),
]
for _name, _doc, _float in _MORE_UNARY:
    _register_unary(_name, _doc, _float)

acos = _unary_builder("acos", "Arc cosine, element-wise (float tensors).")
acosh = _unary_builder("acosh", "Inverse hyperbolic cosine, element-wise (float tensors).")
asin = _unary_builder("asin", "Arc sine, element-wise (float tensors).")
asinh = _unary_builder("asinh", "Inverse hyperbolic sine, element-wise (float tensors).")
atan = _unary_builder("atan", "Arc tangent, element-wise (float tensors).")
atanh = _unary_builder("atanh", "Inverse hyperbolic tangent, element-wise (float tensors).")
cos = _unary_builder("cos", "Cosine, element-wise (float tensors).")
cosh = _unary_builder("cosh", "Hyperbolic cosine, element-wise (float tensors).")
sin = _unary_builder("sin", "Sine, element-wise (float tensors).")
sinh = _unary_builder("sinh", "Hyperbolic sine, element-wise (float tensors).")
tan = _unary_builder("tan", "Tangent, element-wise (float tensors).")
ceil = _unary_builder("ceil", "Round up to an integer value, element-wise.")
floor = _unary_builder("floor", "Round down to an integer value, element-wise.")
round = _unary_builder("round", "Round to the nearest integer value, element-wise.")  # noqa: A001 - TVM's name
trunc = _unary_builder("trunc", "Round towards zero, element-wise.")
sign = _unary_builder("sign", "The sign of each element: -1, 0 or 1.")
square = _unary_builder("square", "``x * x`` element-wise.")


# -- checks: a bool tensor of the input's shape --------------------------------------------------

def _register_check(name: str, doc: str) -> Callable[[Expr], Call]:
    op_name = f"relax.{name}"

    def infer(call: Call, ctx: Any) -> StructInfo:
        x = unary_sinfo(call, op_name)
        return replace(x, dtype="bool")

    infer.__doc__ = doc
    register(op_name, pattern=OpPattern.ELEMWISE, num_inputs=1)(infer)
    return _unary_builder(name, doc)


isfinite = _register_check("isfinite", "True where the element is neither infinite nor NaN.")
isinf = _register_check("isinf", "True where the element is +inf or -inf.")
isnan = _register_check("isnan", "True where the element is NaN.")


@register("relax.bitwise_not", pattern=OpPattern.ELEMWISE, num_inputs=1)
def _infer_bitwise_not(call: Call, ctx: Any) -> StructInfo:
    """Every bit flipped (integer or bool tensors)."""
    x = unary_sinfo(call, "relax.bitwise_not")
    if not x.is_unknown_dtype and not (x.dtype == "bool" or _dt.is_int(x.dtype) or _dt.is_uint(x.dtype)):
        raise StructInfoError(f"relax.bitwise_not needs an integer or bool tensor, got dtype {x.dtype}")
    return x


bitwise_not = _unary_builder("bitwise_not", "``~x`` bit by bit (integer or bool tensors).")
__all__ += ["bitwise_not"]
