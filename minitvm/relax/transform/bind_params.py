"""BindParams: some parameters of a function become constants.

::

    mod = relax.transform.BindParams("main", {"w": w_np})(mod)

Each named parameter (a name or the ``relax.Var`` itself) is removed from the function's
parameter list and every use of it becomes ``R.const(value)``.  The value must match the
parameter's dtype and rank; symbolic dimensions it fixes (``n`` of ``(n, 4)``) are
substituted in the struct info of the remaining parameters too, and the struct info of
the body is derived again from the now concrete shapes.
"""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...runtime.ndarray import as_numpy
from ...tir.expr import IntImm
from ...tir.expr import Var as TirVar
from ...tir.functor import substitute
from ...transform import PassContext, module_pass
from ..analysis.struct_info_analysis import substitute_struct_info
from ..expr import Call, Constant, Expr, Function, PrimValue, ShapeExpr, Var
from ..expr_functor import ExprMutator
from ..struct_info import TensorStructInfo, struct_info_text

__all__ = ["BindParams", "bind_params"]


def _match_params(func: Function, params: dict) -> dict[Var, Expr]:
    by_name: dict[str, list[Var]] = {}
    for p in func.params:
        by_name.setdefault(p.name, []).append(p)
    out: dict[Var, Expr] = {}
    for key, value in params.items():
        if isinstance(key, Var):
            if key not in func.params:
                raise ValueError(f"BindParams: {key.name} is not a parameter of the function")
            param = key
        else:
            found = by_name.get(str(key), [])
            if not found:
                continue  # TVM ignores names the function does not have
            if len(found) > 1:
                raise ValueError(f"BindParams: the function has {len(found)} parameters named {key!r}; "
                                 "pass the relax.Var instead of the name")
            param = found[0]
        if not isinstance(value, Expr):  # arrays become constants; Relax expressions stay as given
            value = Constant(as_numpy(value))
        out[param] = value
    return out


def _bind_symbolic(param: Var, const: Constant, sym: dict[int, IntImm]) -> None:
    """Check ``const`` against the parameter and record the symbolic dimensions it fixes."""
    sinfo = param.struct_info
    if not isinstance(sinfo, TensorStructInfo):
        raise TypeError(f"BindParams: parameter {param.name} is {struct_info_text(sinfo)}, not a tensor")
    data = const.data
    if not sinfo.is_unknown_dtype and sinfo.dtype != data.dtype:
        raise TypeError(f"BindParams: parameter {param.name} has dtype {sinfo.dtype}, the value {data.dtype}")
    if sinfo.ndim != -1 and sinfo.ndim != len(data.shape):
        raise ValueError(f"BindParams: parameter {param.name} has {sinfo.ndim} dimensions, "
                         f"the value has shape {data.shape}")
    for d, n in zip(sinfo.shape_values or (), data.shape):
        if isinstance(d, TirVar):
            old = sym.setdefault(id(d), IntImm(d.dtype, int(n)))
            if old.value != n:
                raise ValueError(f"BindParams: {d.name} would be both {old.value} and {n}")
        elif isinstance(d, IntImm) and d.value != n:
            raise ValueError(f"BindParams: parameter {param.name} has shape "
                             f"{struct_info_text(sinfo)}, the value {data.shape}")


class _SymbolicBinder(ExprMutator):
    """Also puts the fixed symbolic dimensions into the body: calls' output struct info
    (``R.call_dps_packed(..., R.Tensor((1, n)))``), shapes and prim values."""

    def __init__(self, fmap: Any):
        super().__init__()
        self.fmap = fmap

    def visit_call_(self, op: Call) -> Any:
        call = super().visit_call_(op)
        if not call.sinfo_args:
            return call
        sinfo_args = tuple(substitute_struct_info(s, self.fmap) for s in call.sinfo_args)
        if all(a is b for a, b in zip(sinfo_args, call.sinfo_args)):
            return call
        return Call(call.op, call.args, call.attrs, sinfo_args)

    def visit_shape_expr_(self, op: ShapeExpr) -> Any:
        values = [substitute(v, self.fmap) for v in op.values]
        return op if all(a is b for a, b in zip(values, op.values)) else ShapeExpr(values)

    def visit_prim_value_(self, op: PrimValue) -> Any:
        value = substitute(op.value, self.fmap)
        return op if value is op.value else PrimValue(value)


def bind_params(func: Function, params: dict) -> Function:
    """``func`` with the parameters in ``params`` (name or Var -> array) made constants."""
    consts = _match_params(func, params)
    if not consts:
        return func
    sym: dict[int, IntImm] = {}
    for p, c in consts.items():
        if isinstance(c, Constant):
            _bind_symbolic(p, c, sym)
    mutator = _SymbolicBinder(lambda v: sym.get(id(v))) if sym else ExprMutator()
    new_params = []
    for p in func.params:
        if p in consts:
            mutator.set_var_remap(p, consts[p])
            continue
        sinfo = substitute_struct_info(p.struct_info, lambda v: sym.get(id(v))) if sym else p.struct_info
        new = p if sinfo is p.struct_info else Var(p.name, sinfo)
        if new is not p:
            mutator.set_var_remap(p, new)
        new_params.append(new)
    body = mutator.visit_with_new_scope(func.body)
    return mutator.builder_.normalize(Function(new_params, body, None, func.is_pure, func.attrs))


@module_pass(opt_level=0, name="BindParams")
class BindParams:
    """``BindParams(func_name, {"w": array, ...})``: those parameters of ``func_name`` become
    constants (numpy arrays, NDArrays or ``relax.Constant``)."""

    def __init__(self, func_name: str, params: dict[Any, Any]):
        if not isinstance(params, dict):
            raise TypeError(f"BindParams: params must be a dict of name or Var -> array, got {params!r}")
        self.func_name = func_name
        self.params = params

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        if self.func_name not in mod:
            raise ValueError(f"BindParams: the module has no function {self.func_name!r}")
        func = mod[self.func_name]
        if not isinstance(func, Function):
            raise TypeError(f"BindParams: {self.func_name} is not a Relax function")
        new = bind_params(func, self.params)
        return mod if new is func else mod.with_function(self.func_name, new)
