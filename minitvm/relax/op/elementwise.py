"""The builders of the element-wise operators (``relax.op.exp``, ``relax.op.add`` ...), made from
their rows of :mod:`minitvm.tir.op_table`; :mod:`.unary` and :mod:`.binary` register their struct
info."""

from __future__ import annotations

from typing import Callable

from ...tir.op_table import ElementwiseOp
from ..expr import Call, Expr
from .registry import make_call

__all__ = ["builder"]

#: what each ``dtypes`` rule of the table asks of the operands, for docstrings
_DTYPE_NOTE = {"any": "", "float": " (a floating-point dtype)", "bool": " (bool)",
               "int_or_bool": " (an integer or bool dtype)"}


def _docstring(row: ElementwiseOp) -> str:
    note = _DTYPE_NOTE[row.dtypes]
    if row.arity == 1:
        params = f"x : relax.Expr\n    The input tensor{note}."
        shape = "the input's shape"
    else:
        params = (f"x1 : relax.Expr\n    The first operand, a tensor or a scalar{note}.\n"
                  f"x2 : relax.Expr\n    The second operand, of the same dtype.")
        shape = "the operands' shapes broadcast together"
    dtype = "bool" if row.result == "bool" else ("the input's" if row.arity == 1 else "the operands'")
    lowering = f"the intrinsic ``T.{row.intrinsic}`` per element" if row.intrinsic else "``topi." + row.name + "``"
    return (f"{row.doc}\n\nParameters\n----------\n{params}\n\nReturns\n-------\nresult : relax.Call\n"
            f"    A call of ``{row.relax_name}``: a tensor of {shape}, of {dtype} dtype.\n\n"
            f"Legalized to {lowering} (the row ``{row.name}`` of ``minitvm.tir.op_table``).")


def builder(row: ElementwiseOp) -> Callable[..., Call]:
    """``relax.op.<name>``: a function building a call of the op, with a readable docstring."""
    op_name = row.relax_name
    if row.arity == 1:
        def build(x: Expr) -> Call:
            return make_call(op_name, x)
    else:
        def build(x1: Expr, x2: Expr) -> Call:
            return make_call(op_name, x1, x2)
    build.__name__ = build.__qualname__ = row.name
    build.__module__ = "minitvm.relax.op"
    build.__doc__ = _docstring(row)
    return build
