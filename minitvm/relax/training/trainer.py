"""``Trainer``: runs a ``SetupTrainer`` module on the VM, keeping the parameters, the model
states and the optimizer's state (TVM's ``relax.training.Trainer``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...error import TVMError
from ...ir.module import IRModule
from ...runtime.ndarray import NDArray
from ...runtime.ndarray import array as _tensor

__all__ = ["Trainer"]


def _shape(var: Any) -> list[int]:
    return [int(d) for d in var.struct_info.shape]


class Trainer:
    """``Trainer(train_mod, vm, device, zero_init_param_state=True)``: ``train_mod`` is the
    result of ``SetupTrainer``, ``vm`` a ``relax.VirtualMachine`` over its build.
    ``predict(*inputs)`` runs ``backbone``; ``update(inputs, targets)`` computes the gradients
    and applies the optimizer, returning the loss."""

    BACKBONE_FUNC = "backbone"
    BACKBONE_LOSS_FUNC = "backbone_loss"
    ADJOINT_FUNC = "backbone_loss_adjoint"
    OPTIMIZER_FUNC = "optimizer"

    def __init__(self, train_mod: IRModule, vm: Any, device: Any, zero_init_param_state: bool = True) -> None:
        self.mod = train_mod.without_attr("optim_state")
        self.vm = vm
        self.device = device
        self._optim_state = [d.copyto(device) for d in train_mod.attrs["optim_state"]]
        self._input_num = int(train_mod.attrs["input_num"])
        self._param_num = int(train_mod.attrs["param_num"])
        self._state_num = int(train_mod.attrs["state_num"])
        params = train_mod[self.ADJOINT_FUNC].params
        self._param_vars = params[self._input_num:self._input_num + self._param_num]
        self._state_vars = params[self._input_num + self._param_num:
                                  self._input_num + self._param_num + self._state_num]
        self._params: list[NDArray | None] = [None] * self._param_num
        self._param_name_to_pos = {p.name_hint: i for i, p in enumerate(self._param_vars)}
        self._states: list[NDArray | None] = [None] * self._state_num
        self._state_name_to_pos = {s.name_hint: i for i, s in enumerate(self._state_vars)}
        if zero_init_param_state:
            self.zero_init_params()
            self.zero_init_states()

    def _on_device(self, value: Any) -> NDArray:
        return _tensor(value.numpy() if isinstance(value, NDArray) else np.asarray(value), self.device)

    def xaiver_uniform_init_params(self) -> None:
        """Glorot-uniform parameters: uniform in +-sqrt(6 / sum(shape)) (static shapes only)."""
        self._params = [self._on_device((np.sqrt(6.0 / np.sum(_shape(p))) * np.random.uniform(
            -1.0, 1.0, _shape(p))).astype(p.struct_info.dtype)) for p in self._param_vars]

    def zero_init_params(self) -> None:
        self._params = [self._on_device(np.zeros(_shape(p), p.struct_info.dtype)) for p in self._param_vars]

    def zero_init_states(self) -> None:
        self._states = [self._on_device(np.zeros(_shape(s), s.struct_info.dtype)) for s in self._state_vars]

    def _load(self, values: Any, current: list, positions: dict, what: str) -> list:
        if isinstance(values, list):
            if len(values) != len(current):
                raise ValueError(f"The length of extern {what}s is {len(values)}, which does not match the "
                                 f"number of {what}s {len(current)}")
            return [self._on_device(v) for v in values]
        if isinstance(values, dict):
            current = list(current)
            for key, val in values.items():
                if key not in positions:
                    raise ValueError(f"{what.capitalize()} {key} is not found in the model")
                current[positions[key]] = self._on_device(val)
            return current
        raise ValueError(f"The extern {what}s should be a list or a dict, got {type(values).__name__}")

    def load_params(self, params: list | dict) -> None:
        """Parameter values by position (a list of all) or by the backbone's parameter names."""
        self._params = self._load(params, self._params, self._param_name_to_pos, "parameter")

    def load_states(self, states: list | dict) -> None:
        """Model-state values by position (a list of all) or by the backbone's parameter names."""
        self._states = self._load(states, self._states, self._state_name_to_pos, "state")

    def export_params(self) -> dict[str, NDArray]:
        return {key: self._params[pos] for key, pos in self._param_name_to_pos.items()}

    def export_states(self) -> dict[str, NDArray]:
        return {key: self._states[pos] for key, pos in self._state_name_to_pos.items()}

    def _check_inited(self) -> None:
        for what, values in (("parameter", self._params), ("model state", self._states)):
            missing = next((i for i, v in enumerate(values) if v is None), -1)
            if missing != -1:
                raise TVMError(f"The {missing}-th {what} is not initialized before training or inference.")

    def _inputs(self, input_instances: Any, targets: Any = None) -> list:
        self._check_inited()
        inputs = input_instances if isinstance(input_instances, (list, tuple)) else [input_instances]
        if len(inputs) != self._input_num:
            raise ValueError("The length of the input does not match the backbone")
        args = [self._on_device(i) for i in inputs] + list(self._params) + list(self._states)
        if targets is not None:
            args += [self._on_device(t) for t in (targets if isinstance(targets, list) else [targets])]
        return args

    def predict(self, *input_instances: Any) -> Any:
        """The backbone's result for these inputs (the updated states, if any, left out)."""
        res = self.vm[self.BACKBONE_FUNC](*self._inputs(list(input_instances)))
        if self._state_num != 0:
            res = res[: -self._state_num]
            if len(res) == 1:
                res = res[0]
        return res

    def update(self, input_instances: Any, targets: Any) -> NDArray:
        """One step: the loss and the parameters' gradients, then the optimizer; returns the loss."""
        ret, grads = self.vm[self.ADJOINT_FUNC](*self._inputs(input_instances, targets))
        if self._state_num != 0:
            self._states = list(ret[1:])
            ret = ret[0]
        new_params, new_state = self.vm[self.OPTIMIZER_FUNC](tuple(self._params), grads, tuple(self._optim_state))
        self._params, self._optim_state = list(new_params), list(new_state)
        return ret

    def profile_adjoint(self, input_instances: Any, targets: Any) -> Any:
        """The VM's profile report of one adjoint call (the VM needs ``profile=True``)."""
        return self.vm.profile(self.ADJOINT_FUNC, *self._inputs(input_instances, targets))
