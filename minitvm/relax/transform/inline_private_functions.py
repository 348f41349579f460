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
from ..expr import BindingBlock, Call, DataflowBlock, Function, SeqExpr, VarBinding
from ..expr_functor import ExprMutator
from ._util import CopyWithNewVars
from .canonicalize_bindings import canonicalize_bindings
from .normalize import flatten_seq

__all__ = ["InlinePrivateFunctions", "inline_functions"]


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
    def __init__(self, inline: dict[GlobalVar, Function], by_name: dict[str, Function] | None = None) -> None:
        super().__init__()
        self.inline, self.by_name = inline, by_name or {}

    def visit_call_(self, op: Call) -> Any:
        new = super().visit_call_(op)
        callee = None
        if isinstance(new.op, GlobalVar):
            callee = self.inline.get(new.op) or self.by_name.get(new.op.name_hint)
        if callee is None:
            return new
        if len(callee.params) != len(new.args):
            raise ValueError(f"InlinePrivateFunctions: {new.op.name_hint} takes {len(callee.params)} "
                             f"parameters but is called with {len(new.args)} arguments")
        copy = CopyWithNewVars().visit_expr(callee)  # each inlined copy defines its own variables
        body = copy.body
        # the parameter aliases join the callee's first block, so a dataflow callee inlined
        # into a dataflow block leaves that block whole
        kind = DataflowBlock if body.blocks and isinstance(body.blocks[0], DataflowBlock) else BindingBlock
        binds = kind(tuple(VarBinding(p, a) for p, a in zip(copy.params, new.args)))
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


def inline_functions(func: Function, function_map: dict) -> Function:
    """``func`` with every call of a function in ``function_map`` replaced by that function's
    body (TVM's ``relax.Function.inline_functions``).  Keys are GlobalVars or their names; a
    name given both ways is refused (ValueError), and so is a set of functions that call
    themselves, since their inlining would never end."""
    by_gvar: dict[GlobalVar, Function] = {}
    by_name: dict[str, Function] = {}
    for key, callee in function_map.items():
        if isinstance(key, GlobalVar):
            by_gvar[key] = callee
        elif isinstance(key, str):
            by_name[key] = callee
        else:
            raise TypeError(f"inline_functions: keys must be GlobalVar or str, got {type(key).__name__}")
    clash = sorted({g.name_hint for g in by_gvar} & set(by_name))
    if clash:
        raise ValueError(f"inline_functions: {', '.join(clash)} given both as a GlobalVar and as a "
                         "name; each function to inline must be named once")
    named = {**by_name, **{g.name_hint: f for g, f in by_gvar.items()}}
    _refuse_recursion(named)
    new = _Inliner(by_gvar, by_name).visit_expr(func)
    if new is func:
        return func
    return canonicalize_bindings(_flatten(new), None)


def _refuse_recursion(named: dict[str, Function]) -> None:
    calls = {name: {g.name_hint for g in all_global_vars(f)} & set(named) for name, f in named.items()}
    for start in named:
        todo, seen = list(calls[start]), set()
        while todo:
            g = todo.pop()
            if g == start:
                raise ValueError(f"inline_functions: {start} reaches itself through calls; "
                                 "a recursive function cannot be inlined")
            if g not in seen:
                seen.add(g)
                todo.extend(calls[g])
