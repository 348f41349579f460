"""Which variables an expression defines, uses without defining, and which functions
of the module it refers to."""

from __future__ import annotations

from typing import Any

from ...ir.module import GlobalVar
from ..expr import DataflowVar, Var
from ..expr_functor import ExprVisitor

__all__ = ["free_vars", "bound_vars", "all_vars", "all_global_vars"]


class _VarCollector(ExprVisitor):
    def __init__(self) -> None:
        self.used: dict[Var, None] = {}
        self.bound: dict[Var, None] = {}
        self.globals: dict[GlobalVar, None] = {}

    def visit_var_(self, op: Var) -> None:
        self.used.setdefault(op)

    def visit_dataflow_var_(self, op: DataflowVar) -> None:
        self.used.setdefault(op)

    def visit_var_def_(self, var: Var) -> None:
        self.bound.setdefault(var)

    def visit_dataflow_var_def_(self, var: DataflowVar) -> None:
        self.bound.setdefault(var)

    def visit_global_var_(self, op: GlobalVar) -> None:
        self.globals.setdefault(op)


def _collect(expr: Any) -> _VarCollector:
    c = _VarCollector()
    c.visit_expr(expr)
    return c


def free_vars(expr: Any) -> list[Var]:
    """Variables used in ``expr`` but not defined in it (a closure's captures), in order of use."""
    c = _collect(expr)
    return [v for v in c.used if v not in c.bound]


def bound_vars(expr: Any) -> list[Var]:
    """Variables ``expr`` defines (parameters, bindings), in order of definition."""
    return list(_collect(expr).bound)


def all_vars(expr: Any) -> list[Var]:
    """Every variable defined or used in ``expr``."""
    c = _collect(expr)
    return list(dict.fromkeys([*c.bound, *c.used]))


def all_global_vars(expr: Any) -> list[GlobalVar]:
    """The module functions ``expr`` refers to (``R.call_tir(@mm, ...)``, calls), in order."""
    return list(_collect(expr).globals)
