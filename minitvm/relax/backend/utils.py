"""Helpers for BYOC check functions (TVM's ``relax.backend.utils``)."""

from __future__ import annotations

from ...ir.op import Op
from ..expr import DataflowVar
from ..transform.fuse_ops_by_pattern import PatternCheckContext

__all__ = ["has_leaking_intermediate_variables", "has_op"]


def has_op(op_name: str) -> bool:
    """Whether an operator of this name is registered: a pattern table leaves out the ones minitvm
    lacks, as TVM's leave out those a build lacks."""
    try:
        Op.get(op_name)
    except Exception:  # OpNotRegisteredError
        return False
    return True


def has_leaking_intermediate_variables(context: PatternCheckContext) -> bool:
    """Whether a value computed inside the match, other than its result, is read outside it (or
    may be: a variable leaving the dataflow block) -- fusing would then compute it twice or hide it."""
    fused = set(context.matched_bindings)
    result = context.value_to_bound_var[context.matched_expr]
    intermediate = [v for v in context.matched_bindings if v is not result]
    if any(not isinstance(v, DataflowVar) for v in intermediate):
        return True
    return any(user not in fused for v in intermediate for user in context.var_usages.get(v, ()))
