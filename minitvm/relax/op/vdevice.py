"""Virtual-device ops: ``hint_on_device`` (a placement hint RealizeVDevice consumes) and
``to_vdevice`` (a copy to another virtual device).

minitvm runs every tensor on the host CPU, so once built both compute the identity: their
effect is on struct info (``to_vdevice``'s result is annotated with its destination) and on
what ``relax.transform.RealizeVDevice`` propagates.
"""

from __future__ import annotations

from typing import Any

from ...ir import global_info as _gi
from ..expr import Call, Expr
from ..struct_info import StructInfo, TensorStructInfo
from .registry import check_num_args, make_call, register, tensor_arg

__all__ = ["hint_on_device", "to_vdevice"]


@register("relax.hint_on_device", num_inputs=1)
def _infer_hint_on_device(call: Call, ctx: Any) -> StructInfo:
    """The input's struct info: the hint changes no type until RealizeVDevice applies it."""
    check_num_args(call, "relax.hint_on_device", 1)
    return call.args[0].struct_info


@register("relax.to_vdevice", num_inputs=1)
def _infer_to_vdevice(call: Call, ctx: Any) -> StructInfo:
    """The input tensor's shape and dtype, on the destination virtual device."""
    check_num_args(call, "relax.to_vdevice", 1)
    x = tensor_arg(call, 0, "relax.to_vdevice", "data")
    return TensorStructInfo(x.shape, x.dtype,
                            call.attrs["dst_vdevice"], x.ndim if x.shape is None else -1)


def _device_code(device: Any) -> tuple[int, int]:
    """(device type, index) of ``tvm.cpu(0)`` / ``R.device(4, 2)`` / ``(type, index)``."""
    if isinstance(device, tuple) and len(device) == 2:
        return int(device[0]), int(device[1])
    if hasattr(device, "device_type") and hasattr(device, "device_id"):
        return int(device.device_type), int(device.device_id)
    raise TypeError(f"R.hint_on_device: expected a device (tvm.cpu(0), R.device(1, 0)), got {device!r}")


def hint_on_device(data: Expr, dst_vdevice: Any, memory_scope: str = "global") -> Call:
    """Hint that ``data`` lives on device ``dst_vdevice`` (``tvm.cpu()``, ``R.device(2, 0)``);
    RealizeVDevice turns the hint into virtual-device annotations."""
    device_type, index = _device_code(dst_vdevice)
    if index < 0:
        raise ValueError("R.hint_on_device: the device index must not be negative")
    return make_call("relax.hint_on_device", data,
                     attrs={"device_type": device_type, "index": index, "memory_scope": str(memory_scope)})


def to_vdevice(data: Expr, dst_vdevice: Any) -> Call:
    """Copy ``data`` to the virtual device ``dst_vdevice`` (a ``VDevice``, or in TVMScript the
    text ``"cuda"`` / ``"cuda:1"`` naming one of the module's)."""
    if isinstance(dst_vdevice, str):
        kind, index, _scope = _gi.parse_vdevice_text(dst_vdevice)
        dst_vdevice = _gi.lookup_vdevice(kind, index)
    if not isinstance(dst_vdevice, _gi.VDevice):
        raise TypeError(f"R.to_vdevice: expected a VDevice or its text, got {dst_vdevice!r}")
    return make_call("relax.to_vdevice", data, attrs={"dst_vdevice": dst_vdevice})
