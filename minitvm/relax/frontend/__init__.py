"""Frontends: ways into Relax other than the BlockBuilder and TVMScript.

``nn`` -- models written as ``nn.Module`` classes, traced by ``export_tvm``.
"""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...runtime.ndarray import NDArray, tensor
from ..expr import Function
from . import nn

__all__ = ["nn", "detach_params"]


def detach_params(mod: IRModule) -> tuple[IRModule, dict[str, list[Any]]]:
    """Split the ``"params"`` attribute off each Relax function.

    Returns ``(mod without those attributes, {function name: [runtime tensors]})`` -- as TVM,
    ``minitvm.runtime.Tensor`` values, ready for the VM (``.numpy()`` gives numpy arrays);
    functions without the attribute are left as they are and do not appear in the dictionary."""
    if not isinstance(mod, IRModule):
        raise TypeError(f"detach_params expects an IRModule, got {type(mod).__name__}")
    out = mod.copy()
    params: dict[str, list[Any]] = {}
    for gv, func in mod.items():
        if isinstance(func, Function) and "params" in func.attrs:
            params[gv.name_hint] = [p if isinstance(p, NDArray) else tensor(_array_of(p))
                                    for p in func.attrs["params"]]
            out[gv] = func.without_attr("params")
    return out, params


def _array_of(value: Any) -> Any:
    """A parameter's value as numpy: arrays as they are, Relax constants by their data."""
    data = getattr(value, "data", value)
    return data.numpy() if isinstance(data, NDArray) else data
