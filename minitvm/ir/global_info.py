"""Global infos: module-level facts a Relax module carries (``tvm.ir.VDevice`` ...).

A module keeps them in ``mod.global_infos`` under a name (``{"vdevice": [VDevice("llvm")]}``);
struct infos and ``R.to_vdevice`` refer to a virtual device by its entry there.  Like TVM's,
global infos compare with ``==`` structurally.
"""

from __future__ import annotations

from typing import Any

from .node import Node, node
from .structural import StructuralEqMixin

__all__ = ["GlobalInfo", "DummyGlobalInfo", "VDevice"]


class GlobalInfo(StructuralEqMixin, Node):
    """Base of module-level global infos; ``==`` is structural equality, as in TVM."""

    __slots__ = ()


@node
class DummyGlobalInfo(GlobalInfo):
    """A placeholder global info with no content (TVM uses it in tests of the mechanism)."""

    def __repr__(self) -> str:
        return "I.dummy_global_info()"


@node
class VDevice(GlobalInfo):
    """A virtual device: the target code for it is built for, its id and its memory scope.

    ``target`` is kept as text (``"llvm"``; a ``Target`` becomes its string);
    ``vdevice_id`` tells apart several devices of one kind.
    """

    target: Any = None
    vdevice_id: int = 0
    memory_scope: str = "global"

    def __post_init__(self) -> None:
        if self.target is not None and not isinstance(self.target, str):
            object.__setattr__(self, "target", str(self.target))  # prints and compares as text
        if not isinstance(self.vdevice_id, int):
            raise TypeError(f"VDevice: vdevice_id must be an int, got {self.vdevice_id!r}")
        if not isinstance(self.memory_scope, str):
            raise TypeError(f"VDevice: memory_scope must be a string, got {self.memory_scope!r}")
        super().__post_init__()

    def __repr__(self) -> str:
        return f"I.vdevice({self.target!r}, {self.vdevice_id}, {self.memory_scope!r})"
