"""``AppendLoss`` (a backbone function and a loss function joined into one) and
``register_te_gradient``, as in TVM's ``relax.training.utils``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...error import TVMError
from ...ir.module import IRModule
from ...ir.structural import structural_equal
from ...runtime.registry import register_func
from ...transform import PassContext, module_pass
from ..expr import DataflowBlock, DataflowVar, Function, SeqExpr, Tuple, Var
from ..expr_functor import ExprMutator
from ..struct_info import PrimStructInfo, TensorStructInfo
from ..transform._util import CopyWithNewVars

__all__ = ["AppendLoss", "register_te_gradient"]


def _one_dataflow_block(body: Any, what: str) -> DataflowBlock:
    if not (isinstance(body, SeqExpr) and len(body.blocks) == 1 and isinstance(body.blocks[0], DataflowBlock)):
        raise TVMError(f"AppendLoss: {what} should have exactly one DataflowBlock")
    return body.blocks[0]


class _Appender(ExprMutator):
    """Re-emits the backbone's bindings then the loss's into one dataflow block, the loss's
    prediction parameters replaced by the backbone's outputs."""

    def visit_var_def_(self, var: Var) -> Var:
        # definitions are renamed through the remap (a prediction output turns into a DataflowVar)
        return self.var_remap_.get(var, var)

    visit_dataflow_var_def_ = visit_var_def_

    def join(self, func: Function, loss: Function, num_outputs: int) -> Function:
        backbone_block = _one_dataflow_block(func.body, "the backbone function")
        loss_block = _one_dataflow_block(loss.body, "the loss function")
        loss_ret = loss.body.body
        if not (isinstance(loss_ret, Var) and isinstance(loss_ret.struct_info, TensorStructInfo)
                and loss_ret.struct_info.ndim == 0):
            raise TVMError("AppendLoss: the loss function must return a scalar (0-dim tensor) Var")
        ret = func.body.body
        outs = list(ret.fields) if isinstance(ret, Tuple) else [ret]
        if not all(isinstance(v, Var) for v in outs):
            raise TVMError("AppendLoss: the backbone should return a Var or a Tuple of Vars")
        if len(outs) < num_outputs:
            raise TVMError(f"AppendLoss: the backbone returns {len(outs)} values, fewer than "
                             f"num_backbone_outputs {num_outputs}")
        if len(loss.params) < num_outputs:
            raise TVMError(f"AppendLoss: the loss function has {len(loss.params)} parameters, fewer than "
                             f"num_backbone_outputs {num_outputs}")
        others = set(outs[num_outputs:])
        for i in range(num_outputs):  # outputs only the loss reads stay inside the dataflow block
            v = outs[i]
            if v not in others and not isinstance(v.struct_info, PrimStructInfo):
                outs[i] = self.var_remap_[v] = DataflowVar(v.name_hint, v.struct_info)
        for i in range(num_outputs):
            p, o = loss.params[i], outs[i]
            if not structural_equal(p.struct_info, o.struct_info):
                raise TVMError(f"AppendLoss: the {i}-th return value of the backbone has struct info "
                                 f"{o.struct_info}, but the loss function's parameter {p.name_hint} has "
                                 f"{p.struct_info}")
            self.var_remap_[p] = o
        self.builder_.begin_dataflow_block()
        for b in list(backbone_block.bindings) + list(loss_block.bindings):
            self.visit_binding(b)
        block = self.builder_.end_block()
        results = [self.visit_expr(loss_ret)] + [self.visit_expr(v) for v in outs[num_outputs:]]
        body = SeqExpr((block,), results[0] if len(results) == 1 else Tuple(results))
        params = list(func.params) + list(loss.params[num_outputs:])
        return self.builder_.normalize(Function(params, body, None, func.is_pure, func.attrs))


@module_pass(opt_level=0, name="AppendLoss")
class AppendLoss:
    """``AppendLoss(func_name, loss_function, num_backbone_outputs=1, new_func_name=None)``:
    add ``new_func_name`` (default ``func_name + "_loss"``): the backbone's bindings then the
    loss's, taking the backbone's parameters and the loss's remaining ones, returning the loss
    and the backbone's outputs past the first ``num_backbone_outputs``."""

    def __init__(self, func_name: str, loss_function: Function, num_backbone_outputs: int = 1,
                 new_func_name: str | None = None) -> None:
        self.func_name, self.loss_function = func_name, loss_function
        self.num_backbone_outputs, self.new_func_name = int(num_backbone_outputs), new_func_name

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        func = mod[self.func_name]
        if not isinstance(func, Function):
            raise TVMError(f"AppendLoss: {self.func_name} is not a Relax function")
        name = self.new_func_name or f"{self.func_name}_loss"
        # both copied: the new function must not define the variables the old ones define
        joined = _Appender(mod).join(CopyWithNewVars().visit_expr(func),
                                     CopyWithNewVars().visit_expr(self.loss_function), self.num_backbone_outputs)
        return mod.with_function(name, joined.with_attr("global_symbol", name))


def register_te_gradient(te_grad_name: str, te_grad_func: Callable | None = None) -> Any:
    """Register a TE gradient function under ``te_grad_name`` for ``call_tir_with_grad`` calls:
    it takes the output gradient and the call's inputs (then the call's ``te_grad_kwargs``) and
    returns the input gradients as TE tensors."""

    def register(func: Callable) -> Callable:
        def handler(orig_var: Var, call: Any, output_grad: Var, ctx: Any) -> Any:
            kwargs = dict(call.attrs.get("te_grad_kwargs", {}) if isinstance(call.attrs, dict)
                          else getattr(call.attrs, "te_grad_kwargs", {}) or {})
            return ctx.emit_te(func, output_grad, *call.args[1].fields, **kwargs,
                               primfunc_name_hint=te_grad_name)

        register_func("tvm.relax.te_grad._register." + te_grad_name, handler, override=True)
        return func

    return register(te_grad_func) if te_grad_func else register
