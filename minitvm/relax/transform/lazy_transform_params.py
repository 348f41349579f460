"""Weights loaded and stored one at a time (TVM's ``relax.transform.LazyGetInput``,
``LazySetOutput`` and ``LazyTransformParams``), so a weight-transforming function never holds
every weight at once.

``LazyGetInput``: the weights (parameters after ``num_input``) of a public function become
one callback parameter ``fget_param(index, name) -> Object``, called where a weight is first
needed and matched to the weight's struct info.  ``LazySetOutput``: each element of the
returned tuple is handed to a callback ``fset_output(index, value)`` right after it is
computed (parameters at the start), and the function returns ``R.tuple()``.
``LazyTransformParams(fget_item, fset_item, ...)``: the older form for functions named
``*transform_params``: ``R.call_packed(fget_item, ..., index)`` per weight, ``fset_item``
for each output, and ``R.vm.kill_object`` after a weight's last use.
"""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...tir.expr import IntImm
from ...transform import PassContext, module_pass
from ..analysis import definable_tir_vars_in_struct_info, defined_symbolic_vars, free_vars
from ..analysis.remove_unused import remove_all_unused
from ..analysis.struct_info_analysis import erase_to_well_defined
from ..block_builder import BlockBuilder
from ..expr import (
    BindingBlock,
    Call,
    ExternFunc,
    Function,
    MatchCast,
    PrimValue,
    SeqExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..expr_functor import ExprMutator
from ..op.vm import kill_object
from ..struct_info import FuncStructInfo, ObjectStructInfo, PrimStructInfo, ShapeStructInfo, TupleStructInfo
from .eliminate_common_subexpr import eliminate_common_subexpr

__all__ = ["LazyGetInput", "LazySetOutput", "LazyTransformParams"]


def _num_input(func: Function) -> int | None:
    value = (func.attrs or {}).get("num_input")
    if value is None:
        return None
    n = int(value)
    if not 0 <= n <= len(func.params):
        raise ValueError(f"num_input={n} must be between 0 and the {len(func.params)} parameters")
    return n


def _is_public(func: Any) -> bool:
    return isinstance(func, Function) and bool(func.attrs) and "global_symbol" in func.attrs


class _LazyInput(ExprMutator):
    def __init__(self) -> None:
        super().__init__()
        self.lookup: dict[Var, int] | None = None
        self.fget: Var | None = None

    def visit_function_(self, op: Function) -> Any:
        if self.lookup is not None:
            return super().visit_function_(op)
        n = _num_input(op) or 0
        self.lookup = {p: i for i, p in enumerate(op.params[n:])}
        self.fget = Var("fget_param", FuncStructInfo([PrimStructInfo("int64"), ObjectStructInfo()],
                                                     ObjectStructInfo()))
        params = [*op.params[:n], self.fget]
        visible = {id(v) for v in definable_tir_vars_in_struct_info(TupleStructInfo([p.struct_info for p in params]))}
        ret = None if op.ret_struct_info is None else erase_to_well_defined(
            op.ret_struct_info, lambda v: v if id(v) in visible else None)
        attrs = {**(op.attrs or {}), "num_input": n + 1}
        try:
            return super().visit_function_(Function(params, op.body, ret, op.is_pure, attrs))
        finally:
            self.lookup = self.fget = None

    def visit_var_(self, op: Var) -> Any:
        if self.lookup is not None and op in self.lookup:
            call = Call(self.fget, [PrimValue(IntImm("int64", self.lookup[op])), StringImm(op.name)])
            untyped = self.builder_.emit(call, op.name + "_untyped")
            return self.builder_.match_cast(untyped, op.struct_info, op.name)
        return super().visit_var_(op)


class _LazyOutput(ExprMutator):
    def __init__(self) -> None:
        super().__init__()
        self.outputs: dict[Var, list[int]] | None = None
        self.fset: Var | None = None

    def _calls(self, var: Var) -> list[Call]:
        if self.outputs is None:
            return []
        return [Call(self.fset, [PrimValue(IntImm("int64", i)), var]) for i in self.outputs.get(var, ())]

    def visit_function_(self, op: Function) -> Any:
        if self.outputs is not None:
            return super().visit_function_(op)
        body = op.body
        self.outputs, inline = {}, []
        results = list(body.body.fields) if isinstance(body.body, Tuple) else [body.body]
        for i, value in enumerate(results):
            if isinstance(value, Var):
                self.outputs.setdefault(value, []).append(i)
            else:
                inline.append((i, value))
        self.fset = Var("fset_output", FuncStructInfo([PrimStructInfo("int64"), ObjectStructInfo()],
                                                      TupleStructInfo([]), purity=False))
        n = _num_input(op)
        params = list(op.params)
        params.insert(len(params) if n is None else n, self.fset)

        def void() -> Var:
            return Var("_void", TupleStructInfo([]))
        start = [VarBinding(void(), c) for p in op.params for c in self._calls(p)]
        end = [VarBinding(void(), Call(self.fset, [PrimValue(IntImm("int64", i)), v])) for i, v in inline]
        new_body = SeqExpr((BindingBlock(tuple(start)), *body.blocks, BindingBlock(tuple(end))), Tuple([]))
        attrs = dict(op.attrs or {})
        if n is not None:
            attrs["num_input"] = n + 1
        try:
            return super().visit_function_(Function(params, new_body, op.ret_struct_info, False, attrs))
        finally:
            self.outputs = self.fset = None

    def visit_binding(self, binding: Any) -> None:
        super().visit_binding(binding)
        for call in self._calls(binding.var):
            self.builder_.emit(call, "_void")


@module_pass(opt_level=0, name="LazyGetInput")
class LazyGetInput:
    """``LazyGetInput()``: public functions read their weights through ``fget_param``."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        funcs = {}
        for gv, f in mod.functions.items():
            if _is_public(f):
                f = _LazyInput().visit_expr(f)
                f = remove_all_unused(eliminate_common_subexpr(f))
            funcs[gv] = f
        return IRModule(funcs, mod.attrs, mod.global_infos)


@module_pass(opt_level=0, name="LazySetOutput")
class LazySetOutput:
    """``LazySetOutput()``: public functions hand each output to ``fset_output``."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        funcs = {gv: _LazyOutput().visit_expr(f) if _is_public(f) else f for gv, f in mod.functions.items()}
        return IRModule(funcs, mod.attrs, mod.global_infos)


# -- LazyTransformParams (TVM's Python pass, for functions named *transform_params) ----------

def _packed(name: str, args: list) -> Call:
    return Call(ExternFunc(name), args, None, [ObjectStructInfo()])


class _Plan:
    """What LazyTransformParams learns of one function before rewriting it."""

    def __init__(self, func: Function, num_input: int) -> None:
        self.out_var = func.body.body
        weights = func.params[num_input] if num_input < len(func.params) else None
        self.outputs: dict[Any, list[PrimValue]] = {}
        self.loaded: set[Var] = set()  # variables bound to an element of the weight tuple
        self.last_use: dict[Var, list[Var]] = {}
        bindings = [b for block in func.body.blocks for b in block.bindings]
        for b in bindings:
            if b.var is self.out_var and isinstance(b.value, Tuple):
                for i, field in enumerate(b.value.fields):
                    self.outputs.setdefault(field, []).append(PrimValue(IntImm("int64", i)))
            elif isinstance(b.value, TupleGetItem) and b.value.tuple_value is weights:
                self.loaded.add(b.var)
        ended: set[Var] = set()
        for b in reversed(bindings):  # the binding after which each variable is dead
            if b.var is self.out_var:
                continue
            dying = [v for v in _vars_in(b.value) if v not in ended]
            ended.update(dying)
            if b.var not in ended:
                dying.append(b.var)
                ended.add(b.var)
            self.last_use[b.var] = dying


def _vars_in(expr: Any) -> list[Var]:
    return free_vars(expr)


class _LegacyInput(ExprMutator):
    def __init__(self, fget: str, extra: list) -> None:
        super().__init__()
        self.fget, self.extra = fget, list(extra)
        self.tuple_param: Var | None = None
        self.params: dict[Var, int] = {}

    def start(self, func: Function, num_input: int) -> Function:
        weights = func.params[num_input:]
        if len(weights) == 1 and isinstance(weights[0].struct_info, TupleStructInfo):
            self.tuple_param = weights[0]
        else:
            self.params = {v: i for i, v in enumerate(weights)}
        attrs = {k: v for k, v in (func.attrs or {}).items() if k != "relax.force_pure"}
        body = self.visit_with_new_scope(func.body)
        return Function(func.params[:num_input], body, func.ret_struct_info, False, attrs)

    def visit_var_(self, op: Var) -> Any:
        if op in self.params:
            index = self.params.pop(op)
            got = self.builder_.emit(_packed(self.fget, [*self.extra, PrimValue(IntImm("int64", index))]))
            self.builder_.emit_normalized(MatchCast(op, got, op.struct_info))
        return super().visit_var_(op)

    def visit_tuple_getitem_(self, op: TupleGetItem) -> Any:
        sinfo = op.struct_info
        new = super().visit_tuple_getitem_(op)
        if self.tuple_param is not None and new.tuple_value is self.tuple_param:
            got = self.builder_.emit(_packed(self.fget, [*self.extra, PrimValue(IntImm("int64", new.index))]))
            return self.builder_.match_cast(got, sinfo)
        return new


class _LegacyOutput(ExprMutator):
    def __init__(self, plan: _Plan, fset: str, extra: list) -> None:
        super().__init__()
        self.plan, self.fset, self.extra = plan, fset, list(extra)

    def visit_binding(self, binding: Any) -> None:
        if binding.var is self.plan.out_var:
            self.set_var_remap(binding.var, self.builder_.emit(Tuple([])))  # returns R.tuple()
            return
        super().visit_binding(binding)
        for var in self.plan.last_use.get(binding.var, ()):
            for index in self.plan.outputs.get(var, ()):
                self.builder_.emit(_packed(self.fset, [*self.extra, index, self.visit_var_(var)]), "_")
            if var in self.plan.loaded:
                self.builder_.emit(kill_object(self.visit_var_(var)), "_")


def _lazy_transform(func: Function, fget: str, fset: str | None, extra_get: list, extra_set: list) -> Function:
    num_input = _num_input(func) or 0
    plan = _Plan(func, num_input)
    new = _LegacyInput(fget, extra_get).start(func, num_input)
    body = new.body
    if fset is not None:
        leaves = [VarBinding(Var("_", ObjectStructInfo()), _packed(fset, [*extra_set, index, expr]))
                  for expr, indices in plan.outputs.items() if not isinstance(expr, Var) for index in indices]
        if leaves:  # constants in the output tuple have no binding to follow
            body = SeqExpr((*body.blocks, BindingBlock(tuple(leaves))), body.body)
        body = _LegacyOutput(plan, fset, extra_set).visit_with_new_scope(body)
    params = [*func.params[:num_input], *extra_get, *extra_set]
    if defined_symbolic_vars(func):
        def leaves_of(sinfo: Any) -> list:
            return [x for f in sinfo.fields for x in leaves_of(f)] if isinstance(sinfo, TupleStructInfo) else [sinfo]
        params += [Var("symbolic_var_holder", s) for p in func.params[num_input:] for s in leaves_of(p.struct_info)
                   if isinstance(s, (PrimStructInfo, ShapeStructInfo))]
    attrs = {k: v for k, v in (func.attrs or {}).items() if k != "relax.force_pure"}
    # the builder refines the declared R.Object to the body's R.Tuple(), as TVM's Function does
    return BlockBuilder()._make_function(params, body, ObjectStructInfo(), False, attrs)


@module_pass(opt_level=0, name="LazyTransformParams")
class LazyTransformParams:
    """``LazyTransformParams(fget_item="get_item", fset_item="set_item",
    extra_get_item_params=None, extra_set_item_params=None)``: run after ToNonDataflow and
    RemovePurityChecking, as TVM says."""

    def __init__(self, fget_item: str = "get_item", fset_item: str | None = "set_item",
                 extra_get_item_params: list | None = None, extra_set_item_params: list | None = None) -> None:
        if fget_item is None:
            raise ValueError("LazyTransformParams: fget_item is required (set_item alone is not supported)")
        self.fget_item, self.fset_item = fget_item, fset_item
        self.extra_get = list(extra_get_item_params or [])
        self.extra_set = list(extra_set_item_params or [])

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        funcs = {gv: _lazy_transform(f, self.fget_item, self.fset_item, self.extra_get, self.extra_set)
                 if isinstance(f, Function) and gv.name_hint.endswith("transform_params") else f
                 for gv, f in mod.functions.items()}
        return IRModule(funcs, mod.attrs, mod.global_infos)
