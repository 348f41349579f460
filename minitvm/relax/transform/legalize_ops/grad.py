"""Legalization of the gradient operators, as TVM's LegalizeOps writes them."""

from __future__ import annotations

from typing import Any

from .... import te, topi
from ....tir import op as _op
from ....tir.expr import PrimExpr, const
from ...block_builder import BlockBuilder
from ...expr import Call, Expr
from .common import register_legalize


def _neg(x: PrimExpr) -> PrimExpr:
    return _op.mul(x, const(-1, x.dtype))  # TVM's kernels negate as x * -1


def _nll_loss_backward(output_grad: te.Tensor, predictions: te.Tensor, targets: te.Tensor, weights: te.Tensor,
                       reduction: str, ignore_index: int) -> te.Tensor:
    if ignore_index >= 0:  # the ignored class weighs nothing
        old = weights
        weights = te.compute(old.shape, lambda i: _op.Select(_op.equal(i, const(ignore_index, i.dtype)),
                                                             const(0, old.dtype), old(i)), name="weights_new")
    all_weights = te.compute(targets.shape, lambda *i: weights(targets(*i)), name="all_weights")
    if reduction == "sum":
        output_grad = topi.broadcast_to(output_grad, targets.shape)
    elif reduction == "mean":
        weight_sum = all_weights if all_weights.ndim == 0 else topi.sum(all_weights)
        output_grad = topi.divide(topi.broadcast_to(output_grad, targets.shape), weight_sum)
    zero = const(0, predictions.dtype)
    if predictions.ndim == 1:  # no batch
        return te.compute(predictions.shape, lambda i: _op.Select(
            _op.equal(i, targets()), _op.mul(_neg(all_weights()), output_grad()), zero), name="pred_grad")

    def grad(*i: Any) -> PrimExpr:
        rest = (i[0], *i[2:])
        return _op.Select(_op.equal(i[1], targets(*rest)), _op.mul(_neg(all_weights(*rest)), output_grad(*rest)), zero)

    return te.compute(predictions.shape, grad, name="pred_grad")


@register_legalize("relax.grad.nll_loss_backward")
def _legalize_nll_loss_backward(bb: BlockBuilder, call: Call) -> Expr:
    a = call.attrs
    if len(call.args) == 4:
        return bb.call_te(_nll_loss_backward, *call.args, reduction=a["reduction"], ignore_index=a["ignore_index"],
                          primfunc_name_hint="nll_loss_backward")

    # (TVM's kernel keeps this helper's name)
    def te_nll_loss_backward_no_weight(output_grad: te.Tensor, predictions: te.Tensor, targets: te.Tensor,
                                       reduction: str, ignore_index: int) -> te.Tensor:
        classes = predictions.shape[1] if predictions.ndim > 1 else predictions.shape[0]
        ones = topi.full([classes], predictions.dtype, 1.0)
        return _nll_loss_backward(output_grad, predictions, targets, ones, reduction, ignore_index)

    return bb.call_te(te_nll_loss_backward_no_weight, *call.args, reduction=a["reduction"],
                      ignore_index=a["ignore_index"])


def _identity(bb: BlockBuilder, call: Call) -> Expr:
    return call.args[0]  # only a mark for the gradient builder: the value itself


for _mark in ("no_grad", "start_checkpoint", "end_checkpoint"):
    register_legalize(f"relax.grad.{_mark}", _identity)


def _take_backward(output_grad: te.Tensor, x: te.Tensor, indices: te.Tensor, axis: int | None) -> te.Tensor:
    """``x``'s shape; each position sums the output gradients of the elements taken from it
    (an index taken twice gets both)."""
    if axis is None:  # take from the flattened x
        flat = te.compute([topi.utils.prod(x.shape)], lambda p: _scatter_sum(output_grad, indices, p, [], []),
                          name="take_grad_flat")
        return topi.reshape(flat, x.shape)
    axis %= x.ndim
    return te.compute(x.shape, lambda *i: _scatter_sum(output_grad, indices, i[axis], i[:axis], i[axis + 1:]),
                      name="take_grad")


def _scatter_sum(output_grad: te.Tensor, indices: te.Tensor, position: Any, before: Any, after: Any) -> PrimExpr:
    rvs = [te.reduce_axis((0, d), f"j{k}") for k, d in enumerate(indices.shape)]
    js = [rv.var for rv in rvs]
    hit = _op.equal(_op.cast(indices(*js), position.dtype), position)
    value = _op.Select(hit, output_grad(*before, *js, *after), const(0, output_grad.dtype))
    if not rvs:  # a scalar index: one element was taken
        return value
    return te.sum(value, axis=rvs)


@register_legalize("relax.grad.take_backward")
def _legalize_take_backward(bb: BlockBuilder, call: Call) -> Expr:
    return bb.call_te(_take_backward, *call.args, call.attrs["axis"], primfunc_name_hint="take_backward")


def _pool2d_backward(kind: str) -> Any:
    def legalize(bb: BlockBuilder, call: Call) -> Expr:
        a = call.attrs
        if a["out_layout"] != a["layout"]:
            raise NotImplementedError(f"relax.grad.{kind}_pool2d_backward: out_layout {a['out_layout']!r} "
                                      f"different from layout {a['layout']!r} is not supported")
        return bb.call_te(topi.nn.pool_grad, call.args[0], call.args[1], kernel=list(a["pool_size"]),
                          stride=list(a["strides"]), padding=list(a["padding"]), pool_type=kind,
                          ceil_mode=a["ceil_mode"], count_include_pad=a["count_include_pad"], layout=a["layout"],
                          dilation=list(a["dilation"]), primfunc_name_hint=f"{kind}_pool2d_backward")
    return legalize


for _kind in ("max", "avg"):
    register_legalize(f"relax.grad.{_kind}_pool2d_backward", _pool2d_backward(_kind))
