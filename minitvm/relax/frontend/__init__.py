"""Frontends: ways into Relax other than the BlockBuilder and TVMScript.

``nn`` -- models written as ``nn.Module`` classes, traced by ``export_tvm``.
"""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ..expr import Function
from . import nn

__all__ = ["nn", "detach_params"]


def detach_params(mod: IRModule) -> tuple[IRModule, dict[str, list[Any]]]:
    """Split the ``"params"`` attribute off each Relax function.

    Returns ``(mod without those attributes, {function name: [arrays]})``; functions without
    the attribute are left as they are and do not appear in the dictionary."""
    if not isinstance(mod, IRModule):
        raise TypeError(f"detach_params expects an IRModule, got {type(mod).__name__}")
    out = mod.copy()
    params: dict[str, list[Any]] = {}
    for gv, func in mod.items():
        if isinstance(func, Function) and "params" in func.attrs:
            params[gv.name_hint] = list(func.attrs["params"])
            out[gv] = func.without_attr("params")
    return out, params
