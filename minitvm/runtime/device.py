"""Devices: where arrays live and kernels run.

minitvm runs on the host CPU.  ``minitvm.cuda(0)`` is the *emulated* GPU (DLPack type 2, as
TVM's ``tvm.cuda``): kernels built for ``"cuda-emulated"`` run on this CPU, and arrays "on"
it stay in host memory, so no copy is ever needed.
"""

from __future__ import annotations

__all__ = ["Device", "cpu", "cuda", "device"]

_KINDS = {"cpu": 1, "llvm": 1, "c": 1, "python": 1, "cuda": 2, "gpu": 2, "cuda-emulated": 2}
_NAMES = {1: "cpu", 2: "cuda"}


class Device:
    """A device handle (``minitvm.cpu(0)``), as TVM's ``Device`` (device type + id)."""

    __slots__ = ("device_type", "device_id")

    kDLCPU = 1
    kDLCUDA = 2

    def __init__(self, device_type: int = 1, device_id: int = 0):
        if device_type not in _NAMES:
            raise ValueError(f"minitvm supports the CPU (type 1) and the emulated CUDA GPU (type 2), got type "
                             f"{device_type}")
        self.device_type = int(device_type)
        self.device_id = int(device_id)

    @property
    def exist(self) -> bool:
        return self.device_id == 0

    def sync(self) -> None:
        """Wait for all work on the device: kernels run synchronously on the CPU, so nothing to do."""

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Device) and self.device_type == other.device_type
                and self.device_id == other.device_id)

    def __hash__(self) -> int:
        return hash((self.device_type, self.device_id))

    def __repr__(self) -> str:
        return f"{_NAMES[self.device_type]}({self.device_id})"

    @property
    def index(self) -> int:
        """The device id (TVM 0.27's name for ``device_id``)."""
        return self.device_id

    def dlpack_device_type(self) -> int:
        """The DLPack device type code (1 the CPU, 2 CUDA), as TVM's."""
        return self.device_type

    def _dlpack(self) -> tuple[int, int]:
        return (self.device_type, self.device_id)


def cpu(dev_id: int = 0) -> Device:
    """The host CPU (TVM's ``tvm.cpu()``)."""
    return Device(Device.kDLCPU, dev_id)


def cuda(dev_id: int = 0) -> Device:
    """The emulated CUDA GPU (TVM's ``tvm.cuda()``): arrays stay in host memory and kernels built
    for ``"cuda-emulated"`` run on this CPU (see :mod:`minitvm.target.cuda`)."""
    return Device(Device.kDLCUDA, dev_id)


def device(dev_type: str | int | Device, dev_id: int = 0) -> Device:
    """A device from a name (``"cpu"``, ``"llvm"``) or a type code, as ``tvm.device``."""
    if isinstance(dev_type, Device):
        return dev_type
    if isinstance(dev_type, str):
        name = dev_type.split()[0].lower()
        if name not in _KINDS:
            raise ValueError(f"unknown or unsupported device {dev_type!r}; minitvm has 'cpu' and 'cuda' "
                             "(the emulated GPU)")
        return Device(_KINDS[name], dev_id)
    return Device(int(dev_type), dev_id)
