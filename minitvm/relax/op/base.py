"""Calls across IR levels: ``call_tir`` (a TensorIR PrimFunc in destination-passing
style), ``call_dps_packed`` (an external function in that style) and
``call_pure_packed`` (an external function that returns its result)."""

from __future__ import annotations

from typing import Any, Sequence

from ...ir.module import GlobalVar
from ..expr import Call, Expr, ExternFunc, ShapeExpr, Tuple, struct_info_of
from ..struct_info import ShapeStructInfo, StructInfo, StructInfoError, TensorStructInfo, TupleStructInfo
from .registry import OpPattern, make_call, register

__all__ = ["call_tir", "call_dps_packed", "call_pure_packed"]


def _out_sinfo(out_sinfo: Any, op_name: str) -> StructInfo:
    """One TensorStructInfo, or a list of them (several outputs form a tuple)."""
    if isinstance(out_sinfo, StructInfo):
        out_sinfo = [out_sinfo]
    if not isinstance(out_sinfo, (list, tuple)) or not out_sinfo:
        raise TypeError(f"{op_name}: out_sinfo must be a TensorStructInfo or a list of them, got {out_sinfo!r}")
    for s in out_sinfo:
        if not isinstance(s, TensorStructInfo):
            raise TypeError(f"{op_name}: every output struct info must be a TensorStructInfo, got {s!r}")
    return out_sinfo[0] if len(out_sinfo) == 1 else TupleStructInfo(list(out_sinfo))


def _args_tuple(args: Any) -> Expr:
    if isinstance(args, (list, tuple)):
        return Tuple(list(args))
    if isinstance(args, Expr) and isinstance(struct_info_of(args), TensorStructInfo):
        return Tuple([args])
    return args


def _infer_dps(call: Call, op_name: str, callee_kinds: tuple, callee_text: str) -> StructInfo:
    if len(call.args) not in (2, 3):
        raise StructInfoError(f"{op_name} takes the callee, a tuple of arguments and optionally "
                              f"the symbolic variables, got {len(call.args)} arguments")
    if not isinstance(call.args[0], callee_kinds):
        raise StructInfoError(f"{op_name}: the callee must be {callee_text}, got {call.args[0]!r}")
    if not isinstance(struct_info_of(call.args[1]), TupleStructInfo):
        raise StructInfoError(f"{op_name}: the arguments must be a tuple")
    if len(call.args) == 3 and not isinstance(struct_info_of(call.args[2]), ShapeStructInfo):
        raise StructInfoError(f"{op_name}: tir_vars must be a shape (R.shape([...]))")
    if len(call.sinfo_args) != 1:
        raise StructInfoError(f"{op_name} needs exactly one output struct info, got {len(call.sinfo_args)}")
    return call.sinfo_args[0]


@register("relax.call_tir", pattern=OpPattern.OPAQUE)
def _infer_call_tir(call: Call, ctx: Any) -> StructInfo:
    """Call a PrimFunc that writes its outputs into buffers allocated by the caller."""
    return _infer_dps(call, "relax.call_tir", (GlobalVar,), "a GlobalVar of a PrimFunc")


@register("relax.call_dps_packed", pattern=OpPattern.OPAQUE)
def _infer_call_dps_packed(call: Call, ctx: Any) -> StructInfo:
    """Call an external function that writes its outputs into caller-allocated tensors."""
    return _infer_dps(call, "relax.call_dps_packed", (ExternFunc,), "an ExternFunc")


@register("relax.call_pure_packed", pattern=OpPattern.OPAQUE)
def _infer_call_pure_packed(call: Call, ctx: Any) -> StructInfo:
    """Call an external function known to be free of side effects."""
    if not call.args or not isinstance(call.args[0], ExternFunc):
        raise StructInfoError("relax.call_pure_packed: the first argument must be an ExternFunc")
    if len(call.sinfo_args) != 1:
        raise StructInfoError("relax.call_pure_packed needs exactly one result struct info")
    return call.sinfo_args[0]


def call_tir(gvar: GlobalVar, args: Any, out_sinfo: Any = None, tir_vars: Any = None, *,
             out_ty: Any = None) -> Call:
    """``R.call_tir(gvar, (x, w), out_sinfo=R.Tensor((n, 128), "float32"))``.

    ``tir_vars`` (a ShapeExpr or list of PrimExprs) passes symbolic values the PrimFunc
    takes as trailing scalar parameters.  ``out_ty`` is the newer spelling of ``out_sinfo``.
    """
    out_sinfo = out_sinfo if out_sinfo is not None else out_ty
    if out_sinfo is None:
        raise TypeError("relax.call_tir: out_sinfo is required")
    if not isinstance(gvar, GlobalVar):
        raise TypeError(f"relax.call_tir: expected the GlobalVar of a PrimFunc, got {gvar!r}")
    call_args: list[Any] = [gvar, _args_tuple(args)]
    if tir_vars is not None:
        call_args.append(tir_vars if isinstance(tir_vars, Expr) else ShapeExpr(list(tir_vars)))
    return make_call("relax.call_tir", *call_args, sinfo_args=[_out_sinfo(out_sinfo, "relax.call_tir")])


def call_dps_packed(func: str | ExternFunc, args: Any, out_sinfo: Any) -> Call:
    """Call the registered function ``func`` in destination-passing style."""
    callee = ExternFunc(func) if isinstance(func, str) else func
    return make_call("relax.call_dps_packed", callee, _args_tuple(args),
                     sinfo_args=[_out_sinfo(out_sinfo, "relax.call_dps_packed")])


def call_pure_packed(func: str | ExternFunc, *args: Any, sinfo_args: Any) -> Call:
    """Call the registered function ``func`` and declare it pure; ``sinfo_args`` is the
    struct info of its result."""
    callee = ExternFunc(func) if isinstance(func, str) else func
    if isinstance(sinfo_args, StructInfo):
        sinfo_args = [sinfo_args]
    elif isinstance(sinfo_args, Sequence) and len(sinfo_args) > 1:
        sinfo_args = [TupleStructInfo(list(sinfo_args))]
    return make_call("relax.call_pure_packed", callee, *args, sinfo_args=list(sinfo_args))
