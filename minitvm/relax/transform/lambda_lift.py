"""LambdaLift: every local function (``@R.function def inner(...)`` bound inside another
function) becomes a private function of the module (TVM's ``relax.transform.LambdaLift``).

A local function that uses variables of its enclosing function (a closure) takes them as extra
trailing parameters; where it was defined, ``R.make_closure(cls.f, (captured, ...))`` packs it
with their values, and each call of such a closure becomes ``R.invoke_closure`` (or
``R.invoke_pure_closure`` when the call was pure).  A local function capturing nothing is
replaced by its GlobalVar everywhere.  A recursive closure calls its lifted self directly,
passing the captured values on.

Names, first that is free and unique: the function's ``global_symbol``; ``<outer>_<var>``;
the whole nesting path joined by ``_``; ``<outer>_<var>_<k>``.
"""

from __future__ import annotations

from typing import Any

from ...ir.module import GlobalVar, IRModule
from ...ir.op import Op
from ...transform import PassContext, module_pass
from ..analysis.vars import free_vars
from ..expr import Call, Function, SeqExpr, Tuple, Var, VarBinding, _set_struct_info, struct_info_of
from ..expr_functor import ExprMutator, ExprVisitor
from ..struct_info import FuncStructInfo
from ._util import CopyWithNewVars

__all__ = ["LambdaLift"]


class _NameCollector(ExprVisitor):
    """Where each local function is defined (``[global name, var, ...]``) and its global_symbol."""

    def __init__(self, taken: set[str]) -> None:
        self.taken = taken
        self.stack: list[str] = []
        self.location: dict[int, tuple[Function, list[str]]] = {}
        self.public: dict[int, str] = {}
        self.public_owner: dict[str, str] = {}

    def visit_var_binding_(self, binding: VarBinding) -> None:
        func = binding.value
        if not isinstance(func, Function):
            super().visit_var_binding_(binding)
            return
        symbol = (func.attrs or {}).get("global_symbol")
        if symbol is not None:
            symbol = str(symbol)
            if symbol in self.taken:
                raise ValueError(f"LambdaLift: function {self.stack[0]} contains a local function with "
                                 f"global_symbol {symbol!r}, but the module already has a function of that "
                                 "name; lifting it would give two functions one name")
            if symbol in self.public_owner:
                raise ValueError(f"LambdaLift: functions {self.public_owner[symbol]} and {self.stack[0]} both "
                                 f"contain a local function with global_symbol {symbol!r}")
            self.public_owner[symbol] = self.stack[0]
            self.public[id(func)] = symbol
        self.stack.append(binding.var.name_hint)
        self.location[id(func)] = (func, list(self.stack))
        super().visit_var_binding_(binding)
        self.stack.pop()

    def names(self) -> dict[int, str]:
        remaining = {key: loc for key, (_, loc) in self.location.items()}
        named: dict[int, str] = {}
        unavailable = set(self.taken)
        counts: dict[str, int] = {}

        def attempt(propose: Any) -> None:
            proposals: dict[str, int | None] = {}
            for key, loc in remaining.items():
                name = propose(key, loc)
                if name is None or name in unavailable:
                    continue
                proposals[name] = None if name in proposals else key  # a clash: nobody gets it
            for name, key in proposals.items():
                if key is not None:
                    named[key] = name
                    unavailable.add(name)
                    del remaining[key]

        def counted(key: int, loc: list[str]) -> str:
            base = f"{loc[0]}_{loc[-1]}"
            counts[base] = counts.get(base, -1) + 1
            return f"{base}_{counts[base]}"

        attempt(lambda key, loc: self.public.get(key))
        attempt(lambda key, loc: f"{loc[0]}_{loc[-1]}")
        attempt(lambda key, loc: None if len(loc) == 2 else "_".join(loc))
        while remaining:  # a count makes every name unique in the end
            attempt(counted)
        return named


class _LambdaLifter(ExprMutator):
    def __init__(self, mod: IRModule) -> None:
        super().__init__(mod)
        self.mod = mod
        collector = _NameCollector({gv.name_hint for gv in mod.get_global_vars()})
        for gv, func in mod.functions.items():
            if isinstance(func, Function):
                collector.stack = [gv.name_hint]
                collector.visit_expr(func)
        self.names = collector.names()
        self.lambda_var: Var | None = None
        self.rebind: dict[Var, GlobalVar] = {}  # a lifted function capturing nothing: its GlobalVar
        self.nested: dict[Var, tuple[GlobalVar, list[Var]]] = {}  # recursive closure: callee and captures
        self.closures: set[GlobalVar] = set()

    def visit_var_binding_(self, binding: VarBinding) -> None:
        if not isinstance(binding.value, Function):
            super().visit_var_binding_(binding)
            return
        outer, self.lambda_var = self.lambda_var, binding.var
        try:
            value = self.visit_expr(binding.value)
            if binding.var not in self.rebind:
                var = self.with_struct_info(binding.var, struct_info_of(value))
                if var is not binding.var:
                    self.set_var_remap(binding.var, var)
                self.builder_.emit_normalized(VarBinding(var, value))
        finally:
            self.lambda_var = outer

    def visit_function_(self, op: Function) -> Any:
        if self.lambda_var is None:  # a function of the module itself
            return super().visit_function_(op)
        own, self.lambda_var = self.lambda_var, None
        try:
            return self._lift(op, own)
        finally:
            self.lambda_var = own

    def _lift(self, op: Function, own: Var) -> Any:
        name = self.names[id(op)]
        captured = [v for v in free_vars(op) if v is not own]
        recursive = own in free_vars(op)
        fresh = [Var(v.name_hint, v.struct_info) for v in captured]
        params = [self.visit_var_def(p) for p in op.params] + fresh
        gv = GlobalVar(name)
        sinfo = op.struct_info if not captured else FuncStructInfo(
            [p.struct_info for p in params], op.ret_struct_info, op.is_pure)
        _set_struct_info(gv, sinfo)
        if recursive and captured:
            self.nested[own] = (gv, captured)
        if not captured:
            self.rebind[own] = gv
        saved = {v: self.var_remap_.get(v) for v in captured}
        self.var_remap_.update(zip(captured, fresh))  # inside the lifted function: its new parameters
        try:
            body = self.visit_with_new_scope(op.body)
        finally:
            for v, old in saved.items():
                if old is None:
                    self.var_remap_.pop(v, None)
                else:
                    self.var_remap_[v] = old
        if params == list(op.params) and body is op.body:
            lifted = op
        else:
            lifted = self.builder_.normalize(Function(params, body, struct_info_of(body), op.is_pure, op.attrs))
        if captured or self._is_closure(lifted):
            self.closures.add(gv)
        lifted = CopyWithNewVars().visit_expr(lifted)
        _set_struct_info(gv, lifted.struct_info)
        self.builder_.update_func(gv, lifted)
        if not captured:
            return gv
        return Call(Op.get("relax.make_closure"), [gv, Tuple([self.visit_expr(v) for v in captured])])

    def visit_call_(self, op: Call) -> Any:
        call = op
        if isinstance(call.op, Var):
            bound = self.lookup_binding(self.var_remap_.get(call.op, call.op))
            if isinstance(bound, Call) and self._is_closure(call.op):
                name = "relax.invoke_pure_closure" if self._call_is_pure(bound) else "relax.invoke_closure"
                call = Call(Op.get(name), [call.op, Tuple(list(call.args))], None, [struct_info_of(op)])
        if isinstance(call.op, Var) and call.op in self.nested:
            gv, captured = self.nested[call.op]
            call = Call(gv, [*call.args, *captured], call.attrs, call.sinfo_args)
        return super().visit_call_(call)

    def visit_var_(self, op: Var) -> Any:
        gv = self.rebind.get(op)
        return gv if gv is not None else super().visit_var_(op)

    def _call_is_pure(self, call: Call) -> bool:
        if isinstance(call.op, Op):
            return bool(call.op.get_attr("FPurity"))
        sinfo = struct_info_of(call.op)
        if isinstance(sinfo, FuncStructInfo):
            return sinfo.purity
        raise ValueError(f"LambdaLift: cannot tell whether the call of {call.op!r} is pure: its callee is "
                         "neither an operator nor annotated with a function struct info")

    def _is_closure(self, value: Any, seen: frozenset = frozenset()) -> bool:
        """Whether ``value`` evaluates to a closure (followed through bindings and callees)."""
        if isinstance(value, Var):
            value = self.lookup_binding(self.var_remap_.get(value, value)) or value
        if isinstance(value, Call):
            if isinstance(value.op, (Var, GlobalVar)):
                return self._is_closure(value.op, seen)
            return isinstance(value.op, Op) and value.op.name == "relax.make_closure"
        if isinstance(value, GlobalVar):
            if value in self.closures:
                return True
            func = self.builder_.get().functions.get(value)
            return isinstance(func, Function) and value not in seen and self._is_closure(func.body, seen | {value})
        if isinstance(value, (Function, SeqExpr)):
            return self._is_closure(value.body, seen)
        return False

    def lift(self) -> IRModule:
        for gv, func in list(self.mod.functions.items()):
            if isinstance(func, Function):
                self.builder_.update_func(gv, self.visit_expr(func))
        return self.builder_.get()


@module_pass(opt_level=1, name="LambdaLift")
class LambdaLift:
    """``LambdaLift()``: lift local functions out to the module (see the module docstring)."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return _LambdaLifter(mod).lift()
