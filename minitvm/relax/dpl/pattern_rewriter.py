"""PatternMatchingRewriter: a rewrite rule as an object (TVM's ``relax.dpl.PatternMatchingRewriter``).

A rule is made from a pattern and a rewriter function (``from_pattern``, which applies as
``rewrite_call`` does), or from a module with two Relax functions of one signature,
``pattern`` and ``replacement`` (``from_module``; ``@R.rewriter`` on a TVMScript class).  The
pattern function's body becomes a dataflow pattern -- each parameter a wildcard whose
struct info must fit the parameter's (symbolic extents bound once for all parameters), each
operator call a call pattern with its attributes -- and a match is replaced by the
replacement's body with the parameters bound to what matched.  The module's other functions
are subroutines the replacement may call; they are added (private) to a module the rule
rewrites when a rewrite refers to them.

A rule applies to a Relax function or to every Relax function of a module, until nothing
changes; ``a | b`` tries ``a`` then ``b`` at each binding; a rule is also a module pass
(``tvm.ir.transform.Sequential([rule])``).
"""

from __future__ import annotations

from typing import Any, Callable

from ...ir.module import GlobalVar, IRModule
from ...ir.structural import structural_equal
from ...transform import PassContext, PassInfo
from ...transform.pass_infra import Pass
from ..analysis import all_global_vars, definable_tir_vars_in_struct_info, tir_vars_in_struct_info
from ..analysis.struct_info_analysis import BaseCheckResult, _CallRetDeriver
from ..expr import Call, DataflowVar, Function, MatchCast, SeqExpr, Tuple, TupleGetItem, Var, is_leaf, struct_info_of
from ..expr_functor import ExprMutator
from .pattern import (
    CallPattern,
    DFPattern,
    ExprPattern,
    OrPattern,
    TupleGetItemPattern,
    TuplePattern,
    has_attr,
    wildcard,
)
from .rewrite import rewrite_call

__all__ = ["PatternMatchingRewriter", "ExprPatternRewriter", "OrRewriter"]


class PatternMatchingRewriter(Pass):
    """A rewrite rule: call it on a Relax function or an IRModule."""

    info = PassInfo(0, "PatternMatchingRewriter", ())
    subroutines: dict[GlobalVar, Any] = {}

    @staticmethod
    def from_pattern(pattern: DFPattern, func: Callable[[Any, dict], Any]) -> "PatternMatchingRewriter":
        return ExprPatternRewriter(pattern, func)

    @staticmethod
    def from_module(mod: IRModule) -> "PatternMatchingRewriter":
        return _from_module(mod)

    def alternatives(self) -> list[tuple[DFPattern, Callable]]:
        raise NotImplementedError

    def __call__(self, obj: Any) -> Any:
        if isinstance(obj, IRModule):
            return self.transform(obj, PassContext.current())
        if isinstance(obj, Function):
            return self._rewrite_function(obj)
        raise TypeError(f"PatternMatchingRewriter applies to a relax.Function or an IRModule, got {type(obj).__name__}")

    def __or__(self, other: "PatternMatchingRewriter") -> "PatternMatchingRewriter":
        if not isinstance(other, PatternMatchingRewriter):
            return NotImplemented
        return OrRewriter(self, other)

    def _rewrite_function(self, func: Function) -> Function:
        rules = self.alternatives()
        pattern = rules[0][0]
        for p, _ in rules[1:]:
            pattern = OrPattern(pattern, p)

        def rewriter(expr: Any, matches: dict) -> Any:
            for p, fn in rules:
                if p in matches:
                    out = fn(expr, matches)
                    if out is not None and out is not expr:
                        return out
            return expr

        return rewrite_call(pattern, rewriter, func)

    def transform(self, mod: IRModule, ctx: PassContext) -> IRModule:
        funcs = dict(mod.functions)
        changed = False
        for gv, func in mod.functions.items():
            if isinstance(func, Function):
                new = self._rewrite_function(func)
                changed |= new is not func
                funcs[gv] = new
        if not changed:
            return mod
        out = IRModule(funcs, mod.attrs, mod.global_infos)
        return _add_subroutines(out, self.subroutines)


class ExprPatternRewriter(PatternMatchingRewriter):
    """``pattern`` and a rewriter function ``(matched_expr, matches) -> expr``."""

    def __init__(self, pattern: DFPattern, func: Callable[[Any, dict], Any],
                 subroutines: dict[GlobalVar, Any] | None = None) -> None:
        if not isinstance(pattern, DFPattern):
            raise TypeError(f"PatternMatchingRewriter: pattern must be a DFPattern, got {type(pattern).__name__}")
        self.pattern, self.func = pattern, func
        self.subroutines = dict(subroutines or {})

    def alternatives(self) -> list[tuple[DFPattern, Callable]]:
        return [(self.pattern, self.func)]


class OrRewriter(PatternMatchingRewriter):
    """Either rule, the left one first."""

    def __init__(self, lhs: PatternMatchingRewriter, rhs: PatternMatchingRewriter) -> None:
        self.lhs, self.rhs = lhs, rhs
        self.subroutines = {**lhs.subroutines, **rhs.subroutines}

    def alternatives(self) -> list[tuple[DFPattern, Callable]]:
        return [*self.lhs.alternatives(), *self.rhs.alternatives()]


def _add_subroutines(mod: IRModule, subroutines: dict[GlobalVar, Any]) -> IRModule:
    """``mod`` with the rule's subroutines that its functions now call added (private); one
    whose name the module already uses for another function is renamed ``name_1`` ..."""
    if not subroutines:
        return mod
    used = {gv for f in mod.functions.values() if isinstance(f, Function) for gv in all_global_vars(f)}
    funcs = dict(mod.functions)
    taken = {gv.name_hint for gv in funcs}
    renamed: dict[GlobalVar, GlobalVar] = {}
    for gv, func in subroutines.items():
        if gv not in used or gv in funcs:
            continue
        name, k = gv.name_hint, 0
        while name in taken:
            k += 1
            name = f"{gv.name_hint}_{k}"
        new_gv = gv if name == gv.name_hint else GlobalVar(name)
        if new_gv is not gv:
            renamed[gv] = new_gv
        funcs[new_gv] = func
        taken.add(name)
    if renamed:
        # lazy: cycle -- relax.transform's passes are written with relax.dpl
        from ..transform.normalize_global_var import _Rename

        funcs = {gv: _Rename(renamed).visit_expr(f) if isinstance(f, Function) else f for gv, f in funcs.items()}
    return IRModule(funcs, mod.attrs, mod.global_infos)


# -- from a module ---------------------------------------------------------------------------------

def _rule_function(mod: IRModule, name: str) -> Function:
    if name not in mod:
        raise KeyError(f"a rewriter module must define a Relax function named {name!r}")
    func = mod[name]
    if not isinstance(func, Function):
        raise TypeError(f"the {name!r} of a rewriter module must be a Relax function, got {type(func).__name__}")
    return func


def _from_module(mod: IRModule) -> PatternMatchingRewriter:
    pattern_func = _rule_function(mod, "pattern")
    replacement = _rule_function(mod, "replacement")
    pattern_sig, replacement_sig = struct_info_of(pattern_func), struct_info_of(replacement)
    if not structural_equal(list(pattern_sig.params), list(replacement_sig.params), map_free_vars=True):
        raise ValueError(f"the pattern and replacement of a rewriter must have the same signature, but the "
                         f"pattern takes {pattern_sig} and the replacement {replacement_sig}")
    subroutines = {}
    for gv, func in mod.functions.items():
        if gv.name_hint in ("pattern", "replacement"):
            continue
        if (func.attrs or {}).get("global_symbol") is not None:
            raise ValueError(f"the subroutine {gv.name_hint} of a rewriter is publicly exposed: a rewrite may "
                             "only add private functions to a module")
        subroutines[gv] = func
    params = [wildcard() for _ in pattern_func.params]
    body_pattern = _FunctionToPattern(pattern_func, params).result
    param_sinfo = [p.struct_info for p in pattern_func.params]

    def rewrite(expr: Any, matches: dict) -> Any:
        args = [matches[p] for p in params]
        deriver = _CallRetDeriver()
        for sinfo, arg in zip(param_sinfo, args):
            arg_sinfo = struct_info_of(arg)
            if arg_sinfo is None or deriver.check(sinfo, arg_sinfo) != BaseCheckResult.PASS:
                return expr  # a parameter's struct info does not fit: no match
        return _inline(replacement, pattern_func, args, deriver.shape_vars)

    return ExprPatternRewriter(body_pattern, rewrite, subroutines)


class _FunctionToPattern:
    """The pattern of what a function returns, its parameters as the given patterns."""

    def __init__(self, func: Function, params: list[DFPattern]) -> None:
        self.bound: dict[Var, DFPattern] = dict(zip(func.params, params))
        body = func.body
        if isinstance(body, SeqExpr):
            for block in body.blocks:
                for b in block.bindings:
                    self.bound[b.var] = self.convert(b.value)
            body = body.body
        self.result = self.convert(body)

    def convert(self, expr: Any) -> DFPattern:
        if isinstance(expr, Var):
            if expr not in self.bound:
                raise ValueError(f"the pattern function uses {expr.name_hint}, which it does not define")
            return self.bound[expr]
        if isinstance(expr, Call):
            pattern: DFPattern = CallPattern(self.convert_callee(expr.op), [self.convert(a) for a in expr.args])
            if expr.attrs:
                pattern = has_attr(dict(expr.attrs), pattern)
            return pattern
        if isinstance(expr, Tuple):
            return TuplePattern([self.convert(f) for f in expr.fields])
        if isinstance(expr, TupleGetItem):
            return TupleGetItemPattern(self.convert(expr.tuple_value), expr.index)
        if is_leaf(expr):  # a constant, a shape, a prim value, a function name: matched as it is
            return ExprPattern(expr)
        raise ValueError(f"a rewriter's pattern function cannot contain a {type(expr).__name__}")

    def convert_callee(self, op: Any) -> DFPattern:
        return self.convert(op) if isinstance(op, Var) else ExprPattern(op)


class _Inliner(ExprMutator):
    """A copy of a function's body with its parameters replaced and fresh variables inside."""

    def __init__(self, remap: dict[Var, Any]) -> None:
        super().__init__()
        for old, new in remap.items():
            self.set_var_remap(old, new)

    def visit_var_def_(self, var: Var) -> Var:
        return Var(var.name_hint, var.struct_info)

    def visit_dataflow_var_def_(self, var: DataflowVar) -> Var:
        return DataflowVar(var.name_hint, var.struct_info)


def _inline(replacement: Function, pattern_func: Function, args: list, shape_vars: dict[int, Any]) -> Any:
    func = replacement
    if shape_vars:
        # the pattern's symbolic extents, as bound by the match, in the replacement's terms
        names = {}
        for p in pattern_func.params:
            for v in definable_tir_vars_in_struct_info(p.struct_info):
                if id(v) in shape_vars:
                    names[v.name] = shape_vars[id(v)]
        own = {v.name for p in func.params for v in tir_vars_in_struct_info(p.struct_info)}
        binding = {name: value for name, value in names.items() if name in own}
        if binding:
            func = func.bind_symbolic_vars(binding)
    inliner = _Inliner(dict(zip(func.params, args)))
    body = func.body
    if not isinstance(body, SeqExpr) or any(isinstance(b, MatchCast) for blk in body.blocks for b in blk.bindings):
        return inliner.visit_expr(body)
    # each binding's value put in place of its variable: the rewrite binds the nested calls
    # again where the match was, and binds a value used twice once
    for block in body.blocks:
        for b in block.bindings:
            inliner.set_var_remap(b.var, inliner.visit_expr(b.value))
    return inliner.visit_expr(body.body)

