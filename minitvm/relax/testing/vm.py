"""``tvm.relax.testing.vm``: the ``test.vm.*`` global functions TVM's VM tests call through
``R.call_packed`` / ``R.call_dps_packed``, registered on import, and ``check_saved_func``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...runtime.ndarray import array as _tensor
from ...runtime.registry import register_func

__all__ = ["check_saved_func"]


def _register(name: str):
    return register_func(name, override=True)


@_register("test.vm.move")
def move(src: Any) -> Any:
    return src


@_register("test.vm.add")
def add(a: Any, b: Any) -> Any:
    return _tensor(a.numpy() + b.numpy())


@_register("test.vm.mul")
def mul(a: Any, b: Any) -> Any:
    return _tensor(a.numpy() * b.numpy())


@_register("test.vm.equal_zero")
def equal_zero(a: Any) -> Any:
    return _tensor(np.all(a.numpy() == 0))


@_register("test.vm.subtract_one")
def subtract_one(a: Any) -> Any:
    return _tensor(np.subtract(a.numpy(), 1))


@_register("test.vm.identity")
def identity_packed(a: Any, b: Any) -> None:
    b.copyfrom(a.numpy())


@_register("test.vm.tile")
def tile_packed(a: Any, b: Any) -> None:
    b.copyfrom(np.tile(a.numpy(), (1, 2)))


@_register("test.vm.add_scalar")
def add_scalar(a: Any, b: Any) -> Any:
    return a + b


@_register("test.vm.get_device_id")
def get_device_id(device: Any) -> int:
    return device.index if hasattr(device, "index") else device.device_id


@_register("test.vm.check_if_defined")
def check_if_defined(obj: Any) -> bool:
    return obj is not None


def check_saved_func(vm: Any, func_name: str, *inputs: Any) -> Any:
    """Call ``func_name`` directly and as a closure saved with ``vm.save_function``; the two
    results must agree.  Returns the direct call's result."""
    saved_name = f"{func_name}_saved"
    vm.save_function(func_name, saved_name, *inputs)
    res1 = vm[func_name](*inputs)
    res2 = vm[saved_name]()
    np.testing.assert_allclose(res1.numpy(), res2.numpy(), rtol=1e-7, atol=1e-7)
    return res1
