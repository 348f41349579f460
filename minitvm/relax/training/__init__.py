"""Training in Relax (TVM's ``relax.training``): loss functions, optimizers as Relax functions,
``AppendLoss``, the ``SetupTrainer`` pass and the ``Trainer`` that runs the result on the VM.

A backbone module (``I.module_attrs({"param_num": .., "state_num": ..})`` and a one-dataflow-block
``backbone``) becomes, through ``SetupTrainer(loss, optimizer, loss_args)``, a module with
``backbone_loss``, its ``backbone_loss_adjoint`` (``relax.transform.Gradient``) and an
``optimizer`` function; ``Trainer(train_mod, vm, dev)`` keeps the parameters and states.
"""

from . import loss, optimizer, trainer, utils
from .setup_trainer import SetupTrainer
from .trainer import Trainer
from .utils import AppendLoss

__all__ = ["AppendLoss", "SetupTrainer", "Trainer", "loss", "optimizer", "trainer", "utils"]
