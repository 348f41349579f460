"""``remove_all_unused``: drop bindings whose variables nothing uses.

Inside dataflow blocks every binding may go (dataflow is pure); outside, only bindings
of pure values (operators marked ``FPurity``, pure functions, plain values).  Removing one
binding can make another unused, so this repeats until nothing changes.
"""

from __future__ import annotations

from typing import Any

from ...ir.module import GlobalVar, IRModule
from ...ir.op import Op
from ..expr import (
    Call,
    DataflowBlock,
    Function,
    If,
    MatchCast,
    SeqExpr,
    TupleGetItem,
    VarBinding,
    _set_struct_info,
    is_leaf,
    struct_info_of,
)
from ..struct_info import FuncStructInfo
from .vars import _collect

__all__ = ["remove_all_unused"]


def remove_all_unused(func: Any) -> Any:
    """``func`` (a Relax Function, any expression, or every Relax function of an IRModule)
    without unused bindings."""
    if isinstance(func, IRModule):
        funcs = {gv: _prune(f) if isinstance(f, Function) else f for gv, f in func.functions.items()}
        return IRModule(funcs, func.attrs)
    return _prune(func)


def _prune(expr: Any) -> Any:
    if isinstance(expr, Function):
        body = _prune(expr.body)
        if body is expr.body:
            return expr
        return Function(expr.params, body, expr.ret_struct_info, expr.is_pure, expr.attrs)
    if isinstance(expr, If):
        then, other = _prune(expr.true_branch), _prune(expr.false_branch)
        if then is expr.true_branch and other is expr.false_branch:
            return expr
        return _with_sinfo(If(expr.cond, then, other), expr)
    if isinstance(expr, SeqExpr):
        return _prune_seq(expr)
    return expr


def _prune_seq(seq: SeqExpr) -> SeqExpr:
    # inner scopes first (branches, local functions)
    blocks: list[tuple[type, list]] = []
    for block in seq.blocks:
        bindings = []
        for b in block.bindings:
            value = _prune(b.value)
            if value is not b.value:
                b = VarBinding(b.var, value) if isinstance(b, VarBinding) else MatchCast(b.var, value, b.struct_info)
            bindings.append(b)
        blocks.append((type(block), bindings))

    while True:
        used = set(_collect(seq.body).used)
        for _, bindings in blocks:
            for b in bindings:
                used |= set(_collect(b.value).used)
        removed = False
        for cls, bindings in blocks:
            keep = [b for b in bindings if b.var in used or not _removable(b, cls is DataflowBlock)]
            if len(keep) != len(bindings):
                bindings[:] = keep
                removed = True
        if not removed:
            break

    new_blocks = []
    for old, (cls, bindings) in zip(seq.blocks, blocks):
        if not bindings:
            continue
        same = len(bindings) == len(old.bindings) and all(a is b for a, b in zip(bindings, old.bindings))
        new_blocks.append(old if same else cls(tuple(bindings)))
    if len(new_blocks) == len(seq.blocks) and all(a is b for a, b in zip(new_blocks, seq.blocks)):
        return seq
    return _with_sinfo(SeqExpr(tuple(new_blocks), seq.body), seq)


def _removable(binding: Any, in_dataflow: bool) -> bool:
    if in_dataflow:
        return True
    if isinstance(binding, MatchCast):
        return False  # a run-time check outside dataflow is kept
    value = binding.value
    if is_leaf(value) or isinstance(value, (TupleGetItem, Function)):
        return True
    if isinstance(value, Call):
        if isinstance(value.op, Op):
            return bool(value.op.get_attr("FPurity"))
        sinfo = struct_info_of(value.op) if not isinstance(value.op, GlobalVar) else None
        return isinstance(sinfo, FuncStructInfo) and sinfo.purity
    return False


def _with_sinfo(new: Any, old: Any) -> Any:
    sinfo = struct_info_of(old)
    if sinfo is not None:
        _set_struct_info(new, sinfo)
    return new

