"""Gradient: reverse-mode differentiation of one Relax function (TVM's ``relax.transform.Gradient``).

``Gradient("main", require_grads=None, target_index=0)(mod)`` adds ``main_adjoint``: the same
parameters, the forward bindings, then -- walking the bindings backwards -- each variable's
adjoint, built from its operator's gradient rule (``FPrimalGradient``,
:mod:`minitvm.relax.op._op_gradient`).  It returns ``(the original result, (gradient of each
required variable, ...))``.  The target (the result, or field ``target_index`` of a tuple
result) must be a float scalar variable; the body one dataflow block.

The bindings come out as TVM's pass writes them, so its tests compare equal: the target's
adjoint starts as ``R.ones``; every adjoint is bound to ``<name>_adjoint`` as soon as a
gradient reaches it (a variable used twice is bound again to the sum); tuples are handled
field by field (a field nothing reached is zeros); the results are bound to
``<name>_adjoint_out``.  ``R.grad.start_checkpoint``/``end_checkpoint`` mark which forward
values are kept: the others are recomputed (``<name>_cp``) where the backward pass needs
them.  Unused bindings are removed and ``transpose(a @ b)`` becomes ``b^T @ a^T`` (TVM's
gradient simplifier).
"""

from __future__ import annotations

from typing import Any

from ...error import TVMError
from ...ir.module import IRModule
from ...ir.op import Op
from ...runtime.registry import get_global_func
from ...transform import PassContext, module_pass
from ..analysis import remove_all_unused
from ..block_builder import BlockBuilder
from ..expr import (
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    Expr,
    Function,
    SeqExpr,
    ShapeExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..expr_functor import ExprMutator
from ..op import add, ones, zeros
from ..op.linear_algebra import matmul
from ..op.manipulate import permute_dims
from ..struct_info import TensorStructInfo, TupleStructInfo
from ._util import CopyWithNewVars, unbound_item

__all__ = ["Gradient"]

_START, _END = "relax.grad.start_checkpoint", "relax.grad.end_checkpoint"
_TE_GRAD_PREFIX = "tvm.relax.te_grad._register."  # where register_te_gradient puts its handlers


def _is_op(value: Any, name: str) -> bool:
    return isinstance(value, Call) and isinstance(value.op, Op) and value.op.name == name


def _is_float(sinfo: Any) -> bool:
    return isinstance(sinfo, TensorStructInfo) and sinfo.dtype is not None and str(sinfo.dtype).startswith(
        ("float", "bfloat"))


def _nested_float(sinfo: Any) -> bool:
    if isinstance(sinfo, TupleStructInfo):
        return all(_nested_float(f) for f in sinfo.fields)
    return _is_float(sinfo)


# -- nested adjoints: a tensor expression, or a python list of them for a tuple --------------

def _as_nested(expr: Expr) -> Any:
    """A tuple-typed expression as a list of its fields (``t[i]`` for a tuple variable)."""
    sinfo = expr.struct_info
    if not isinstance(sinfo, TupleStructInfo):
        if not isinstance(sinfo, TensorStructInfo):
            raise TVMError(f"relax.transform.Gradient: an adjoint must be a tensor, got {sinfo}")
        return expr
    if isinstance(expr, Tuple):
        return [_as_nested(f) for f in expr.fields]
    return [_as_nested(unbound_item(expr, i)) for i in range(len(sinfo.fields))]


def _to_expr(nested: Any) -> Expr:
    """A nested adjoint as one expression; ``(t[0], ..., t[n-1])`` is ``t`` again, as TVM."""
    if not isinstance(nested, list):
        return nested
    fields = [_to_expr(n) for n in nested]
    first = fields[0] if fields else None
    if first is not None and all(isinstance(f, TupleGetItem) and f.index == i and f.tuple_value is first.tuple_value
                                 for i, f in enumerate(fields)):
        return first.tuple_value
    return Tuple(fields)


def _combine(lhs: Any, rhs: Any) -> Any:
    if isinstance(lhs, list):
        return [_combine(a, b) for a, b in zip(lhs, rhs)]
    return add(lhs, rhs)


def _nested_zeros(sinfo: Any) -> Expr:
    if isinstance(sinfo, TupleStructInfo):
        return Tuple([_nested_zeros(f) for f in sinfo.fields])
    if not isinstance(sinfo, TensorStructInfo) or sinfo.shape is None:
        raise TVMError(f"relax.transform.Gradient: zeros need a tensor of known shape, got {sinfo}")
    return zeros(sinfo.shape, sinfo.dtype)


# -- checkpoints ------------------------------------------------------------------------------

class _CheckpointCollector(ExprMutator):
    """Drops the checkpoint marks (each mark's variable becomes the marked one) and collects
    the forward variables kept for the backward pass: the parameters, what a start mark
    names, and every binding computed only from kept values or end marks."""

    def __init__(self) -> None:
        super().__init__()
        self.checkpoints: set[Var] = set()
        self.var_mapping: dict[Var, Var] = {}
        self.end_vars: set[Var] = set()

    def visit_function_(self, op: Function) -> Any:
        self.checkpoints.update(op.params)
        return super().visit_function_(op)

    def visit_var_binding_(self, binding: VarBinding) -> None:
        value = binding.value
        if not (_is_op(value, _START) or _is_op(value, _END)):
            if all(v in self.checkpoints or v in self.end_vars for v in _vars_in(value)):
                self.checkpoints.add(binding.var)
            super().visit_var_binding_(binding)
            return
        marked = value.args[0]
        if not isinstance(marked, Var):
            raise TVMError("relax.transform.Gradient: a checkpoint mark's argument must be a variable")
        orig = self.visit_expr(marked)
        if not isinstance(binding.var, DataflowVar) and isinstance(marked, DataflowVar):
            self.set_var_remap(binding.var, self.builder_.emit_output(orig, orig.name_hint))
        else:
            self.set_var_remap(binding.var, orig)
        self.var_mapping[binding.var] = orig
        if _is_op(value, _START):
            self.checkpoints.add(orig)
        else:
            self.end_vars.add(binding.var)


def _vars_in(expr: Any) -> list[Var]:
    found: list[Var] = []

    def visit(e: Any) -> None:
        if isinstance(e, Var):
            found.append(e)
        elif isinstance(e, Call):
            for a in e.args:
                visit(a)
        elif isinstance(e, Tuple):
            for f in e.fields:
                visit(f)
        elif isinstance(e, TupleGetItem):
            visit(e.tuple_value)

    visit(expr)
    return found


class _Recompute:
    """Forward values the backward pass reads: kept ones as they are, the others recomputed
    (``<name>_cp``) from kept ones, once each."""

    def __init__(self, bb: BlockBuilder, params: list[Var], block: DataflowBlock, checkpoints: set[Var]) -> None:
        self.bb = bb
        self.kept: dict[Var, Var] = {p: p for p in params}
        self.values: dict[Var, Expr] = {}
        for b in block.bindings:
            self.values[b.var] = b.value
            if b.var in checkpoints:
                self.kept[b.var] = b.var

    def update_binding(self, var: Var, value: Expr) -> tuple[Var, Expr]:
        new_value = self._visit(value)
        if var in self.kept:
            return self.kept[var], new_value
        new_var = self.bb.emit(new_value, f"{var.name_hint}_cp")
        self.kept[var] = new_var
        return new_var, new_value

    def _var(self, var: Var) -> Var:
        if var not in self.kept:
            self.kept[var] = self.bb.emit(self._visit(self.values[var]), f"{var.name_hint}_cp")
        return self.kept[var]

    def _visit(self, e: Any) -> Any:
        if isinstance(e, Var):
            return self._var(e)
        if isinstance(e, Call):
            return Call(e.op, [self._visit(a) for a in e.args], e.attrs, e.sinfo_args)
        if isinstance(e, Tuple):
            return Tuple([self._visit(f) for f in e.fields])
        if isinstance(e, TupleGetItem):
            return TupleGetItem(self._visit(e.tuple_value), e.index)
        return e


# -- the backward bindings ------------------------------------------------------------------------

class _Backward:
    def __init__(self, bb: BlockBuilder, recompute: _Recompute, var_mapping: dict) -> None:
        self.bb, self.recompute, self.var_mapping = bb, recompute, var_mapping
        self.adjoint: dict[Var, Var] = {}

    def emit_adjoint(self, source: Var, value: Expr, output: bool = False) -> Var:
        if output:
            return self.bb.emit_output(value, f"{source.name_hint}_adjoint_out")
        var = self.bb.emit(value, f"{source.name_hint}_adjoint")
        self.adjoint[source] = var
        return var

    def update(self, target: Expr, partial: Expr) -> None:
        """Add ``partial`` to the adjoint of ``target`` (each variable leaf of a tuple target
        gets its field), binding the new adjoint at once."""
        self._decompose(target, _as_nested(self.bb.normalize(partial)))

    def _decompose(self, target: Expr, msg: Any) -> None:
        if isinstance(target, Tuple) and isinstance(msg, list):
            for field, sub in zip(target.fields, msg):
                self._decompose(field, sub)
            return
        if isinstance(target, Var):
            value = self.bb.normalize(_to_expr(msg))
            if target in self.adjoint:
                value = self.bb.normalize(_to_expr(_combine(_as_nested(self.adjoint[target]), _as_nested(value))))
            self.emit_adjoint(target, value)
        elif not isinstance(target, (Constant, ShapeExpr)):
            raise TVMError(f"relax.transform.Gradient: cannot send a gradient to {type(target).__name__}; "
                           "variables and constants only")

    def visit(self, binding: Any) -> None:
        if not isinstance(binding, VarBinding):
            raise TVMError("relax.transform.Gradient: only variable bindings are supported (no match_cast)")
        if binding.var not in self.adjoint:
            return
        value, grad = binding.value, self.adjoint[binding.var]
        if isinstance(value, Call):
            self._call(binding, value, grad)
        elif isinstance(value, Tuple):
            self.update(value, grad)
        elif isinstance(value, TupleGetItem):
            self._get_item(binding, value, grad)
        elif isinstance(value, Var):
            self.update(value, grad)
        elif not isinstance(value, Constant):
            raise TVMError(f"relax.transform.Gradient: cannot differentiate the binding of "
                           f"{binding.var.name_hint} ({type(value).__name__})")

    def _call(self, binding: VarBinding, call: Call, grad: Var) -> None:
        if not isinstance(call.op, Op):
            return
        var, checkpoint_call = self.recompute.update_binding(binding.var, call)
        if call.op.name == "relax.call_tir":
            raise TVMError("relax.transform.Gradient: differentiating call_tir needs a registered "
                           "gradient (call_tir_with_grad)")
        if call.op.name == "relax.call_tir_with_grad":
            self._te_grad(call, checkpoint_call, var, grad)
            return
        rule = call.op.get_attr("FPrimalGradient")
        if rule is None:
            raise TVMError(f"relax.transform.Gradient: operator {call.op.name} has no gradient rule "
                           "(FPrimalGradient)")
        partials = rule(var, checkpoint_call, grad, self.bb)
        if len(partials) != len(call.args):
            raise TVMError(f"relax.transform.Gradient: the rule of {call.op.name} gave {len(partials)} "
                           f"gradients for {len(call.args)} arguments")
        for arg, partial in zip(call.args, partials):
            if not _is_op(partial, "relax.grad.no_grad"):
                self.update(arg, partial)

    def _te_grad(self, call: Call, checkpoint_call: Call, var: Var, grad: Var) -> None:
        """call_tir_with_grad: the registered TE gradient gives one partial per argument."""
        name = call.attrs["te_grad_name"]
        handler = get_global_func(_TE_GRAD_PREFIX + name, allow_missing=True)
        if handler is None:
            raise TVMError(f"relax.transform.Gradient: no TE gradient is registered as {name!r} "
                           "(relax.training.utils.register_te_gradient)")
        partials = handler(var, checkpoint_call, grad, self.bb)
        args = call.args[1]
        if not isinstance(partials.struct_info, TupleStructInfo):
            if len(args.fields) != 1:
                raise TVMError(f"relax.transform.Gradient: the TE gradient {name} gave one gradient for "
                               f"{len(args.fields)} arguments")
            self.update(args.fields[0], partials)
            return
        for i, arg in enumerate(args.fields):
            self.update(arg, unbound_item(partials, i))

    def _get_item(self, binding: VarBinding, item: TupleGetItem, grad: Var) -> None:
        tup = item.tuple_value
        if not isinstance(tup, Var) or not isinstance(tup.struct_info, TupleStructInfo):
            raise TVMError("relax.transform.Gradient: a tuple item must be taken from a tuple variable")
        if tup not in self.adjoint:
            fields = list(_nested_zeros(tup.struct_info).fields)
            fields[item.index] = grad
        else:
            old = self.adjoint[tup]
            fields = [unbound_item(old, i) for i in range(len(tup.struct_info.fields))]
            fields[item.index] = _to_expr(_combine(_as_nested(fields[item.index]), _as_nested(grad)))
        self.emit_adjoint(tup, Tuple(fields))

    def epilogue(self, require: list[Var], result: Expr) -> Expr:
        outs = []
        for var in require:
            var = self.var_mapping.get(var, var)
            if var not in self.adjoint:
                self.update(var, _nested_zeros(var.struct_info))
            outs.append(self.emit_adjoint(var, self.adjoint[var], output=True))
        return Tuple([result, Tuple(outs)])


# -- the pass ----------------------------------------------------------------------------------

def _target(result: Expr, index: int, name: str) -> Var:
    if isinstance(result, Var):
        if index != 0:
            raise TVMError(f"relax.transform.Gradient: {name} returns one value, so target_index must be 0, "
                           f"not {index}")
        target = result
    elif isinstance(result, Tuple):
        if not 0 <= index < len(result.fields):
            raise TVMError(f"relax.transform.Gradient: target_index {index} is out of range for the "
                           f"{len(result.fields)} results of {name}")
        target = result.fields[index]
        if not isinstance(target, Var):
            raise TVMError(f"relax.transform.Gradient: the target of {name} must be a variable, got {target}")
    else:
        raise TVMError(f"relax.transform.Gradient: {name} must return a variable or a tuple")
    sinfo = target.struct_info
    if not (_is_float(sinfo) and sinfo.ndim == 0):
        raise TVMError(f"relax.transform.Gradient: the target of {name} must be a float scalar "
                       f"(a 0-dim tensor), got {sinfo}")
    return target


def _required(func: Function, var_map: dict, require_grads: Any, name: str) -> list[Var]:
    if require_grads is None:
        return list(func.params)
    wanted = [require_grads] if isinstance(require_grads, Var) else list(require_grads)
    out, seen = [], set()
    for var in wanted:
        if var not in var_map:
            raise TVMError(f"relax.transform.Gradient: there is no variable {var.name_hint} in {name}")
        if var in seen:
            raise TVMError(f"relax.transform.Gradient: {var.name_hint} is required twice")
        seen.add(var)
        if not _nested_float(var.struct_info):
            raise TVMError(f"relax.transform.Gradient: only float tensors (or tuples of them) can require "
                           f"gradients; {var.name_hint} is {var.struct_info}")
        out.append(var_map[var])
    return out


def _adjoint(func: Function, name: str, require_grads: Any, target_index: int,
             mod: IRModule) -> tuple[Function, IRModule]:
    copier = CopyWithNewVars()
    copy = copier.visit_expr(func)
    var_map = {**{p: q for p, q in zip(func.params, copy.params)}, **copier.var_remap_}
    collector = _CheckpointCollector()
    copy = collector.visit_expr(copy)
    require = list(copy.params) if require_grads is None else _required(func, var_map, require_grads, name)
    body = copy.body
    if not (isinstance(body, SeqExpr) and len(body.blocks) == 1 and isinstance(body.blocks[0], DataflowBlock)):
        raise TVMError(f"relax.transform.Gradient: {name} must be one dataflow block and a return")
    block = body.blocks[0]
    target = _target(body.body, target_index, name)
    bb = BlockBuilder(mod)
    bb.begin_dataflow_block()
    for b in block.bindings:
        bb.emit_normalized(b)
    backward = _Backward(bb, _Recompute(bb, list(copy.params), block, collector.checkpoints), collector.var_mapping)
    target_sinfo = target.struct_info
    backward.update(target, ones(target_sinfo.shape, target_sinfo.dtype))
    for b in reversed(block.bindings):
        backward.visit(b)
    result = backward.epilogue(require, body.body)
    new_block = bb.end_block()
    new = bb._make_function(copy.params, bb.normalize(SeqExpr((new_block,), result)), None, copy.is_pure,
                            copy.attrs)
    new = _simplify(remove_all_unused(_WithGradEliminator().visit_expr(new)))
    return new.with_attr("global_symbol", f"{name}_adjoint"), bb.get()


class _WithGradEliminator(ExprMutator):
    """In the adjoint function, call_tir_with_grad is plain call_tir (its gradient is spent)."""

    def visit_call_(self, op: Call) -> Any:
        new = super().visit_call_(op)
        if _is_op(new, "relax.call_tir_with_grad"):
            return Call(Op.get("relax.call_tir"), new.args, None, new.sinfo_args)
        return new


class _Simplifier(ExprMutator):
    """TVM's gradient simplifier: a transpose of a transpose is the value itself, and the
    transpose of ``a @ b`` is ``b^T @ a^T`` (a transpose of a transpose taken back)."""

    def visit_var_binding_(self, binding: VarBinding) -> None:
        value = self.visit_expr(binding.value)
        prev = self.lookup_binding(value.args[0]) if _is_transpose(value) else None
        if _is_transpose(prev) and isinstance(prev.args[0], Var):
            self.set_var_remap(binding.var, prev.args[0])
            return
        if _is_op(prev, "relax.matmul") and all(_ndim(a) not in (1, None) for a in prev.args):
            a, b = (self._transposed(x) for x in prev.args)
            value = self.visit_expr(matmul(b, a, prev.attrs["out_dtype"]))
        if value is binding.value:
            self.builder_.emit_normalized(binding)
        else:
            super().visit_var_binding_(VarBinding(binding.var, value))

    def _transposed(self, e: Expr) -> Expr:
        prev = self.lookup_binding(e) if isinstance(e, Var) else None
        if _is_transpose(prev):
            return prev.args[0]
        n = _ndim(e)
        return permute_dims(e, list(range(n - 2)) + [n - 1, n - 2])


def _ndim(e: Expr) -> int | None:
    sinfo = e.struct_info
    return sinfo.ndim if isinstance(sinfo, TensorStructInfo) and sinfo.ndim != -1 else None


def _is_transpose(value: Any) -> bool:
    """``permute_dims`` swapping only the last two axes (no axes: a 2-D transpose)."""
    if not _is_op(value, "relax.permute_dims"):
        return False
    n = _ndim(value.args[0])
    if n in (None, 1):
        return False
    axes = value.attrs["axes"]
    if axes is None:
        return n == 2
    axes = [int(a) for a in axes]
    return axes == list(range(n - 2)) + [n - 1, n - 2]


def _simplify(func: Function) -> Function:
    return remove_all_unused(_Simplifier().visit_expr(func))


@module_pass(opt_level=0, name="Gradient")
class Gradient:
    """``Gradient(func_name, require_grads=None, target_index=0)``: add ``<func_name>_adjoint``."""

    def __init__(self, func_name: str, require_grads: Any = None, target_index: int = 0):
        self.func_name, self.require_grads, self.target_index = func_name, require_grads, target_index

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        if self.func_name not in [gv.name_hint for gv in mod.functions]:
            # as TVM's module lookup: a missing function is a ValueError
            raise ValueError(f"relax.transform.Gradient: the module has no function {self.func_name!r}")
        func = mod[self.func_name]
        if not isinstance(func, Function):
            raise TVMError(f"relax.transform.Gradient: {self.func_name} is not a Relax function")
        adjoint, context = _adjoint(func, self.func_name, self.require_grads, self.target_index, mod)
        # the module again with what the TE gradients added (their PrimFuncs), then the adjoint
        return context.with_function(f"{self.func_name}_adjoint", adjoint)
