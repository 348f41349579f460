"""CanonicalizeBindings: simplify the bindings of Relax functions, as TVM's pass does.

Two steps run one after the other (TVM's ``CanonicalizeTIRVariables`` then
``CanonicalizeRelaxBindings``):

1. **Symbolic variables.**  A ``R.match_cast`` that tells what a symbolic dimension is
   (``y = R.match_cast(x, R.Tensor((n,)))`` with ``x`` known to be ``(16,)``) replaces ``n``
   by that value everywhere after it; two match_casts that disagree raise ``ValueError``.
2. **Relax bindings.**
   * ``y = x`` (also ``y = R.match_cast(x, s)`` when ``x`` already has struct info ``s``,
     ``y = t[i]`` of a known tuple ``t = (a, b)``, and ``y = (t[0], t[1])`` re-packing all of
     a tuple ``t``): the binding goes and uses of ``y`` read ``x``, following chains.  When
     ``y`` is a Var, ``x`` a DataflowVar, and ``y`` is used outside its dataflow block, the
     direction flips: ``x``'s binding defines ``y`` instead.
   * a variable bound to a constant: its uses read the constant itself;
   * a Var bound in a dataflow block and used only inside that block becomes a DataflowVar;
   * ``lv = f(...); gv = lv`` at a dataflow block's output becomes ``gv = f(...)`` when
     nothing else reads ``lv``.

::

    mod = relax.transform.CanonicalizeBindings()(mod)
"""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...ir.structural import structural_equal
from ...transform import PassContext, module_pass
from ..analysis.vars import all_vars, free_vars
from ..block_builder import BlockBuilder
from ..expr import (
    Binding,
    BindingBlock,
    Constant,
    DataflowBlock,
    DataflowVar,
    Function,
    MatchCast,
    SeqExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
    is_normalized,
    mark_normalized,
    struct_info_of,
)
from ..expr_functor import ExprMutator, ExprVisitor
from ..struct_info import TupleStructInfo
from ._symbolic_vars import canonicalize_tir_variables
from ._util import map_functions

__all__ = ["CanonicalizeBindings"]


class _Planner(ExprVisitor):
    """One walk over a function: which bindings are trivial, where each variable is
    defined and used, which variables hold constants."""

    def __init__(self) -> None:
        self.block: BindingBlock | None = None       # the block being walked
        self.def_block: dict[Var, BindingBlock] = {}
        self.trivial: dict[Var, Var] = {}            # y -> x for a trivial `y = x`
        self.known: dict[Var, Any] = {}              # every bound variable -> its (unwrapped) value
        self.constants: dict[Var, Constant] = {}
        self.defined_in_dataflow: dict[Var, None] = {}
        self.used_outside_home: set[Var] = set()     # used outside the dataflow block defining it
        self.dataflow_blocks: list[DataflowBlock] = []
        self.match_casts = 0

    def in_dataflow(self) -> bool:
        return isinstance(self.block, DataflowBlock)

    # -- scopes: a function or a nested sequence starts outside any block -------------------------
    def visit_function_(self, op: Function) -> None:
        saved, self.block = self.block, None
        self.used_outside_home.update(free_vars(op))  # captured variables escape their block
        super().visit_function_(op)
        self.block = saved

    def visit_seq_expr_(self, op: SeqExpr) -> None:
        saved, self.block = self.block, None
        super().visit_seq_expr_(op)
        self.block = saved

    def visit_binding_block_(self, block: BindingBlock) -> None:
        self.block = block
        super().visit_binding_block_(block)
        self.block = None

    def visit_dataflow_block_(self, block: DataflowBlock) -> None:
        self.block = block
        self.dataflow_blocks.append(block)
        super().visit_dataflow_block_(block)
        self.block = None

    # -- bindings -------------------------------------------------------------------------------
    def _unwrap_var(self, e: Any) -> Any:
        while isinstance(e, Var) and e in self.known:
            e = self.known[e]
        return e

    def _unwrap(self, value: Any) -> Any:
        """A tuple item of a known tuple is that field; a tuple re-packing every item of one
        earlier tuple, in order, is that tuple."""
        if isinstance(value, TupleGetItem):
            tup = self._unwrap_var(value.tuple_value)
            if isinstance(tup, Tuple):
                return tup.fields[value.index]
        if isinstance(value, Tuple) and value.fields:
            items = [self._unwrap_var(f) for f in value.fields]
            if all(isinstance(it, TupleGetItem) for it in items):
                source_sinfo = struct_info_of(items[0].tuple_value)
                if isinstance(source_sinfo, TupleStructInfo) and len(source_sinfo.fields) == len(items):
                    source = self._unwrap_var(items[0].tuple_value)
                    if all(it.index == i and self._unwrap_var(it.tuple_value) is source
                           for i, it in enumerate(items)):
                        return source
        return value

    def visit_binding(self, binding: Binding) -> None:
        if isinstance(binding, MatchCast):
            self.match_casts += 1
            same_sinfo = _sinfo_equal(struct_info_of(binding.var), struct_info_of(binding.value))
        else:
            same_sinfo = True
        value = self._unwrap(binding.value)
        if isinstance(value, Var) and same_sinfo:
            self.trivial[binding.var] = value
        if isinstance(value, Constant):
            self.constants[binding.var] = value
        self.known[binding.var] = value
        self.def_block[binding.var] = self.block
        super().visit_binding(binding)

    def visit_var_def(self, var: Var) -> None:
        if self.in_dataflow():
            self.defined_in_dataflow.setdefault(var)

    def visit_var_(self, op: Var) -> None:
        # TVM's planner looks at uses of Vars only (a DataflowVar cannot leave its block)
        home = self.def_block.get(op)
        if not self.in_dataflow() or (home is not None and home is not self.block):
            self.used_outside_home.add(op)


def _sinfo_equal(a: Any, b: Any) -> bool:
    return a is not None and b is not None and structural_equal(a, b)


class _Plan:
    def __init__(self, planner: _Planner) -> None:
        self.replace_usage: dict[Var, Var] = {}
        self.replace_binding: dict[Var, Var] = {}
        self.remove: set[Var] = set()
        self.constants = dict(planner.constants)
        # a Var that never leaves its dataflow block needs no exposing: a DataflowVar
        for var in planner.defined_in_dataflow:
            if not isinstance(var, DataflowVar) and var not in planner.used_outside_home:
                local = DataflowVar(var.name, var.struct_info)
                self.replace_binding[var] = local
                self.replace_usage[var] = local
        for bound_var, bound_to in planner.trivial.items():
            while bound_to in planner.trivial:
                bound_to = planner.trivial[bound_to]
            while bound_to in self.replace_binding:
                bound_to = self.replace_binding[bound_to]
            if (isinstance(bound_var, DataflowVar) or not isinstance(bound_to, DataflowVar)
                    or bound_var not in planner.used_outside_home):
                self.replace_usage[bound_var] = bound_to
            else:
                # `gv = lv` with gv needed outside the block: lv's binding defines gv instead
                self.replace_binding[bound_to] = bound_var
                self.replace_usage[bound_to] = bound_var
            self.remove.add(bound_var)

    def changes_nothing(self, planner: _Planner) -> bool:
        """No binding to remove, no variable to replace, no output copy to fold."""
        return (not self.replace_usage and not self.replace_binding and not self.remove and not self.constants
                and all(_fold_output_copies(b) is b for b in planner.dataflow_blocks))

    @staticmethod
    def chase(table: dict[Var, Var], var: Var) -> Var:
        while var in table:
            var = table[var]
        return var


class _Canonicalizer(ExprMutator):
    def __init__(self, plan: _Plan, mod: IRModule | None) -> None:
        super().__init__(mod)
        self.plan = plan

    def visit_binding(self, binding: Binding) -> None:
        if binding.var in self.plan.remove:
            return
        super().visit_binding(binding)
        new_var = self.var_remap_.get(binding.var)
        target = _Plan.chase(self.plan.replace_binding, binding.var)
        if new_var is not None and target is not binding.var:
            self.var_remap_[target] = new_var  # uses redirected to `target` find the re-emitted var

    def visit_var_def(self, var: Var) -> Var:
        return super().visit_var_def(_Plan.chase(self.plan.replace_binding, var))

    def _use(self, op: Var) -> Any:
        var = _Plan.chase(self.plan.replace_usage, op)
        constant = self.plan.constants.get(var)
        if constant is not None:
            return self.visit_expr(constant)
        return self.var_remap_.get(var, var)

    def visit_var_(self, op: Var) -> Any:
        return self._use(op)

    def visit_dataflow_var_(self, op: DataflowVar) -> Any:
        return self._use(op)

    def visit_dataflow_block_(self, block: DataflowBlock) -> BindingBlock:
        return _fold_output_copies(super().visit_dataflow_block_(block))


def _fold_output_copies(block: DataflowBlock) -> DataflowBlock:
    """``lv = value; ...; gv = lv`` -> ``gv = value`` for each DataflowVar ``lv`` that only
    feeds one output variable."""
    disqualified: set[Var] = set()
    outputs: set[Var] = set()
    candidates: dict[Var, Any] = {}
    for binding in reversed(block.bindings):
        var, value = binding.var, binding.value
        if isinstance(var, DataflowVar):
            # (TVM reads every variable of a function literal here, free ones otherwise)
            for v in all_vars(value) if isinstance(value, Function) else free_vars(value):
                if isinstance(v, DataflowVar):
                    disqualified.add(v)
            if var not in disqualified and var in outputs:
                candidates[var] = value
        elif isinstance(value, DataflowVar):
            if value in outputs:
                disqualified.add(value)  # copied into two outputs: keep it
            outputs.add(value)
        else:
            for v in free_vars(value) if isinstance(value, Function) else all_vars(value):
                if isinstance(v, DataflowVar):
                    disqualified.add(v)
    if not candidates:
        return block
    bindings = []
    for binding in block.bindings:
        var, value = binding.var, binding.value
        if isinstance(var, DataflowVar) and var in candidates:
            continue
        if not isinstance(var, DataflowVar) and isinstance(value, DataflowVar) and value in candidates:
            if isinstance(binding, MatchCast):
                binding = MatchCast(var, candidates[value], binding.struct_info)
            else:
                binding = VarBinding(var, candidates[value])
        bindings.append(binding)
    return DataflowBlock(tuple(bindings))


def _canonicalize_relax_bindings(func: Function, mod: IRModule | None, planner: _Planner | None = None) -> Function:
    if planner is None:
        planner = _Planner()
        planner.visit_expr(func)
    plan = _Plan(planner)
    if is_normalized(func) and plan.changes_nothing(planner):
        return func  # what the rewrite would return, without rebuilding every binding
    return _Canonicalizer(plan, mod).visit_expr(func)


def canonicalize_bindings(func: Function, mod: IRModule | None = None) -> Function:
    """One function through the whole pass (ConvertToDataflow runs it afterwards)."""
    planner = _Planner()
    planner.visit_expr(func)
    if is_normalized(func) and not planner.match_casts:
        # no match_cast, so no symbolic variable to pin down: the first step would return func
        new = _canonicalize_relax_bindings(func, mod, planner)
    else:
        new = _canonicalize_relax_bindings(canonicalize_tir_variables(func, mod), mod)
    if new is func:
        return func
    # the body may now say more than before (a dimension pinned down): the return struct info
    # follows it, as TVM's Function constructor does
    out = BlockBuilder(mod)._make_function(new.params, new.body, new.ret_struct_info, new.is_pure, new.attrs)
    if is_normalized(new):
        mark_normalized(out)  # the same normalized body
    return out


@module_pass(opt_level=1, name="CanonicalizeBindings")
class CanonicalizeBindings:
    """Remove trivial bindings, inline constants, turn block-local Vars into DataflowVars
    and replace symbolic variables a match_cast pins down: ``CanonicalizeBindings()(mod)``."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, canonicalize_bindings)
