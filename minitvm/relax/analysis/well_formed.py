"""``well_formed``: does a Relax module (or function) obey the rules every pass relies on?

- every variable is defined (parameter, earlier binding) before it is used, and once;
- a DataflowVar is defined only in a dataflow block and used only inside that block;
- every ``@name`` a function refers to is a function of the module;
- symbolic shape variables are defined (in a parameter's struct info or a match_cast)
  before shapes use them;
- a function body is a SeqExpr, call arguments are leaves (normal form), and, with
  ``check_struct_info``, every expression has struct info.

:func:`well_formed` answers True/False and logs why not; :func:`well_formed_errors` returns
the reasons, in words.
"""

from __future__ import annotations

import sys
from typing import Any

from ...error import TVMError
from ...ir.module import GlobalVar, IRModule
from ...ir.op import Op
from ...tir.expr import Var as TirVar
from ...tir.function import PrimFunc
from ...tir.functor import post_order_visit
from ..expr import (
    Call,
    DataflowBlock,
    DataflowVar,
    Function,
    If,
    MatchCast,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
    is_leaf,
    struct_info_of,
)
from ..expr_functor import ExprVisitor
from ..struct_info import FuncStructInfo, StructInfo, struct_info_text
from .purity import find_impure_call
from .struct_info_analysis import (
    BaseCheckResult,
    _prim_exprs,
    definable_tir_vars_in_struct_info,
    is_base_of,
    struct_info_base_check,
)
from .well_formed_call_tir import call_tir_signature_error

__all__ = ["well_formed", "well_formed_errors"]

def _leaf(expr: Any) -> bool:
    """What TVM calls a leaf or a tuple: the only expressions normal form allows as a call's
    operands, a tuple's fields, an If's condition, a TupleGetItem's tuple and a SeqExpr's body
    (a tuple's own fields are checked where it is visited)."""
    return is_leaf(expr) or isinstance(expr, Tuple)


class _Checker(ExprVisitor):
    def __init__(self, mod: IRModule | None, check_struct_info: bool):
        self.mod = mod
        self.check_sinfo = check_struct_info
        self.errors: list[str] = []
        self.where = ""
        self.scopes: list[set[Var]] = []  # relax variables visible, innermost last
        self.defined_ever: set[Var] = set()
        self.tir_scopes: list[set[int]] = []
        self.dataflow: set[Var] | None = None  # DataflowVars of the open dataflow block
        self.top = ""  # the module function being checked (a symbolic variable belongs to one)
        self.owner: dict[int, str] = {}  # id of a symbolic variable or parameter -> function defining it
        self._bb: Any = None

    def error(self, msg: str) -> None:
        self.errors.append(f"{self.where}: {msg}" if self.where else msg)

    # -- scopes ---------------------------------------------------------------------------
    def _visible(self, var: Var) -> bool:
        return any(var in s for s in self.scopes)

    def _define(self, var: Var) -> None:
        if var in self.defined_ever:
            self.error(f"variable {var.name} is defined more than once")
        self.defined_ever.add(var)
        if self.scopes:
            self.scopes[-1].add(var)
        if self.check_sinfo and var.struct_info is None:
            self.error(f"variable {var.name} has no struct info")
        elif var.struct_info is not None:
            self._check_tir_vars(var.struct_info, f"the struct info of {var.name}")

    def _define_tir(self, sinfo: StructInfo) -> None:
        if self.tir_scopes:
            # (TVM also refuses a symbolic variable defined in two functions; minitvm's
            # LambdaLift, LiftTransformParams and Gradient still share their caller's, so that
            # rule waits for them)
            self.tir_scopes[-1].update(id(v) for v in definable_tir_vars_in_struct_info(sinfo))

    def _own(self, var: Any, what: str) -> None:
        """A parameter belongs to one module function (TVM refuses sharing one between
        functions: each function's definitions are its own)."""
        first = self.owner.setdefault(id(var), self.top)
        if first != self.top:
            self.error(f"{what} in both function {first!r} and function {self.top!r}")

    def _check_tir_vars(self, sinfo_or_exprs: Any, what: str) -> None:
        if isinstance(sinfo_or_exprs, FuncStructInfo):
            return  # a function's signature defines its own symbolic variables
        exprs = _prim_exprs(sinfo_or_exprs) if isinstance(sinfo_or_exprs, StructInfo) else sinfo_or_exprs
        missing: list[str] = []

        def visit(n: Any) -> None:
            if isinstance(n, TirVar) and not any(id(n) in s for s in self.tir_scopes) \
                    and n.name not in missing:
                missing.append(n.name)

        for e in exprs:
            post_order_visit(e, visit)
        if missing and self.tir_scopes:
            self.error(f"symbolic variable{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                       f"used in {what} {'are' if len(missing) > 1 else 'is'} not defined "
                       "(define it in a parameter's struct info or with match_cast)")

    def visit_expr(self, expr: Any) -> None:
        if isinstance(expr, PrimFunc):  # TIR has no place inside a Relax expression
            self.error("an in-line PrimFunc is disallowed in Relax IR (add it to the module and refer to its "
                       "GlobalVar)")
            return
        super().visit_expr(expr)

    # -- functions, sequences, blocks -------------------------------------------------------
    def check_function(self, func: Function, name: str) -> None:
        self.where = f"function {name}"
        self.top = name
        self.visit_expr(func)

    def visit_function_(self, op: Function) -> None:
        self.scopes.append(set())
        self.tir_scopes.append(set())
        saved_dataflow, self.dataflow = self.dataflow, None
        attrs = op.attrs or {}
        force_pure = bool(attrs.get("relax.force_pure", False))
        if force_pure and not op.is_pure:
            self.error("the function has relax.force_pure true but is_pure false; relax.force_pure should be "
                       "true only if is_pure is also true")
        for p in op.params:
            if p.struct_info is not None:
                self._define_tir(p.struct_info)
        for p in op.params:
            self._define(p)
            self._own(p, f"Relax variable {p.name} is used as a parameter")
        if op.ret_struct_info is not None:
            self._check_tir_vars(op.ret_struct_info, "the return struct info")
        if not isinstance(op.body, SeqExpr):
            self.error("the function body is not a SeqExpr (normalize it with a BlockBuilder)")
        if self.check_sinfo and op.is_pure and not force_pure:
            impure = find_impure_call(op.body, self.mod)
            if impure is not None:
                self.error(f"the function is annotated as pure but contains an impure call: {impure}.  Please set "
                           "relax.force_pure to true or use a pure operator variant (e.g., call_pure_packed) if "
                           "it is necessary to override this judgment")
        self.visit_expr(op.body)
        self.dataflow = saved_dataflow
        self.tir_scopes.pop()
        self.scopes.pop()

    def visit_seq_expr_(self, op: SeqExpr) -> None:
        self.scopes.append(set())
        for block in op.blocks:
            self.visit_binding_block(block)
        if not _leaf(op.body):
            self.error(f"the body of a SeqExpr must be a leaf expression, not a {type(op.body).__name__}")
        self.visit_expr(op.body)
        self.scopes.pop()

    def visit_if_(self, op: If) -> None:
        if self.dataflow is not None:
            self.error("If nodes are not allowed to appear in dataflow blocks")
        if not _leaf(op.cond):
            self.error(f"the condition of an If must be a leaf expression, not a {type(op.cond).__name__}")
        self.visit_expr(op.cond)
        for branch in (op.true_branch, op.false_branch):
            if not isinstance(branch, SeqExpr):
                self.error("a branch of If is not a SeqExpr")
            self.visit_expr(branch)

    def visit_dataflow_block_(self, block: DataflowBlock) -> None:
        self.dataflow = set()
        for b in block.bindings:
            self.visit_binding(b)
        self.dataflow = None

    def visit_match_cast_(self, binding: MatchCast) -> None:
        self.visit_expr(binding.value)
        self._define_tir(binding.struct_info)
        self.visit_var_def(binding.var)

    def visit_var_binding_(self, binding: VarBinding) -> None:
        if isinstance(binding.value, Function):  # a local function may call itself by its variable
            self.scopes.append({binding.var})
            self.visit_expr(binding.value)
            self.scopes.pop()
        else:
            self.visit_expr(binding.value)
        value_sinfo, var_sinfo = struct_info_of(binding.value), struct_info_of(binding.var)
        if self.check_sinfo and value_sinfo is None:
            self.error(f"the value bound to {binding.var.name} has no struct info")
        if self.check_sinfo and value_sinfo is not None and var_sinfo is not None \
                and not is_base_of(var_sinfo, value_sinfo):
            self.error(f"an expression of struct info {struct_info_text(value_sinfo)} cannot be assigned to "
                       f"{binding.var.name} of struct info {struct_info_text(var_sinfo)}")
        self.visit_var_def(binding.var)

    # -- definitions and uses ---------------------------------------------------------------
    def visit_var_def_(self, var: Var) -> None:
        self._define(var)

    def visit_dataflow_var_def_(self, var: DataflowVar) -> None:
        if self.dataflow is None:
            self.error(f"DataflowVar {var.name} is defined outside a dataflow block")
        else:
            self.dataflow.add(var)
        self._define(var)

    def visit_var_(self, op: Var) -> None:
        if not self._visible(op):
            if op in self.defined_ever:
                self.error(f"variable {op.name} is used outside the scope that defines it")
            else:
                self.error(f"variable {op.name} is used before it is defined")

    def visit_dataflow_var_(self, op: DataflowVar) -> None:
        if self.dataflow is None or op not in self.dataflow:
            where = "outside its dataflow block" if op in self.defined_ever else "before it is defined"
            self.error(f"DataflowVar {op.name} is used {where}")

    def visit_global_var_(self, op: GlobalVar) -> None:
        if self.mod is not None and op not in self.mod.functions:
            known = op.name_hint in self.mod
            why = " (a different GlobalVar object of that name)" if known else ""
            self.error(f"@{op.name_hint} is not a function of the module{why}")

    def visit_call_(self, op: Call) -> None:
        if not _leaf(op.op):
            self.error(f"the called expression must be a leaf expression, not a {type(op.op).__name__}")
        for i, a in enumerate(op.args):
            if not _leaf(a):
                self.error(f"argument {i} of a call is a nested {type(a).__name__}, not a variable "
                           "(the expression was not normalized)")
        if self.check_sinfo and struct_info_of(op) is None:
            self.error("a call has no struct info (normalize it with a BlockBuilder)")
        for s in op.sinfo_args:
            self._check_tir_vars(s, "a call's sinfo_args")
        if self.check_sinfo and self.dataflow is not None:
            impure = find_impure_call(op, self.mod)
            if impure is not None:
                self.error(f"impure function call {impure} occurs within a dataflow block")
        if isinstance(op.op, Op):
            self._check_op_call(op)
        super().visit_call_(op)

    def _check_op_call(self, op: Call) -> None:
        """What TVM checks of an operator's call: its FNormalize leaves it as it is, call_tir's
        output struct info fits the PrimFunc's signature (FValidate), and its struct info
        agrees with what inference gives."""
        name = op.op.name
        fnormalize = op.op.get_attr("FNormalize")
        if fnormalize is not None:
            try:
                if fnormalize(self.block_builder(), op) is not op:
                    self.error(f"a call of {name} is not in the form its FNormalize gives (normalize it with a "
                               "BlockBuilder)")
            except (TVMError, ValueError, TypeError) as e:  # the operator's refusal is the finding (a bug is not)
                self.error(f"normalizing a call of {name} (its FNormalize) failed: {e}")
        if self.mod is not None:
            problem = call_tir_signature_error(op, self.mod)
            if problem:
                self.error(problem)
        current = struct_info_of(op)
        if not self.check_sinfo or current is None:
            return
        try:
            inferred = struct_info_of(self.block_builder().normalize(Call(op.op, op.args, op.attrs, op.sinfo_args)))
        except (TVMError, ValueError, TypeError) as e:  # inference refuses the call: the finding (a bug is not)
            self.error(f"the struct info of a call of {name} cannot be inferred: {e}")
            return
        if inferred is not None and struct_info_base_check(current, inferred) == BaseCheckResult.FAIL_L0:
            self.error(f"a call of {name} is annotated as {struct_info_text(current)}, but it outputs "
                       f"{struct_info_text(inferred)} (struct info annotations must be correct)")

    def block_builder(self) -> Any:
        if self._bb is None:
            self._bb = _block_builder(self.mod)
        return self._bb

    def visit_tuple_(self, op: Tuple) -> None:
        for i, f in enumerate(op.fields):
            if not _leaf(f):
                self.error(f"field {i} of a tuple is a nested {type(f).__name__} (the tuple is not in normal form)")
        super().visit_tuple_(op)

    def visit_tuple_getitem_(self, op: TupleGetItem) -> None:
        if not _leaf(op.tuple_value):
            self.error(f"the tuple of a TupleGetItem must be a leaf expression, not a "
                       f"{type(op.tuple_value).__name__}")
        super().visit_tuple_getitem_(op)

    def visit_shape_expr_(self, op: ShapeExpr) -> None:
        self._check_tir_vars(op.values, "a shape")

    def visit_prim_value_(self, op: PrimValue) -> None:
        self._check_tir_vars([op.value], "a prim value")


def well_formed_errors(obj: IRModule | Function, check_struct_info: bool = True) -> list[str]:
    """Every rule ``obj`` breaks, one message each (empty when well formed)."""
    if isinstance(obj, IRModule):
        checker = _Checker(obj, check_struct_info)
        for gv, func in obj.functions.items():
            if isinstance(func, Function):
                symbol = (func.attrs or {}).get("global_symbol")
                if symbol is not None and str(symbol) != gv.name_hint:
                    checker.errors.append(f"function {gv.name_hint} has global_symbol {str(symbol)!r}: a public "
                                          "function's GlobalVar must carry its global_symbol's name")
                checker.check_function(func, gv.name_hint)
        return checker.errors
    if isinstance(obj, Function):
        checker = _Checker(None, check_struct_info)
        checker.check_function(obj, obj.attrs.get("global_symbol", "<function>"))
        return checker.errors
    raise TypeError(f"well_formed expects an IRModule or a relax.Function, got {type(obj).__name__}")


def well_formed(obj: IRModule | Function, check_struct_info: bool = True) -> bool:
    """True when ``obj`` is well formed; otherwise prints the reasons on stderr (as TVM
    logs its warning) and returns False."""
    errors = well_formed_errors(obj, check_struct_info)
    for e in errors:
        print(f"relax.analysis.well_formed: {e}", file=sys.stderr)
    return not errors


def _block_builder(mod: IRModule | None) -> Any:
    from ..block_builder import BlockBuilder  # lazy: cycle -- the BlockBuilder imports this package

    return BlockBuilder(mod)
