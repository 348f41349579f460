"""Gradient: reverse-mode differentiation of one Relax function (TVM's ``relax.transform.Gradient``).

``Gradient("main", require_grads=None, target_index=0)(mod)`` adds ``main_adjoint``: the same
parameters, the same forward bindings, then each binding's adjoint in reverse order, built
from its operator's gradient rule (``FPrimalGradient``, :mod:`minitvm.relax.op._op_gradient`).
It returns ``(the original result, (gradient of each required parameter, ...))``.  The target
(the result, or field ``target_index`` of a tuple result) must be a scalar; the function body
one dataflow block, as TVM requires.  A variable used twice gets the sum of its adjoints; a
parameter nothing flows to gets zeros.
"""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...ir.op import Op
from ...transform import PassContext, module_pass
from ..block_builder import BlockBuilder
from ..expr import (
    Call,
    Constant,
    DataflowBlock,
    Expr,
    Function,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..op import add, ones_like, zeros
from ..struct_info import TensorStructInfo, TupleStructInfo
from ._util import CopyWithNewVars

__all__ = ["Gradient"]


class _Adjoints:
    """Adjoint expressions per variable (a tuple variable's per field), summed as they come."""

    def __init__(self, bb: BlockBuilder) -> None:
        self.bb = bb
        self.of: dict[Var, Any] = {}

    def add(self, target: Expr, grad: Expr) -> None:
        if isinstance(grad, Call) and grad.op == Op.get("relax.grad.no_grad"):
            return
        if isinstance(target, Tuple):  # an inline tuple argument (concat((a, b)))
            grad = self.bb.emit(grad)
            for i, field in enumerate(target.fields):
                self.add(field, TupleGetItem(grad, i))
            return
        if not isinstance(target, Var):
            return  # constants and shapes have no adjoint
        if isinstance(target.struct_info, TupleStructInfo):
            grad = self.bb.emit(grad)
            for i in range(len(target.struct_info.fields)):
                self.add_field(target, i, TupleGetItem(grad, i))
            return
        old = self.of.get(target)
        self.of[target] = grad if old is None else add(old, grad)

    def add_field(self, target: Var, index: int, grad: Expr) -> None:
        fields = self.of.setdefault(target, {})
        fields[index] = grad if index not in fields else add(fields[index], grad)

    def get(self, var: Var) -> Expr | None:
        """The adjoint of ``var`` (None when nothing flowed to it); a tuple's fields that
        got nothing are zeros."""
        adj = self.of.get(var)
        if adj is None or not isinstance(var.struct_info, TupleStructInfo):
            return adj
        return Tuple([adj[i] if i in adj else _zeros(f) for i, f in enumerate(var.struct_info.fields)])


def _zeros(sinfo: Any) -> Expr:
    if not isinstance(sinfo, TensorStructInfo) or sinfo.shape is None:
        raise NotImplementedError(f"relax.transform.Gradient: zeros of {sinfo} (a non-tensor) are not supported")
    return zeros(sinfo.shape, sinfo.dtype)


def _backward(bb: BlockBuilder, binding: VarBinding, adjoints: _Adjoints) -> None:
    grad = adjoints.get(binding.var)
    if grad is None:
        return
    grad = bb.emit(grad, f"{binding.var.name_hint}_adjoint")
    value = binding.value
    if isinstance(value, Call) and isinstance(value.op, Op):
        rule = value.op.get_attr("FPrimalGradient")
        if rule is None:
            raise NotImplementedError(f"relax.transform.Gradient: operator {value.op.name} has no gradient rule "
                                      "(FPrimalGradient)")
        for arg, g in zip(value.args, rule(binding.var, value, grad, bb)):
            adjoints.add(arg, g)
    elif isinstance(value, Tuple):
        for i, field in enumerate(value.fields):
            adjoints.add(field, TupleGetItem(grad, i))
    elif isinstance(value, TupleGetItem) and isinstance(value.tuple_value, Var):
        adjoints.add_field(value.tuple_value, value.index, grad)
    elif isinstance(value, Var):
        adjoints.add(value, grad)
    elif not isinstance(value, (Constant, ShapeExpr, PrimValue)):  # those have no inputs
        raise NotImplementedError(f"relax.transform.Gradient: cannot differentiate the binding of "
                                  f"{binding.var.name_hint} ({type(value).__name__})")


def _adjoint(func: Function, name: str, require_grads: Any, target_index: int) -> Function:
    positions = range(len(func.params)) if require_grads is None else [
        _position(func, r, name) for r in ([require_grads] if isinstance(require_grads, Var) else require_grads)]
    func = CopyWithNewVars().visit_expr(func)
    body = func.body
    if not (isinstance(body, SeqExpr) and len(body.blocks) == 1 and isinstance(body.blocks[0], DataflowBlock)):
        raise ValueError(f"relax.transform.Gradient: {name} must be one dataflow block and a return")
    wanted = [func.params[i] for i in positions]
    bb = BlockBuilder()
    with bb.function(f"{name}_adjoint", list(func.params)):
        with bb.dataflow():
            for b in body.blocks[0].bindings:
                bb.emit_normalized(b)
            result = body.body
            target = result.fields[target_index] if isinstance(result, Tuple) else result
            if not isinstance(target, Var) or getattr(target.struct_info, "ndim", None) != 0:
                raise ValueError(f"relax.transform.Gradient: the target of {name} must be a scalar variable")
            adjoints = _Adjoints(bb)
            adjoints.add(target, ones_like(target))
            for b in reversed(body.blocks[0].bindings):
                if isinstance(b, VarBinding):
                    _backward(bb, b, adjoints)
            grads = [_zeros(p.struct_info) if adjoints.get(p) is None else adjoints.get(p) for p in wanted]
            out = bb.emit_output(Tuple([result, Tuple(grads)]))
        bb.emit_func_output(out)
    return bb.get()[f"{name}_adjoint"]


def _position(func: Function, param: Var, name: str) -> int:
    for i, p in enumerate(func.params):
        if p is param:
            return i
    raise ValueError(f"relax.transform.Gradient: {param.name_hint} is not a parameter of {name}")


@module_pass(opt_level=0, name="Gradient")
class Gradient:
    """``Gradient(func_name, require_grads=None, target_index=0)``: add ``<func_name>_adjoint``."""

    def __init__(self, func_name: str, require_grads: Any = None, target_index: int = 0):
        self.func_name, self.require_grads, self.target_index = func_name, require_grads, target_index

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        func = mod[self.func_name]
        return mod.with_function(f"{self.func_name}_adjoint",
                                 _adjoint(func, self.func_name, self.require_grads, self.target_index))
