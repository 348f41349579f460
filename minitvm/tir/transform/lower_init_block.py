"""LowerInitBlock: a reduction block's ``T.init()`` becomes an ``if`` before its body.

The init runs on the first step of the reduction, i.e. when every reduction iteration
variable sits at the start of its domain::

    with T.block("C"):                        with T.block("C"):
        with T.init():                            if vk == 0:
            C[vi, vj] = 0.0          ->               C[vi, vj] = 0.0
        C[vi, vj] += A[vi, vk] * ...              C[vi, vj] += A[vi, vk] * ...
"""

from __future__ import annotations

from ...ir.node import replace
from .. import op as _op
from ..expr import IterVar, PrimExpr
from ..function import PrimFunc
from ..functor import StmtExprMutator
from ..stmt import Block, IfThenElse, Stmt, seq
from .function_pass import prim_func_pass

__all__ = ["LowerInitBlock", "lower_init"]


def init_condition(block: Block) -> PrimExpr | None:
    """``vk == k_min and ...`` over the block's reduction variables; None if it has none."""
    condition = None
    for iv in block.iter_vars:
        if iv.iter_type == IterVar.CommReduce:
            first_step = _op.equal(iv.var, iv.dom.min)
            condition = first_step if condition is None else _op.logical_and(condition, first_step)
    return condition


def lower_init(block: Block) -> Block:
    """The block with its init folded into the body (unchanged if it has no init)."""
    if block.init is None:
        return block
    condition = init_condition(block)
    # without reduction variables every execution is the first one
    init: Stmt = block.init if condition is None else IfThenElse(condition, block.init)
    return replace(block, init=None, body=seq(init, block.body))


class _InitLowerer(StmtExprMutator):
    def visit_block_(self, n: Block) -> Block:
        return lower_init(self.visit_children(n))


@prim_func_pass(opt_level=0, name="tir.LowerInitBlock")
class LowerInitBlock:
    """Turn every block's ``init`` into a conditional statement at the top of its body."""

    def transform_function(self, func: PrimFunc, mod, ctx) -> PrimFunc:
        body = _InitLowerer().visit(func.body)
        return func if body is func.body else func.with_body(body)
