"""Does a ``R.call_tir`` agree with the PrimFunc it calls (TVM's ``FValidate`` of call_tir,
call_tir_inplace and call_tir_with_grad, which the well-formed check runs)?

The PrimFunc's parameters are the explicit arguments followed by the outputs.  The arguments'
struct info is matched against the first group (a rank, dtype or constant-extent mismatch is
an error), which binds the PrimFunc's symbolic extents; the outputs' struct info, with those
bindings substituted, must then be a base of the call's ``out_sinfo`` (an output extent the
arguments do not determine is not checked).  ``call_tir_inplace`` outputs written over an
argument take that argument's parameter.
"""

from __future__ import annotations

from typing import Any

from ...ir.module import GlobalVar, IRModule
from ...tir.function import PrimFunc
from ..expr import Call, Var, struct_info_of
from ..struct_info import FuncStructInfo, TupleStructInfo, prim_func_struct_info, struct_info_text
from .struct_info_analysis import derive_call_ret_struct_info, is_base_of

__all__ = ["call_tir_signature_error"]

_CALL_TIR_OPS = ("relax.call_tir", "relax.call_tir_inplace", "relax.call_tir_with_grad")


def _signature(call: Call, mod: IRModule) -> tuple[str, list, list] | None:
    """The callee's name, its parameters' struct info and the arguments' (None when there is
    nothing to check against: not a PrimFunc of ``mod``, symbolic ``tir_vars`` passed)."""
    if len(call.args) != 2 or len(call.sinfo_args) != 1:
        return None
    callee = call.args[0]
    func = mod.functions.get(callee) if isinstance(callee, GlobalVar) else None
    args = struct_info_of(call.args[1])
    if not isinstance(func, PrimFunc) or not isinstance(args, TupleStructInfo):
        return None
    try:
        params = list(prim_func_struct_info(func).params)
    except (TypeError, ValueError):  # a signature Relax cannot describe (int32 extents ...)
        return None
    return callee.name_hint, params, list(args.fields)


def call_tir_signature_error(call: Call, mod: IRModule) -> str | None:
    """Why ``call`` (a call_tir of a PrimFunc of ``mod``) does not fit its callee, or None."""
    if getattr(call.op, "name", None) not in _CALL_TIR_OPS:
        return None
    found = _signature(call, mod)
    if found is None:
        return None
    name, params, args = found
    op = call.op.name
    if len(args) > len(params):
        return (f"{op} calls {name} with {len(args)} explicit arguments, but {name} accepts only "
                f"{len(params)} arguments in total")
    outs: list[Any] = params[len(args):]
    if op == "relax.call_tir_inplace":
        for i, index in enumerate((call.attrs or {}).get("inplace_indices", ())):
            if int(index) >= 0 and int(index) < len(params):
                outs.insert(i, params[int(index)])
    ret = outs[0] if len(outs) == 1 else TupleStructInfo(outs)
    callee_sinfo = FuncStructInfo(params[:len(args)], ret)
    dummy = Call(Var(name, callee_sinfo), [Var(f"arg{i}", a) for i, a in enumerate(args)])
    try:
        inferred = derive_call_ret_struct_info(callee_sinfo, dummy)
    except (TypeError, ValueError) as e:
        return f"{op} of {name}: the arguments do not fit the PrimFunc's parameters: {e}"
    explicit = call.sinfo_args[0]
    if not is_base_of(inferred, explicit):
        return (f"the out_sinfo of {op} must be compatible with the PrimFunc {name}: its signature implies "
                f"the output {struct_info_text(inferred)}, but out_sinfo is {struct_info_text(explicit)}")
    return None
