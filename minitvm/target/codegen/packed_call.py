"""``T.call_packed("name", A, x, ...)`` in native code: a call of a function registered in
minitvm's global registry (``tvm.register_global_func``), from inside a compiled kernel.

TVM lowers the call to its packed-function ABI (``LowerTVMBuiltin``: stack-allocated
``TVMFFIAny`` values and ``DLTensor`` records).  minitvm keeps one small bridge instead: the
kernel fills one record of :data:`RECORD_SLOTS` 64-bit words per argument (kind, value, ndim,
shape, strides, dtype name) and calls ``__minitvm_call_packed(name, nargs, records, ret)``, a
ctypes callback that rebuilds the arguments -- arrays as NDArrays over the kernel's memory, no
copy -- and calls the registered function with the GIL held.  Its result comes back through
``ret`` (converted to the call's dtype); an exception it raises makes the kernel return a
failure code, and the kernel's caller raises that exception again (:class:`PackedCallFailure`).
"""

from __future__ import annotations

import ctypes
import struct
import threading
from typing import Any

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from ...ir import dtype as _dt
from ...runtime.ndarray import NDArray
from ...runtime.registry import get_global_func
from ...tir import expr as _e
from .llvm_types import I8, I32, I64, PTR, CodegenError, alloca

__all__ = ["CALL_PACKED_SYMBOL", "RECORD_SLOTS", "PackedCallFailure", "ensure_packed_call_bridge",
           "emit_call_packed"]

CALL_PACKED_SYMBOL = "__minitvm_call_packed"
#: 64-bit words per argument: kind, value, ndim, shape pointer, strides pointer, dtype name pointer
RECORD_SLOTS = 6
KIND_INT, KIND_FLOAT, KIND_HANDLE, KIND_STR, KIND_ARRAY = range(5)

_BRIDGE: dict[str, Any] = {}
_LOCK = threading.Lock()
#: the exception the registered function last raised (a parallel loop's worker thread sets it, the
#: thread that called the kernel raises it)
_LAST_ERROR: dict[str, BaseException | None] = {"error": None}


class PackedCallFailure:
    """A failure code of a kernel: the registered function ``name`` raised (the kernel's caller
    raises that exception again)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def error(self, kernel: str) -> BaseException:
        cause, _LAST_ERROR["error"] = _LAST_ERROR["error"], None
        err = RuntimeError(f"{kernel}: the packed function {self.name!r} it calls (T.call_packed) raised "
                           f"{type(cause).__name__}: {cause}")
        err.__cause__ = cause
        return err

    def __str__(self) -> str:
        return f"the packed function {self.name!r} raised an error"


def _c_string(address: int) -> str:
    return ctypes.string_at(address).decode()


def _argument(words: list[int]) -> Any:
    """One argument back from its record."""
    kind, value, ndim, shape_ptr, strides_ptr, dtype_ptr = words
    dtype = _c_string(dtype_ptr) if dtype_ptr else "int64"
    if kind == KIND_INT:
        return bool(value) if dtype == "bool" else int(value)
    if kind == KIND_FLOAT:
        return struct.unpack("<d", struct.pack("<q", value))[0]
    if kind == KIND_STR:
        return _c_string(value)
    if kind == KIND_HANDLE:
        return ctypes.c_void_p(value & (2**64 - 1))
    shape = tuple(ctypes.cast(shape_ptr, ctypes.POINTER(ctypes.c_int64))[:ndim]) if ndim else ()
    if strides_ptr:
        raise NotImplementedError("T.call_packed: an array argument with explicit strides "
                                  "(tvm_stack_make_array with strides) is not supported; pass a compact buffer")
    np_dtype = np.dtype(dtype)
    count = int(np.prod(shape)) if shape else 1
    raw = (ctypes.c_char * (count * np_dtype.itemsize)).from_address(value & (2**64 - 1))
    return NDArray(np.frombuffer(raw, dtype=np_dtype).reshape(shape))


def _bridge(name_ptr: int, nargs: int, records: int, ret: int) -> int:
    """The callback the kernels call: 0 when the registered function returned, else 1."""
    try:
        name = _c_string(name_ptr)
        words = ctypes.cast(records, ctypes.POINTER(ctypes.c_int64))[:nargs * RECORD_SLOTS]
        args = [_argument(words[k * RECORD_SLOTS:(k + 1) * RECORD_SLOTS]) for k in range(nargs)]
        result = get_global_func(name)(*args)
        slot = ctypes.c_int64.from_address(ret)
        if isinstance(result, float) or isinstance(result, np.floating):
            slot.value = struct.unpack("<q", struct.pack("<d", float(result)))[0]
        elif result is not None and hasattr(result, "__int__"):
            slot.value = int(result)
        else:
            slot.value = 0
        return 0
    except BaseException as err:  # noqa: BLE001 - re-raised by the kernel's caller
        _LAST_ERROR["error"] = err
        return 1


_BRIDGE_TYPE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p)


def ensure_packed_call_bridge() -> None:
    """Make :data:`CALL_PACKED_SYMBOL` visible to JIT-compiled code (once per process)."""
    with _LOCK:
        if "callback" not in _BRIDGE:
            callback = _BRIDGE_TYPE(_bridge)
            _BRIDGE["callback"] = callback  # kept alive as long as the process
            llvm.add_symbol(CALL_PACKED_SYMBOL, ctypes.cast(callback, ctypes.c_void_p).value)


def _string(cg: Any, text: str) -> ir.Value:
    """A pointer to a NUL-terminated constant string in the module (one global per text)."""
    data = bytearray(text.encode() + b"\0")
    name = f"__minitvm_str_{data.hex()}" if len(data) <= 48 else f"__minitvm_str_{abs(hash(text))}"
    slot = cg.module.globals.get(name)
    if slot is None:
        slot = ir.GlobalVariable(cg.module, ir.ArrayType(I8, len(data)), name)
        slot.initializer = ir.Constant(ir.ArrayType(I8, len(data)), data)
        slot.global_constant = True
        slot.linkage = "private"
    return cg.b.bitcast(slot, PTR)


def _shape_array(cg: Any, dims: tuple) -> ir.Value:
    slot = alloca(cg.st.alloca_builder, I64, ir.Constant(I64, max(1, len(dims))), "packed_shape")
    for k, d in enumerate(dims):
        cg.b.store(cg._index(d), cg.b.gep(slot, [ir.Constant(I64, k)], source_etype=I64))
    return slot


def _pointer(cg: Any, e: _e.PrimExpr) -> ir.Value:
    """A handle: a buffer's data pointer (``A.data``) or any other handle value."""
    if isinstance(e, _e.Var) and id(e) in cg.st.buffers:
        return cg.st.buffers[id(e)]
    return cg.visit_expr(e)


def _record(cg: Any, arg: _e.PrimExpr) -> list[ir.Value]:
    """The six words of one argument."""
    zero = ir.Constant(I64, 0)
    if isinstance(arg, _e.StringImm):
        return [ir.Constant(I64, KIND_STR), cg.b.ptrtoint(_string(cg, arg.value), I64), zero, zero, zero, zero]
    if isinstance(arg, _e.Call) and arg.op == "tir.tvm_stack_make_array":
        data, shape, strides, ndim, arr_dtype, elem_offset = arg.args
        if not (isinstance(shape, _e.Call) and shape.op == "tir.tvm_stack_make_shape"):
            raise CodegenError("LLVM codegen: T.call_packed needs tvm_stack_make_array's shape as "
                               f"T.tvm_stack_make_shape(...), got {shape}")
        if not (isinstance(strides, _e.IntImm) and strides.value == 0):
            raise NotImplementedError("LLVM codegen: T.call_packed with an array argument of explicit strides "
                                      "is not supported; pass a compact buffer")
        dtype = arr_dtype.dtype
        base = _pointer(cg, data)
        offset = cg.b.mul(cg._index(elem_offset), ir.Constant(I64, max(1, _dt.bits(dtype) // 8)))
        address = cg.b.add(cg.b.ptrtoint(base, I64), offset)
        shape_ptr = cg.b.ptrtoint(_shape_array(cg, shape.args), I64)
        return [ir.Constant(I64, KIND_ARRAY), address, ir.Constant(I64, len(shape.args)), shape_ptr, zero,
                cg.b.ptrtoint(_string(cg, dtype), I64)]
    dtype = arg.dtype
    if dtype == "handle":
        return [ir.Constant(I64, KIND_HANDLE), cg.b.ptrtoint(_pointer(cg, arg), I64), zero, zero, zero, zero]
    value = cg.visit_expr(arg)
    name = cg.b.ptrtoint(_string(cg, dtype), I64)
    if _dt.is_float(dtype):
        wide = value if dtype == "float64" else cg._cast(value, dtype, "float64")
        return [ir.Constant(I64, KIND_FLOAT), cg.b.bitcast(wide, I64), zero, zero, zero, name]
    wide = value if dtype == "int64" else cg._cast(value, dtype, "int64")
    return [ir.Constant(I64, KIND_INT), wide, zero, zero, zero, name]


def emit_call_packed(cg: Any, e: _e.Call) -> ir.Value:
    """``T.call_packed("name", *args)`` in the function ``cg`` is emitting: fill the records,
    call the bridge, fail the kernel if the function raised, return its result as ``e.dtype``."""
    if not e.args or not isinstance(e.args[0], _e.StringImm):
        raise CodegenError(f"LLVM codegen: T.call_packed needs the function's name as a string first, got {e}")
    ensure_packed_call_bridge()
    name, args = e.args[0].value, e.args[1:]
    records = alloca(cg.st.alloca_builder, I64, ir.Constant(I64, max(1, len(args)) * RECORD_SLOTS), "packed_args")
    for k, arg in enumerate(args):
        for j, word in enumerate(_record(cg, arg)):
            cg.b.store(word, cg.b.gep(records, [ir.Constant(I64, k * RECORD_SLOTS + j)], source_etype=I64))
    ret = alloca(cg.st.alloca_builder, I64, None, "packed_ret")
    cg.b.store(ir.Constant(I64, 0), ret)
    bridge = cg._declare(CALL_PACKED_SYMBOL, I32, [PTR, I32, PTR, PTR])
    rc = cg.b.call(bridge, [_string(cg, name), ir.Constant(I32, len(args)), records, ret])
    cg.failures.append(PackedCallFailure(name))
    code = ir.Constant(I32, len(cg.failures))
    with cg.b.if_then(cg.b.icmp_signed("!=", rc, ir.Constant(I32, 0)), likely=False):
        cg._fail(code)
    word = cg.b.load(ret, typ=I64)
    if e.dtype in ("void", "handle"):
        return ir.Constant(I32, 0) if e.dtype == "void" else cg.b.inttoptr(word, PTR)
    if _dt.is_float(e.dtype):
        return cg._cast(cg.b.bitcast(word, ir.DoubleType()), "float64", e.dtype)
    return cg._cast(word, "int64", e.dtype)
