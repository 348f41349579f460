"""Gradient operators (``relax.op.grad``, ``R.grad.*``): the backwards of ``nn.nll_loss`` and
``take`` and the pools, ``no_grad`` (the mark of an input no gradient flows to) and
``start_checkpoint``/``end_checkpoint`` (the marks of a recomputed stretch: identities)."""

from __future__ import annotations

from typing import Any

from ..expr import Call, Expr, Var, struct_info_of
from ..struct_info import StructInfo, StructInfoError, struct_info_text
from ._utils import same_dtype
from .nn.pooling import avg_pool2d, max_pool2d
from .registry import OpPattern, make_call, register, tensor_arg

__all__ = ["nll_loss_backward", "no_grad", "take_backward", "max_pool2d_backward", "avg_pool2d_backward",
           "start_checkpoint", "end_checkpoint"]

_REDUCTIONS = ("mean", "sum", "none")


@register("relax.grad.nll_loss_backward", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=4)
def _infer_nll_loss_backward(call: Call, ctx: Any) -> StructInfo:
    """The gradient of nll_loss with respect to its predictions: the predictions' struct info."""
    op = "relax.grad.nll_loss_backward"
    if len(call.args) not in (3, 4):
        raise StructInfoError(f"{op} takes output_grad, predictions, targets and optionally weights, "
                              f"got {len(call.args)} arguments")
    grad = tensor_arg(call, 0, op, "output_grad")
    pred = tensor_arg(call, 1, op, "predictions")
    targets = tensor_arg(call, 2, op, "targets")
    same_dtype(op, [grad, pred] + ([tensor_arg(call, 3, op, "weights")] if len(call.args) == 4 else []))
    if not targets.is_unknown_dtype and not targets.dtype.startswith(("int", "uint")):
        raise StructInfoError(f"{op}: targets must be integer class indices, got {struct_info_text(targets)}")
    if call.attrs["reduction"] not in _REDUCTIONS:
        raise StructInfoError(f"{op}: reduction must be one of {', '.join(_REDUCTIONS)}, got "
                              f"{call.attrs['reduction']!r}")
    return pred


def nll_loss_backward(output_grad: Expr, predictions: Expr, targets: Expr, weights: Expr | None = None,
                      reduction: str = "mean", ignore_index: int = -100) -> Call:
    """The gradient of ``nn.nll_loss(predictions, targets, weights, reduction, ignore_index)``
    with respect to ``predictions``, given the loss's gradient ``output_grad``."""
    if isinstance(weights, str):  # weights left out, the reduction given in its place
        weights, reduction, ignore_index = None, weights, reduction if not isinstance(reduction, str) else ignore_index
    if reduction not in _REDUCTIONS:
        raise ValueError(f"relax.grad.nll_loss_backward: reduction must be one of {', '.join(_REDUCTIONS)}, "
                         f"got {reduction!r}")
    args = [output_grad, predictions, targets] + ([] if weights is None else [weights])
    return make_call("relax.grad.nll_loss_backward", *args,
                     attrs={"reduction": reduction, "ignore_index": int(ignore_index)})


@register("relax.grad.no_grad", pattern=OpPattern.OPAQUE, num_inputs=1)
def _infer_no_grad(call: Call, ctx: Any) -> StructInfo:
    """The input's struct info: ``no_grad(x)`` stands for x's (absent) gradient."""
    if len(call.args) != 1:
        raise StructInfoError(f"relax.grad.no_grad takes one argument, got {len(call.args)}")
    sinfo = struct_info_of(call.args[0])
    if sinfo is None:
        raise StructInfoError("relax.grad.no_grad: the argument has no struct info; normalize it first")
    return sinfo


def no_grad(input: Expr) -> Call:  # noqa: A002 - TVM's parameter name
    """Marks ``input`` as an input no gradient is computed for (shapes, indices, masks)."""
    return make_call("relax.grad.no_grad", input)


@register("relax.grad.take_backward", pattern=OpPattern.OPAQUE, num_inputs=3)
def _infer_take_backward(call: Call, ctx: Any) -> StructInfo:
    """The gradient of ``take(x, indices, axis)`` with respect to ``x``: ``x``'s struct info."""
    op = "relax.grad.take_backward"
    if len(call.args) != 3:
        raise StructInfoError(f"{op} takes output_grad, x and indices, got {len(call.args)} arguments")
    same_dtype(op, [tensor_arg(call, 0, op, "output_grad"), tensor_arg(call, 1, op, "x")])
    tensor_arg(call, 2, op, "indices")  # (any dtype, as TVM: take casts them)
    return tensor_arg(call, 1, op, "x")


def take_backward(output_grad: Expr, x: Expr, indices: Expr, axis: int | None = None) -> Call:
    """The gradient of ``take(x, indices, axis)`` with respect to ``x``: each taken element's
    gradient added back at the position it was taken from."""
    return make_call("relax.grad.take_backward", output_grad, x, indices,
                     attrs={"axis": None if axis is None else int(axis)})


def _register_pool_backward(kind: str) -> None:
    op = f"relax.grad.{kind}_pool2d_backward"

    def infer(call: Call, ctx: Any) -> StructInfo:
        if len(call.args) != 2:
            raise StructInfoError(f"{op} takes output_grad and data, got {len(call.args)} arguments")
        same_dtype(op, [tensor_arg(call, 0, op, "output_grad"), tensor_arg(call, 1, op, "data")])
        return tensor_arg(call, 1, op, "data")
    infer.__doc__ = f"The gradient of nn.{kind}_pool2d with respect to its data: the data's struct info."
    register(op, pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=2)(infer)


for _kind in ("max", "avg"):
    _register_pool_backward(_kind)


def _pool_backward(kind: str, output_grad: Expr, data: Expr, pool_size: Any, strides: Any, padding: Any,
                   dilation: Any, ceil_mode: bool, count_include_pad: bool, layout: str,
                   out_layout: str | None) -> Call:
    forward = max_pool2d if kind == "max" else avg_pool2d  # its attributes, checked as the op's
    attrs = forward(data, pool_size, strides, padding, dilation, ceil_mode, count_include_pad, layout, out_layout).attrs
    return make_call(f"relax.grad.{kind}_pool2d_backward", output_grad, data, attrs=dict(attrs))


def max_pool2d_backward(output_grad: Expr, data: Expr, pool_size: Any = (1, 1), strides: Any = (1, 1),
                        padding: Any = (0, 0, 0, 0), dilation: Any = (1, 1), ceil_mode: bool = False,
                        count_include_pad: bool = False, layout: str = "NCHW", out_layout: str | None = None) -> Call:
    """The gradient of ``nn.max_pool2d`` (same attributes) with respect to ``data``."""
    return _pool_backward("max", output_grad, data, pool_size, strides, padding, dilation, ceil_mode,
                          count_include_pad, layout, out_layout)


def avg_pool2d_backward(output_grad: Expr, data: Expr, pool_size: Any = (1, 1), strides: Any = (1, 1),
                        padding: Any = (0, 0, 0, 0), dilation: Any = (1, 1), ceil_mode: bool = False,
                        count_include_pad: bool = False, layout: str = "NCHW", out_layout: str | None = None) -> Call:
    """The gradient of ``nn.avg_pool2d`` (same attributes) with respect to ``data``."""
    return _pool_backward("avg", output_grad, data, pool_size, strides, padding, dilation, ceil_mode,
                          count_include_pad, layout, out_layout)


def _register_checkpoint(name: str) -> None:
    op = f"relax.grad.{name}"

    def infer(call: Call, ctx: Any) -> StructInfo:
        if len(call.args) != 1 or not isinstance(call.args[0], Var):
            raise StructInfoError(f"{op} marks a variable: its argument must be a Relax Var, got "
                                  f"{type(call.args[0]).__name__ if call.args else 'nothing'}")
        return struct_info_of(call.args[0])
    infer.__doc__ = f"``{name}(x)`` is ``x``: the input's struct info."
    register(op, pattern=OpPattern.OPAQUE, num_inputs=1)(infer)


for _name in ("start_checkpoint", "end_checkpoint"):
    _register_checkpoint(_name)


def start_checkpoint(input: Expr) -> Call:  # noqa: A002 - TVM's parameter name
    """Marks where a checkpointed stretch (recomputed in the backward pass) begins."""
    return make_call("relax.grad.start_checkpoint", input)


def end_checkpoint(input: Expr) -> Call:  # noqa: A002 - TVM's parameter name
    """Marks where a checkpointed stretch ends."""
    return make_call("relax.grad.end_checkpoint", input)
