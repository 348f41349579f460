"""How a Relax operator is defined: one struct-info inference function, decorated.

    @register("relax.exp", pattern=OpPattern.ELEMWISE)
    def _infer_exp(call, ctx):
        return unary_sinfo(call, "relax.exp", require_float=True)

    def exp(x):
        return make_call("relax.exp", x)

The decorator creates the :class:`~minitvm.ir.Op` and sets its attributes
``FInferStructInfo``, ``TOpPattern`` (for fusion) and ``FPurity``; later layers add
``FLegalize`` with :func:`minitvm.ir.register_op_attr`.
"""

from __future__ import annotations

import enum
from typing import Any, Callable

from ...ir.op import Op, register_op
from ..expr import Call, struct_info_of
from ..struct_info import StructInfo, StructInfoError, TensorStructInfo, struct_info_text

__all__ = ["OpPattern", "register", "make_call", "tensor_arg", "check_num_args"]


class OpPattern(enum.IntEnum):
    """How an operator's outputs depend on its inputs (TVM's OpPatternKind), for fusion."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_ELEMWISE_FUSABLE = 4
    TUPLE = 7
    OPAQUE = 8


InferFn = Callable[[Call, Any], StructInfo]


def register(name: str, *, pattern: OpPattern = OpPattern.OPAQUE, pure: bool = True,
             num_inputs: int = -1) -> Callable[[InferFn], InferFn]:
    """Register operator ``name`` whose struct info the decorated function infers.

    The function receives the call and the BlockBuilder normalizing it, and returns the
    struct info of the result or raises :class:`StructInfoError` naming the op.
    """
    def wrap(infer: InferFn) -> InferFn:
        op = register_op(name, (infer.__doc__ or "").strip(), num_inputs)
        op.set_attr("FInferStructInfo", infer)
        op.set_attr("TOpPattern", int(pattern))
        op.set_attr("FPurity", pure)
        return infer

    return wrap


def make_call(op_name: str, *args: Any, attrs: dict | None = None,
              sinfo_args: Any = ()) -> Call:
    """``Call(Op.get(op_name), args, attrs, sinfo_args)``."""
    return Call(Op.get(op_name), args, attrs, sinfo_args)


def check_num_args(call: Call, op_name: str, count: int) -> None:
    if len(call.args) != count:
        raise StructInfoError(f"{op_name} takes {count} argument{'s' if count != 1 else ''}, "
                              f"got {len(call.args)}")


def tensor_arg(call: Call, index: int, op_name: str, arg_name: str) -> TensorStructInfo:
    """The struct info of argument ``index``, which must be a tensor."""
    sinfo = struct_info_of(call.args[index])
    if sinfo is None:
        raise StructInfoError(f"{op_name}: argument {arg_name} has no struct info; normalize it first")
    if not isinstance(sinfo, TensorStructInfo):
        raise StructInfoError(f"{op_name} expects a tensor for {arg_name}, got {struct_info_text(sinfo)}")
    return sinfo
