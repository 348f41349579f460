"""BundleModelParams: a function's weights (the parameters after ``num_input``) become one
tuple parameter (TVM's ``relax.transform.BundleModelParams``), named ``model_params`` unless
``param_tuple_name`` says otherwise; each use of a weight reads its tuple element, bound
where it is used under the weight's name."""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...transform import PassContext, module_pass
from ..expr import Function, TupleGetItem, Var
from ..expr_functor import ExprMutator
from ..struct_info import TupleStructInfo

__all__ = ["BundleModelParams"]


class _Bundler(ExprMutator):
    def __init__(self, name: str | None) -> None:
        super().__init__()
        self.name = name or "model_params"
        self.weights: dict[Var, TupleGetItem] = {}

    def visit_function_(self, op: Function) -> Any:
        num_input = (op.attrs or {}).get("num_input")
        if num_input is None:
            return op
        num_input = int(num_input)
        if not 0 <= num_input <= len(op.params):
            raise ValueError(f"BundleModelParams: num_input={num_input}, but the function has "
                             f"{len(op.params)} parameters")
        weights = op.params[num_input:]
        bundle = Var(self.name, TupleStructInfo([w.struct_info for w in weights]))
        for i, w in enumerate(weights):
            self.weights[w] = TupleGetItem(bundle, i)
        func = Function([*op.params[:num_input], bundle], op.body, op.ret_struct_info, op.is_pure, op.attrs)
        return super().visit_function_(func)

    def visit_var_(self, op: Var) -> Any:
        item = self.weights.get(op)
        if item is not None:
            return self.builder_.emit(item, op.name)  # bound at each use, as TVM does
        return super().visit_var_(op)


@module_pass(opt_level=1, name="BundleModelParams")
class BundleModelParams:
    """``BundleModelParams(param_tuple_name=None)``."""

    def __init__(self, param_tuple_name: str | None = None) -> None:
        self.param_tuple_name = param_tuple_name

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        mutator = _Bundler(self.param_tuple_name)
        funcs = {gv: mutator.visit_expr(f) if isinstance(f, Function) else f for gv, f in mod.functions.items()}
        if all(funcs[gv] is f for gv, f in mod.functions.items()):
            return mod
        return IRModule(funcs, mod.attrs, mod.global_infos)
