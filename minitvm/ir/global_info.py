"""Module-level global infos (``I.module_global_infos({"vdevice": [...]})``).

minitvm compiles for the host CPU only, so a virtual device here is a record that prints
and compares; nothing places tensors by it.
"""

from __future__ import annotations

from typing import Any

from .node import Node, node

__all__ = ["GlobalInfo", "VDevice", "DummyGlobalInfo"]


class GlobalInfo(Node):
    """Base of the infos an IRModule keeps beside its functions."""


@node
class VDevice(GlobalInfo):
    """A virtual device: target, index among devices of that kind, memory scope."""

    target: Any = None
    vdevice_id: int = 0
    memory_scope: str = "global"

    def __post_init__(self) -> None:
        if self.target is not None and not isinstance(self.target, str):
            object.__setattr__(self, "target", str(self.target))

    def __repr__(self) -> str:
        return f"I.vdevice({self.target!r}, {self.vdevice_id}, {self.memory_scope!r})"


@node
class DummyGlobalInfo(GlobalInfo):
    """A placeholder info (TVM's tests use it to check that infos round-trip)."""

    def __repr__(self) -> str:
        return "I.dummy_global_info()"
