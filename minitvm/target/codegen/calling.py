"""The calling convention of compiled kernels: how Python arguments reach the machine code
and how its result comes back.

Each PrimFunc is compiled to ``i32 name(ptr A, ptr B, ..., <scalars>, <size vars>)``: arrays
are passed as pointers to their data, scalar parameters by value (bool as a byte), symbolic
dimensions (``n``) as extra integers read off the arguments' shapes.  The result is 0, or
``k`` when the k-th assert failed; a failed bounds check also leaves the bad index in the
module's global :data:`ERROR_INDEX_SYMBOL`.  :class:`CompiledFunction` checks the arguments
against the function's :class:`~minitvm.target.signature.FunctionSignature`, calls the machine
code through ctypes (without the GIL), and turns a nonzero result into an exception.
"""

from __future__ import annotations

import ctypes
from typing import Any

from ...runtime.module import BOUNDS_CHECK_PREFIX, bounds_error
from ...runtime.ndarray import NDArray
from ..signature import FunctionSignature

__all__ = ["ERROR_INDEX_SYMBOL", "CompiledFunction", "ctype"]

#: the global where a failed bounds check stores the bad index (read by :class:`CompiledFunction`)
ERROR_INDEX_SYMBOL = "__minitvm_bounds_error_index"


def ctype(dtype: str) -> Any:
    """The ctypes type a scalar parameter of ``dtype`` is passed as."""
    dtype = str(dtype)
    table = {"float32": ctypes.c_float, "float64": ctypes.c_double, "bool": ctypes.c_uint8,
             "int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32,
             "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16,
             "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64, "handle": ctypes.c_void_p}
    if dtype not in table:
        raise TypeError(f"LLVM codegen: scalar parameters of dtype {dtype} are not supported")
    return table[dtype]



def _pointer(arg: Any, array: Any) -> int:
    """Address of an argument's data (cached on NDArrays, which own their memory)."""
    return arg._ptr if type(arg) is NDArray else array.__array_interface__["data"][0]


class CompiledFunction:
    """A JIT-compiled kernel: checks the arguments, then calls the machine code (without the GIL)."""

    def __init__(self, name: str, address: int, sig: FunctionSignature, messages: list[str],
                 engine: Any, error_index_address: int = 0):
        self.name = name
        self.signature = sig
        argtypes = [ctypes.c_void_p if p.is_buffer else ctype(p.dtype) for p in sig.params]
        argtypes += [ctype(v.dtype) for v in sig.shape_vars]
        self._cfunc = ctypes.CFUNCTYPE(ctypes.c_int32, *argtypes)(address)
        self._messages = messages
        self._engine = engine  # keeps the machine code alive as long as this function is
        self._error_index = error_index_address
        self.__name__ = name
        self._all_buffers = all(p.is_buffer for p in sig.params)
        self._written = tuple(i for i, p in enumerate(sig.params) if p.written)
        # the shapes and dtypes of the last NDArray arguments that passed the full check, and
        # the sizes bound from them: a call with the same ones needs only their addresses
        self._checked: tuple | None = None

    def __call__(self, *args: Any) -> None:
        checked = self._checked
        if checked is not None and len(args) == len(checked[0]):
            shapes, dtypes, sizes = checked
            ptrs = []
            for arg, shape, dtype in zip(args, shapes, dtypes):
                if type(arg) is not NDArray or arg._array.shape != shape or arg._array.dtype is not dtype:
                    break
                ptrs.append(arg._ptr)
            else:
                for i in self._written:
                    if not args[i]._array.flags.writeable:
                        break
                else:
                    rc = self._cfunc(*ptrs, *sizes)
                    if rc != 0:
                        self._raise(rc)
                    return
        values, sizes = self.signature.bind(args)
        raw = [_pointer(arg, v) if spec.is_buffer else v
               for spec, arg, v in zip(self.signature.params, args, values)]
        if self._all_buffers and all(type(arg) is NDArray for arg in args):
            self._checked = (tuple(a._array.shape for a in args), tuple(a._array.dtype for a in args), sizes)
        rc = self._cfunc(*raw, *sizes)
        if rc != 0:
            self._raise(rc)

    def _raise(self, rc: int) -> None:
        """The exception for the error code the machine code returned."""
        msg = self._messages[rc - 1] if 0 < rc <= len(self._messages) else f"error code {rc}"
        if msg.startswith(BOUNDS_CHECK_PREFIX):
            index = ctypes.c_int64.from_address(self._error_index).value if self._error_index else None
            raise bounds_error(self.name, msg, index)
        raise RuntimeError(f"{self.name}: {msg}")

    def __repr__(self) -> str:
        return f"<compiled {self.name}({self.signature.describe()})>"

