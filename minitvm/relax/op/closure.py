"""Closures, as LambdaLift leaves them: ``R.make_closure(gv, (captured, ...))`` packs a lifted
function with the values it captured; ``R.invoke_closure`` / ``R.invoke_pure_closure`` call
one (TVM's ``relax.make_closure`` / ``relax.invoke_closure`` / ``relax.invoke_pure_closure``)."""

from __future__ import annotations

from typing import Any, Sequence

from ...ir.module import GlobalVar
from ..expr import Call, Expr, Tuple, struct_info_of
from ..struct_info import ObjectStructInfo, StructInfo, StructInfoError, TupleStructInfo
from .registry import OpPattern, make_call, register

__all__ = ["make_closure", "invoke_closure", "invoke_pure_closure"]


@register("relax.make_closure", pattern=OpPattern.OPAQUE)
def _infer_make_closure(call: Call, ctx: Any) -> StructInfo:
    """A closure: a lifted function and the tuple of values it captured."""
    if len(call.args) != 2 or not isinstance(call.args[0], GlobalVar):
        raise StructInfoError("relax.make_closure takes the GlobalVar of a function and a tuple of captured values")
    if not isinstance(struct_info_of(call.args[1]), TupleStructInfo):
        raise StructInfoError("relax.make_closure: the captured values must be a tuple")
    return ObjectStructInfo()


def _infer_invoke(name: str) -> Any:
    def infer(call: Call, ctx: Any) -> StructInfo:
        if len(call.args) != 2 or not isinstance(struct_info_of(call.args[1]), TupleStructInfo):
            raise StructInfoError(f"{name} takes a closure and a tuple of arguments")
        if not call.sinfo_args:
            raise StructInfoError(f"{name} needs the struct info of its result (sinfo_args)")
        sinfos = list(call.sinfo_args)
        return sinfos[0] if len(sinfos) == 1 else TupleStructInfo(sinfos)
    infer.__doc__ = "Call a closure" + (" declared free of side effects." if "pure" in name else ".")
    return infer


register("relax.invoke_closure", pattern=OpPattern.OPAQUE, pure=False)(_infer_invoke("relax.invoke_closure"))
register("relax.invoke_pure_closure", pattern=OpPattern.OPAQUE)(_infer_invoke("relax.invoke_pure_closure"))


def _sinfo_list(sinfo_args: Any) -> list:
    if isinstance(sinfo_args, StructInfo):
        return [sinfo_args]
    if isinstance(sinfo_args, Sequence):
        return list(sinfo_args)
    raise TypeError(f"sinfo_args must be a StructInfo or a list of them, got {sinfo_args!r}")


def _tuple(args: Any) -> Expr:
    return Tuple(list(args)) if isinstance(args, (list, tuple)) else args


def make_closure(func: GlobalVar, args: Any) -> Call:
    """``R.make_closure(cls.f, (x, y))``: ``f`` with ``x`` and ``y`` bound to its last parameters."""
    return make_call("relax.make_closure", func, _tuple(args))


def invoke_closure(closure: Expr, args: Any, sinfo_args: Any) -> Call:
    """Call ``closure`` on ``args``; its result has struct info ``sinfo_args``."""
    return make_call("relax.invoke_closure", closure, _tuple(args), sinfo_args=_sinfo_list(sinfo_args))


def invoke_pure_closure(closure: Expr, args: Any, sinfo_args: Any) -> Call:
    """As :func:`invoke_closure`, for a closure known to be pure."""
    return make_call("relax.invoke_pure_closure", closure, _tuple(args), sinfo_args=_sinfo_list(sinfo_args))
