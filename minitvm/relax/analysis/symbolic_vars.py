"""Symbolic shape variables of a Relax function (TVM's ``relax.analysis.defined_symbolic_vars``,
``free_symbolic_vars`` and ``collect_non_negative_expressions``).

A function *defines* a symbolic variable where matching a value against a struct info pins it
down: a bare dimension or prim value in a parameter's struct info (``n`` in ``R.Tensor((n,
4))``, ``R.Shape([n, m])``, ``R.Prim(value=n)``) or in a ``match_cast`` pattern.  It *uses*
one wherever one appears: in any struct info, shape expression, prim value or ``out_sinfo``.
The free ones are used without being defined (``n`` in ``R.Tensor((m + n,))``).
"""

from __future__ import annotations

from typing import Any

from ...ir.structural import structural_equal
from ...tir.expr import IntImm, PrimExpr
from ...tir.expr import Var as TirVar
from ...tir.functor import post_order_visit
from ..expr import Call, DataflowVar, Function, MatchCast, PrimValue, ShapeExpr, Var
from ..expr_functor import ExprVisitor
from ..struct_info import FuncStructInfo, ShapeStructInfo, StructInfo, TensorStructInfo, TupleStructInfo
from .struct_info_analysis import definable_tir_vars_in_struct_info, tir_vars_in_struct_info

__all__ = ["defined_symbolic_vars", "free_symbolic_vars", "collect_non_negative_expressions"]


class _SymbolicVars(ExprVisitor):
    def __init__(self) -> None:
        self.defined: dict[int, TirVar] = {}
        self.used: dict[int, TirVar] = {}

    def define(self, sinfo: StructInfo | None) -> None:
        if sinfo is not None:
            for v in definable_tir_vars_in_struct_info(sinfo):
                self.defined.setdefault(id(v), v)

    def use_sinfo(self, sinfo: StructInfo | None) -> None:
        if sinfo is not None:
            for v in tir_vars_in_struct_info(sinfo):
                self.used.setdefault(id(v), v)

    def use_expr(self, e: PrimExpr) -> None:
        post_order_visit(e, lambda n: self.used.setdefault(id(n), n) if isinstance(n, TirVar) else None)

    def visit_function_(self, op: Function) -> None:
        for p in op.params:  # a parameter may use what a later one defines
            self.define(p.struct_info)
        super().visit_function_(op)

    def visit_match_cast_(self, binding: MatchCast) -> None:
        self.define(binding.struct_info)
        self.use_sinfo(binding.struct_info)
        super().visit_match_cast_(binding)

    def visit_var_def_(self, var: Var) -> None:
        self.use_sinfo(var.struct_info)

    def visit_dataflow_var_def_(self, var: DataflowVar) -> None:
        self.use_sinfo(var.struct_info)

    def visit_shape_expr_(self, op: ShapeExpr) -> None:
        for v in op.values:
            self.use_expr(v)

    def visit_prim_value_(self, op: PrimValue) -> None:
        self.use_expr(op.value)

    def visit_call_(self, op: Call) -> None:
        for s in op.sinfo_args:
            self.use_sinfo(s)
        super().visit_call_(op)


def _collect(expr: Any) -> _SymbolicVars:
    c = _SymbolicVars()
    c.visit_expr(expr)
    return c


def defined_symbolic_vars(expr: Any) -> list[TirVar]:
    """The symbolic variables ``expr`` (usually a function) defines, in order of definition."""
    return list(_collect(expr).defined.values())


def free_symbolic_vars(expr: Any) -> list[TirVar]:
    """The symbolic variables ``expr`` uses but does not define."""
    c = _collect(expr)
    return [v for k, v in c.used.items() if k not in c.defined]


def collect_non_negative_expressions(sinfo: StructInfo) -> list[PrimExpr]:
    """Expressions ``sinfo`` implies are non-negative: the non-constant dimensions of its
    tensor and shape struct infos (a prim value may be negative), each once, in order."""
    out: list[PrimExpr] = []

    def visit(s: Any) -> None:
        if isinstance(s, TensorStructInfo):
            dims = s.shape_values or ()
        elif isinstance(s, ShapeStructInfo):
            dims = s.values or ()
        elif isinstance(s, TupleStructInfo):
            dims = ()
            for f in s.fields:
                visit(f)
        elif isinstance(s, FuncStructInfo):
            dims = ()
            for p in s.params or ():
                visit(p)
            visit(s.ret)
        else:
            dims = ()
        for d in dims:
            if not isinstance(d, IntImm) and not any(structural_equal(d, e) for e in out):
                out.append(d)

    visit(sinfo)
    return out
