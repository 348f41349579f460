"""Element-wise unary operators: the result has the input's shape.

Each one is a row of :data:`minitvm.tir.op_table.UNARY` (``exp``, ``sin``, ``isnan`` ...): its
builder (``relax.op.exp``) and its struct-info inference are made here from the row.  ``clip``
takes attributes and is written out.
"""

from __future__ import annotations

from typing import Any

from ...ir import dtype as _dt
from ...ir.node import replace
from ...tir.op_table import UNARY, ElementwiseOp
from ..expr import Call, Expr
from ..struct_info import StructInfo, StructInfoError
from .elementwise import builder
from .registry import OpPattern, check_num_args, make_call, register, tensor_arg

__all__ = ["clip", "unary_sinfo"]


def unary_sinfo(call: Call, op_name: str, require_float: bool = False) -> StructInfo:
    """Struct info of an element-wise unary op: the input's, unchanged."""
    check_num_args(call, op_name, 1)
    x = tensor_arg(call, 0, op_name, "x")
    if require_float and not x.is_unknown_dtype and not _dt.is_float(x.dtype):
        raise StructInfoError(f"{op_name} needs a floating-point tensor, got dtype {x.dtype}")
    return x


def _check_dtype(row: ElementwiseOp, dtype: str) -> None:
    """Refuse an operand dtype the row's ``dtypes`` rule excludes (``float``: ``unary_sinfo``;
    ``int_or_bool``, ``bitwise_not``, takes floats as TVM's struct info does, LegalizeOps refuses them)."""
    if row.dtypes == "bool" and dtype != "bool":
        raise StructInfoError(f"{row.relax_name} needs a bool tensor, got dtype {dtype}")


def _register(row: ElementwiseOp) -> None:
    def infer(call: Call, ctx: Any) -> StructInfo:
        x = unary_sinfo(call, row.relax_name, row.dtypes == "float")
        if not x.is_unknown_dtype:
            _check_dtype(row, x.dtype)
        return replace(x, dtype=row.result) if row.result else x

    infer.__doc__ = row.doc
    register(row.relax_name, pattern=OpPattern.ELEMWISE, num_inputs=1)(infer)


for _row in UNARY:
    _register(_row)
    globals()[_row.name] = builder(_row)
__all__ += [row.name for row in UNARY]


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
