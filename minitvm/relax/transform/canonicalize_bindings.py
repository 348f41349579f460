"""CanonicalizeBindings: remove trivial rebindings ``y = x``.

* ``y = x`` (``x`` a variable): the binding goes and every use of ``y`` becomes ``x``,
  following chains (``z = y; y = x`` -> uses of ``z`` are ``x``).  This is done when ``y``
  is a DataflowVar, or ``x`` is not one (``x`` is then visible wherever ``y`` is).
* ``gv = lv`` at the output of a dataflow block, where ``lv`` is a DataflowVar bound in
  the same block (with the same struct info): the output variable takes ``lv``'s place,
  ``lv = f(...); gv = lv`` becomes ``gv = f(...)``, and later uses of ``lv`` read ``gv``.
* ``t = (a, b); c = t[0]``: ``c``'s uses become ``a`` (a tuple item of a known tuple).
* ``y = R.match_cast(x, sinfo)`` where ``x`` already has exactly ``sinfo`` (nothing to
  check, no new symbolic variable): treated as ``y = x``.

::

    mod = relax.transform.CanonicalizeBindings()(mod)
"""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...ir.structural import structural_equal
from ...transform import PassContext, module_pass
from ..expr import (
    BindingBlock,
    DataflowBlock,
    DataflowVar,
    Function,
    MatchCast,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..expr_functor import ExprMutator, ExprVisitor
from ._util import map_functions

__all__ = ["CanonicalizeBindings"]


class _Plan(ExprVisitor):
    """Finds the trivial bindings: which to drop, what each variable becomes."""

    def __init__(self) -> None:
        self.repl: dict[Var, Any] = {}      # variable -> what its uses become
        self.drop: set[int] = set()         # id() of bindings to remove
        self.rename: dict[Var, Var] = {}    # lv -> gv whose binding takes lv's place
        self.tuples: dict[Var, Tuple] = {}  # variables bound to tuple literals
        self.block_defs: set[Var] = set()   # DataflowVars bound in the current block

    def resolve(self, e: Any) -> Any:
        while isinstance(e, Var) and e in self.repl:
            e = self.repl[e]
        return e

    def visit_dataflow_block_(self, block: DataflowBlock) -> None:
        saved, self.block_defs = self.block_defs, set()
        super().visit_dataflow_block_(block)
        self.block_defs = saved

    def visit_binding_block_(self, block: BindingBlock) -> None:
        saved, self.block_defs = self.block_defs, set()
        super().visit_binding_block_(block)
        self.block_defs = saved

    def visit_match_cast_(self, binding: MatchCast) -> None:
        super().visit_match_cast_(binding)
        value = binding.value
        if isinstance(value, Var) and value.struct_info is not None and binding.struct_info is not None \
                and structural_equal(value.struct_info, binding.struct_info):
            self._trivial(binding, value)

    def visit_var_binding_(self, binding: VarBinding) -> None:
        super().visit_var_binding_(binding)
        y, value = binding.var, binding.value
        if isinstance(value, TupleGetItem):
            tup = self.resolve(value.tuple_value)
            lit = self.tuples.get(tup) if isinstance(tup, Var) else (tup if isinstance(tup, Tuple) else None)
            if lit is not None and isinstance(lit.fields[value.index], Var):
                value = lit.fields[value.index]
        if isinstance(value, Tuple) and isinstance(y, Var):
            self.tuples[y] = value
        if not isinstance(value, Var):
            if isinstance(y, DataflowVar):
                self.block_defs.add(y)
            return
        self._trivial(binding, value)

    def _trivial(self, binding: Any, value: Var) -> None:
        y = binding.var
        x = self.resolve(value)
        if isinstance(y, DataflowVar) or not isinstance(x, DataflowVar):
            self.repl[y] = x
            self.drop.add(id(binding))
        elif x in self.block_defs and x not in self.rename and _same_sinfo(x, y):
            self.rename[x] = y
            self.repl[x] = y
            self.drop.add(id(binding))


def _same_sinfo(a: Var, b: Var) -> bool:
    return a.struct_info is not None and b.struct_info is not None and \
        structural_equal(a.struct_info, b.struct_info)


class _Rewriter(ExprMutator):
    def __init__(self, plan: _Plan, mod: IRModule) -> None:
        super().__init__(mod)
        self.plan = plan

    def visit_var_(self, op: Var) -> Any:
        return self._subst(op)

    def visit_dataflow_var_(self, op: DataflowVar) -> Any:
        return self._subst(op)

    def _subst(self, op: Var) -> Any:
        target = self.plan.resolve(op)
        if target is not op:
            return self.var_remap_.get(target, target)
        return self.var_remap_.get(op, op)

    def visit_match_cast_(self, binding: MatchCast) -> None:
        if id(binding) not in self.plan.drop:
            super().visit_match_cast_(binding)

    def visit_var_binding_(self, binding: VarBinding) -> None:
        if id(binding) in self.plan.drop:
            return
        new_var = self.plan.rename.get(binding.var)
        if new_var is None:
            return super().visit_var_binding_(binding)
        value = self.visit_expr(binding.value)
        self.builder_.emit_normalized(VarBinding(new_var, value))


def _rewrite(func: Function, mod: IRModule) -> Function:
    plan = _Plan()
    plan.visit_expr(func)
    if not plan.drop:
        return func
    return _Rewriter(plan, mod).visit_expr(func)


@module_pass(opt_level=0, name="CanonicalizeBindings")
class CanonicalizeBindings:
    """Remove trivial ``y = x`` bindings (uses of ``y`` read ``x``) and let output
    variables take the place of the DataflowVars they copy: ``CanonicalizeBindings()(mod)``."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, _rewrite)
