"""Element-wise unary operators: the result has the input's struct info."""

from __future__ import annotations

from typing import Any

from ...ir import dtype as _dt
from ..expr import Call, Expr
from ..struct_info import StructInfo, StructInfoError, TensorStructInfo
from .registry import OpPattern, check_num_args, make_call, register, tensor_arg

__all__ = ["exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "negative", "abs", "logical_not", "clip",
           "unary_sinfo", "ceil", "floor", "round", "sin", "cos", "tan", "sinh", "cosh", "asin", "acos", "atan",
           "asinh", "acosh", "atanh", "sign", "square", "isnan", "isinf", "isfinite"]


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


#: element-wise unary ops whose result has the input's struct info: name -> (doc, float only)
_MORE_UNARY = {
    "ceil": ("Round up, element-wise.", False), "floor": ("Round down, element-wise.", False),
    "round": ("Round half to even, element-wise.", False), "sin": ("Sine, element-wise.", True),
    "cos": ("Cosine, element-wise.", True), "tan": ("Tangent, element-wise.", True),
    "sinh": ("Hyperbolic sine, element-wise.", True), "cosh": ("Hyperbolic cosine, element-wise.", True),
    "asin": ("Arc sine, element-wise.", True), "acos": ("Arc cosine, element-wise.", True),
    "atan": ("Arc tangent, element-wise.", True), "asinh": ("Inverse hyperbolic sine.", True),
    "acosh": ("Inverse hyperbolic cosine.", True), "atanh": ("Inverse hyperbolic tangent.", True),
    "sign": ("-1, 0 or 1 by the sign, element-wise.", False), "square": ("x * x, element-wise.", False),
}
for _name, (_doc, _float) in _MORE_UNARY.items():
    _register_unary(_name, _doc, _float)


def _register_unary_check(name: str, doc: str) -> None:
    """``isnan`` & co: a bool tensor of the input's shape."""
    op_name = f"relax.{name}"

    def infer(call: Call, ctx: Any) -> StructInfo:
        x = unary_sinfo(call, op_name)
        return TensorStructInfo(x.shape, "bool", x.vdevice, x.ndim) if x.shape is not None else \
            TensorStructInfo(None, "bool", x.vdevice, x.ndim)

    infer.__doc__ = doc
    register(op_name, pattern=OpPattern.ELEMWISE, num_inputs=1)(infer)


for _name, _doc in [("isnan", "Whether each element is NaN."), ("isinf", "Whether each element is infinite."),
                    ("isfinite", "Whether each element is neither NaN nor infinite.")]:
    _register_unary_check(_name, _doc)


def _unary_builder(name: str) -> Any:
    def build(x: Expr) -> Call:
        return make_call(f"relax.{name}", x)

    build.__name__ = name
    build.__doc__ = _MORE_UNARY[name][0] if name in _MORE_UNARY else f"``{name}`` element-wise (a bool tensor)."
    return build


ceil, floor, round = _unary_builder("ceil"), _unary_builder("floor"), _unary_builder("round")  # noqa: A001
sin, cos, tan = _unary_builder("sin"), _unary_builder("cos"), _unary_builder("tan")
sinh, cosh = _unary_builder("sinh"), _unary_builder("cosh")
asin, acos, atan = _unary_builder("asin"), _unary_builder("acos"), _unary_builder("atan")
asinh, acosh, atanh = _unary_builder("asinh"), _unary_builder("acosh"), _unary_builder("atanh")
sign, square = _unary_builder("sign"), _unary_builder("square")
isnan, isinf, isfinite = _unary_builder("isnan"), _unary_builder("isinf"), _unary_builder("isfinite")


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
