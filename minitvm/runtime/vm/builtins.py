"""Builtin functions of the VM, registered as global packed functions (``vm.builtin.*``).

Bytecode reaches them through ``Call`` like any other function.  They are the runtime's
side of what the compiler emits around kernels: memory (storage, tensors viewed in it),
shape checks and the *shape heap*, and small helpers for tuples.

Shape heap
----------
A function whose shapes mention symbolic dimensions (``n``) gives each one a slot in a
small list of ints, the shape heap, which it allocates once per call
(``vm.builtin.alloc_shape_heap(size)``).  ``match_shape`` reads dimensions off a tensor or
shape and stores them into slots (or checks them against a slot or a constant);
``make_shape`` builds a new shape from slots and constants, to allocate outputs of size
``n``; ``tuple_getitem`` on a shape gives one dimension as an int, which is how a kernel
that takes ``n`` as a scalar gets it.  Each dimension is described by a pair of immediates
``(code, value)``:

==================  ======  =================================================
match_shape code    value   meaning for dimension ``d`` of the value
==================  ======  =================================================
``MATCH_IMM`` 0     k       ``d`` must equal the constant ``k``
``MATCH_STORE`` 1   slot    ``heap[slot] = d`` (first sight of a symbol)
``MATCH_ANY`` 2     --      no check
``MATCH_HEAP`` 3    slot    ``d`` must equal ``heap[slot]`` (later sights)
==================  ======  =================================================

==================  ======  ==================
make_shape code     value   dimension
==================  ======  ==================
``MAKE_IMM`` 0      k       the constant ``k``
``MAKE_LOAD`` 1     slot    ``heap[slot]``
==================  ======  ==================

A dimension that is an expression of symbols (``n * 5408`` after a flatten) gets a slot of
its own, filled by ``eval_shape_expr(heap, slot, *program)`` once its symbols are known.
The program is the expression in postfix, as ``(code, value)`` pairs: ``EXPR_IMM k`` and
``EXPR_LOAD slot`` push a number, the arithmetic codes pop two and push the result
(``value`` unused).  It is data, like the rest of the bytecode: loading an executable never
evaluates Python text.
"""

from __future__ import annotations

import math
import sys
from typing import Any, Callable

import numpy as np

from ..arguments import ShapeMismatchError
from ..device import Device
from ..ndarray import NDArray, aligned_block
from ..registry import register_func

__all__ = ["ShapeTuple", "Storage", "MATCH_ANY", "MATCH_IMM", "MATCH_STORE", "MATCH_HEAP",
           "MAKE_IMM", "MAKE_LOAD", "EXPR_CODES", "SPECIALIZERS", "ALLOWED_DTYPE_KINDS", "check_dtype", "BUILTIN_NAMES"]

# TVM's numbering (relax.testing.runtime_builtin.MatchShapeCode / MakeShapeCode)
MATCH_IMM, MATCH_STORE, MATCH_ANY, MATCH_HEAP = 0, 1, 2, 3
MAKE_IMM, MAKE_LOAD = 0, 1

#: postfix codes of ``eval_shape_expr``: the two leaves, then integer arithmetic as in TIR
#: (floor division and modulo, like ``tir.floordiv``/``floormod``)
EXPR_IMM, EXPR_LOAD = 0, 1
_EXPR_BINARY = {
    2: lambda a, b: a + b,
    3: lambda a, b: a - b,
    4: lambda a, b: a * b,
    5: lambda a, b: a // b,
    6: lambda a, b: a % b,
    7: min,
    8: max,
    # comparisons and logic give 1 or 0 (a symbolic condition, R.prim_value(n % 8 == 0))
    9: lambda a, b: int(a == b),
    10: lambda a, b: int(a != b),
    11: lambda a, b: int(a < b),
    12: lambda a, b: int(a <= b),
    13: lambda a, b: int(a > b),
    14: lambda a, b: int(a >= b),
    15: lambda a, b: int(bool(a) and bool(b)),
    16: lambda a, b: int(bool(a) or bool(b)),
}
EXPR_CODES = {"Add": 2, "Sub": 3, "Mul": 4, "FloorDiv": 5, "FloorMod": 6, "Min": 7, "Max": 8,
              "EQ": 9, "NE": 10, "LT": 11, "LE": 12, "GT": 13, "GE": 14, "And": 15, "Or": 16}

#: numpy dtype kinds that the VM stores in memory (no Python objects, ever)
ALLOWED_DTYPE_KINDS = frozenset("biuf")


class ShapeTuple(tuple):
    """A shape value: a tuple of ints (TVM's ``ShapeTuple``).

    A subclass of ``tuple`` so that it indexes, compares and unpacks like one, but a
    distinct type so that the VM can tell a shape from a tuple of values.
    """

    __slots__ = ()

    def __new__(cls, dims: Any = ()) -> "ShapeTuple":
        return super().__new__(cls, (int(d) for d in dims))

    def __repr__(self) -> str:
        return f"ShapeTuple({tuple(self)})"


_DTYPES: dict[str, np.dtype] = {}  # checked dtype names (allocation runs on every call)


def check_dtype(dtype: Any, where: str) -> np.dtype:
    """A numpy dtype for the name ``dtype``, refusing object and other non-numeric types."""
    known = _DTYPES.get(dtype) if type(dtype) is str else None
    if known is not None:
        return known
    try:
        dt = np.dtype(str(dtype))
    except TypeError as err:
        raise ValueError(f"{where}: unknown dtype {dtype!r}") from err
    if dt.kind not in ALLOWED_DTYPE_KINDS:
        raise ValueError(f"{where}: dtype {dtype!r} is not a numeric type")
    if type(dtype) is str:
        _DTYPES[dtype] = dt
    return dt


class Storage:
    """A block of raw device memory that tensors are carved from (``alloc_tensor``), starting on
    ``ALLOC_ALIGNMENT`` bytes as every NDArray does."""

    __slots__ = ("buffer", "nbytes", "address", "raw")

    def __init__(self, nbytes: int):
        if nbytes < 0:
            raise ValueError(f"alloc_storage: negative size {nbytes}")
        self.nbytes = int(nbytes)
        self.raw, self.buffer = aligned_block(self.nbytes)  # every tensor is a view of `raw`
        self.address = self.buffer.ctypes.data

    def __repr__(self) -> str:
        return f"Storage({self.nbytes} bytes)"


def _shape_of(value: Any, where: str) -> tuple:
    if type(value) is NDArray:
        return value._array.shape
    if isinstance(value, tuple):
        return value
    raise TypeError(f"{where}: expected a tensor or a shape, got {type(value).__name__}")


# -- memory --------------------------------------------------------------------------------------


def _storage_bytes(size: Any, *rest: Any) -> int:
    """Bytes for ``prod(size)`` elements of the dtype hint (``size``: a shape or an int), checked.

    ``rest`` is minitvm's ``(dtype_hint,)`` or TVM's ``(device_index, dtype_hint[, scope])``."""
    if len(rest) > 3:
        raise TypeError(f"alloc_storage: takes (size, [device_index,] dtype_hint[, scope]), got {1 + len(rest)} "
                        "arguments")
    dtype_hint = rest[0] if len(rest) == 1 else rest[1] if rest else "uint8"
    dims = (size,) if isinstance(size, int) else _shape_of(size, "alloc_storage")
    return math.prod(dims) * check_dtype(dtype_hint, "alloc_storage").itemsize


def alloc_storage(size: Any, *rest: Any) -> Storage:
    """Storage for ``prod(size)`` elements of the dtype hint (``size``: a shape or an int);
    ``rest`` is ``(dtype_hint,)`` or TVM's ``(device_index, dtype_hint, storage_scope)``."""
    return Storage(_storage_bytes(size, *rest))


def alloc_tensor(storage: Storage, offset: int, shape: Any, dtype: str) -> NDArray:
    """An NDArray of ``shape``/``dtype`` that lives in ``storage`` from byte ``offset`` on."""
    if not isinstance(storage, Storage):
        raise TypeError(f"alloc_tensor: expected a Storage, got {type(storage).__name__}")
    dt = check_dtype(dtype, "alloc_tensor")
    dims = _shape_of(shape, "alloc_tensor")
    nbytes = math.prod(dims) * dt.itemsize
    if offset < 0 or offset + nbytes > storage.nbytes:
        raise ValueError(f"alloc_tensor: a {dtype} tensor of shape {tuple(dims)} ({nbytes} bytes) at offset "
                         f"{offset} does not fit in a storage of {storage.nbytes} bytes")
    if offset % dt.itemsize:
        raise ValueError(f"alloc_tensor: offset {offset} is not a multiple of the {dtype} size {dt.itemsize}")
    view = storage.buffer[offset:offset + nbytes].view(dt).reshape(dims)
    return NDArray(view, _address=storage.address + offset)


def alloc_shape_heap(size: int) -> list[int]:
    """A fresh shape heap: ``size`` integer slots for the symbolic dimensions of one call."""
    return [0] * int(size)


def null_value() -> None:
    """The empty value (for a result that is not used)."""
    return None


# -- checks ---------------------------------------------------------------------------------------


def _checker(name: str, err_ctx: str) -> str:
    """The start of a check's message: the check, then the caller's context (as TVM's, the
    context stands between spaces, so a test can find it as a word)."""
    return f"{name}: {err_ctx} expects" if err_ctx else f"{name}: expects"


def check_tensor_info(value: Any, ndim: int, *rest: str) -> None:
    """Fail unless ``value`` is a tensor with ``ndim`` dimensions (-1: any) of ``dtype`` ("": any).

    Called ``(value, ndim, dtype, err_ctx)`` or, as TVM allows, ``(value, ndim, err_ctx)``."""
    if len(rest) > 2:
        raise TypeError(f"check_tensor_info: takes (value, ndim, [dtype], err_ctx), got {2 + len(rest)} arguments")
    dtype, err_ctx = rest if len(rest) == 2 else ("", rest[0] if rest else "")
    who = _checker("check_tensor_info", err_ctx)
    if type(value) is not NDArray:
        raise TypeError(f"{who} a tensor, got {type(value).__name__}")
    if ndim >= 0 and value._array.ndim != ndim:
        raise ValueError(f"{who} a tensor with ndim {ndim}, got shape {value.shape} ({value.ndim}-D)")
    if dtype and value.dtype != str(dtype):
        raise ValueError(f"{who} a tensor with dtype {dtype}, got {value.dtype}")


def check_shape_info(value: Any, ndim: int, err_ctx: str = "") -> None:
    """Fail unless ``value`` is a shape with ``ndim`` values (-1: any)."""
    who = _checker("check_shape_info", err_ctx)
    if not isinstance(value, ShapeTuple):
        raise TypeError(f"{who} a shape, got {type(value).__name__}")
    if ndim >= 0 and len(value) != ndim:
        raise ValueError(f"{who} a shape with ndim {ndim}, got {tuple(value)}")


def _is_tuple(value: Any) -> bool:
    """A tuple value: a Python tuple, or a list (what ``runtime.convert`` makes of one, TVM's Array)."""
    return isinstance(value, (tuple, list)) and not isinstance(value, ShapeTuple)


def check_tuple_info(value: Any, size: int, err_ctx: str = "") -> None:
    """Fail unless ``value`` is a tuple of ``size`` elements (-1: any)."""
    who = _checker("check_tuple_info", err_ctx)
    if not _is_tuple(value):
        raise TypeError(f"{who} a tuple, got {type(value).__name__}")
    if size >= 0 and len(value) != size:
        raise ValueError(f"{who} a tuple of {size} elements, got {len(value)}")


def check_func_info(value: Any, err_ctx: str = "") -> None:
    """Fail unless ``value`` is a function (anything callable: a packed function, a VM closure)."""
    if not callable(value) or isinstance(value, NDArray):
        raise TypeError(f"{_checker('check_func_info', err_ctx)} a function, got {type(value).__name__}")


def _heap_slots(heap: Any) -> Any:
    """The slots of a shape heap: minitvm's list, or TVM's int64 tensor (written in place)."""
    return heap._array if type(heap) is NDArray else heap


def match_shape(value: Any, heap: Any, ndim: int, *pattern: Any) -> None:
    """Check the dimensions of ``value`` and store symbolic ones into ``heap``.

    ``pattern`` is ``ndim`` pairs ``(code, value)`` (see the module docstring), optionally
    followed by an error-context string that starts every message.
    """
    err_ctx = pattern[-1] if len(pattern) % 2 and isinstance(pattern[-1], str) else ""
    where = err_ctx or "match_shape"
    dims = _shape_of(value, where)
    if len(pattern) not in (2 * ndim, 2 * ndim + 1):
        raise ShapeMismatchError(f"{where}: a pattern of {ndim} dimensions needs {2 * ndim} codes, "
                                 f"got {len(pattern) - bool(err_ctx)}")
    if len(dims) != ndim:
        raise ShapeMismatchError(f"{where}: expected {ndim} dimensions, got {tuple(dims)}")
    slots = _heap_slots(heap)
    for axis in range(ndim):
        code, k = pattern[2 * axis], pattern[2 * axis + 1]
        d = int(dims[axis])
        if code == MATCH_STORE:
            slots[k] = d
        elif code == MATCH_IMM:
            if d != k:
                raise ShapeMismatchError(f"{where}: dimension {axis} is {d}, expected {k} (shape {tuple(dims)})")
        elif code == MATCH_HEAP:
            if d != slots[k]:
                raise ShapeMismatchError(f"{where}: dimension {axis} is {d}, but the same symbolic dimension was "
                                         f"{int(slots[k])} earlier (shape {tuple(dims)})")
        elif code != MATCH_ANY:
            raise ValueError(f"{where}: unknown match_shape code {code!r}")


def check_prim_value_info(value: Any, dtype: str, err_ctx: str = "") -> None:
    """Fail unless ``value`` is a scalar of ``dtype``'s kind (an int for ints, a bool for bool,
    a number for floats; "" any of them), as an ``R.Prim`` parameter must be."""
    dtype = str(dtype)
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, tuple)
    if ok and dtype.startswith(("int", "uint")):
        ok = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    elif ok and dtype == "bool":
        ok = isinstance(value, (bool, np.bool_, int))
    if not ok:
        raise TypeError(f"{err_ctx or 'check_prim_value_info'}, expected dtype {dtype or 'a scalar'}, but "
                        f"received {type(value).__name__} {value!r}")


def match_prim_value(value: Any, heap: Any, code: int, k: int, err_ctx: str = "") -> None:
    """``match_shape`` of one scalar: store it into slot ``k`` or check it (same codes)."""
    slots = _heap_slots(heap)
    where = err_ctx or "match_prim_value"
    v = int(value)
    if code == MATCH_STORE:
        slots[k] = v
    elif code == MATCH_IMM and v != k:
        raise ShapeMismatchError(f"{where}: the value is {v}, expected {k}")
    elif code == MATCH_HEAP and v != slots[k]:
        raise ShapeMismatchError(f"{where}: the value is {v}, but the same symbolic variable was {int(slots[k])} "
                                 "earlier")
    elif code not in (MATCH_STORE, MATCH_IMM, MATCH_HEAP, MATCH_ANY):
        raise ValueError(f"{where}: unknown match code {code!r}")


def make_shape(heap: Any, ndim: int, *pattern: int) -> ShapeTuple:
    """A shape of ``ndim`` dimensions from ``(code, value)`` pairs: constants or heap slots."""
    if len(pattern) != 2 * ndim:
        raise ValueError(f"make_shape: {ndim} dimensions need {2 * ndim} codes, got {len(pattern)}")
    heap = _heap_slots(heap)
    out = []
    for axis in range(ndim):
        code, k = pattern[2 * axis], pattern[2 * axis + 1]
        if code == MAKE_IMM:
            out.append(k)
        elif code == MAKE_LOAD:
            out.append(heap[k])
        else:
            raise ValueError(f"make_shape: unknown code {code!r}")
    return ShapeTuple(out)


def eval_shape_expr(heap: list[int], slot: int, *program: int) -> None:
    """``heap[slot]`` = the postfix ``program`` of ``(code, value)`` pairs (see the module docstring)."""
    if len(program) % 2:
        raise ValueError(f"eval_shape_expr: a program is (code, value) pairs, got {len(program)} numbers")
    stack: list[int] = []
    for i in range(0, len(program), 2):
        code, k = program[i], program[i + 1]
        if code == EXPR_IMM:
            stack.append(k)
        elif code == EXPR_LOAD:
            stack.append(heap[k])
        elif code in _EXPR_BINARY and len(stack) >= 2:
            b = stack.pop()
            stack.append(_EXPR_BINARY[code](stack.pop(), b))
        else:
            raise ValueError(f"eval_shape_expr: bad code {code!r} at position {i // 2} of the program")
    if len(stack) != 1:
        raise ValueError(f"eval_shape_expr: the program leaves {len(stack)} values, expected 1")
    heap[slot] = stack[0]


# -- values ----------------------------------------------------------------------------------------


def shape_of(value: NDArray) -> ShapeTuple:
    """The shape of a tensor, as a shape value."""
    if type(value) is not NDArray:
        raise TypeError(f"shape_of: expected a tensor, got {type(value).__name__}")
    return ShapeTuple(value._array.shape)


def tensor_to_shape(value: NDArray) -> ShapeTuple:
    """The values of a 1-d integer tensor, as a shape value."""
    if type(value) is not NDArray or value._array.ndim != 1 or value._array.dtype.kind not in "iu":
        raise TypeError(f"tensor_to_shape: expected a 1-d integer tensor, got {value!r}")
    return ShapeTuple(tuple(int(v) for v in value._array))


def shape_to_tensor(value: ShapeTuple) -> NDArray:
    """The dimensions of a shape as a 1-d int64 tensor."""
    if not isinstance(value, ShapeTuple):
        raise TypeError(f"shape_to_tensor: expected a shape, got {type(value).__name__}")
    return NDArray(np.array([int(d) for d in value], dtype="int64"))


class VMClosure:
    """A function with its first arguments bound (TVM's ``VMClosure``: what ``R.make_closure``
    makes of a lifted function and the values it captured)."""

    __slots__ = ("func", "saved")

    def __init__(self, func: Callable[..., Any], saved: tuple):
        if not callable(func):
            raise TypeError(f"make_closure: expected a function, got {type(func).__name__}")
        self.func, self.saved = func, tuple(saved)

    def __call__(self, *args: Any) -> Any:
        return self.func(*self.saved, *args)

    def __repr__(self) -> str:
        return f"VMClosure({getattr(self.func, 'name', self.func)!r}, {len(self.saved)} captured)"


def make_closure(func: Callable[..., Any], *saved: Any) -> VMClosure:
    """``func`` with ``saved`` bound as its first arguments."""
    return VMClosure(func, saved)


def invoke_closure(closure: Any, *args: Any) -> Any:
    """Call a closure (or any function value) with ``args``."""
    if not callable(closure) or isinstance(closure, NDArray):
        raise TypeError(f"invoke_closure: expected a closure or a function, got {type(closure).__name__}")
    return closure(*args)


def to_device(value: NDArray, device_type: int, device_id: int) -> NDArray:
    """A copy of ``value`` on the device ``(device_type, device_id)`` (TVM's ``vm.builtin.to_device``)."""
    if type(value) is not NDArray:
        raise TypeError(f"to_device: expected a tensor, got {type(value).__name__}")
    return value.copyto(Device(int(device_type), int(device_id)))


def make_tuple(*fields: Any) -> tuple:
    """A tuple of the arguments."""
    return fields


def tuple_getitem(value: tuple, index: int) -> Any:
    """Field ``index`` of a tuple (or one dimension of a shape, as an int)."""
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"tuple_getitem: expected a tuple, got {type(value).__name__}")
    if not -len(value) <= index < len(value):
        raise IndexError(f"tuple_getitem: index {index} is out of range for a tuple of {len(value)}")
    return value[index]


def copy(value: NDArray) -> NDArray:
    """A new tensor with the contents of ``value``."""
    if type(value) is not NDArray:
        raise TypeError(f"copy: expected a tensor, got {type(value).__name__}")
    return NDArray(value._array.copy(), value.device)


def _shown(value: Any) -> Any:
    """What R.print and R.assert_op show: a tensor's values; a tuple as ``(a, b)`` of its
    fields shown so (as TVM prints it, not Python's repr of each field)."""
    if isinstance(value, tuple) and not isinstance(value, ShapeTuple):
        return "(" + ", ".join(str(_shown(v)) for v in value) + ")"
    return value.numpy() if isinstance(value, NDArray) else value


def print_values(fmt: str, *values: Any) -> None:
    """``R.print``: the values formatted with ``fmt`` (``{}`` per value; all, space-separated,
    when ``fmt`` is empty)."""
    shown = [_shown(v) for v in values]
    print(fmt.format(*shown) if fmt else " ".join(str(v) for v in shown))  # noqa: T201 - its purpose


def assert_op(condition: Any, fmt: str, *values: Any) -> None:
    """``R.assert_op``: raise ``AssertionError`` with the formatted message when false."""
    if not bool(_shown(condition)):
        shown = [_shown(v) for v in values]
        # no format: the values, comma-separated (TVM's relax.run.assert_op)
        message = fmt.format(*shown) if fmt else ", ".join(str(v) for v in shown) or "Assertion Failed"
        raise AssertionError(message)


# -- Python functions the compiled code calls back (R.call_py_func) -------------------------------

#: name -> Python callable, as TVM's ``vm.builtin.register_py_func`` keeps them (one table for the
#: process: a BasePyModule registers its ``@I.pyfunc`` methods here when it is created)
_PY_FUNCS: dict[str, Callable[..., Any]] = {}


def register_py_func(name: str, func: Callable[..., Any]) -> None:
    """Make ``func`` what ``R.call_py_func(name, ...)`` calls (replacing an earlier one)."""
    if not callable(func):
        raise TypeError(f"vm.builtin.register_py_func({name!r}): expected a callable, got {type(func).__name__}")
    _PY_FUNCS[str(name)] = func


def get_py_func(name: str) -> Callable[..., Any]:
    """The Python function registered as ``name``."""
    try:
        return _PY_FUNCS[name]
    except KeyError:
        known = ", ".join(sorted(_PY_FUNCS)) or "(none)"
        raise LookupError(f"Python function {name!r} not found in registry (registered: {known}); an "
                          "@I.pyfunc method is registered when its BasePyModule is created") from None


def clear_py_func_registry() -> None:
    """Forget every registered Python function."""
    _PY_FUNCS.clear()


def call_py_func(packed: Any) -> Any:
    """``R.call_py_func(name, (args...))`` at run time: TVM's calling form, one ``(name, args)``
    tuple, the registered function called with the arguments."""
    if not isinstance(packed, (tuple, list)) or len(packed) != 2:
        raise TypeError("vm.builtin.call_py_func expects one (func_name, args) tuple")
    name, args = packed
    return get_py_func(str(name))(*args)


def reshape(value: NDArray, shape: Any) -> NDArray:
    """``value`` seen with a new shape of the same size; shares its memory."""
    if type(value) is not NDArray:
        raise TypeError(f"reshape: expected a tensor, got {type(value).__name__}")
    dims = tuple(_shape_of(shape, "reshape"))
    if math.prod(dims) != value.size:
        raise ValueError(f"reshape: cannot view {value.size} elements of shape {value.shape} as {dims}")
    return NDArray(value._array.reshape(dims), value.device)


def create_view(value: NDArray, shape: Any, dtype: Any, relative_byte_offset: Any) -> NDArray:
    """``R.memory.view`` at run time: ``value``'s memory as ``shape`` elements of ``dtype``
    from ``relative_byte_offset`` bytes on (TVM's ``runtime.TVMTensorCreateView``); the view
    must stay inside ``value``'s bytes."""
    if type(value) is not NDArray:
        raise TypeError(f"runtime.TVMTensorCreateView: expected a tensor, got {type(value).__name__}")
    return value._create_view(tuple(_shape_of(shape, "runtime.TVMTensorCreateView")), str(dtype),
                              int(relative_byte_offset))


def ensure_zero_offset(value: NDArray) -> NDArray:
    """``value``, or a copy in fresh memory when it is a view with a byte offset."""
    if type(value) is not NDArray:
        raise TypeError(f"ensure_zero_offset: expected a tensor, got {type(value).__name__}")
    return copy(value) if value.byte_offset else value


# -- load-time specialization ------------------------------------------------------------------------
# Most allocations in a static-shape function have constant sizes, offsets and dtypes.  When
# the VM loads a program it asks for a specialized callable for such a call: the arguments
# are checked and the sizes computed once, and each run only carves the memory.


def _specialize_alloc_storage(template: list, regs: list[int]) -> Callable[..., Any] | None:
    """A constant-size allocation that reuses the storage it made last time when nothing uses it
    any more: no register of a running call holds it and no tensor carved from it is alive
    (the result of the previous call, say, still held by the caller).  Python's reference
    counts tell exactly that, and they never drop while a storage is in use -- also not
    between threads -- so a reused storage is never shared.  (TVM's VM pools memory the same
    way, freeing on the last reference.)"""
    if regs:
        return None
    nbytes = _storage_bytes(*template)
    if nbytes < 0:
        return None  # the general builtin raises its error when (if ever) the call runs
    last: list[Storage] = []
    free_counts: list[int] = []  # reference counts of (storage, its memory) when unused

    def alloc_storage_const() -> Storage:
        if last:
            storage = last[0]
            if (sys.getrefcount(storage), sys.getrefcount(storage.raw)) == tuple(free_counts):
                return storage
        storage = Storage(nbytes)
        last[:] = [storage]
        if not free_counts:  # measured here, in the same situation as the test above
            free_counts[:] = [sys.getrefcount(storage), sys.getrefcount(storage.raw)]
        return storage

    return alloc_storage_const


def _specialize_alloc_tensor(template: list, regs: list[int]) -> Callable[..., Any] | None:
    if regs != [0] or len(template) != 4:
        return None
    _, offset, shape, dtype = template
    dt = check_dtype(dtype, "alloc_tensor")
    dims = tuple(_shape_of(shape, "alloc_tensor"))
    end = offset + math.prod(dims) * dt.itemsize
    if offset < 0 or offset % dt.itemsize:
        return None  # let the general builtin raise its precise error at run time

    def alloc_tensor_const(storage: Storage) -> NDArray:
        if type(storage) is not Storage or storage.nbytes < end:
            return alloc_tensor(storage, offset, shape, dtype)  # the general path explains the problem
        view = storage.buffer[offset:end].view(dt).reshape(dims)
        return NDArray(view, _address=storage.address + offset)

    return alloc_tensor_const


#: builtin name -> ``fn(template, register_positions)`` giving a callable of just the register
#: arguments (in order) when the other arguments are constants it can use, else None
SPECIALIZERS: dict[str, Callable[[list, list[int]], Callable[..., Any] | None]] = {
    "vm.builtin.alloc_storage": _specialize_alloc_storage,
    "vm.builtin.alloc_tensor": _specialize_alloc_tensor,
}


_BUILTINS = {
    "vm.builtin.alloc_storage": alloc_storage,
    "vm.builtin.alloc_tensor": alloc_tensor,
    "vm.builtin.alloc_shape_heap": alloc_shape_heap,
    "vm.builtin.null_value": null_value,
    "vm.builtin.check_tensor_info": check_tensor_info,
    "vm.builtin.check_shape_info": check_shape_info,
    "vm.builtin.check_tuple_info": check_tuple_info,
    "vm.builtin.check_func_info": check_func_info,
    "vm.builtin.match_shape": match_shape,
    "vm.builtin.make_shape": make_shape,
    "vm.builtin.check_prim_value_info": check_prim_value_info,
    "vm.builtin.match_prim_value": match_prim_value,
    "vm.builtin.eval_shape_expr": eval_shape_expr,
    "vm.builtin.shape_of": shape_of,
    "vm.builtin.tensor_to_shape": tensor_to_shape,
    "vm.builtin.shape_to_tensor": shape_to_tensor,
    "vm.builtin.make_tuple": make_tuple,
    "vm.builtin.tuple_getitem": tuple_getitem,
    "vm.builtin.copy": copy,
    "vm.builtin.to_device": to_device,
    "vm.builtin.make_closure": make_closure,
    "vm.builtin.invoke_closure": invoke_closure,
    "vm.builtin.reshape": reshape,
    "runtime.TVMTensorCreateView": create_view,
    "vm.builtin.ensure_zero_offset": ensure_zero_offset,
    "vm.builtin.print": print_values,
    "vm.builtin.assert_op": assert_op,
    "vm.builtin.call_py_func": call_py_func,
    "vm.builtin.register_py_func": register_py_func,
    "vm.builtin.get_py_func": get_py_func,
    "vm.builtin.clear_py_func_registry": clear_py_func_registry,
}

#: every name this module registers
BUILTIN_NAMES = tuple(_BUILTINS)

for _name, _fn in _BUILTINS.items():
    register_func(_name, _fn, override=True)  # override: re-importing (autoreload) is harmless
