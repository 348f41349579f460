"""InlinePrivateFunctions: every call of a private Relax function (no ``global_symbol``) is
replaced by the function's body, its parameters bound to the arguments, and the inlined
functions leave the module (TVM's ``relax.transform.InlinePrivateFunctions``).  Functions
that reach themselves through calls are left alone: the pass picks what to inline and skips
what it cannot."""

from __future__ import annotations

from typing import Any

from ...ir.module import GlobalVar, IRModule
from ...transform import PassContext, module_pass
from ..analysis import all_global_vars
from ..expr import BindingBlock, Call, Function, SeqExpr, VarBinding
from ..expr_functor import ExprMutator
from ._util import CopyWithNewVars
from .canonicalize_bindings import canonicalize_bindings
from .normalize import flatten_seq

__all__ = ["InlinePrivateFunctions"]


def _recursive(mod: IRModule, candidates: dict[GlobalVar, Function]) -> set[GlobalVar]:
    """The candidates that can reach themselves through calls of module functions."""
    calls = {gv: {g for g in all_global_vars(f) if g in mod.functions}
             for gv, f in mod.functions.items() if isinstance(f, Function)}
    found = set()
    for start in candidates:
        todo, seen = list(calls.get(start, ())), set()
        while todo:
            g = todo.pop()
            if g is start:
                found.add(start)
                break
            if g not in seen:
                seen.add(g)
                todo.extend(calls.get(g, ()))
    return found


class _Inliner(ExprMutator):
    def __init__(self, inline: dict[GlobalVar, Function]) -> None:
        super().__init__()
        self.inline = inline

    def visit_call_(self, op: Call) -> Any:
        new = super().visit_call_(op)
        callee = self.inline.get(new.op) if isinstance(new.op, GlobalVar) else None
        if callee is None:
            return new
        if len(callee.params) != len(new.args):
            raise ValueError(f"InlinePrivateFunctions: {new.op.name_hint} takes {len(callee.params)} "
                             f"parameters but is called with {len(new.args)} arguments")
        copy = CopyWithNewVars().visit_expr(callee)  # each inlined copy defines its own variables
        binds = BindingBlock(tuple(VarBinding(p, a) for p, a in zip(copy.params, new.args)))
        body = copy.body
        return self.visit_expr(SeqExpr((binds, *body.blocks), body.body))


@module_pass(opt_level=0, name="InlinePrivateFunctions")
class InlinePrivateFunctions:
    """``InlinePrivateFunctions()``."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        private = {gv: f for gv, f in mod.functions.items()
                   if isinstance(f, Function) and not (f.attrs and "global_symbol" in f.attrs)}
        for gv in _recursive(mod, private):
            del private[gv]
        if not private:
            return mod
        inliner = _Inliner(private)
        funcs = {}
        for gv, f in mod.functions.items():
            if gv in private:
                continue
            if isinstance(f, Function):
                new = inliner.visit_expr(f)
                if new is not f:  # the inlined bodies spliced in, the parameter aliases folded
                    new = canonicalize_bindings(_flatten(new), mod)
                f = new
            funcs[gv] = f
        return IRModule(funcs, mod.attrs, mod.global_infos)


def _flatten(func: Function) -> Function:
    body = flatten_seq(func.body) if isinstance(func.body, SeqExpr) else func.body
    return func if body is func.body else Function(func.params, body, func.ret_struct_info, func.is_pure, func.attrs)
