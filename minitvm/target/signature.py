"""What a compiled PrimFunc accepts, as the runtime's one argument check sees it.

:class:`FunctionSignature` reads a PrimFunc's parameters (arrays with dtype and shape,
scalars, symbolic dimensions such as ``n``) and hands them to
:class:`minitvm.runtime.arguments.ArgumentCheck`, the check that VM functions use too:
bad input raises ``ValueError`` (count, shape) or ``TypeError`` (dtype, kind of object)
naming the parameter -- it never reaches native code, so it can never crash the interpreter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..ir import dtype as _dt
from ..runtime.arguments import ArgSpec, ArgumentCheck, DerivedDim, SizeVar, format_dims
from ..runtime.ndarray import NDArray
from ..tir import expr as _e
from ..tir.function import PrimFunc
from ..tir.functor import post_order_visit
from ..tir.stmt import BufferStore

__all__ = ["ParamSpec", "FunctionSignature"]


@dataclass
class ParamSpec:
    """One parameter: an array (``shape`` of ints / Vars / expressions) or a scalar."""

    name: str
    var: _e.Var
    dtype: str
    is_buffer: bool
    shape: tuple = ()
    written: bool = False

    @property
    def static_shape(self) -> tuple[int, ...] | None:
        """The shape as ints when every dimension is a constant (None otherwise, and for scalars)."""
        if not self.is_buffer or not all(isinstance(d, _e.IntImm) for d in self.shape):
            return None
        return tuple(d.value for d in self.shape)

    def shape_text(self) -> str:
        """``(n, 4)``: the shape as error messages print it."""
        return format_dims(tuple(d.value if isinstance(d, _e.IntImm) else d.name if isinstance(d, _e.Var) else d
                                 for d in self.shape))


@dataclass
class FunctionSignature:
    """What a compiled function accepts, and the check that enforces it."""

    name: str
    params: list[ParamSpec]
    #: symbolic dimensions that are not parameters: the back end receives their values
    shape_vars: list[_e.Var] = field(default_factory=list)

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

    def __post_init__(self) -> None:
        self.check = _argument_check(self)

    def describe(self) -> str:
        return ", ".join(p.name for p in self.params)

    def bind(self, args: tuple) -> tuple[list[Any], list[int]]:
        """Check ``args`` (see :class:`~minitvm.runtime.arguments.ArgumentCheck`); return them as
        numpy arrays / Python scalars, and the values of :attr:`shape_vars`."""
        values, sizes = self.check(args)
        return [v._array if type(v) is NDArray else v for v in values], list(sizes)


def _argument_check(sig: FunctionSignature) -> ArgumentCheck:
    """The runtime check of ``sig``: TIR size variables become :class:`SizeVar` s, shape
    expressions :class:`DerivedDim` s."""
    size_of: dict[int, SizeVar] = {}

    def size(v: _e.Var) -> SizeVar:
        return size_of.setdefault(id(v), SizeVar(v.name))

    def dim(d: Any) -> Any:
        if isinstance(d, _e.IntImm):
            return d.value
        if isinstance(d, _e.Var):
            return size(d)
        free = _free_vars(d)
        for v in free:
            size(v)
        return DerivedDim(str(d), lambda env, d=d: _eval_int(d, {id(v): env[size_of[id(v)]] for v in free
                                                                   if size_of[id(v)] in env}))

    specs = []
    for p in sig.params:
        if p.is_buffer:
            specs.append(ArgSpec(p.name, "tensor", p.dtype, tuple(dim(d) for d in p.shape), written=p.written))
        else:
            specs.append(ArgSpec(p.name, "scalar", p.dtype, binds=size(p.var) if _dt.is_int(p.dtype) else None))
    return ArgumentCheck(sig.name, specs, tuple(size(v) for v in sig.shape_vars))


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
