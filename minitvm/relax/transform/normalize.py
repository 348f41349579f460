"""Normalize: every Relax function in the form TVM's ``relax.transform.Normalize`` leaves:
A-normal form with struct info everywhere (nested calls bound to variables, function bodies
and If branches as SeqExprs), a SeqExpr bound to a variable spliced into the enclosing
blocks (``y = (z = 2; z)`` becomes ``z = 2; y = z``), neighbouring blocks of the same kind
merged, and a function's return struct info refined from its body where that is more
precise."""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...transform import PassContext, module_pass
from ..expr import BindingBlock, DataflowBlock, Function, SeqExpr, VarBinding
from ..expr_functor import ExprMutator
from ._util import map_functions

__all__ = ["Normalize"]


def flatten_seq(seq: SeqExpr) -> SeqExpr:
    """``seq`` with nested SeqExprs (bound to variables, or as the body) spliced in and
    neighbouring blocks of one kind merged; the same object when nothing changes."""
    blocks: list[tuple[bool, list]] = []

    def add(dataflow: bool, binding: Any) -> None:
        if blocks and blocks[-1][0] == dataflow:
            blocks[-1][1].append(binding)
        else:
            blocks.append((dataflow, [binding]))

    def splice(inner: SeqExpr) -> Any:
        inner = flatten_seq(inner)
        for block in inner.blocks:
            for b in block.bindings:
                add(isinstance(block, DataflowBlock), b)
        return inner.body

    for block in seq.blocks:
        dataflow = isinstance(block, DataflowBlock)
        for b in block.bindings:
            if isinstance(b, VarBinding) and isinstance(b.value, SeqExpr):
                add(dataflow, VarBinding(b.var, splice(b.value)))
            else:
                add(dataflow, b)
    body = splice(seq.body) if isinstance(seq.body, SeqExpr) else seq.body
    new = tuple((DataflowBlock if df else BindingBlock)(tuple(bs)) for df, bs in blocks)
    if body is seq.body and len(new) == len(seq.blocks) and all(
            type(a) is type(b) and len(a.bindings) == len(b.bindings)
            and all(x is y for x, y in zip(a.bindings, b.bindings)) for a, b in zip(new, seq.blocks)):
        return seq
    return SeqExpr(new, body)


class _Normalizer(ExprMutator):
    def visit_seq_expr_(self, op: SeqExpr) -> Any:
        return super().visit_seq_expr_(flatten_seq(op))

    def visit_function_(self, op: Function) -> Any:
        new = super().visit_function_(op)
        if new is op:
            return op
        # rebuilt as TVM's Function constructor does: the body's struct info when it is more precise
        return self.builder_.normalize(Function(new.params, new.body, None, new.is_pure, new.attrs)) \
            if new.ret_struct_info is None else self.builder_._make_function(
                new.params, new.body, new.ret_struct_info, new.is_pure, new.attrs)


@module_pass(opt_level=0, name="Normalize")
class Normalize:
    """``Normalize()``: rebuild each Relax function through the BlockBuilder's normalizer."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        def rewrite(func: Any, m: IRModule) -> Any:
            return _Normalizer(m).visit_expr(func)
        return map_functions(mod, rewrite)
