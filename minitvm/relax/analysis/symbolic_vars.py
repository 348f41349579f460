"""Which symbolic (TIR) variables a Relax expression defines, and which it uses undefined
(TVM's ``defined_symbolic_vars`` / ``free_symbolic_vars``).

A variable is defined where a value is matched against a struct info that names it bare: a
function parameter's annotation (``x: R.Tensor((n, 4))`` defines ``n``; every parameter is
read for definitions before any for uses, so the order of parameters does not matter) and
``R.match_cast``.  Any other mention -- ``n + 1`` in a shape, a call's ``out_sinfo``, the
struct info of a value -- uses it.
"""

from __future__ import annotations

from typing import Any

from ...tir.expr import PrimExpr
from ...tir.expr import Var as TirVar
from ...tir.functor import post_order_visit
from ..expr import (
    Call,
    DataflowVar,
    Function,
    If,
    MatchCast,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    Tuple,
    TupleGetItem,
    Var,
    struct_info_of,
)
from ..expr_functor import ExprVisitor
from ..struct_info import (
    FuncStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)

__all__ = ["defined_symbolic_vars", "free_symbolic_vars"]

_VALUE_DEPENDENT = (Tuple, Call, If, TupleGetItem, ShapeExpr, SeqExpr, PrimValue)
_DEFINE, _USE = 1, 2  # visiting modes, as bit flags: a match_cast both defines and uses


class _SymbolicVarCollector(ExprVisitor):
    def __init__(self) -> None:
        self.mode = _USE
        self.defined: dict[int, TirVar] = {}
        self.free: dict[int, TirVar] = {}

    def with_mode(self, mode: int, sinfos: Any) -> None:
        saved, self.mode = self.mode, mode
        try:
            for s in sinfos:
                self.visit_sinfo(s)
        finally:
            self.mode = saved

    # -- struct info ---------------------------------------------------------------------
    def visit_sinfo(self, sinfo: StructInfo | None) -> None:
        if isinstance(sinfo, PrimStructInfo):
            if sinfo.value is not None:
                self.visit_prim(sinfo.value)
        elif isinstance(sinfo, ShapeStructInfo):
            for v in sinfo.values or ():
                self.visit_prim(v)
        elif isinstance(sinfo, TensorStructInfo):
            if sinfo.shape is not None:
                self.visit_sinfo_expr(sinfo.shape)
        elif isinstance(sinfo, TupleStructInfo):
            for f in sinfo.fields:
                self.visit_sinfo(f)
        elif isinstance(sinfo, FuncStructInfo):
            if sinfo.params is not None:
                # definitions of every parameter first: a later one may define an earlier one's
                self.with_mode(_DEFINE, sinfo.params)
                self.with_mode(_USE, sinfo.params)
            self.visit_sinfo(sinfo.ret)

    def visit_sinfo_expr(self, expr: Any) -> None:
        self.visit_expr(expr)
        if isinstance(expr, ShapeExpr):
            for v in expr.values:
                self.visit_prim(v)
        elif isinstance(expr, PrimValue):
            self.visit_prim(expr.value)

    def visit_prim(self, expr: PrimExpr) -> None:
        if self.mode & _DEFINE and isinstance(expr, TirVar):
            self.defined.setdefault(id(expr), expr)
        if self.mode & _USE:
            def use(n: Any) -> None:
                if isinstance(n, TirVar) and id(n) not in self.defined:
                    self.free.setdefault(id(n), n)
            post_order_visit(expr, use)

    # -- expressions: each one's struct info is a use of what it mentions ------------------
    def visit_expr(self, expr: Any) -> None:
        super().visit_expr(expr)
        # (a variable's struct info is visited by its hook; constants, globals, operators and
        # functions have struct info that depends on no value in scope)
        if isinstance(expr, _VALUE_DEPENDENT):
            self.visit_sinfo(struct_info_of(expr))

    def visit_var_(self, op: Var) -> None:
        self.visit_sinfo(op.struct_info)

    def visit_dataflow_var_(self, op: DataflowVar) -> None:
        self.visit_sinfo(op.struct_info)

    def visit_call_(self, op: Call) -> None:
        self.visit_expr(op.op)
        for s in op.sinfo_args or ():
            self.visit_sinfo(s)
        for a in op.args:
            self.visit_expr(a)

    def visit_function_(self, op: Function) -> None:
        params = [p.struct_info for p in op.params]
        self.with_mode(_DEFINE, params)
        self.with_mode(_USE, params)
        super().visit_function_(op)

    def visit_match_cast_(self, binding: MatchCast) -> None:
        self.with_mode(_DEFINE | _USE, [binding.struct_info])
        super().visit_match_cast_(binding)
        self.visit_sinfo(binding.struct_info)


def defined_symbolic_vars(expr: Any) -> list[TirVar]:
    """Symbolic variables ``expr`` (usually a Function) defines, in order of definition."""
    collector = _SymbolicVarCollector()
    collector.visit_expr(expr)
    return list(collector.defined.values())


def free_symbolic_vars(expr: Any) -> list[TirVar]:
    """Symbolic variables ``expr`` uses without defining them, in order of first use."""
    collector = _SymbolicVarCollector()
    collector.visit_expr(expr)
    return list(collector.free.values())
