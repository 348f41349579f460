"""``runtime.Object``: the base of opaque runtime objects (TVM's ``tvm.runtime.Object``).

A VM function's ``R.Object`` parameter takes such a value as it is (a KV cache, for one);
the argument check converts anything else that is not a scalar, shape or tuple to a tensor.
"""

from __future__ import annotations

__all__ = ["Object"]


class Object:
    """Base class of runtime objects handed through the VM unchanged."""

    __slots__ = ()
