"""The runtime: devices, arrays, compiled modules and the global function registry.

This is the bottom layer: it knows nothing of the IR, so compiled code can run
without the compiler.
"""

from ..error import TVMError
from ..ir.dtype import DataType, DataTypeCode
from . import container, kv_simple, kv_state, ndarray, registry, tensor_cache  # register their vm.builtin.* globals
from . import ndarray as nd
from .device import Device, cpu, cuda, device
from .module import BenchmarkResult, BoundsCheck, BoundsError, Module
from .ndarray import NDArray, Tensor, empty, from_dlpack, tensor
from .object import Object
from .registry import PackedFunc, convert, get_global_func, list_global_func_names, register_func, register_global_func
from .vm import Executable, VirtualMachine, load_executable, load_module
from .vm.builtins import ShapeTuple

__all__ = ["Device", "cpu", "cuda", "device", "NDArray", "Tensor", "tensor", "empty", "from_dlpack", "nd",
           "ndarray", "registry", "kv_state", "Module", "BenchmarkResult", "BoundsError", "BoundsCheck", "PackedFunc",
           "register_func", "register_global_func", "get_global_func", "list_global_func_names",
           "Executable", "VirtualMachine", "load_executable", "load_module", "ShapeTuple", "TVMError", "convert",
           "Object", "DataType", "DataTypeCode"]
