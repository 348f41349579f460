"""Loss functions as Relax functions (TVM's ``relax.training.loss``).

``L1Loss()(pred_sinfo, target_sinfo)`` builds a one-dataflow-block Relax function named after
the loss (``"l1_loss"``) returning a scalar; ``AppendLoss`` joins it to a backbone.  Each
argument is a struct info (a parameter of that struct info is made) or a Var (copied).
"""

from __future__ import annotations

from typing import Any

from ..block_builder import BlockBuilder
from ..expr import Expr, Function, Var
from ..op import abs as _abs
from ..op import argmax, mean, multiply, reshape, subtract
from ..op import sum as _sum
from ..op.nn import log_softmax, nll_loss
from ..struct_info import StructInfo

__all__ = ["Loss", "L1Loss", "MSELoss", "CrossEntropyLoss", "CategoricalCrossEntropyLoss"]

_REDUCTIONS = ("mean", "sum", "none")


def _param(param: Any, name: str) -> Var:
    if isinstance(param, StructInfo):
        return Var(name, param)
    if isinstance(param, Var):
        return Var(param.name_hint, param.struct_info)
    raise TypeError(f"a loss function's argument {name} should be a Var or a StructInfo, got "
                    f"{type(param).__name__}")


class Loss:
    """Base of the losses: ``loss_name`` (the function's name), how many backbone outputs the
    loss reads, and ``reduction`` (``"mean"``, ``"sum"`` or ``"none"``)."""

    def __init__(self, loss_name: str, num_backbone_outputs: int, reduction: str = "mean") -> None:
        if reduction not in _REDUCTIONS:
            raise ValueError(f"Reduction can only be one of these values: {list(_REDUCTIONS)}, got {reduction!r}")
        self._loss_name = loss_name
        self._reduction = reduction
        self._num_backbone_outputs = num_backbone_outputs

    @property
    def num_backbone_outputs(self) -> int:
        return self._num_backbone_outputs

    def _with_reduction(self, expr: Expr) -> Expr:
        if self._reduction == "sum":
            return _sum(expr)
        if self._reduction == "mean":
            return mean(expr)
        return expr

    def _build(self, params: list[Var], body: Any) -> Function:
        """The function of ``params`` whose one dataflow block ``body(bb, *params)`` fills,
        returning the loss expression."""
        bb = BlockBuilder()
        with bb.function(self._loss_name, params):
            with bb.dataflow():
                out = bb.emit_output(body(bb, *params))
            bb.emit_func_output(out)
        return bb.get()[self._loss_name]


class L1Loss(Loss):
    """Mean (or summed) absolute difference."""

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__("l1_loss", 1, reduction)

    def __call__(self, predictions: Any, targets: Any) -> Function:
        return self._build([_param(predictions, "predictions"), _param(targets, "targets")],
                           lambda bb, p, t: self._with_reduction(_abs(subtract(p, t))))


class MSELoss(Loss):
    """Mean (or summed) squared difference."""

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__("mse_loss", 1, reduction)

    def __call__(self, predictions: Any, targets: Any) -> Function:
        def body(bb: BlockBuilder, p: Var, t: Var) -> Expr:
            d = bb.emit(subtract(p, t))
            return self._with_reduction(multiply(d, d))

        return self._build([_param(predictions, "predictions"), _param(targets, "targets")], body)


class CrossEntropyLoss(Loss):
    """``log_softmax`` then ``nll_loss`` against integer class targets; optional per-class
    ``weights``; targets equal to ``ignore_index`` count for nothing."""

    def __init__(self, reduction: str = "mean", ignore_index: int = -100) -> None:
        super().__init__("cross_entropy_loss", 1, reduction)
        self.ignore_index = ignore_index

    def __call__(self, predictions: Any, targets: Any, weights: Any = None) -> Function:
        params = [_param(predictions, "predictions"), _param(targets, "targets")]
        if weights is not None:
            params.append(_param(weights, "weights"))

        def body(bb: BlockBuilder, p: Var, t: Var, w: Var | None = None) -> Expr:
            logits = bb.emit(log_softmax(p))
            return nll_loss(logits, t, w, self._reduction, self.ignore_index)

        return self._build(params, body)


class CategoricalCrossEntropyLoss(Loss):
    """Cross entropy against one-hot integer targets: ``-log_softmax(pred) * targets``
    reduced; with ``ignore_index >= 0`` the targets become class indices (``argmax``) and
    ``nll_loss`` skips that class."""

    def __init__(self, reduction: str = "mean", ignore_index: int = -100) -> None:
        super().__init__("categorical_cross_entropy_loss", 1, reduction)
        self.ignore_index = ignore_index

    def __call__(self, predictions: Any, targets: Any, weights: Any = None) -> Function:
        dtype = str(getattr(targets, "dtype", None) or getattr(targets.struct_info, "dtype", ""))
        if "int" not in dtype:
            raise TypeError(f"CategoricalCrossEntropyLoss: the targets' dtype should be an integer type, got {dtype}")
        params = [_param(predictions, "predictions"), _param(targets, "targets")]
        if weights is not None:
            params.append(_param(weights, "weights"))

        def body(bb: BlockBuilder, p: Var, t: Var, w: Var | None = None) -> Expr:
            logits = bb.emit(log_softmax(p))
            if self.ignore_index >= 0:
                labels = bb.emit(reshape(argmax(t, axis=1), shape=(t.struct_info.shape[0],)))
                return nll_loss(logits, labels, w, self._reduction, self.ignore_index)
            lv = bb.emit(-logits * t.astype("float32"))
            if w is not None:
                lv = bb.emit(lv * w)
            return self._with_reduction(lv)

        return self._build(params, body)
