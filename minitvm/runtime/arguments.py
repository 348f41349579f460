"""The one argument check of functions called from Python: compiled kernels and VM functions.

A function describes its parameters as :class:`ArgSpec` rows (a tensor with dtype and
shape, a scalar, a shape value, a tuple, or anything); :class:`ArgumentCheck` checks a
call against them before any code runs and converts the arguments (tensors become
:class:`NDArray`, sharing the caller's memory).  Bad input raises ``ValueError`` (count,
shape) or ``TypeError`` (dtype, kind of object) naming the function and the parameter.

Symbolic dimensions (``n``) bind at their first use and must agree everywhere else in the
call; a dimension computed from them (``n * 2``, a :class:`DerivedDim`) is checked once all
are bound.  The full check runs once per combination of shapes and dtypes: the next call
with the same ones (NDArrays or C-contiguous numpy arrays, plain scalars) takes the fast
path, which only looks the combination up (``ArgumentCheck.fast_calls`` counts those calls);
the shapes of the last all-NDArray call -- what the VM passes its kernels -- are compared
first, without hashing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..error import TVMError
from .device import Device
from .ndarray import NDArray
from .object import Object

__all__ = ["ShapeMismatchError", "DTypeMismatchError", "ArgumentCountError",
           "ArgSpec", "ArgumentCheck", "DerivedDim", "SizeVar", "format_dims"]

_KINDS = ("tensor", "scalar", "shape", "tuple", "any")
_INT_RANGES = {d: (int(np.iinfo(d).min), int(np.iinfo(d).max))
               for d in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")}
#: combinations of shapes remembered per function (the oldest half goes when it is full)
FAST_PATH_ENTRIES = 64


class ShapeMismatchError(TVMError, ValueError):
    """A value's dimensions differ from its annotation.  TVM raises its TVMError (a RuntimeError)
    there, a failed check of its VM's ``match_shape``; minitvm's have always been ValueErrors:
    it is both."""


class DTypeMismatchError(TypeError, ValueError):
    """A tensor of another dtype than its annotation: minitvm's TypeError, TVM's ValueError."""


class ArgumentCountError(TVMError, ValueError):
    """A function called with too many or too few arguments (TVM: a TVMError; here a ValueError
    too, as it always was)."""


@dataclass(frozen=True, eq=False)
class SizeVar:
    """A symbolic dimension known by identity (two ``n`` of different functions differ)."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class DerivedDim:
    """A dimension computed from symbolic ones: ``text`` prints it, ``evaluate(sizes)`` gives its
    value from the bound sizes (keyed as the shapes key them)."""

    text: str
    evaluate: Callable[[dict], int]

    def __str__(self) -> str:
        return self.text


def format_dims(dims: tuple) -> str:
    """``(1, 'n')`` -> ``"(1, n)"``; unknown dims (None) print as ``?``."""
    text = ["?" if d is None else str(d) for d in dims]
    return "(" + ", ".join(text) + ("," if len(text) == 1 else "") + ")"


@dataclass(frozen=True)
class ArgSpec:
    """What one parameter must be.

    kind    -- "tensor", "scalar" (of ``dtype``), "shape" (a tuple of ints), "tuple" (of
               ``fields``) or "any".
    dtype   -- element type of a tensor, type of a scalar; "" = unchecked.
    shape   -- per dimension: an int, a symbolic dimension (a name or a :class:`SizeVar`), a
               :class:`DerivedDim` or None (unchecked); None for the whole shape = unchecked.
    ndim    -- number of dimensions when ``shape`` is None; -1 = unchecked.
    written -- a tensor the function writes: it must be writable and is never copied.
    binds   -- a scalar whose value is a symbolic dimension: that dimension.
    fields  -- the specs of a tuple's elements (None = unchecked).
    """

    name: str
    kind: str = "any"
    dtype: str = ""
    shape: tuple | None = None
    ndim: int = -1
    written: bool = False
    binds: Any = None
    fields: tuple["ArgSpec", ...] | None = None

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"ArgSpec: kind must be one of {', '.join(_KINDS)}, got {self.kind!r}")


class ArgumentCheck:
    """Checks and converts the arguments of one function: ``values, sizes = check(args)``.

    ``sizes`` holds the values of the symbolic dimensions ``size_vars`` (what a kernel
    receives besides its arguments).  ``copy_strided``: a strided array that is only read
    may be copied into a compact one (the VM); otherwise it is refused, since results must
    land in the caller's memory (kernels).  ``shape_type`` is the type "shape" values become.
    """

    def __init__(self, func_name: str, specs: list[ArgSpec], size_vars: tuple = (), *,
                 copy_strided: bool = False, shape_type: type = tuple):
        self.func_name = func_name
        self.specs = list(specs)
        self.size_vars = tuple(size_vars)
        self.copy_strided = copy_strided
        self.shape_type = shape_type
        self._derived = any(isinstance(d, DerivedDim) for s in self.specs for d in s.shape or ())
        # the fast path, per parameter: whether it takes an array, the exact Python type of a
        # scalar it passes unchanged, whether it is written
        self._plan = [(s.kind in ("tensor", "any"), _fast_scalar_type(s), s.written) for s in self.specs]
        self._fast_ok = all(s.kind in ("tensor", "scalar", "any") for s in self.specs)
        self._seen: dict[tuple, tuple] = {}  # shapes/dtypes/scalars of a checked call -> its sizes
        self._all_tensors = all(s.kind == "tensor" for s in self.specs)
        self._written = tuple(i for i, s in enumerate(self.specs) if s.written)
        self._last_ndarrays: tuple | None = None
        self._last_sizes: tuple = ()
        self.fast_calls = 0

    def describe(self) -> str:
        return ", ".join(s.name for s in self.specs)

    def __call__(self, args: tuple | list) -> tuple[list | tuple, tuple]:
        last = self._last_ndarrays
        if last is not None and len(args) == len(last):  # the hot path: NDArrays, as the VM passes them
            for arg, (shape, dtype) in zip(args, last):
                if type(arg) is not NDArray or arg._array.shape != shape or arg._array.dtype is not dtype:
                    break
            else:
                for i in self._written:
                    if not args[i]._array.flags.writeable:
                        break
                else:
                    self.fast_calls += 1
                    return args, self._last_sizes
        fast = self._fast(args) if self._fast_ok else None
        if fast is not None:
            sizes = self._seen.get(fast[0])
            if sizes is not None:
                self.fast_calls += 1
                self._remember_ndarrays(args, sizes)
                return fast[1], sizes
        values, sizes = self.check(args)
        if fast is not None:
            if len(self._seen) >= FAST_PATH_ENTRIES:
                for old in list(self._seen)[:FAST_PATH_ENTRIES // 2]:
                    del self._seen[old]
            self._seen[fast[0]] = sizes
            self._remember_ndarrays(args, sizes)
        return values, sizes

    def _remember_ndarrays(self, args: tuple | list, sizes: tuple) -> None:
        """The shapes and dtypes of the last all-NDArray call of an all-tensor function, compared first."""
        if self._all_tensors and all(type(a) is NDArray for a in args):
            self._last_ndarrays = tuple((a._array.shape, a._array.dtype) for a in args)
            self._last_sizes = sizes

    def _fast(self, args: tuple | list) -> tuple[tuple, list] | None:
        """The key of a plain call (NDArrays, contiguous numpy arrays, exact scalars) and its
        converted arguments, or None when some argument needs the full conversion."""
        if len(args) != len(self._plan):
            return None
        key: list[Any] = []
        out: list[Any] = []
        for arg, (takes_array, scalar_type, written) in zip(args, self._plan):
            t = type(arg)
            if t is NDArray and takes_array:
                arr = arg._array
            elif t is np.ndarray and takes_array and arg.flags.c_contiguous:
                arr, arg = arg, NDArray(arg)
            elif t is scalar_type:
                # an int's value decides (its range, the size it binds); a float's does not
                key.append(float if t is float else arg)
                out.append(arg)
                continue
            else:
                return None
            if written and not arr.flags.writeable:
                return None
            key.append(arr.shape)
            key.append(arr.dtype)
            out.append(arg)
        return tuple(key), out

    # -- the full check ---------------------------------------------------------------------------
    def check(self, args: tuple | list) -> tuple[list, tuple]:
        """Check every argument, raising the precise error; converted values and sizes."""
        if len(args) != len(self.specs):
            n = len(self.specs)
            raise ArgumentCountError(f"{self.func_name}: expects {n} argument{'s' if n != 1 else ''} "
                                     f"({self.describe()}), got {len(args)}")
        bound: dict[Any, tuple[int, str]] = {}  # symbolic dimension -> (value, who bound it)
        values = [self._check(spec, arg, spec.name, bound) for spec, arg in zip(self.specs, args)]
        if self._derived:
            self._check_derived(values, bound)
        return values, tuple(bound[v][0] for v in self.size_vars)

    def _check(self, spec: ArgSpec, arg: Any, name: str, bound: dict) -> Any:
        where = f"{self.func_name}: argument '{name}'"
        if spec.kind == "tensor":
            return self._check_tensor(spec, arg, where, f"argument '{name}'", bound)
        if spec.kind == "scalar":
            return _check_scalar(spec, arg, where, bound)
        if spec.kind == "any":
            return self._any_value(arg, where)
        if spec.kind == "shape":
            if isinstance(arg, int) and not isinstance(arg, bool):
                arg = (arg,)
            if not isinstance(arg, (tuple, list)) or not all(
                    isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in arg):
                raise TypeError(f"{where} expects a shape (a tuple of ints), got {type(arg).__name__} {arg!r}")
            value = self.shape_type(arg)
            _check_dims(spec, tuple(int(d) for d in value), where, f"argument '{name}'", bound, "shape value")
            return value
        if not isinstance(arg, (tuple, list)) or isinstance(arg, self.shape_type):
            raise TypeError(f"{where} expects a tuple, got {type(arg).__name__}")
        if spec.fields is None:
            return self._any_value(arg, where)
        if len(arg) != len(spec.fields):
            raise ValueError(f"{where} expects a tuple of {len(spec.fields)} fields, got {len(arg)}")
        return tuple(self._check(f, a, f"{name}[{i}]", bound) for i, (f, a) in enumerate(zip(spec.fields, arg)))

    def _check_tensor(self, spec: ArgSpec, arg: Any, where: str, who: str, bound: dict) -> NDArray:
        arr = _as_numpy(arg, where)
        # an NDArray of a dtype numpy cannot name (bfloat16, float32x4) answers with TVM's name
        named = getattr(arg, "_dtype", None) if isinstance(arg, NDArray) else None
        if spec.dtype:
            if (named or str(arr.dtype)) != spec.dtype:
                raise DTypeMismatchError(f"{where} expects dtype {spec.dtype}, got {named or arr.dtype}")
        elif arr.dtype.kind not in "biuf" and named is None and not str(arr.dtype).startswith(("float", "bfloat")):
            # (ml_dtypes' float8/bfloat16 arrays, once something imported it, are numbers too)
            raise TypeError(f"{where} expects a numeric array, got dtype {arr.dtype}")
        _check_dims(spec, tuple(int(d) for d in arr.shape), where, who, bound, "shape")
        if not arr.flags.c_contiguous:
            if spec.written or not self.copy_strided:
                raise ValueError(f"{where} must be C-contiguous (got strides {arr.strides}); pass "
                                 "np.ascontiguousarray(...) — minitvm does not copy arguments, so that "
                                 "results land in your array")
            arr = np.require(arr, requirements="C")  # unlike ascontiguousarray, keeps 0-d arrays 0-d
        if spec.written and not arr.flags.writeable:
            raise ValueError(f"{where} is written by the kernel, but the array is read-only")
        return arg if type(arg) is NDArray else NDArray(arr)

    def _any_value(self, arg: Any, where: str) -> Any:
        """An argument with no declared kind: arrays become NDArrays, lists tuples; runtime objects and
        functions (an ``R.Callable`` parameter: a Python callback, a closure) pass."""
        if type(arg) is NDArray or isinstance(arg, (int, float, str, self.shape_type, Object, Device)) or arg is None:
            return arg
        if callable(arg) and not hasattr(arg, "__dlpack__"):
            return arg
        if isinstance(arg, (tuple, list)):
            return tuple(self._any_value(a, f"{where}[{i}]") for i, a in enumerate(arg))
        return self._check_tensor(ArgSpec("", "tensor"), arg, where, "", {})

    def _check_derived(self, values: list, bound: dict) -> None:
        """Dimensions computed from symbolic ones, once every symbolic one is bound."""
        env = {k: v for k, (v, _) in bound.items()}
        for spec, value in zip(self.specs, values):
            if spec.kind != "tensor" or spec.shape is None:
                continue
            want = tuple(d.evaluate(env) if isinstance(d, DerivedDim) else env[d] if _is_symbol(d) else d
                         for d in spec.shape)
            if any(isinstance(d, DerivedDim) for d in spec.shape) and tuple(value.shape) != want:
                raise ShapeMismatchError(f"{self.func_name}: argument '{spec.name}' expects shape "
                                         f"{format_dims(spec.shape)} = {want}, got {tuple(value.shape)}")


def _is_symbol(dim: Any) -> bool:
    return isinstance(dim, (str, SizeVar))


def _fast_scalar_type(spec: ArgSpec) -> type | None:
    """The Python type a scalar argument of ``spec`` has when the check would pass it unchanged."""
    if spec.kind == "scalar":
        return float if spec.dtype.startswith("float") else bool if spec.dtype == "bool" else int
    return int if spec.kind == "any" else None


def _check_dims(spec: ArgSpec, got: tuple, where: str, who: str, bound: dict, what: str) -> None:
    """``got`` against the spec's shape (or only its rank); symbolic dimensions bind in ``bound``."""
    if spec.shape is None:
        if spec.ndim >= 0 and len(got) != spec.ndim:
            raise ValueError(f"{where} expects {spec.ndim} dimensions, got {what} {got}")
        return
    want = format_dims(spec.shape)
    if len(got) != len(spec.shape):
        raise ValueError(f"{where} expects {what} {want} ({len(spec.shape)}-D), got {got} ({len(got)}-D)")
    for axis, (dim, d) in enumerate(zip(spec.shape, got)):
        if isinstance(dim, int):
            if dim != d:
                raise ShapeMismatchError(f"{where} expects {what} {want}, got {got}")
        elif _is_symbol(dim):
            seen = bound.get(dim)
            if seen is None:
                bound[dim] = (d, who)
            elif seen[0] != d:
                raise ShapeMismatchError(f"{where} expects {what} {want}, got {got}: dimension {axis} is "
                                 f"{dim} = {d}, but {dim} = {seen[0]} from {seen[1]}")


def _check_scalar(spec: ArgSpec, arg: Any, where: str, bound: dict) -> Any:
    if isinstance(arg, np.ndarray) and arg.ndim == 0:
        arg = arg[()]
    if isinstance(arg, np.generic):
        arg = arg.item()
    dtype = spec.dtype
    if dtype.startswith("float"):
        if not isinstance(arg, (int, float)):
            raise TypeError(f"{where} expects a {dtype} scalar, got {type(arg).__name__}")
        return float(arg)
    if dtype == "bool":
        if not isinstance(arg, (bool, int)) or arg not in (0, 1):
            raise TypeError(f"{where} expects a bool, got {arg!r}")
        return bool(arg)
    if not isinstance(arg, int):
        raise TypeError(f"{where} expects an {dtype} scalar (a Python int), got {type(arg).__name__} {arg!r}")
    lo, hi = _INT_RANGES[dtype]
    if not lo <= arg <= hi:
        raise ValueError(f"{where}: {arg} does not fit in {dtype} [{lo}, {hi}]")
    value = int(arg)
    if spec.binds is not None:
        seen = bound.get(spec.binds)
        if seen is not None and seen[0] != value:
            raise ShapeMismatchError(f"{where} is {value}, but the arrays say {spec.name} = {seen[0]} (from {seen[1]})")
        bound.setdefault(spec.binds, (value, f"argument '{spec.name}'"))
    return value


def _as_numpy(arg: Any, where: str) -> np.ndarray:
    """The numpy array an argument holds or shares (NDArray, numpy, DLPack tensor on the CPU)."""
    if isinstance(arg, np.ndarray):
        return arg
    inner = getattr(arg, "_array", None)  # runtime NDArray
    if isinstance(inner, np.ndarray):
        return inner
    if hasattr(arg, "__dlpack__") and not isinstance(arg, (np.generic, int, float)):
        dev = arg.__dlpack_device__() if hasattr(arg, "__dlpack_device__") else (1, 0)
        if dev[0] not in (1, 3):  # kDLCPU, kDLCUDAHost
            raise TypeError(f"{where} lives on device {getattr(arg, 'device', dev)}; minitvm runs on the CPU")
        try:
            return np.from_dlpack(arg)
        except Exception as err:  # torch raises RuntimeError for tensors that require grad, ...
            raise TypeError(f"{where}: cannot share the memory of this {type(arg).__name__} "
                            f"through DLPack: {err}") from err
    raise TypeError(f"{where} expects an array (minitvm NDArray, numpy.ndarray or DLPack tensor such as "
                    f"torch.Tensor), got {type(arg).__name__}")
