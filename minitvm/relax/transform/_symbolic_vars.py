"""The first half of CanonicalizeBindings (TVM's ``CanonicalizeTIRVariables``).

A ``y = R.match_cast(x, R.Tensor((n, 4)))`` where ``x``'s struct info already says the
first dimension is ``16`` (or ``m``) pins ``n`` down: from that binding on, ``n`` is
replaced by ``16`` (``m``) in every struct info, shape, prim value and ``out_sinfo``.  The
match_cast itself then often checks nothing new, and the binding half of the pass removes
it.  A later match_cast that gives ``n`` a provably different value is an error.
"""

from __future__ import annotations

from typing import Any

from ...arith.analyzer import Analyzer
from ...ir.module import IRModule
from ...ir.structural import structural_equal
from ...tir.expr import IntImm, PrimExpr
from ...tir.expr import Var as TirVar
from ...tir.functor import substitute
from ..analysis.struct_info_analysis import substitute_struct_info
from ..expr import (
    BindingBlock,
    Call,
    DataflowVar,
    Function,
    If,
    MatchCast,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    Var,
    struct_info_of,
)
from ..expr_functor import ExprMutator
from ..struct_info import PrimStructInfo, ShapeStructInfo, StructInfo, TensorStructInfo, TupleStructInfo

__all__ = ["canonicalize_tir_variables", "infer_symbolic_var_map"]


def infer_symbolic_var_map(pattern: StructInfo | None, actual: StructInfo | None) -> dict[TirVar, PrimExpr]:
    """Symbolic variables standing alone in ``pattern`` (a dimension, a prim value) and what
    ``actual`` has at the same place."""
    found: dict[TirVar, PrimExpr] = {}

    def values(p: tuple | None, a: tuple | None) -> None:
        if p is None or a is None or len(p) != len(a):
            return
        for pv, av in zip(p, a):
            if isinstance(pv, TirVar) and not (isinstance(av, TirVar) and av is pv):
                found.setdefault(pv, av)

    def walk(p: Any, a: Any) -> None:
        if isinstance(p, TensorStructInfo) and isinstance(a, TensorStructInfo):
            values(p.shape_values, a.shape_values)
        elif isinstance(p, ShapeStructInfo) and isinstance(a, ShapeStructInfo):
            values(p.values, a.values)
        elif isinstance(p, PrimStructInfo) and isinstance(a, PrimStructInfo):
            values(None if p.value is None else (p.value,), None if a.value is None else (a.value,))
        elif isinstance(p, TupleStructInfo) and isinstance(a, TupleStructInfo) and len(p.fields) == len(a.fields):
            for pf, af in zip(p.fields, a.fields):
                walk(pf, af)

    walk(pattern, actual)
    return found


class _TIRVarCanonicalizer(ExprMutator):
    def __init__(self, mod: IRModule | None) -> None:
        super().__init__(mod)
        self.known: dict[TirVar, tuple[PrimExpr, MatchCast]] = {}
        self.analyzer = Analyzer()

    # -- substitution ---------------------------------------------------------------------------
    def _lookup(self, v: TirVar) -> PrimExpr | None:
        entry = self.known.get(v)
        return None if entry is None else entry[0]

    def prim(self, e: PrimExpr) -> PrimExpr:
        if not self.known:
            return e
        new = substitute(e, self._lookup)
        return e if new is e else self.analyzer.simplify(new)

    def sinfo(self, s: Any) -> Any:
        if not self.known or not isinstance(s, StructInfo):
            return s
        new = substitute_struct_info(s, self._lookup)
        return s if structural_equal(new, s) else new

    # -- scopes ---------------------------------------------------------------------------------
    def visit_function_(self, op: Function) -> Any:
        saved = dict(self.known)
        try:
            return super().visit_function_(op)
        finally:
            self.known = saved

    def visit_if_(self, op: If) -> Any:
        cond = self.visit_expr(op.cond)
        saved = dict(self.known)
        then = self.visit_with_new_scope(op.true_branch)
        self.known = dict(saved)
        other = self.visit_with_new_scope(op.false_branch)
        self.known = saved
        if cond is op.cond and then is op.true_branch and other is op.false_branch:
            return op
        # each branch may have had different variables replaced; the If keeps the struct
        # info it had (with the replacements known here), each branch cast to it
        target = self.sinfo(struct_info_of(op))
        if target is not None:
            then = _cast_branch(then, target, "then_branch_with_dyn")
            other = _cast_branch(other, target, "else_branch_with_dyn")
        return If(cond, then, other)

    # -- what a match_cast teaches -------------------------------------------------------------
    def visit_match_cast_(self, binding: MatchCast) -> None:
        learned = infer_symbolic_var_map(struct_info_of(binding.var), struct_info_of(binding.value))
        for tir_var, value in learned.items():
            entry = self.known.get(tir_var)
            if entry is None:
                self.known[tir_var] = (value, binding)
            elif self.analyzer.can_prove(entry[0] != value):
                raise ValueError(
                    f"MatchCast statements must be consistent: {entry[1].var.name} says symbolic variable "
                    f"{tir_var.name} is {entry[0]}, but the later {binding.var.name} says it is {value}")
        value = self.visit_expr(binding.value)
        var = self.visit_var_def(binding.var)
        sinfo = self.sinfo(binding.struct_info)
        if var is binding.var and value is binding.value and sinfo is binding.struct_info:
            self.builder_.emit_normalized(binding)
            return
        if var is not binding.var:
            self.set_var_remap(binding.var, var)
        self.builder_.emit_normalized(MatchCast(var, value, sinfo))

    # -- every place a PrimExpr or struct info appears --------------------------------------------
    def visit_var_def_(self, var: Var) -> Var:
        sinfo = self.sinfo(var.struct_info)
        return var if sinfo is var.struct_info else Var(var.name, sinfo)

    def visit_dataflow_var_def_(self, var: DataflowVar) -> Var:
        sinfo = self.sinfo(var.struct_info)
        return var if sinfo is var.struct_info else DataflowVar(var.name, sinfo)

    def visit_shape_expr_(self, op: ShapeExpr) -> Any:
        values = [self.prim(v) for v in op.values]
        return op if all(a is b for a, b in zip(values, op.values)) else ShapeExpr(values)

    def visit_prim_value_(self, op: PrimValue) -> Any:
        value = self.prim(op.value)
        return op if value is op.value else PrimValue(value)

    def visit_call_(self, op: Call) -> Any:
        new = super().visit_call_(op)
        sinfo_args = [self.sinfo(s) for s in op.sinfo_args]
        attrs = self._attrs(new.attrs)
        if attrs is new.attrs and all(a is b for a, b in zip(sinfo_args, op.sinfo_args)):
            return new
        return Call(new.op, new.args, attrs, sinfo_args)

    def _attrs(self, attrs: Any) -> Any:
        """Symbolic bounds held in attributes (strided_slice's begin / end, which TVM passes
        as arguments) are replaced too; one that becomes a constant is stored as an int."""
        if not self.known or not attrs:
            return attrs

        def sub(v: Any) -> Any:
            if isinstance(v, (tuple, list)):
                items = [sub(x) for x in v]
                return v if all(a is b for a, b in zip(items, v)) else type(v)(items)
            if isinstance(v, TirVar) or isinstance(v, PrimExpr) and not isinstance(v, IntImm):
                new = self.prim(v)
                return new.value if isinstance(new, IntImm) and new is not v else new
            return v

        new = {k: sub(v) for k, v in attrs.items()}
        return attrs if all(new[k] is v for k, v in attrs.items()) else new


def _cast_branch(branch: Any, target: StructInfo, name: str) -> Any:
    sinfo = struct_info_of(branch)
    if sinfo is not None and structural_equal(sinfo, target):
        return branch
    var = Var(name, target)
    return SeqExpr((BindingBlock((MatchCast(var, branch, target),)),), var)


def canonicalize_tir_variables(func: Function, mod: IRModule | None = None) -> Function:
    """``func`` with symbolic variables that match_casts pin down replaced by their values."""
    return _TIRVarCanonicalizer(mod).visit_expr(func)
