"""``tvm_ffi`` (TVM 0.27's function registry package), spelled ``minitvm_ffi``.

TVM 0.27 moved global-function registration into a package of its own (``import tvm_ffi;
tvm_ffi.register_global_func(...)``).  Here each name is the same object as minitvm's own
(``minitvm.register_func`` ...); ``import minitvm_ffi as tvm_ffi`` reads as TVM 0.27 code.
"""

from __future__ import annotations

from minitvm.ir import Array, Map, structural_equal, structural_hash
from minitvm.runtime import from_dlpack
from minitvm.runtime.registry import PackedFunc as Function
from minitvm.runtime.registry import convert, get_global_func, list_global_func_names, register_global_func
from minitvm.runtime.vm.builtins import ShapeTuple as Shape

__all__ = ["register_global_func", "get_global_func", "list_global_func_names", "Function", "from_dlpack", "convert",
           "structural_equal", "structural_hash", "Shape", "Array", "Map"]
