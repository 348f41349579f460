"""ExpandTupleArguments: an internal function taking a tuple parameter takes its elements as
separate parameters instead (nested tuples flattened), and every call passes them so (TVM's
``relax.transform.ExpandTupleArguments``).  CanonicalizeBindings then folds the reads of the
rebuilt tuple (``args[0]`` is ``A``)."""

from __future__ import annotations

from typing import Any

from ...ir.module import GlobalVar, IRModule
from ...transform import PassContext, Sequential, module_pass
from ..block_builder import BlockBuilder
from ..expr import (
    BindingBlock,
    Call,
    Function,
    SeqExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
    _set_struct_info,
    struct_info_of,
)
from ..struct_info import TupleStructInfo
from ._util import replace_callees
from .canonicalize_bindings import CanonicalizeBindings
from .dead_code_elimination import DeadCodeElimination

__all__ = ["ExpandTupleArguments"]


def _leaves(sinfo: Any, name: str) -> tuple[list[Var], Any]:
    """New parameters for the leaves of ``sinfo`` and the tuple expression rebuilding it."""
    if not isinstance(sinfo, TupleStructInfo):
        var = Var(name, sinfo)
        return [var], var
    params, fields = [], []
    for i, field in enumerate(sinfo.fields):
        p, e = _leaves(field, f"{name}_{i}")
        params += p
        fields.append(e)
    return params, Tuple(fields)


def _flatten_arg(arg: Any, sinfo: Any) -> list:
    if not isinstance(sinfo, TupleStructInfo):
        return [arg]
    fields = arg.fields if isinstance(arg, Tuple) else [TupleGetItem(arg, i) for i in range(len(sinfo.fields))]
    return [x for f, s in zip(fields, sinfo.fields) for x in _flatten_arg(f, s)]


def _expand(func: Function) -> Function | None:
    if (func.attrs and "global_symbol" in func.attrs) or not any(
            isinstance(p.struct_info, TupleStructInfo) for p in func.params):
        return None
    params, rebuild = [], []
    for p in func.params:
        leaves, expr = _leaves(p.struct_info, p.name)
        params += leaves
        if expr is not leaves[0] or len(leaves) != 1:
            rebuild.append(VarBinding(p, expr))
    body = func.body
    body = SeqExpr((BindingBlock(tuple(rebuild)), *body.blocks), body.body)
    bb = BlockBuilder()
    return bb._make_function(params, bb.normalize(body), func.ret_struct_info, func.is_pure, func.attrs)


def _call_rewrite(old_params: tuple) -> Any:
    def rewrite(gv: GlobalVar, old: Call, mutator: Any) -> Call:
        args = [x for a, p in zip(old.args, old_params) for x in _flatten_arg(a, p.struct_info)]
        call = Call(gv, args, old.attrs, old.sinfo_args)
        _set_struct_info(call, struct_info_of(old))
        return call
    return rewrite


@module_pass(opt_level=0, name="ExpandTupleArgumentsInner")
class _Inner:
    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        changes = {}
        for gv, f in mod.functions.items():
            new = _expand(f) if isinstance(f, Function) else None
            if new is not None:
                changes[gv] = (new, _call_rewrite(f.params))
        return replace_callees(mod, changes)


def ExpandTupleArguments() -> Sequential:  # noqa: N802 - TVM's name
    """``ExpandTupleArguments()``: the expansion, then CanonicalizeBindings and DeadCodeElimination."""
    return Sequential([_Inner(), CanonicalizeBindings(), DeadCodeElimination()], name="ExpandTupleArguments")
