"""LiftTransformParams: what a function computes from its weights alone moves to a separate
``<name>_transform_params`` function, run once ahead of time (TVM's
``relax.transform.LiftTransformParams``).

The weights are the parameters after ``num_input``.  A binding inside a dataflow block is
computable ahead of time when it uses only weights and other such bindings (never a runtime
input, an ``R.builtin.stop_lift_params`` call or a symbolic variable a runtime input defines).
``<name>_transform_params(params)`` takes the weights as one tuple and returns, in order, the
weights still needed at run time and the lifted values still needed; the function itself then
takes its runtime inputs followed by those (and, first, a shape of any symbolic variable only
the weights defined).  ``shared_transform=True`` (or a list of function names) makes one
``transform_params`` for several functions with matching weights, from the bindings they
share.  With the config ``relax.lift_transform_params.consume_params`` the transform releases
each weight (``vm.builtin.tuple_reset_item``) once it has read it.
"""

from __future__ import annotations

from typing import Any

from ...error import TVMError
from ...ir.module import GlobalVar, IRModule
from ...ir.op import Op
from ...ir.structural import structural_equal, structural_hash
from ...tir.expr import IntImm
from ...transform import PassContext, module_pass, register_pass_config
from ..analysis import (
    definable_tir_vars_in_struct_info,
    free_symbolic_vars,
    free_vars,
    remove_all_unused,
    tir_vars_in_struct_info,
)
from ..expr import (
    BindingBlock,
    Call,
    DataflowBlock,
    ExternFunc,
    Function,
    MatchCast,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
    struct_info_of,
)
from ..expr_functor import ExprMutator, ExprVisitor
from ..struct_info import ShapeStructInfo, TupleStructInfo
from ._util import CopyWithNewVars
from .bundle_model_params import _Bundler
from .canonicalize_bindings import canonicalize_bindings

__all__ = ["LiftTransformParams"]

CONSUME_PARAMS = "relax.lift_transform_params.consume_params"
register_pass_config(CONSUME_PARAMS, bool)
_STOP = "relax.builtin.stop_lift_params"


def _num_input(func: Function) -> int | None:
    value = (func.attrs or {}).get("num_input")
    return None if value is None else int(value)


def _bound_value(binding: Any) -> Any:
    return binding.value


class _Info:
    """What one function (or the shared plan) lifts."""

    def __init__(self) -> None:
        self.lifted: list[Any] = []             # bindings computable ahead of time, in order
        self.needs_weight: set[Any] = set()     # variables depending on a weight
        self.at_runtime: set[Any] = set()       # variables (relax and TIR) needed at run time

    def outputs(self, params: list[Var]) -> list[Var]:
        """The transform's results: weights needed at run time, then lifted values needed."""
        out = [p for p in params if p in self.at_runtime]
        out += [b.var for b in self.lifted if b.var in self.needs_weight and b.var in self.at_runtime]
        return out

    def make_transform(self, params: list[Var], sym_vars: list, outputs: list[Var]) -> Function:
        fields: list[Any] = [ShapeExpr(sym_vars)] if sym_vars else []
        out_bindings = []
        for v in outputs:
            out_var = Var(v.name_hint + "_output", v.struct_info)
            out_bindings.append(VarBinding(out_var, v))
            fields.append(out_var)
        tup = Tuple(fields)
        tuple_var = Var("output_tuple", TupleStructInfo([struct_info_of(f) if not isinstance(f, ShapeExpr)
                                                         else ShapeStructInfo(list(f.values)) for f in fields]))
        if fields:
            out_bindings.append(VarBinding(tuple_var, tup))
        # an empty result is written in line (R.tuple()), as TVM normalizes it
        body = SeqExpr((DataflowBlock(tuple(self.lifted)), DataflowBlock(tuple(out_bindings))),
                       tuple_var if fields else tup)
        func = Function(list(params), body, None, True, {"num_input": 0})
        func = CopyWithNewVars().visit_expr(func)
        func = _Bundler("params").visit_expr(func)
        func = canonicalize_bindings(func)
        return remove_all_unused(func)


class _Collector(ExprVisitor):
    """Which bindings of a function can be computed from its weights alone."""

    def __init__(self, info: _Info, liftable: set, shared: dict | None = None) -> None:
        self.info, self.liftable, self.shared = info, liftable, shared
        self.in_dataflow = False

    def visit_dataflow_block_(self, block: DataflowBlock) -> None:
        outer, self.in_dataflow = self.in_dataflow, True
        super().visit_dataflow_block_(block)
        self.in_dataflow = outer

    def can_lift(self, binding: Any) -> bool:
        value = _bound_value(binding)
        if not self.in_dataflow or isinstance(value, ExternFunc):
            return False
        if isinstance(value, Call) and isinstance(value.op, Op) and value.op.name == _STOP:
            return False
        if any(v not in self.liftable for v in free_vars(value)):
            return False
        return all(v in self.liftable for v in tir_vars_in_struct_info(binding.var.struct_info))

    def visit_binding(self, binding: Any) -> None:
        value = _bound_value(binding)
        info = self.info
        if self.can_lift(binding) and (self.shared is None or binding.var in self.shared):
            info.lifted.append(binding)
            self.liftable.add(binding.var)
            if any(v in info.needs_weight for v in free_vars(value)):
                info.needs_weight.add(binding.var)
        else:
            info.at_runtime.add(binding.var)
            info.at_runtime.update(free_vars(value))
            info.at_runtime.update(free_symbolic_vars(value))
        super().visit_binding(binding)


def _collect_local(func: Function, shared: dict | None = None) -> tuple[_Info, int]:
    num_input = _num_input(func)
    num_input = len(func.params) if num_input is None else num_input
    info, liftable = _Info(), set()
    for p in func.params[num_input:]:
        liftable.add(p)
        info.needs_weight.add(p)
        liftable.update(definable_tir_vars_in_struct_info(p.struct_info))
    _Collector(info, liftable, shared).visit_expr(func)
    return info, num_input


def _sym_vars(params: list[Var], runtime_params: list[Var], outputs: list[Var], info: _Info) -> list:
    """Symbolic variables only the weights define that the runtime still needs."""
    def definable(vs: list[Var]) -> list:
        return definable_tir_vars_in_struct_info(TupleStructInfo([v.struct_info for v in vs]))
    from_runtime = set(definable(runtime_params))
    from_outputs = set(definable(outputs))
    return [v for v in definable(params) if v in info.at_runtime and v not in from_runtime
            and v not in from_outputs]


class _Suppress(ExprMutator):
    """The function without its lifted bindings; stop_lift_params markers dropped."""

    def __init__(self, drop: set, remap: dict) -> None:
        super().__init__()
        self.drop = drop
        self.var_remap_.update(remap)

    def visit_binding(self, binding: Any) -> None:
        if binding.var not in self.drop:
            super().visit_binding(binding)

    def visit_call_(self, op: Call) -> Any:
        if isinstance(op.op, Op) and op.op.name == _STOP:
            return self.visit_expr(op.args[0])
        return super().visit_call_(op)


def _make_runtime(func: Function, info: _Info, num_input: int, sym_vars: list, outputs: list[Var]) -> Function:
    params = list(func.params[:num_input])
    if sym_vars:
        params.append(Var("vars_from_compile_time_params", ShapeStructInfo(list(sym_vars))))
    remap = {}
    for v in outputs:
        fresh = Var(v.name_hint, v.struct_info)
        remap[v] = fresh
        params.append(fresh)
    drop = {b.var for b in info.lifted if b.var in info.needs_weight}
    mutator = _Suppress(drop, remap)
    body = mutator.visit_with_new_scope(func.body)
    new = Function(params, body, func.ret_struct_info, func.is_pure, func.attrs)
    new = CopyWithNewVars().visit_expr(new)
    return canonicalize_bindings(new)


def _lift_local(func: Function) -> tuple[Function, Function]:
    info, num_input = _collect_local(func)
    weights = list(func.params[num_input:])
    outputs = info.outputs(weights)
    sym_vars = _sym_vars(func.params, func.params[:num_input], outputs, info)
    return _make_runtime(func, info, num_input, sym_vars, outputs), info.make_transform(weights, sym_vars, outputs)


class _ConsumeParams(ExprMutator):
    """Each weight read from the bundled tuple is released from it right after
    (``vm.builtin.tuple_reset_item``), so the transform holds one copy of each."""

    def __init__(self, params: Var) -> None:
        super().__init__()
        self.params, self.read = params, {}

    def visit_var_binding_(self, binding: VarBinding) -> None:
        value = binding.value
        if not (isinstance(value, TupleGetItem) and value.tuple_value is self.params):
            super().visit_var_binding_(binding)
            return
        if value.index in self.read:
            self.set_var_remap(binding.var, self.read[value.index])
            return
        super().visit_var_binding_(binding)
        self.read[value.index] = self.visit_expr(binding.var)
        reset = Call(Op.get("relax.call_pure_packed"), [ExternFunc("vm.builtin.tuple_reset_item"), self.params,
                                                         PrimValue(IntImm("int32", value.index))],
                     None, [TupleStructInfo([])])
        self.builder_.emit(reset, "_")


def _targets(mod: IRModule, shared: Any) -> list[tuple[GlobalVar, Function]]:
    if isinstance(shared, (list, tuple)) and shared:
        out = []
        for name in shared:
            if name not in mod:
                raise ValueError(f"LiftTransformParams: the module has no function named {name!r}")
            func = mod[name]
            if not isinstance(func, Function) or _num_input(func) is None:
                raise ValueError(f"LiftTransformParams: {name} must be a Relax function with a 'num_input' "
                                 "attribute to share its parameter transform")
            out.append((mod.get_global_var(name), func))
        return out
    found = [(gv, f) for gv, f in mod.functions.items() if isinstance(f, Function) and _num_input(f) is not None
             and not gv.name_hint.endswith("transform_params")]
    return sorted(found, key=lambda item: item[0].name_hint)


@module_pass(opt_level=1, name="LiftTransformParams")
class LiftTransformParams:
    """``LiftTransformParams(shared_transform=False)`` (see the module docstring)."""

    def __init__(self, shared_transform: Any = False) -> None:
        if not isinstance(shared_transform, (bool, list, tuple)):
            raise TypeError("LiftTransformParams: shared_transform must be a bool or a list of function names")
        self.shared_transform = shared_transform

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        targets = _targets(mod, self.shared_transform)
        runtime: dict[GlobalVar, Function] = {}
        transforms: dict[str, Function] = {}
        if self.shared_transform is not False and self.shared_transform != []:
            if targets:
                runtime, transform = _lift_shared(targets)
                transforms["transform_params"] = transform
        else:
            for gv, func in targets:
                runtime[gv], transforms[gv.name_hint + "_transform_params"] = _lift_local(func)
        if not runtime and not transforms:
            return mod
        funcs = {gv: runtime.get(gv, f) for gv, f in mod.functions.items()}
        consume = bool(ctx.config.get(CONSUME_PARAMS, False)) if ctx is not None else False
        for name, transform in transforms.items():
            old = next((gv for gv in funcs if gv.name_hint == name), None)
            if old is not None:
                transform = _compose(funcs.pop(old), transform)
            transform = Function(transform.params, transform.body, transform.ret_struct_info, transform.is_pure,
                                 {**(transform.attrs or {}), "global_symbol": name})
            if consume:
                transform = _ConsumeParams(transform.params[-1]).visit_expr(transform)
            funcs[GlobalVar(name)] = transform
        return IRModule(funcs, mod.attrs, mod.global_infos)


def _compose(old: Function, new: Function) -> Function:
    """The existing transform followed by the new one (which takes the old one's result)."""
    link = BindingBlock((VarBinding(new.params[0], old.body.body),))
    body = SeqExpr((*old.body.blocks, link, *new.body.blocks), new.body.body)
    func = ExprMutator().builder_.normalize(Function(list(old.params), body, None, True, {"num_input": 0}))
    return canonicalize_bindings(CopyWithNewVars().visit_expr(func))


class _ShareError(TVMError, ValueError):
    """Functions whose weights do not match cannot share one transform."""


class _Substitute(ExprMutator):
    def __init__(self, remap: dict) -> None:
        super().__init__()
        self.var_remap_.update({k: v for k, v in remap.items() if isinstance(k, Var)})


def _param_mapping(targets: list[tuple[GlobalVar, Function]]) -> dict:
    """Each function's weights (and the symbolic variables they define) to the first's."""
    first = targets[0][1]
    n0 = _num_input(first)
    count = len(first.params) - n0
    remap: dict = {}
    for gv, func in targets:
        ni = _num_input(func)
        if len(func.params) - ni != count:
            raise _ShareError(f"LiftTransformParams: every function sharing a transform must take the same number "
                             f"of weights; {gv.name_hint} takes {len(func.params) - ni}, {targets[0][0].name_hint} "
                             f"{count}")
        for p, q in zip(func.params[ni:], first.params[n0:]):
            if not structural_equal(p.struct_info, q.struct_info, map_free_vars=True):
                raise _ShareError(f"LiftTransformParams: weight {p.name_hint} of {gv.name_hint} has struct info "
                                 f"{p.struct_info}, but the matching weight {q.name_hint} of "
                                 f"{targets[0][0].name_hint} has {q.struct_info}: the type of the parameters "
                                 "should be the same for all target functions")
            remap.setdefault(p, q)
            for a, b in zip(definable_tir_vars_in_struct_info(p.struct_info),
                            definable_tir_vars_in_struct_info(q.struct_info)):
                remap.setdefault(a, b)
    return remap


class _SharedCollector(_Collector):
    """Bindings that compute the same value (after renaming) in every function."""

    def __init__(self, liftable: set, remap: dict) -> None:
        super().__init__(_Info(), liftable)
        self.remap = remap
        self.unified: list[Any] = []
        self.groups: dict[int, list[tuple[Any, list[Any]]]] = {}

    def visit_binding(self, binding: Any) -> None:
        if isinstance(binding, MatchCast):
            raise ValueError("LiftTransformParams: R.match_cast is not supported when sharing a transform")
        if self.can_lift(binding):
            self.liftable.add(binding.var)
            key = _Substitute(self.remap).visit_expr(binding.value)
            bucket = self.groups.setdefault(structural_hash(key), [])
            group = next((g for k, g in bucket if structural_equal(k, key)), None)
            if group is None:
                group = [binding]
                bucket.append((key, group))
                self.unified.append(binding)
            else:
                group.append(binding)
            self.remap[binding.var] = group[0].var
        ExprVisitor.visit_binding(self, binding)


def _lift_shared(targets: list[tuple[GlobalVar, Function]]) -> tuple[dict, Function]:
    remap = _param_mapping(targets)
    liftable = {p for _, f in targets for p in f.params[_num_input(f):]}
    collector = _SharedCollector(liftable, dict(remap))
    for _, func in targets:
        collector.visit_expr(func)
    shared, var_map = _Info(), dict(remap)
    for binding in collector.unified:
        group = next(g for bucket in collector.groups.values() for k, g in bucket if g[0] is binding)
        if len(group) == len(targets):
            shared.lifted.append(binding)
            for b in group:
                var_map[b.var] = binding.var
    first = targets[0][1]
    weights = list(first.params[_num_input(first):])
    locals_ = []
    for gv, func in targets:
        info, num_input = _collect_local(func, var_map)
        shared.needs_weight.update(var_map.get(v, v) for v in info.needs_weight)
        shared.at_runtime.update(var_map.get(v, v) for v in info.at_runtime)
        locals_.append((gv, func, info, num_input))
    outputs = shared.outputs(weights)
    sym_vars = _sym_vars(weights, [], outputs, shared)
    runtime = {}
    for gv, func, info, num_input in locals_:
        back = {var_map[v]: v for v in [*func.params[num_input:], *(b.var for b in info.lifted)] if v in var_map}
        back.update({b: a for a, b in var_map.items() if not isinstance(a, Var) and a in
                     set(definable_tir_vars_in_struct_info(TupleStructInfo([p.struct_info for p in func.params])))})
        local_outputs = [back.get(v, v) for v in outputs]
        local_sym = [back.get(v, v) for v in sym_vars]
        runtime[gv] = _make_runtime(func, info, num_input, local_sym, local_outputs)
    return runtime, shared.make_transform(weights, sym_vars, outputs)
