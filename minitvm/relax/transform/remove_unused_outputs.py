"""RemoveUnusedOutputs: an internal function returning a tuple stops returning the elements no
caller reads (TVM's ``relax.transform.RemoveUnusedOutputs``).

A caller that uses the whole tuple (passes it on, returns it) keeps every element.  Call sites
are rewritten to rebuild the old tuple from the new results (a NaN placeholder where an
element is gone), which CanonicalizeBindings and DeadCodeElimination then fold away.
"""

from __future__ import annotations

from typing import Any

from ...ir.module import GlobalVar, IRModule
from ...tir.expr import FloatImm
from ...transform import PassContext, Sequential, module_pass
from ..block_builder import BlockBuilder
from ..expr import Call, Function, PrimValue, SeqExpr, Tuple, TupleGetItem, Var, _set_struct_info, struct_info_of
from ..expr_functor import ExprVisitor
from ..struct_info import TupleStructInfo
from ._util import replace_callees
from .canonicalize_bindings import CanonicalizeBindings
from .dead_code_elimination import DeadCodeElimination

__all__ = ["RemoveUnusedOutputs"]


class _Usage(ExprVisitor):
    """Which elements of each candidate callee's result tuple some caller reads."""

    def __init__(self, masks: dict[GlobalVar, list[bool]]) -> None:
        self.masks = masks
        self.bound: dict[Var, Any] = {}

    def visit_binding(self, binding: Any) -> None:
        super().visit_binding(binding)
        self.bound[binding.var] = binding.value

    def _mask(self, expr: Any) -> list[bool] | None:
        if not isinstance(struct_info_of(expr), TupleStructInfo):
            return None
        while isinstance(expr, Var) and expr in self.bound:
            expr = self.bound[expr]
        if isinstance(expr, Call) and isinstance(expr.op, GlobalVar):
            return self.masks.get(expr.op)
        return None

    def visit_tuple_getitem_(self, op: TupleGetItem) -> None:
        mask = self._mask(op.tuple_value)
        if mask is not None:
            if not 0 <= op.index < len(mask):
                raise IndexError(f"RemoveUnusedOutputs: index {op.index} of a {len(mask)}-tuple")
            mask[op.index] = True
        else:
            super().visit_tuple_getitem_(op)

    def visit_var_(self, op: Var) -> None:
        mask = self._mask(op)
        if mask is not None:  # the tuple used whole
            mask[:] = [True] * len(mask)

    def visit_dataflow_var_(self, op: Var) -> None:
        self.visit_var_(op)


def _shrink(func: Function, mask: list[bool]) -> Function:
    body = func.body
    old = body.body
    fields = list(old.fields) if isinstance(old, Tuple) else [TupleGetItem(old, i) for i in range(len(mask))]
    kept = [f for f, used in zip(fields, mask) if used]
    out = kept[0] if len(kept) == 1 else Tuple(kept)
    bb = BlockBuilder()
    bb.begin_binding_block()
    out = bb.normalize(out)
    extra = bb.end_block()
    blocks = (*body.blocks, extra) if extra.bindings else body.blocks
    return bb._make_function(func.params, SeqExpr(blocks, out), None, func.is_pure, func.attrs)


def _call_rewrite(mask: list[bool]) -> Any:
    """A call of the shrunk function, rebuilt into the old tuple (NaN where an element went)."""
    def rewrite(gv: GlobalVar, old: Call, mutator: Any) -> Tuple:
        call = Call(gv, old.args, old.attrs, old.sinfo_args)
        _set_struct_info(call, struct_info_of(gv).ret)  # the new callee's result
        used = sum(mask)
        if used > 1:  # bound once, read element by element (TVM's builder reuses the binding)
            call = mutator.builder_.emit(call)
        results, k = [], 0
        for m in mask:
            if m:
                results.append(call if used == 1 else TupleGetItem(call, k))
                k += 1
            else:
                results.append(PrimValue(FloatImm("float64", float("nan"))))
        return Tuple(results)
    return rewrite


@module_pass(opt_level=0, name="RemoveUnusedOutputsInner")
class _RemoveUnusedOutputsInner:
    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        masks = {gv: [False] * len(f.ret_struct_info.fields) for gv, f in mod.functions.items()
                 if isinstance(f, Function) and not (f.attrs and "global_symbol" in f.attrs)
                 and isinstance(f.ret_struct_info, TupleStructInfo)}
        if not masks:
            return mod
        usage = _Usage(masks)
        for f in mod.functions.values():
            if isinstance(f, Function):
                usage.visit_expr(f)
        changes = {gv: (_shrink(mod[gv], mask), _call_rewrite(mask)) for gv, mask in masks.items() if not all(mask)}
        return replace_callees(mod, changes)


def RemoveUnusedOutputs() -> Sequential:  # noqa: N802 - TVM's name
    """``RemoveUnusedOutputs()``: the rewrite, then CanonicalizeBindings and DeadCodeElimination."""
    return Sequential([_RemoveUnusedOutputsInner(), CanonicalizeBindings(), DeadCodeElimination()],
                      name="RemoveUnusedOutputs")
