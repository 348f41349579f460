"""``get_var2val``: each variable a function binds -> the value bound to it."""

from __future__ import annotations

from typing import Any

from ..expr import Function, MatchCast, Var, VarBinding
from ..expr_functor import ExprVisitor

__all__ = ["get_var2val"]


class _Collect(ExprVisitor):
    def __init__(self) -> None:
        self.out: dict[Var, Any] = {}

    def visit_var_binding_(self, binding: VarBinding) -> None:
        self.out[binding.var] = binding.value
        super().visit_var_binding_(binding)

    def visit_match_cast_(self, binding: MatchCast) -> None:
        self.out[binding.var] = binding.value
        super().visit_match_cast_(binding)


def get_var2val(func: Function) -> dict[Var, Any]:
    """Every variable bound in ``func`` (nested functions and branches too) -> its value: the
    ``var2val`` with which a ``relax.dpl`` pattern looks through variables."""
    collect = _Collect()
    collect.visit_expr(func)
    return collect.out
