"""``R.builtin.alloc_tensor``: a fresh tensor for one output (TVM's name and arguments).

The operator is registered in :mod:`.memory` with the other memory operators.
"""

from __future__ import annotations

from typing import Any

from ...ir.op import Op
from ..expr import Call
from .memory import ALLOC_TENSOR, as_dtype, as_shape, check_global_scope, device_index

__all__ = ["alloc_tensor"]


def alloc_tensor(shape: Any, dtype: Any, runtime_device_index: Any, storage_scope: Any = "global") -> Call:
    """A call allocating a tensor of ``shape`` and ``dtype`` on device ``runtime_device_index``."""
    check_global_scope(storage_scope, ALLOC_TENSOR)
    return Call(Op.get(ALLOC_TENSOR), [as_shape(shape, ALLOC_TENSOR), as_dtype(dtype),
                                       device_index(runtime_device_index, ALLOC_TENSOR, "runtime_device_index")])
