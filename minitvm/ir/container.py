"""``tvm.ir.Array`` / ``tvm.ir.Map`` (TVM 0.27: ``tvm_ffi.Array`` / ``Map``): names to test against.

TVM returns its own container objects from the runtime (a VM's tuple result is an ``Array``).
minitvm's runtime is Python, whose tuples and lists are its arrays and dicts its maps, so these
are abstract classes those types are registered with: ``isinstance(vm_out, Array)`` holds for a
tuple, and ``Array(items)`` makes a list, ``Map(pairs)`` a dict.
"""

from __future__ import annotations

import abc
from typing import Any

__all__ = ["Array", "Map"]


class Array(abc.ABC):  # noqa: B024 - a name to test against, no methods of its own
    """A runtime sequence: a tuple or a list here (``Array(items)`` makes a list)."""

    def __new__(cls, items: Any = ()) -> Any:  # type: ignore[misc]
        return list(items)


class Map(abc.ABC):  # noqa: B024 - as Array
    """A runtime mapping: a dict here (``Map(pairs)`` makes one)."""

    def __new__(cls, items: Any = ()) -> Any:  # type: ignore[misc]
        return dict(items)


Array.register(tuple)
Array.register(list)
Map.register(dict)
