"""What every legalization shares (TVM's ``relax.transform.legalize_ops.common``):
``register_legalize``, the ``LegalizeFunc`` type, and the helpers the rules are made of."""

from __future__ import annotations

from typing import Any, Callable

from ....ir.op import Op
from ....tir.expr import FloatImm, IntImm
from ...block_builder import BlockBuilder
from ...expr import Call, Constant, Expr, Tuple, TupleGetItem, struct_info_of

__all__ = ["LegalizeFunc", "register_legalize"]

#: ``(bb, call) -> Expr``: how a call of one operator becomes TIR-level Relax
LegalizeFunc = Callable[[BlockBuilder, Call], Expr]


def register_legalize(op_name: str, legal_func: LegalizeFunc | None = None, level: int = 10) -> Any:
    """Set the ``FLegalize`` attribute of ``op_name`` (usable as a decorator)."""
    def wrap(f: LegalizeFunc) -> LegalizeFunc:
        Op.get(op_name).set_attr("FLegalize", f, level)
        return f

    return wrap if legal_func is None else wrap(legal_func)


def _call_topi_without_attr(te_func: Callable, primfunc_name: str | None = None) -> LegalizeFunc:
    """A legalization that is one ``call_te`` of ``te_func`` on the call's arguments, the
    kernel named ``primfunc_name`` (default: the function's own name)."""
    name = primfunc_name or te_func.__name__
    return lambda bb, call: bb.call_te(te_func, *call.args, primfunc_name_hint=name)


def _try_convert_to_scalar_const(expr: Expr, python_native: bool = False) -> Any:
    """A 0-d constant as a TIR immediate of its dtype (or a Python number with
    ``python_native=True``), anything else as it is: a kernel then needs no parameter for it."""
    if isinstance(expr, Constant) and expr.data.numpy().ndim == 0:
        value = expr.data.numpy()[()].item()
        if python_native:
            return value
        dtype = str(expr.data.numpy().dtype)
        return FloatImm(dtype, value) if dtype.startswith("float") else IntImm(dtype, int(value))
    return expr


def _tensors_of(bb: BlockBuilder, tup: Expr) -> list[Expr]:
    """The fields of a tuple-valued expression, as separate Relax values."""
    if isinstance(tup, Tuple):
        return list(tup.fields)
    sinfo = struct_info_of(tup)
    return [bb.emit(TupleGetItem(tup, k)) for k in range(len(sinfo.fields))]
