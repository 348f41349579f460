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
import operator
from typing import Any

from ...runtime.module import BoundsCheck
from ..signature import FunctionSignature

__all__ = ["ERROR_INDEX_SYMBOL", "CompiledFunction", "UnrunnableFunction", "ctype"]

_DATA_POINTER = operator.attrgetter("_ptr")  # of an NDArray: the address a kernel receives
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


class CompiledFunction:
    """A JIT-compiled kernel: checks the arguments, then calls the machine code (without the GIL).

    ``failures[k - 1]`` says what failure code ``k`` means: an assert's message, or the
    :class:`~minitvm.runtime.BoundsCheck` that failed (its index is then in the global at
    ``error_index_address``).
    """

    def __init__(self, name: str, address: int, sig: FunctionSignature, failures: list[str | BoundsCheck],
                 engine: Any, error_index_address: int = 0):
        self.name = name
        self.signature = sig
        argtypes = [ctypes.c_void_p if p.is_buffer else ctype(p.dtype) for p in sig.params]
        argtypes += [ctype(v.dtype) for v in sig.shape_vars]
        self._cfunc = ctypes.CFUNCTYPE(ctypes.c_int32, *argtypes)(address)
        self._failures = failures
        self._engine = engine  # keeps the machine code alive as long as this function is
        self._error_index = error_index_address
        self.__name__ = name
        self._check = sig.check  # the runtime's argument check, fast after the first call per shape
        self._all_buffers = all(p.is_buffer for p in sig.params)
        self._is_buffer = [p.is_buffer for p in sig.params]

    def __call__(self, *args: Any) -> None:
        values, sizes = self._check(args)
        if self._all_buffers:
            rc = self._cfunc(*map(_DATA_POINTER, values), *sizes)
        else:
            rc = self._cfunc(*[v._ptr if b else v for v, b in zip(values, self._is_buffer)], *sizes)
        if rc != 0:
            self._raise(rc)

    def prepare(self, *args: Any) -> tuple[Any, tuple]:
        """``(cfunc, sizes)`` for calls whose arguments have the shapes and dtypes of ``args``
        (checked here, once): ``cfunc(*data_pointers_and_scalars, *sizes)`` runs the machine code
        without a check and returns its error code -- nonzero: call the function itself with the
        same arguments for the exception.  For a caller that makes many calls of one shape (a KV
        cache, once per layer) and checks what changes between them itself."""
        _, sizes = self._check(args)
        return self._cfunc, tuple(sizes)

    def _raise(self, rc: int) -> None:
        """The exception for the error code the machine code returned."""
        failure = self._failures[rc - 1] if 0 < rc <= len(self._failures) else f"error code {rc}"
        if isinstance(failure, BoundsCheck):
            index = ctypes.c_int64.from_address(self._error_index).value if self._error_index else None
            raise failure.error(self.name, index)
        if not isinstance(failure, str):  # a registered function the kernel called raised (packed_call.py)
            raise failure.error(self.name)
        raise RuntimeError(f"{self.name}: {failure}")

    def __repr__(self) -> str:
        return f"<compiled {self.name}({self.signature.describe()})>"


class UnrunnableFunction(CompiledFunction):
    """A kernel compiled for a CPU this machine is not (see :mod:`.cpu_check`): it keeps its
    signature and code for inspection and saving, and calling it raises ``RuntimeError(reason)``
    instead of executing instructions this CPU lacks."""

    def __init__(self, *args: Any, reason: str, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.reason = reason

    def __call__(self, *args: Any) -> None:
        raise RuntimeError(f"{self.name}: {self.reason}")
