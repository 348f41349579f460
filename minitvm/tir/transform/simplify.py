"""Simplify: arithmetic simplification of a whole function body.

Every expression is simplified with the bounds of the loops around it; ``if True`` keeps
its branch, one-trip loops become their body and empty loops disappear (see
:mod:`minitvm.arith.stmt_simplify`).
"""

from __future__ import annotations

from ...arith import StmtSimplifier
from ..function import PrimFunc
from .function_pass import prim_func_pass

__all__ = ["Simplify"]


@prim_func_pass(opt_level=0, name="tir.Simplify")
class Simplify:
    """Simplify every expression and statement of each PrimFunc."""

    def transform_function(self, func: PrimFunc, mod, ctx) -> PrimFunc:
        body = StmtSimplifier().visit(func.body)
        return func if body is func.body else func.with_body(body)
