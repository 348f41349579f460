"""Which variables an expression defines, uses without defining, and which functions
of the module it refers to."""

from __future__ import annotations

from typing import Any

from ...ir.module import GlobalVar
from ..expr import Binding, BindingBlock, DataflowVar, Var
from ..expr_functor import ExprVisitor

__all__ = ["free_vars", "bound_vars", "all_vars", "all_global_vars", "used_vars", "udchain", "name_to_binding",
           "post_order_visit"]


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


def used_vars(expr: Any) -> list[Var]:
    """Every variable ``expr`` reads (defined in it or not), in order of first use."""
    return list(_collect(expr).used)


def udchain(block: BindingBlock) -> dict[Var, list[Var]]:
    """Use-def chains of a binding block: each variable the block binds or reads, mapped to
    the variables of the bindings that read it (in binding order)."""
    users: dict[Var, list[Var]] = {}
    for binding in block.bindings:
        for v in used_vars(binding.value):
            users.setdefault(v, []).append(binding.var)
        users.setdefault(binding.var, [])
    return users


class _Bindings(ExprVisitor):
    def __init__(self) -> None:
        self.by_name: dict[str, list[Binding]] = {}

    def visit_binding(self, binding: Binding) -> None:
        self.by_name.setdefault(binding.var.name_hint, []).append(binding)
        super().visit_binding(binding)


def name_to_binding(func: Any) -> dict[str, list[Binding]]:
    """The bindings of ``func`` by their variable's name (a name bound twice lists both)."""
    c = _Bindings()
    c.visit_expr(func)
    return c.by_name


class _PostOrder(ExprVisitor):
    def __init__(self, fvisit: Any) -> None:
        self.fvisit = fvisit

    def visit_expr(self, expr: Any) -> None:
        super().visit_expr(expr)
        self.fvisit(expr)


def post_order_visit(expr: Any, fvisit: Any) -> None:
    """Call ``fvisit`` on every expression inside ``expr`` (and ``expr`` itself), children
    first (TVM's ``relax.analysis.post_order_visit``); a variable is visited where it is used."""
    _PostOrder(fvisit).visit_expr(expr)
