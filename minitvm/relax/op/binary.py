"""Element-wise binary operators with numpy broadcasting: arithmetic (add, subtract,
multiply, divide, power, maximum, minimum ...) and comparisons (equal ... greater_equal, whose
result is a bool tensor).

Each one is a row of :data:`minitvm.tir.op_table.BINARY`: its builder (``relax.op.add``) and its
struct-info inference are made here from the row.
"""

from __future__ import annotations

from typing import Any

from ...tir.expr import IntImm, PrimExpr
from ...tir.op_table import BINARY, ElementwiseOp
from ..analysis.struct_info_analysis import prove_dim_equal
from ..expr import Call, Var, struct_info_of
from ..struct_info import (
    PrimStructInfo,
    StructInfo,
    StructInfoError,
    StructInfoTypeError,
    TensorStructInfo,
    shape_text,
    struct_info_text,
)
from .elementwise import builder
from .registry import OpPattern, check_num_args, register, tensor_arg

__all__ = ["broadcast_shapes", "binary_broadcast_sinfo"]


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
    if sinfo is None or isinstance(sinfo, (PrimStructInfo, TensorStructInfo)):
        return sinfo if sinfo is not None else tensor_arg(call, index, op_name, arg_name)
    # as TVM, an operand that is neither a tensor nor a scalar is a TypeError
    raise StructInfoTypeError(f"{op_name} expects a tensor or a scalar (R.Prim) for {arg_name}, "
                              f"got {struct_info_text(sinfo)}")


def binary_broadcast_sinfo(call: Call, op_name: str, out_dtype: str | None = None) -> StructInfo:
    """Struct info of an element-wise binary op: same dtypes, broadcast shapes; the result
    has the operands' dtype unless ``out_dtype`` is given (bool for comparisons)."""
    check_num_args(call, op_name, 2)
    x1 = _tensor_or_scalar(call, 0, op_name, "x1")
    x2 = _tensor_or_scalar(call, 1, op_name, "x2")
    if isinstance(x1, PrimStructInfo) and isinstance(x2, PrimStructInfo):
        if x1.dtype != x2.dtype:
            raise StructInfoTypeError(f"{op_name}: operands have different dtypes {x1.dtype} and {x2.dtype}")
        return PrimStructInfo(out_dtype or x1.dtype)
    # a scalar operand (R.Prim) broadcasts as a 0-d tensor of its dtype
    x1, x2 = (TensorStructInfo([], x.dtype) if isinstance(x, PrimStructInfo) else x for x in (x1, x2))
    if x1.is_unknown_dtype or x2.is_unknown_dtype:
        dtype = "void"
    elif x1.dtype != x2.dtype:
        raise StructInfoTypeError(f"{op_name}: operands have different dtypes {x1.dtype} and {x2.dtype}; "
                              "cast one with relax.op.astype first")
    else:
        dtype = x1.dtype
    dtype = out_dtype or dtype
    vdevice = _out_vdevice(op_name, x1, x2)
    s1, s2 = x1.shape_values, x2.shape_values
    if s1 is not None and s2 is not None:
        shape = broadcast_shapes(op_name, s1, s2)
        if shape is not None:
            return TensorStructInfo(list(shape), dtype, vdevice)
    if isinstance(x1.shape, Var) and x1.shape is x2.shape:
        return TensorStructInfo(x1.shape, dtype, vdevice)  # one shape variable: the result has it too
    ndim = -1 if x1.ndim == -1 or x2.ndim == -1 else max(x1.ndim, x2.ndim)
    return TensorStructInfo(None, dtype, vdevice, ndim)


def _out_vdevice(op_name: str, x1: TensorStructInfo, x2: TensorStructInfo) -> Any:
    """The operands' virtual device (TVM: the one that names a target; two that differ are an error)."""
    v1, v2 = x1.vdevice, x2.vdevice
    if v1 is None or v1.target is None:
        return v2
    if v2 is None or v2.target is None or v1 == v2:
        return v1
    raise StructInfoTypeError(f"{op_name}: operands are on different virtual devices {v1} and {v2}")


_FLOAT_DTYPES = ("float", "bfloat")


def _check_dtype(row: ElementwiseOp, dtype: str) -> None:
    """Refuse operand dtypes the row's ``dtypes`` rule excludes (``int_or_bool`` rows take
    float tensors, as TVM's struct info does; LegalizeOps refuses them)."""
    op_name = row.relax_name
    if row.dtypes == "bool" and dtype != "bool":
        raise StructInfoError(f"{op_name} needs bool tensors, got dtype {dtype}; "
                              "compare with relax.op.not_equal(x, 0) first")
    if row.dtypes == "float" and not dtype.startswith(_FLOAT_DTYPES):
        raise StructInfoError(f"{op_name} needs floating-point tensors, got dtype {dtype}")


def _register(row: ElementwiseOp) -> None:
    @register(row.relax_name, pattern=OpPattern.BROADCAST, num_inputs=2)
    def infer(call: Call, ctx: Any) -> StructInfo:
        # (the rows with a result dtype of their own, the comparisons, take any operands)
        sinfo = binary_broadcast_sinfo(call, row.relax_name, row.result)
        if sinfo.dtype != "void" and row.result is None:
            _check_dtype(row, sinfo.dtype)
        return sinfo

    infer.__doc__ = row.doc


# every binary row of the operator table: relax.add ... relax.atan2, with its builder relax.op.<name>
for _row in BINARY:
    _register(_row)
    globals()[_row.name] = builder(_row)
__all__ += [row.name for row in BINARY]
