"""Call-time argument checking shared by every back end.

A compiled function checks its arguments before it touches memory: the number of
arguments, each array's dtype, rank and shape, and symbolic dimensions (``n`` bound by
the first array that has it, and agreeing everywhere else).  Bad input raises
``ValueError`` (count, shape) or ``TypeError`` (dtype, kind of object) naming the
parameter — it never reaches native code, so it can never crash the interpreter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..ir import dtype as _dt
from ..runtime.ndarray import NDArray
from ..tir import expr as _e
from ..tir.function import PrimFunc
from ..tir.functor import post_order_visit
from ..tir.stmt import BufferStore

__all__ = ["ParamSpec", "FunctionSignature"]

_INT_RANGES = {d: (int(np.iinfo(d).min), int(np.iinfo(d).max))
               for d in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")}


@dataclass
class ParamSpec:
    """One parameter: an array (``shape`` of ints / Vars / expressions) or a scalar."""

    name: str
    var: _e.Var
    dtype: str
    is_buffer: bool
    shape: tuple = ()
    written: bool = False

    def __post_init__(self) -> None:
        # precomputed for the fast path of the check: static shape as ints, numpy dtype
        self.np_dtype = np.dtype(self.dtype) if self.is_buffer else None
        static = all(isinstance(d, _e.IntImm) for d in self.shape)
        self.static_shape = tuple(d.value for d in self.shape) if self.is_buffer and static else None

    def shape_text(self) -> str:
        dims = [str(d.value) if isinstance(d, _e.IntImm) else _dim_text(d) for d in self.shape]
        return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def _dim_text(d: Any) -> str:
    return d.name if isinstance(d, _e.Var) else str(d)  # str() of a node falls back to repr


@dataclass
class FunctionSignature:
    """What a compiled function accepts, and the check that enforces it."""

    name: str
    params: list[ParamSpec]
    #: symbolic dimensions that are not parameters: the back end receives their values
    shape_vars: list[_e.Var] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._static = not self.shape_vars and all(p.static_shape is not None or not p.is_buffer
                                                   for p in self.params)

    @staticmethod
    def from_prim_func(name: str, func: PrimFunc) -> "FunctionSignature":
        written: set[int] = set()

        def visit(n: Any) -> None:
            if isinstance(n, BufferStore):
                written.add(id(n.buffer.data))

        post_order_visit(func.body, visit)
        params, shape_vars, seen = [], [], {id(p) for p in func.params}
        for p in func.params:
            buf = func.buffer_map.get(p)
            if buf is None:
                if p.dtype == "handle":
                    raise ValueError(f"{name}: handle parameter {p.name!r} has no buffer in buffer_map")
                params.append(ParamSpec(p.name, p, _dt.check(p.dtype), False))
                continue
            if buf.strides and not _is_compact(buf):
                raise ValueError(f"{name}: parameter {p.name!r} has strided buffer {buf.name}; "
                                 "only compact (C-contiguous) parameter buffers are supported")
            for dim in buf.shape:
                for v in _free_vars(dim):
                    if id(v) not in seen:
                        seen.add(id(v))
                        shape_vars.append(v)
            params.append(ParamSpec(buf.name or p.name, p, buf.dtype, True, tuple(buf.shape),
                                    id(buf.data) in written))
        sig = FunctionSignature(name, params, shape_vars)
        for v in shape_vars:  # each must be bindable: a whole dimension somewhere
            if not any(isinstance(d, _e.Var) and d is v for s in params for d in s.shape):
                raise ValueError(f"{name}: the size variable {v.name!r} only appears inside shape "
                                 "expressions, so its value cannot be read off the arguments")
        return sig

    # -- checking -----------------------------------------------------------------------------
    def describe(self) -> str:
        return ", ".join(p.name for p in self.params)

    def bind(self, args: tuple) -> tuple[list[Any], list[int]]:
        """Check ``args``; return the converted arguments (numpy arrays / Python scalars) and
        the values of :attr:`shape_vars`."""
        if len(args) != len(self.params):
            raise ValueError(f"{self.name}: expects {len(self.params)} argument"
                             f"{'s' if len(self.params) != 1 else ''} ({self.describe()}), got {len(args)}")
        values: dict[int, tuple[int, str]] = {}  # id(var) -> (value, who bound it)
        out: list[Any] = []
        for spec, arg in zip(self.params, args):
            if type(arg) is NDArray:
                arg = arg._array
            if (spec.static_shape is not None and type(arg) is np.ndarray and arg.dtype == spec.np_dtype
                    and arg.shape == spec.static_shape and arg.flags.c_contiguous
                    and (arg.flags.writeable or not spec.written)):
                out.append(arg)  # fast path: the common, correct call
            elif spec.is_buffer:
                out.append(self._check_array(spec, arg, values))
            else:
                out.append(self._check_scalar(spec, arg, values))
        if self._static:
            return out, []
        # dimensions that are expressions of size variables
        for spec, arr in zip(self.params, out):
            if not spec.is_buffer:
                continue
            for axis, dim in enumerate(spec.shape):
                if not isinstance(dim, (_e.IntImm, _e.Var)):
                    want = _eval_int(dim, {k: v for k, (v, _) in values.items()})
                    if arr.shape[axis] != want:
                        raise ValueError(f"{self.name}: argument '{spec.name}' expects shape "
                                         f"{spec.shape_text()} = {self._concrete(spec, values)}, "
                                         f"got {tuple(arr.shape)}")
        return out, [values[id(v)][0] for v in self.shape_vars]

    def _concrete(self, spec: ParamSpec, values: dict) -> tuple:
        env = {k: v for k, (v, _) in values.items()}
        return tuple(_eval_int(d, env) for d in spec.shape)

    def _check_array(self, spec: ParamSpec, arg: Any, values: dict) -> np.ndarray:
        where = f"{self.name}: argument '{spec.name}'"
        arr = _as_array(arg, where)
        if str(arr.dtype) != spec.dtype:
            raise TypeError(f"{where} expects dtype {spec.dtype}, got {arr.dtype}")
        if arr.ndim != len(spec.shape):
            raise ValueError(f"{where} expects shape {spec.shape_text()} ({len(spec.shape)}-D), "
                             f"got {tuple(arr.shape)} ({arr.ndim}-D)")
        for axis, (dim, got) in enumerate(zip(spec.shape, arr.shape)):
            if isinstance(dim, _e.IntImm):
                if dim.value != got:
                    raise ValueError(f"{where} expects shape {spec.shape_text()}, got {tuple(arr.shape)}")
            elif isinstance(dim, _e.Var):
                bound = values.get(id(dim))
                if bound is None:
                    values[id(dim)] = (int(got), f"argument '{spec.name}' (dimension {axis})")
                elif bound[0] != got:
                    raise ValueError(f"{where} expects shape {spec.shape_text()}, got {tuple(arr.shape)}: "
                                     f"dimension {axis} is {dim.name} = {got}, but {dim.name} = {bound[0]} "
                                     f"from {bound[1]}")
        if not arr.flags.c_contiguous:
            raise ValueError(f"{where} must be C-contiguous (got strides {arr.strides}); pass "
                             "np.ascontiguousarray(...) — minitvm does not copy arguments, so that "
                             "results land in your array")
        if spec.written and not arr.flags.writeable:
            raise ValueError(f"{where} is written by the kernel, but the array is read-only")
        return arr

    def _check_scalar(self, spec: ParamSpec, arg: Any, values: dict) -> Any:
        where = f"{self.name}: argument '{spec.name}'"
        if isinstance(arg, np.ndarray) and arg.ndim == 0:
            arg = arg[()]
        if isinstance(arg, np.generic):
            arg = arg.item()
        dtype = spec.dtype
        if _dt.is_float(dtype):
            if not isinstance(arg, (int, float)):
                raise TypeError(f"{where} expects a {dtype} scalar, got {type(arg).__name__}")
            value: Any = float(arg)
        elif _dt.is_bool(dtype):
            if not isinstance(arg, (bool, int)) or arg not in (0, 1):
                raise TypeError(f"{where} expects a bool, got {arg!r}")
            value = bool(arg)
        else:
            if not isinstance(arg, int):
                raise TypeError(f"{where} expects an {dtype} scalar (a Python int), got "
                                f"{type(arg).__name__} {arg!r}")
            lo, hi = _INT_RANGES[dtype]
            if not lo <= arg <= hi:
                raise ValueError(f"{where}: {arg} does not fit in {dtype} [{lo}, {hi}]")
            value = int(arg)
            bound = values.get(id(spec.var))
            if bound is not None and bound[0] != value:
                raise ValueError(f"{where} is {value}, but the arrays say {spec.name} = {bound[0]} "
                                 f"(from {bound[1]})")
            values.setdefault(id(spec.var), (value, f"argument '{spec.name}'"))
        return value


def _as_array(arg: Any, where: str) -> np.ndarray:
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
    raise TypeError(f"{where} expects an array (minitvm NDArray, numpy.ndarray or DLPack tensor), "
                    f"got {type(arg).__name__}")


def _is_compact(buf: Any) -> bool:
    expect, stride = [], 1
    for dim in reversed(buf.shape):
        expect.append(stride)
        if not isinstance(dim, _e.IntImm):
            return False
        stride *= dim.value
    got = [s.value if isinstance(s, _e.IntImm) else None for s in reversed(buf.strides)]
    return got == expect


def _free_vars(e: Any) -> list[_e.Var]:
    found: list[_e.Var] = []

    def visit(n: Any) -> None:
        if isinstance(n, _e.Var) and all(n is not f for f in found):
            found.append(n)

    post_order_visit(e, visit)
    return found


def _eval_int(e: Any, env: dict[int, int]) -> int:
    """Value of an integer shape expression given size-variable values (by id)."""
    if isinstance(e, _e.IntImm):
        return e.value
    if isinstance(e, _e.Var):
        if id(e) not in env:
            raise ValueError(f"size variable {e.name!r} is not bound by any argument")
        return env[id(e)]
    if isinstance(e, _e.Cast):
        return _eval_int(e.value, env)
    ops = {_e.Add: lambda a, b: a + b, _e.Sub: lambda a, b: a - b, _e.Mul: lambda a, b: a * b,
           _e.FloorDiv: lambda a, b: a // b, _e.FloorMod: lambda a, b: a % b,
           _e.Div: lambda a, b: int(a / b), _e.Mod: lambda a, b: a - int(a / b) * b,
           _e.Min: min, _e.Max: max}
    fn = ops.get(type(e))
    if fn is None:
        raise ValueError(f"cannot evaluate the shape expression {e!r}")
    return fn(_eval_int(e.a, env), _eval_int(e.b, env))
