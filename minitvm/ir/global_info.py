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
        return f'I.vdevice("{self.target}", {self.vdevice_id}, "{self.memory_scope}")'


#: the global infos of the @I.ir_module being parsed, innermost last: ``R.Tensor(..., "llvm:0")``
#: names a virtual device by its place in that module's "vdevice" list
_PARSING: list[dict] = []
#: the global infos of the module being printed (a struct info prints its device as "kind:index:scope")
_PRINTING: list[dict] = []


def target_kind(vdevice: VDevice) -> str:
    """The target kind a virtual device runs on: ``"cuda"`` for ``"cuda -arch=sm_80"``."""
    text = str(vdevice.target or "").strip()
    return text.split()[0] if text else ""


#: DLPack device type of each target kind (TVM's Target::GetTargetDeviceType)
_DEVICE_TYPES = {"llvm": 1, "c": 1, "cuda": 2, "opencl": 4, "vulkan": 7, "metal": 8, "rocm": 10,
                 "webgpu": 15, "hexagon": 16}


def device_type_of(vdevice: VDevice) -> int:
    """The DLPack device type code the virtual device's target runs on (CPU = 1, CUDA = 2 ...)."""
    kind = target_kind(vdevice)
    if kind not in _DEVICE_TYPES:
        raise ValueError(f"virtual device {vdevice!r}: unknown target kind {kind!r}")
    return _DEVICE_TYPES[kind]


def parse_vdevice_text(text: str) -> tuple[str, int, str | None]:
    """``"kind[:index[:scope]]"`` as TVMScript writes a virtual device -> (kind, index, scope)."""
    parts = text.split(":")
    if len(parts) > 3 or not parts[0]:
        raise ValueError(f"virtual device {text!r}: expected 'kind', 'kind:index' or 'kind:index:scope'")
    try:
        index = int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        raise ValueError(f"virtual device {text!r}: the index after ':' must be an int") from None
    return parts[0], index, parts[2] if len(parts) > 2 else None


def lookup_vdevice(kind: str, index: int = 0, infos: dict | None = None) -> VDevice:
    """The ``index``-th virtual device of target ``kind`` in the module's "vdevice" list (kind
    ``"vdevice"``: the ``index``-th entry whatever its kind), as TVM's parser resolves them."""
    if infos is None:
        infos = _PARSING[-1] if _PARSING else {}
    vdevices = list(infos.get("vdevice", ()))
    if not vdevices:
        raise ValueError(f"virtual device {kind}:{index}: the module declares no vdevice list "
                         "(I.module_global_infos({'vdevice': [...]}))")
    if kind == "vdevice":
        if 0 <= index < len(vdevices):
            return vdevices[index]
    else:
        same_kind = [v for v in vdevices if isinstance(v, VDevice) and target_kind(v) == kind]
        if 0 <= index < len(same_kind):
            return same_kind[index]
    known = ", ".join(repr(v) for v in vdevices)
    raise ValueError(f"virtual device {kind}:{index} is not in the module's vdevice list: {known}")


def vdevice_text(vdevice: Any) -> str:
    """How a struct info writes its virtual device: ``"llvm:0:global"`` (the index counts the
    module's devices of that kind), or the text it was given when unresolved."""
    if not isinstance(vdevice, VDevice):
        return str(vdevice)
    infos = _PRINTING[-1] if _PRINTING else {}
    return f"{target_kind(vdevice)}:{index_among_kind(vdevice, infos)}:{vdevice.memory_scope}"


def index_among_kind(vdevice: VDevice, infos: dict) -> int:
    """Where ``vdevice`` stands among the module's virtual devices of its target kind (printing)."""
    kind = target_kind(vdevice)
    same_kind = [v for v in infos.get("vdevice", ()) if isinstance(v, VDevice) and target_kind(v) == kind]
    for i, v in enumerate(same_kind):
        if v == vdevice:
            return i
    return 0
