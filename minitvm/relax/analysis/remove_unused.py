"""``remove_all_unused``: drop bindings whose variables nothing uses.

A binding goes when its variable is unused and evaluating its value cannot have a side
effect (:func:`contains_impure_call`): an unused ``R.call_packed("f", x, out)`` stays, in a
dataflow block too, and so do the bindings it reads.  ``match_cast`` bindings always stay
(a run-time check, and the definition of the symbolic variables it matches), as in TVM.
Removing one binding can make another unused, so this repeats until nothing changes.

Inside :func:`bindings_outside_dataflow_kept` only dataflow blocks are pruned: minitvm's
default pipeline runs so, because TVM's default build pipeline has no dead-code elimination
(its fusion passes, which have one, are not in it), so a pure call outside a dataflow block
whose result nobody reads still runs there.
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any

from ...ir.module import IRModule
from ...support.flags import switched_on
from ..expr import (
    DataflowBlock,
    Function,
    If,
    MatchCast,
    SeqExpr,
    VarBinding,
    _set_struct_info,
    is_normalized,
    mark_normalized,
    struct_info_of,
)
from .purity import contains_impure_call
from .vars import _collect

__all__ = ["remove_all_unused", "bindings_outside_dataflow_kept"]

#: set while only dataflow blocks may lose bindings (see the module docstring)
_DATAFLOW_ONLY: contextvars.ContextVar[bool] = contextvars.ContextVar("dataflow_only", default=False)


def bindings_outside_dataflow_kept() -> contextlib.AbstractContextManager[None]:
    """Within: :func:`remove_all_unused` (and every pass built on it) prunes dataflow blocks only."""
    return switched_on(_DATAFLOW_ONLY)


def remove_all_unused(func: Any, mod: IRModule | None = None) -> Any:
    """``func`` (a Relax Function, any expression, or every Relax function of an IRModule)
    without unused bindings.  ``mod`` (implied for an IRModule) tells whether calls of its
    functions are pure; without it a call of a function nothing describes is kept."""
    if isinstance(func, IRModule):
        funcs = {gv: _prune(f, func) if isinstance(f, Function) else f for gv, f in func.functions.items()}
        return IRModule(funcs, func.attrs)
    return _prune(func, mod)


def _prune(expr: Any, mod: IRModule | None) -> Any:
    if isinstance(expr, Function):
        body = _prune(expr.body, mod)
        if body is expr.body:
            return expr
        new = Function(expr.params, body, expr.ret_struct_info, expr.is_pure, expr.attrs)
        if is_normalized(expr) and _no_blocks_to_merge(body):
            mark_normalized(new)  # fewer bindings, each as it was: normalized still
        return new
    if isinstance(expr, If):
        then, other = _prune(expr.true_branch, mod), _prune(expr.false_branch, mod)
        if then is expr.true_branch and other is expr.false_branch:
            return expr
        return _with_sinfo(If(expr.cond, then, other), expr)
    if isinstance(expr, SeqExpr):
        return _prune_seq(expr, mod)
    return expr


def _no_blocks_to_merge(expr: Any) -> bool:
    """No two neighbouring blocks of one kind in ``expr``'s sequences, inner ones too (a block
    emptied between them leaves such a pair, which normalizing would join)."""
    if isinstance(expr, SeqExpr):
        kinds = [type(b) for b in expr.blocks]
        return (all(a is not b for a, b in zip(kinds, kinds[1:]))
                and all(_no_blocks_to_merge(b.value) for block in expr.blocks for b in block.bindings))
    if isinstance(expr, Function):
        return _no_blocks_to_merge(expr.body)
    if isinstance(expr, If):
        return _no_blocks_to_merge(expr.true_branch) and _no_blocks_to_merge(expr.false_branch)
    return True


def _prune_seq(seq: SeqExpr, mod: IRModule | None) -> SeqExpr:
    # inner scopes first (branches, local functions)
    blocks: list[tuple[type, list]] = []
    for block in seq.blocks:
        bindings = []
        for b in block.bindings:
            value = _prune(b.value, mod)
            if value is not b.value:
                b = VarBinding(b.var, value) if isinstance(b, VarBinding) else MatchCast(b.var, value, b.struct_info)
            bindings.append(b)
        blocks.append((type(block), bindings))

    dataflow_only = _DATAFLOW_ONLY.get()
    while True:
        used = set(_collect(seq.body).used)
        for _, bindings in blocks:
            for b in bindings:
                used |= set(_collect(b.value).used)
        removed = False
        for cls, bindings in blocks:
            keep = [b for b in bindings if b.var in used or (dataflow_only and cls is not DataflowBlock)
                    or not _removable(b, cls is DataflowBlock, mod)]
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


def _removable(binding: Any, in_dataflow: bool, mod: IRModule | None) -> bool:
    """May this unused binding go?  Not a match_cast, nor a value with an impure call (in a
    dataflow block, where calls are pure by construction, only a call known to be impure
    counts)."""
    if isinstance(binding, MatchCast):
        return False
    return not contains_impure_call(binding.value, mod=mod, unknown_is_impure=not in_dataflow)


def _with_sinfo(new: Any, old: Any) -> Any:
    sinfo = struct_info_of(old)
    if sinfo is not None:
        _set_struct_info(new, sinfo)
    return new

