"""``SetupTrainer``: a backbone module made into a training module (TVM's
``relax.training.SetupTrainer``)."""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...transform import PassContext, module_pass
from ..analysis import well_formed
from ..expr import Function, Tuple
from ..transform import DecomposeOpsForInference, DecomposeOpsForTraining, Gradient, LegalizeOps
from .loss import Loss
from .optimizer import Optimizer
from .utils import AppendLoss

__all__ = ["SetupTrainer"]


def _int_attr(mod: IRModule, key: str) -> int:
    value = mod.attrs.get(key)
    if isinstance(value, bool) or not hasattr(value, "__int__") or isinstance(value, float):
        raise ValueError(f"SetupTrainer: The backbone module should have an integer attribute named {key}")
    return int(value)


@module_pass(opt_level=0, name="SetupTrainer")
class SetupTrainer:
    """``SetupTrainer(loss, optimizer, loss_args, legalize=True)(backbone_mod)``.

    The module needs a one-dataflow-block Relax function ``backbone(inputs..., params...,
    states...)`` returning its predictions (then the updated states) and the integer module
    attributes ``param_num`` and ``state_num``.  The result adds ``backbone_loss`` (the loss
    appended), ``backbone_loss_adjoint`` (the gradients of the parameters) and ``optimizer``,
    the attributes ``input_num`` and ``optim_state`` (the optimizer's initial state), and is
    legalized unless ``legalize=False``.
    """

    BACKBONE_FUNC = "backbone"
    BACKBONE_LOSS_FUNC = "backbone_loss"
    ADJOINT_FUNC = "backbone_loss_adjoint"
    OPTIMIZER_FUNC = "optimizer"
    PARAM_NUM_ATTR_KEY = "param_num"
    STATE_NUM_ATTR_KEY = "state_num"

    def __init__(self, loss: Loss, optimizer: Optimizer, loss_args: list, legalize: bool = True) -> None:
        self._loss, self._optimizer, self._loss_args, self._legalize = loss, optimizer, loss_args, legalize

    def _check(self, mod: IRModule) -> tuple[int, int]:
        if not well_formed(mod):
            raise ValueError("SetupTrainer: The backbone module is not well formed.")
        func = mod[self.BACKBONE_FUNC] if self.BACKBONE_FUNC in mod else None
        if not isinstance(func, Function):
            raise ValueError(f"SetupTrainer: The backbone module does not contain a function named "
                             f"{self.BACKBONE_FUNC}")
        nparam = _int_attr(mod, self.PARAM_NUM_ATTR_KEY)
        nstate = _int_attr(mod, self.STATE_NUM_ATTR_KEY)
        if len(func.params) < nparam + nstate:
            raise ValueError("SetupTrainer: The number of parameters of the predict function should be no less "
                             "than the number of parameters and states")
        ret = func.body.body
        if nstate > 0 and (not isinstance(ret, Tuple) or len(ret.fields) <= nstate):
            raise ValueError("SetupTrainer: When model state exists, the predict function should return a "
                             "tuple of length more than the number of states")
        return nparam, nstate

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        nparam, nstate = self._check(mod)
        mod = AppendLoss(self.BACKBONE_FUNC, self._loss(*self._loss_args), self._loss.num_backbone_outputs,
                         self.BACKBONE_LOSS_FUNC)(mod)
        # batch_norm behaves differently when predicting and when training
        mod = DecomposeOpsForInference(self.BACKBONE_FUNC)(mod)
        mod = DecomposeOpsForTraining(self.BACKBONE_LOSS_FUNC)(mod)
        ninput = len(mod[self.BACKBONE_FUNC].params) - nparam - nstate
        params = list(mod[self.BACKBONE_LOSS_FUNC].params[ninput:ninput + nparam])
        mod = Gradient(self.BACKBONE_LOSS_FUNC, require_grads=params, target_index=0)(mod)
        self._optimizer.init(params)
        # the function's global symbol must be its name in the module
        func: Any = self._optimizer.get_function().with_attr("global_symbol", self.OPTIMIZER_FUNC)
        mod = mod.with_function(self.OPTIMIZER_FUNC, func)
        mod = mod.with_attrs({"input_num": ninput, "optim_state": self._optimizer.state})
        return LegalizeOps()(mod) if self._legalize else mod
