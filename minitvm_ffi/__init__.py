"""``tvm_ffi`` (TVM 0.27's function registry package), spelled ``minitvm_ffi``.

TVM 0.27 moved global-function registration into a package of its own (``import tvm_ffi;
tvm_ffi.register_global_func(...)``).  Here each name is the same object as minitvm's own
(``minitvm.register_func`` ...); ``import minitvm_ffi as tvm_ffi`` reads as TVM 0.27 code.
"""

from __future__ import annotations

import abc
from typing import Any

from minitvm.ir import structural_equal, structural_hash
from minitvm.runtime import from_dlpack
from minitvm.runtime.registry import PackedFunc as Function
from minitvm.runtime.registry import convert, get_global_func, list_global_func_names, register_global_func
from minitvm.runtime.vm.builtins import ShapeTuple as Shape

__all__ = ["register_global_func", "get_global_func", "list_global_func_names", "Function", "from_dlpack", "convert",
           "structural_equal", "structural_hash", "Shape", "Array", "Map"]


class Array(abc.ABC):  # noqa: B024 - a name to test against, no methods of its own
    """TVM's runtime sequence (a VM's tuple result is one).  minitvm's runtime is Python, so its
    arrays are tuples and lists: ``isinstance(vm_out, tvm_ffi.Array)`` holds for them, and
    ``Array(items)`` makes a list."""

    def __new__(cls, items: Any = ()) -> Any:  # type: ignore[misc]
        return list(items)


class Map(abc.ABC):  # noqa: B024 - as Array
    """TVM's runtime mapping: a dict here (``Map(pairs)`` makes one)."""

    def __new__(cls, items: Any = ()) -> Any:  # type: ignore[misc]
        return dict(items)


Array.register(tuple)
Array.register(list)
Map.register(dict)
