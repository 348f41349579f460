"""Element-wise binary operators with numpy broadcasting: arithmetic (add, subtract,
multiply, divide, power, maximum, minimum) and comparisons (equal ... greater_equal, whose
result is a bool tensor)."""

from __future__ import annotations

from typing import Any

from ...tir.expr import IntImm, PrimExpr
from ..analysis.struct_info_analysis import prove_dim_equal
from ..expr import Call, Expr, struct_info_of
from ..struct_info import PrimStructInfo, StructInfo, StructInfoError, TensorStructInfo, shape_text
from .registry import OpPattern, check_num_args, make_call, register, tensor_arg

__all__ = ["add", "subtract", "multiply", "divide", "floor_divide", "power", "maximum", "minimum",
           "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
           "logical_and", "logical_or", "broadcast_shapes", "binary_broadcast_sinfo"]


def _is_one(d: PrimExpr) -> bool:
    return isinstance(d, IntImm) and d.value == 1


def broadcast_shapes(op_name: str, a: tuple, b: tuple) -> tuple | None:
    """The numpy broadcast of two shapes; None when a symbolic pair cannot be decided.

    Raises StructInfoError naming the op and both shapes when two constants clash.
    """
    out: list[PrimExpr] = []
    for k in range(1, max(len(a), len(b)) + 1):
        da = a[-k] if k <= len(a) else None
        db = b[-k] if k <= len(b) else None
        if da is None or (_is_one(da) and db is not None):
            out.append(db)
        elif db is None or _is_one(db) or prove_dim_equal(da, db):
            out.append(da)
        elif isinstance(da, IntImm) and isinstance(db, IntImm):
            raise StructInfoError(
                f"{op_name}: cannot broadcast shapes {shape_text(a)} and {shape_text(b)}: "
                f"dimensions {da.value} and {db.value} differ and neither is 1")
        else:
            return None  # e.g. n vs m: known only at run time
    return tuple(reversed(out))


def _tensor_or_scalar(call: Call, index: int, op_name: str, arg_name: str) -> StructInfo:
    sinfo = struct_info_of(call.args[index])
    if isinstance(sinfo, PrimStructInfo):
        return sinfo
    return tensor_arg(call, index, op_name, arg_name)


def binary_broadcast_sinfo(call: Call, op_name: str, out_dtype: str | None = None) -> StructInfo:
    """Struct info of an element-wise binary op: same dtypes, broadcast shapes; the result
    has the operands' dtype unless ``out_dtype`` is given (bool for comparisons)."""
    check_num_args(call, op_name, 2)
    x1 = _tensor_or_scalar(call, 0, op_name, "x1")
    x2 = _tensor_or_scalar(call, 1, op_name, "x2")
    if isinstance(x1, PrimStructInfo) and isinstance(x2, PrimStructInfo):
        if x1.dtype != x2.dtype:
            raise StructInfoError(f"{op_name}: operands have different dtypes {x1.dtype} and {x2.dtype}")
        return PrimStructInfo(out_dtype or x1.dtype)
    # a scalar operand (R.Prim) broadcasts as a 0-d tensor of its dtype
    x1, x2 = (TensorStructInfo([], x.dtype) if isinstance(x, PrimStructInfo) else x for x in (x1, x2))
    if x1.is_unknown_dtype or x2.is_unknown_dtype:
        dtype = "void"
    elif x1.dtype != x2.dtype:
        raise StructInfoError(f"{op_name}: operands have different dtypes {x1.dtype} and {x2.dtype}; "
                              "cast one with relax.op.astype first")
    else:
        dtype = x1.dtype
    dtype = out_dtype or dtype
    s1, s2 = x1.shape_values, x2.shape_values
    if s1 is not None and s2 is not None:
        shape = broadcast_shapes(op_name, s1, s2)
        if shape is not None:
            return TensorStructInfo(list(shape), dtype)
    ndim = -1 if x1.ndim == -1 or x2.ndim == -1 else max(x1.ndim, x2.ndim)
    return TensorStructInfo(None, dtype, None, ndim)


def _register_binary(name: str, out_dtype: str | None = None) -> None:
    op_name = f"relax.{name}"

    @register(op_name, pattern=OpPattern.BROADCAST, num_inputs=2)
    def infer(call: Call, ctx: Any) -> StructInfo:
        return binary_broadcast_sinfo(call, op_name, out_dtype)

    infer.__doc__ = f"Element-wise {name} with broadcasting."


for _name in ("add", "subtract", "multiply", "divide", "floor_divide", "power", "maximum", "minimum",
              "mod", "floor_mod"):
    _register_binary(_name)
for _name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
    _register_binary(_name, "bool")


def _register_logical(name: str) -> None:
    op_name = f"relax.{name}"

    @register(op_name, pattern=OpPattern.BROADCAST, num_inputs=2)
    def infer(call: Call, ctx: Any) -> StructInfo:
        sinfo = binary_broadcast_sinfo(call, op_name)
        if sinfo.dtype not in ("bool", "void"):
            raise StructInfoError(f"{op_name} needs bool tensors, got dtype {sinfo.dtype}; "
                                  "compare with relax.op.not_equal(x, 0) first")
        return sinfo

    infer.__doc__ = f"Element-wise {name.replace('_', ' ')} of two bool tensors, with broadcasting."


for _name in ("logical_and", "logical_or"):
    _register_logical(_name)


def add(x1: Expr, x2: Expr) -> Call:
    """``x1 + x2`` element-wise, with numpy broadcasting."""
    return make_call("relax.add", x1, x2)


def subtract(x1: Expr, x2: Expr) -> Call:
    """``x1 - x2`` element-wise, with numpy broadcasting."""
    return make_call("relax.subtract", x1, x2)


def multiply(x1: Expr, x2: Expr) -> Call:
    """``x1 * x2`` element-wise, with numpy broadcasting."""
    return make_call("relax.multiply", x1, x2)


def divide(x1: Expr, x2: Expr) -> Call:
    """``x1 / x2`` element-wise, with numpy broadcasting."""
    return make_call("relax.divide", x1, x2)


def floor_divide(x1: Expr, x2: Expr) -> Call:
    """``floor(x1 / x2)`` element-wise, with numpy broadcasting."""
    return make_call("relax.floor_divide", x1, x2)


def power(x1: Expr, x2: Expr) -> Call:
    """``x1 ** x2`` element-wise, with numpy broadcasting."""
    return make_call("relax.power", x1, x2)


def maximum(x1: Expr, x2: Expr) -> Call:
    """The larger of ``x1`` and ``x2`` element-wise, with numpy broadcasting."""
    return make_call("relax.maximum", x1, x2)


def minimum(x1: Expr, x2: Expr) -> Call:
    """The smaller of ``x1`` and ``x2`` element-wise, with numpy broadcasting."""
    return make_call("relax.minimum", x1, x2)


def equal(x1: Expr, x2: Expr) -> Call:
    """``x1 == x2`` element-wise (a bool tensor), with numpy broadcasting."""
    return make_call("relax.equal", x1, x2)


def not_equal(x1: Expr, x2: Expr) -> Call:
    """``x1 != x2`` element-wise (a bool tensor)."""
    return make_call("relax.not_equal", x1, x2)


def less(x1: Expr, x2: Expr) -> Call:
    """``x1 < x2`` element-wise (a bool tensor)."""
    return make_call("relax.less", x1, x2)


def less_equal(x1: Expr, x2: Expr) -> Call:
    """``x1 <= x2`` element-wise (a bool tensor)."""
    return make_call("relax.less_equal", x1, x2)


def greater(x1: Expr, x2: Expr) -> Call:
    """``x1 > x2`` element-wise (a bool tensor)."""
    return make_call("relax.greater", x1, x2)


def greater_equal(x1: Expr, x2: Expr) -> Call:
    """``x1 >= x2`` element-wise (a bool tensor)."""
    return make_call("relax.greater_equal", x1, x2)


def logical_and(x1: Expr, x2: Expr) -> Call:
    """``x1 and x2`` element-wise on bool tensors, with numpy broadcasting."""
    return make_call("relax.logical_and", x1, x2)


def logical_or(x1: Expr, x2: Expr) -> Call:
    """``x1 or x2`` element-wise on bool tensors, with numpy broadcasting."""
    return make_call("relax.logical_or", x1, x2)


def mod(x1: Expr, x2: Expr) -> Call:
    """The remainder of ``x1 / x2`` with the dividend's sign (C's ``%``, ``fmod`` for floats)."""
    return make_call("relax.mod", x1, x2)


def floor_mod(x1: Expr, x2: Expr) -> Call:
    """The remainder of the floor division, with the divisor's sign (Python's ``%``)."""
    return make_call("relax.floor_mod", x1, x2)


def _register_bitwise(name: str) -> None:
    op_name = f"relax.{name}"

    @register(op_name, pattern=OpPattern.BROADCAST, num_inputs=2)
    def infer(call: Call, ctx: Any) -> StructInfo:
        sinfo = binary_broadcast_sinfo(call, op_name)
        if sinfo.dtype != "void" and not (sinfo.dtype == "bool" or sinfo.dtype.startswith(("int", "uint"))):
            raise StructInfoError(f"{op_name} needs integer or bool tensors, got dtype {sinfo.dtype}")
        return sinfo

    infer.__doc__ = f"Element-wise {name.replace('_', ' ')} of integer tensors, with broadcasting."


for _name in ("bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"):
    _register_bitwise(_name)


def bitwise_and(x1: Expr, x2: Expr) -> Call:
    """``x1 & x2`` bit by bit (integer or bool tensors)."""
    return make_call("relax.bitwise_and", x1, x2)


def bitwise_or(x1: Expr, x2: Expr) -> Call:
    """``x1 | x2`` bit by bit (integer or bool tensors)."""
    return make_call("relax.bitwise_or", x1, x2)


def bitwise_xor(x1: Expr, x2: Expr) -> Call:
    """``x1 ^ x2`` bit by bit (integer or bool tensors)."""
    return make_call("relax.bitwise_xor", x1, x2)


def left_shift(x1: Expr, x2: Expr) -> Call:
    """``x1 << x2`` element-wise (integers)."""
    return make_call("relax.left_shift", x1, x2)


def right_shift(x1: Expr, x2: Expr) -> Call:
    """``x1 >> x2`` element-wise, arithmetic for signed integers."""
    return make_call("relax.right_shift", x1, x2)


__all__ += ["mod", "floor_mod", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"]
