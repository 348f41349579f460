"""DecomposeOpsForInference and DecomposeOpsForTraining: composite operators written out, as TVM's passes.

``R.nn.batch_norm(x, gamma, beta, mean, var)`` becomes the tuple
``((x - mean) / sqrt(var + eps) * gamma + beta, mean, var)`` with the *moving* statistics
broadcast along the channel axis (whatever its ``training`` flag says: at inference the
moving statistics are the model's), so the arithmetic fuses with its neighbours.
``relax.get_pipeline("static_shape_tuning")`` runs it first.
"""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...ir.op import Op
from ...transform import PassContext, module_pass
from .. import op as _op
from ..expr import Call, Expr, Function, Tuple, TupleGetItem, const, struct_info_of
from ..expr_functor import ExprMutator

__all__ = ["DecomposeOpsForInference", "DecomposeOpsForTraining"]


def _along(v: Expr, ndim: int, axis: int) -> Expr:
    """A per-channel vector reshaped to broadcast against an ``ndim``-d tensor along ``axis``."""
    axis = axis % ndim
    others = [k for k in range(ndim) if k != axis]
    return _op.expand_dims(v, others) if others else v


def decompose_batch_norm(call: Call) -> Expr:
    data, gamma, beta, mean, var = call.args
    x = struct_info_of(data)
    if x is None or x.ndim == -1 or x.is_unknown_dtype:
        raise ValueError("DecomposeOpsForInference: batch_norm needs its data's rank and dtype to be known")
    a = call.attrs
    eps = const(float(a["epsilon"]), x.dtype)
    out = _op.divide(_op.subtract(data, _along(mean, x.ndim, a["axis"])),
                     _op.sqrt(_op.add(_along(var, x.ndim, a["axis"]), eps)))
    if a.get("scale", True):
        out = _op.multiply(out, _along(gamma, x.ndim, a["axis"]))
    if a.get("center", True):
        out = _op.add(out, _along(beta, x.ndim, a["axis"]))
    return Tuple([out, mean, var])


def _batch_norm_for_training(call: Call) -> Expr:
    """Training-mode batch_norm, as TVM rewrites it: the same call over the batch's own mean
    and variance, and the moving statistics moved ``momentum`` of the way towards them."""
    data, gamma, beta, mean, var = call.args
    x = struct_info_of(data)
    if x is None or x.ndim == -1 or x.is_unknown_dtype:
        raise ValueError("DecomposeOpsForTraining: batch_norm needs its data's rank and dtype to be known")
    a = call.attrs
    reduce = [k for k in range(x.ndim) if k != a["axis"] % x.ndim]
    batch_mean, batch_var = _op.mean(data, reduce), _op.variance(data, reduce)
    m = float(a.get("momentum", 0.1))
    keep, take = const(1 - m, x.dtype), const(m, x.dtype)
    new_mean = _op.add(_op.multiply(keep, mean), _op.multiply(take, batch_mean))
    new_var = _op.add(_op.multiply(keep, var), _op.multiply(take, batch_var))
    stats = Call(call.op, [data, gamma, beta, batch_mean, batch_var], call.attrs, call.sinfo_args)
    return Tuple([TupleGetItem(stats, 0), new_mean, new_var])


def decompose_layer_norm(call: Call) -> Expr:
    """``(x - mean) / sqrt(var + eps) * gamma + beta`` over the call's axes (training only: for
    inference one layer_norm kernel is faster)."""
    data, gamma, beta = call.args
    x = struct_info_of(data)
    a = call.attrs
    axes = list(a["axes"])
    out = _op.divide(_op.subtract(data, _op.mean(data, axes, keepdims=True)),
                     _op.sqrt(_op.add(_op.variance(data, axes, keepdims=True), const(float(a["epsilon"]), x.dtype))))
    if a.get("scale", True):
        out = _op.multiply(out, gamma)
    if a.get("center", True):
        out = _op.add(out, beta)
    return out


class _ForTraining(ExprMutator):
    """The first step of DecomposeOpsForTraining: batch_norm over the batch's statistics,
    layer_norm written out."""

    def visit_call_(self, op: Call) -> Any:
        call = super().visit_call_(op)
        if isinstance(call, Call) and isinstance(call.op, Op) and call.op.name == "relax.nn.batch_norm":
            return _batch_norm_for_training(call)
        if isinstance(call, Call) and isinstance(call.op, Op) and call.op.name == "relax.nn.layer_norm":
            return decompose_layer_norm(call)
        return call


class _Decomposer(ExprMutator):
    def visit_call_(self, op: Call) -> Any:
        call = super().visit_call_(op)
        if isinstance(call, Call) and isinstance(call.op, Op) and call.op.name == "relax.nn.batch_norm":
            return decompose_batch_norm(call)
        return call


class _DecomposeOps:
    """The decomposition over every Relax function, or only ``func_name``."""

    training = False

    def __init__(self, func_name: str | None = None) -> None:
        self.func_name = func_name

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        names = [gv.name_hint for gv, f in mod.items() if isinstance(f, Function)]
        if self.func_name is not None and self.func_name not in names:
            raise ValueError(f"{type(self).__name__}: the module has no Relax function {self.func_name!r}")
        out = mod
        for name in names if self.func_name is None else [self.func_name]:
            func = mod[name]
            new = _ForTraining(mod).visit_expr(func) if self.training else func
            new = _Decomposer(mod).visit_expr(new)
            if new is not func:
                out = out.with_function(name, new)
        return out


@module_pass(opt_level=0, name="DecomposeOpsForInference")
class DecomposeOpsForInference(_DecomposeOps):
    """``DecomposeOpsForInference(func_name=None)``: every Relax function, or only ``func_name``."""


@module_pass(opt_level=0, name="DecomposeOpsForTraining")
class DecomposeOpsForTraining(_DecomposeOps):
    """``DecomposeOpsForTraining(func_name=None)``: batch_norm in training mode (the batch's
    statistics, the moving ones updated by ``momentum``) and layer_norm written out, for
    ``relax.training.SetupTrainer``."""

    training = True
