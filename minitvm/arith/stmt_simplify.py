"""Simplifying whole statements: every expression with the bounds of the loops around it.

Besides the expressions, statements themselves get simpler: ``if True`` keeps only its
branch, a loop of extent 1 becomes its body with the loop variable replaced by the loop's
start, a loop of extent 0 (and any statement left with nothing to do) disappears.
"""

from __future__ import annotations

import contextlib
from typing import Any

from ..ir import dtype as _dt
from ..ir.node import replace
from ..tir.expr import FloatImm, IntImm, PrimExpr, Range, Var
from ..tir.functor import StmtExprMutator, substitute
from ..tir.stmt import AssertStmt, Block, BlockRealize, Evaluate, For, IfThenElse, LetStmt, SeqStmt, Stmt, seq
from .analyzer import Analyzer

__all__ = ["StmtSimplifier", "simplify", "no_op", "is_no_op"]


def no_op() -> Stmt:
    """The statement that does nothing (TVM writes it ``T.evaluate(0)``)."""
    return Evaluate(IntImm("int32", 0))


def is_no_op(s: Stmt | None) -> bool:
    if s is None:
        return True
    if isinstance(s, Evaluate):
        return isinstance(s.value, (IntImm, FloatImm))
    if isinstance(s, SeqStmt):
        return all(is_no_op(x) for x in s.seq)
    return False


class StmtSimplifier(StmtExprMutator):
    """Simplifies a statement tree; loop and block variables are bounded in their scope."""

    def __init__(self, analyzer: Analyzer | None = None):
        self.analyzer = analyzer or Analyzer()

    def visit(self, n: Any) -> Any:
        if isinstance(n, PrimExpr):
            return self.analyzer.simplify(n)
        return super().visit(n)

    def visit_for_(self, n: For) -> Stmt:
        start, extent = self.visit(n.min), self.visit(n.extent)
        if isinstance(extent, IntImm) and extent.value <= 0:
            return no_op()
        if isinstance(extent, IntImm) and extent.value == 1 and not n.annotations:
            # a one-trip loop is its body with the loop variable fixed at the start (an annotated one
            # stays: its annotations say something about the body)
            return self.visit(substitute(n.body, {n.loop_var: start}))
        with self.analyzer.bound_scope(n.loop_var, Range(start, extent)):
            body = self.visit(n.body)
        if is_no_op(body):
            return no_op()
        if start is n.min and extent is n.extent and body is n.body:
            return n
        return replace(n, min=start, extent=extent, body=body)

    def visit_if_then_else_(self, n: IfThenElse) -> Stmt:
        condition = self.visit(n.condition)
        if isinstance(condition, IntImm):
            taken = n.then_case if condition.value else n.else_case
            return no_op() if taken is None else self.visit(taken)
        with self.analyzer.constraint_scope(condition):
            then_case = self.visit(n.then_case)
        else_case = None if n.else_case is None else self.visit(n.else_case)
        if else_case is not None and is_no_op(else_case):
            else_case = None
        if is_no_op(then_case) and else_case is None:
            return no_op()
        if condition is n.condition and then_case is n.then_case and else_case is n.else_case:
            return n
        return IfThenElse(condition, then_case, else_case)

    def visit_let_stmt_(self, n: LetStmt) -> Stmt:
        value = self.visit(n.value)
        if isinstance(value, (IntImm, Var)):
            return self.visit(substitute(n.body, {n.var: value}))
        interval = self.analyzer.interval(value) if _dt.is_int(value.dtype) else None
        with self.analyzer.interval_scope(n.var, interval):
            body = self.visit(n.body)
        if value is n.value and body is n.body:
            return n
        return LetStmt(n.var, value, body)

    def visit_assert_stmt_(self, n: AssertStmt) -> Stmt:
        condition = self.visit(n.condition)
        body = self.visit(n.body)
        if isinstance(condition, IntImm) and condition.value:
            return body
        if condition is n.condition and body is n.body:
            return n
        return AssertStmt(condition, n.message, body)

    def visit_seq_stmt_(self, n: SeqStmt) -> Stmt:
        stmts = [self.visit(s) for s in n.seq]
        kept = [s for s in stmts if not is_no_op(s)]
        if len(kept) == len(n.seq) and all(a is b for a, b in zip(kept, n.seq)):
            return n
        return seq(*kept) if kept else no_op()

    def visit_block_realize_(self, n: BlockRealize) -> Stmt:
        iter_values = self.visit(n.iter_values)
        predicate = self.visit(n.predicate)
        block = self.visit(n.block)
        if iter_values is n.iter_values and predicate is n.predicate and block is n.block:
            return n
        return BlockRealize(iter_values, predicate, block)

    def visit_block_(self, n: Block) -> Stmt:
        # inside the block, each iteration variable ranges over its domain
        with contextlib.ExitStack() as scopes:
            for iv in n.iter_vars:
                scopes.enter_context(self.analyzer.bound_scope(iv.var, iv.dom))
            return self.visit_children(n)


def simplify(node: Any, analyzer: Analyzer | None = None) -> Any:
    """Simplify an expression or a statement (``minitvm.arith.simplify``)."""
    if isinstance(node, PrimExpr):
        return (analyzer or Analyzer()).simplify(node)
    return StmtSimplifier(analyzer).visit(node)
