"""``Module.jit(..., out_format="torch")``'s result: a compiled module called with torch tensors.

As TVM's ``nn.torch.TorchModule``: ``model["forward"](x, 2)`` converts each argument by its
spec (a ``torch.Tensor`` for a tensor, a Python int for ``int`` -> ``R.Shape([n])``, a
tuple/list for a tuple spec), runs the VM function with the module's effects and parameters,
keeps the updated effects for the next call, and returns torch tensors (tuples as lists).
"""

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ....runtime import ShapeTuple
from ....runtime import tensor as _rt_tensor
from ....runtime.ndarray import NDArray
from . import spec as _spec


class TorchModule:
    """A VirtualMachine over an exported ``nn.Module``, called with and returning torch tensors."""

    def __init__(self, spec: _spec.ModuleSpec, vm: Any, params: list[Any]) -> None:
        # an exported module without effects has no _initialize_effect function
        self.effects = vm["_initialize_effect"]() if _has_function(vm, "_initialize_effect") else None
        self.spec, self.vm, self.params = spec, vm, params

    def __getitem__(self, method_name: str) -> Callable:
        specs = dict(zip(self.spec.method_names, self.spec.method_specs))
        if method_name not in specs:
            raise ValueError(f"Method `{method_name}` is not found in the module spec. {self.spec}")
        method_spec, method = specs[method_name], self.vm[method_name]

        def _closure(*args: Any) -> Any:
            if len(args) != len(method_spec.arg_names):
                raise TypeError(f"Argument length mismatch. Expected {len(method_spec.arg_names)} arguments, "
                                f"but got {len(args)} arguments. The spec is: {method_spec}")
            vm_args = [_torch_to_tvm(n, s, a) for n, s, a in zip(method_spec.arg_names, method_spec.arg_specs, args)]
            if self.effects is not None:
                outputs, self.effects = method(*vm_args, *self.effects, *self.params)
            else:
                outputs = method(*vm_args, *self.params)
            return _tvm_to_torch(outputs)

        _closure.__name__ = method_name
        return _closure


def _has_function(vm: Any, name: str) -> bool:
    try:
        vm[name]
    except (AttributeError, KeyError, ValueError):
        return False
    return True


def _tvm_to_torch(value: Any) -> Any:
    if isinstance(value, ShapeTuple):  # a tuple subclass: tested before tuples
        return list(value)
    if isinstance(value, (list, tuple)):
        return [_tvm_to_torch(v) for v in value]
    if isinstance(value, NDArray):
        return torch.from_numpy(np.ascontiguousarray(value.numpy()))
    raise TypeError(f"TorchModule: cannot return a {type(value).__name__} as a torch value")


def _torch_to_tvm(name: str, arg_spec: Any, value: Any) -> Any:
    if isinstance(arg_spec, _spec.Tensor):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"Expected argument `{name}` to be `torch.Tensor`, but got {type(value)}")
        return _rt_tensor(value.detach().cpu().numpy())
    if isinstance(arg_spec, _spec.Int):
        if not isinstance(value, int):
            raise TypeError(f"Expected argument `{name}` to be `int`, but got {type(value)}")
        return ShapeTuple([value])
    if isinstance(arg_spec, _spec.Tuple):
        return [_torch_to_tvm(f"{name}[{i}]", s, value[i]) for i, s in enumerate(arg_spec.elements)]
    raise TypeError(f"TorchModule: unsupported spec {arg_spec!r} for argument `{name}`")
