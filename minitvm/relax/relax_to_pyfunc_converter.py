"""Relax functions as PyTorch code: ``RelaxToPyFuncConverter(mod).convert(["main"])`` (TVM 0.27).

The converted module is a copy of ``mod`` whose ``pyfuncs["main"]`` runs ``main`` eagerly on
torch tensors: each Relax operator becomes its PyTorch counterpart (``R.nn.relu`` ->
``F.relu``), ``R.call_tir`` runs the module's PrimFunc compiled with LLVM (tensors shared
through DLPack), ``R.call_dps_packed`` / ``R.call_pure_packed`` call the registered function.
Converting before and after a pass and comparing the results checks that the pass kept the
numbers.  An operator without a PyTorch counterpart here raises ``NotImplementedError`` naming it
(TVM returns a placeholder string instead).  Needs torch.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import numpy as np

from ..arith import Analyzer
from ..ir.module import GlobalVar, IRModule
from ..ir.op import Op
from ..runtime import ndarray as _nd
from ..runtime.registry import get_global_func
from ..target.tir_build import build as _tir_build
from ..tir.expr import IntImm, PrimExpr
from ..tir.expr import Var as TirVar
from ..tir.expr import const as _tir_const
from ..tir.function import PrimFunc
from ..tir.functor import substitute
from . import expr as rx
from .struct_info import ShapeStructInfo, TensorStructInfo, TupleStructInfo

__all__ = ["RelaxToPyFuncConverter", "convert_relax_to_pyfunc"]


def _torch() -> tuple[Any, Any]:
    try:
        import torch
        import torch.nn.functional as F  # noqa: N812 - PyTorch's own alias
    except ImportError as err:
        raise ImportError("RelaxToPyFuncConverter runs Relax functions as PyTorch code: install torch") from err
    return torch, F


def _axis(attrs: dict) -> Any:
    axis = attrs.get("axis")
    return list(axis) if isinstance(axis, (tuple, list)) else axis


def _reduce(name: str) -> Callable[..., Any]:
    """sum/mean/max/min/prod over ``axis`` (all when None), keeping dims when ``keepdims``."""
    def run(torch: Any, F: Any, a: list, attrs: dict) -> Any:  # noqa: N803
        axis, keep = _axis(attrs), bool(attrs.get("keepdims", False))
        x = a[0]
        if axis is None:
            axis = list(range(x.ndim))
        if name in ("max", "min"):
            return getattr(torch, "amax" if name == "max" else "amin")(x, dim=axis, keepdim=keep)
        if name == "prod":
            for d in sorted((d % x.ndim for d in axis), reverse=True):
                x = torch.prod(x, dim=d, keepdim=keep)
            return x
        return getattr(torch, name)(x, dim=axis, keepdim=keep)
    return run


def _torch_fn(name: str) -> Callable[..., Any]:
    return lambda torch, F, a, attrs: getattr(torch, name)(*a)  # noqa: N803, ARG005


#: Relax operator -> fn(torch, F, evaluated args, attrs): the PyTorch code it runs as
_OPS: dict[str, Callable[..., Any]] = {
    **{f"relax.{r}": _torch_fn(t) for r, t in {
        "add": "add", "subtract": "sub", "multiply": "mul", "divide": "div", "power": "pow",
        "maximum": "maximum", "minimum": "minimum", "floor_divide": "floor_divide", "mod": "fmod",
        "floor_mod": "remainder", "equal": "eq", "not_equal": "ne", "less": "lt", "less_equal": "le",
        "greater": "gt", "greater_equal": "ge", "logical_and": "logical_and", "logical_or": "logical_or",
        "logical_xor": "logical_xor", "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or",
        "bitwise_xor": "bitwise_xor", "abs": "abs", "negative": "neg", "exp": "exp", "log": "log",
        "sqrt": "sqrt", "rsqrt": "rsqrt", "sin": "sin", "cos": "cos", "tan": "tan", "tanh": "tanh",
        "sigmoid": "sigmoid", "square": "square", "sign": "sign", "floor": "floor", "ceil": "ceil",
        "round": "round", "trunc": "trunc", "erf": "erf", "logical_not": "logical_not",
        "bitwise_not": "bitwise_not", "isnan": "isnan", "isinf": "isinf", "isfinite": "isfinite",
        "asin": "asin", "acos": "acos", "atan": "atan", "sinh": "sinh", "cosh": "cosh", "asinh": "asinh",
        "acosh": "acosh", "atanh": "atanh", "matmul": "matmul", "where": "where"}.items()},
    "relax.clip": lambda torch, F, a, attrs: torch.clamp(a[0], attrs.get("min"), attrs.get("max")),  # noqa: N803
    "relax.nn.relu": lambda torch, F, a, attrs: F.relu(a[0]),  # noqa: N803
    "relax.nn.gelu": lambda torch, F, a, attrs: F.gelu(a[0]),  # noqa: N803
    "relax.nn.gelu_tanh": lambda torch, F, a, attrs: F.gelu(a[0], approximate="tanh"),  # noqa: N803
    "relax.nn.silu": lambda torch, F, a, attrs: F.silu(a[0]),  # noqa: N803
    "relax.nn.softmax": lambda torch, F, a, attrs: F.softmax(a[0], dim=attrs.get("axis", -1)),  # noqa: N803
    "relax.nn.log_softmax": lambda torch, F, a, attrs: F.log_softmax(a[0], dim=attrs.get("axis", -1)),  # noqa: N803
    "relax.permute_dims": lambda torch, F, a, attrs: a[0].permute(  # noqa: N803
        *(attrs["axes"] if attrs.get("axes") is not None else reversed(range(a[0].ndim)))),
    "relax.reshape": lambda torch, F, a, attrs: torch.reshape(a[0], tuple(a[1])),  # noqa: N803
    "relax.astype": lambda torch, F, a, attrs: a[0].to(_torch_dtype(torch, attrs["dtype"])),  # noqa: N803
    "relax.expand_dims": lambda torch, F, a, attrs: _expand_dims(a[0], _axis(attrs)),  # noqa: N803
    "relax.squeeze": lambda torch, F, a, attrs: (  # noqa: N803
        torch.squeeze(a[0]) if attrs.get("axis") is None else torch.squeeze(a[0], dim=tuple(attrs["axis"]))),
    "relax.concat": lambda torch, F, a, attrs: torch.cat(list(a[0]), dim=attrs.get("axis", 0) or 0),  # noqa: N803
    **{f"relax.{r}": _reduce(r) for r in ("sum", "mean", "max", "min", "prod")},
    "relax.split": lambda torch, F, a, attrs: tuple(torch.tensor_split(  # noqa: N803
        a[0], attrs["indices_or_sections"] if isinstance(attrs["indices_or_sections"], int)
        else list(attrs["indices_or_sections"]), dim=attrs.get("axis", 0))),
    "relax.tile": lambda torch, F, a, attrs: torch.tile(a[0], tuple(attrs["repeats"])),  # noqa: N803
    "relax.repeat": lambda torch, F, a, attrs: torch.repeat_interleave(  # noqa: N803
        a[0], attrs["repeats"], dim=attrs.get("axis")),
    "relax.flip": lambda torch, F, a, attrs: torch.flip(a[0], dims=[attrs["axis"]]),  # noqa: N803
    "relax.take": lambda torch, F, a, attrs: _take(torch, a[0], a[1], attrs.get("axis")),  # noqa: N803
    "relax.cumsum": lambda torch, F, a, attrs: _cumsum(torch, a[0], attrs),  # noqa: N803
    "relax.argmax": lambda torch, F, a, attrs: torch.argmax(  # noqa: N803
        a[0], dim=attrs.get("axis"), keepdim=bool(attrs.get("keepdims"))),
    "relax.argmin": lambda torch, F, a, attrs: torch.argmin(  # noqa: N803
        a[0], dim=attrs.get("axis"), keepdim=bool(attrs.get("keepdims"))),
    "relax.broadcast_to": lambda torch, F, a, attrs: torch.broadcast_to(a[0], tuple(a[1])),  # noqa: N803
    "relax.flatten": lambda torch, F, a, attrs: torch.flatten(a[0]),  # noqa: N803
    "relax.nn.leakyrelu": lambda torch, F, a, attrs: F.leaky_relu(a[0], attrs.get("alpha", 0.01)),  # noqa: N803
    "relax.nn.layer_norm": lambda torch, F, a, attrs: _layer_norm(F, a, attrs),  # noqa: N803
}


def _take(torch: Any, x: Any, indices: Any, axis: Any) -> Any:
    """``R.take``: numpy's take (flattened when ``axis`` is None), the indices' dims in place of ``axis``."""
    indices = indices.long()
    if axis is None:
        return torch.take(x, indices)
    axis %= x.ndim
    picked = x.movedim(axis, 0)[indices]  # indices' dims first, then x's other dims in order
    return picked.movedim(list(range(indices.ndim)), list(range(axis, axis + indices.ndim)))


def _cumsum(torch: Any, x: Any, attrs: dict) -> Any:
    if attrs.get("dtype"):
        x = x.to(_torch_dtype(torch, attrs["dtype"]))
    axis = attrs.get("axis")
    if axis is None:
        x, axis = x.flatten(), 0
    out = torch.cumsum(x, dim=axis)
    return out - x if attrs.get("exclusive") else out


def _layer_norm(F: Any, a: list, attrs: dict) -> Any:  # noqa: N803
    x, gamma, beta = a
    axes = sorted(d % x.ndim for d in attrs.get("axes", (-1,)))
    if axes != list(range(x.ndim - len(axes), x.ndim)):
        raise NotImplementedError(f"RelaxToPyFuncConverter: relax.nn.layer_norm over axes {axes} (PyTorch "
                                  "normalizes trailing dimensions only)")
    shape = list(x.shape[axes[0]:])
    return F.layer_norm(x, shape, gamma if attrs.get("scale", True) else None,
                        beta if attrs.get("center", True) else None, attrs.get("epsilon", 1e-5))


def _expand_dims(x: Any, axis: Any) -> Any:
    ndim = x.ndim + len(axis)
    for d in sorted(d % ndim for d in axis):
        x = x.unsqueeze(d)
    return x


def _torch_dtype(torch: Any, dtype: str) -> Any:
    found = torch.bool if dtype == "bool" else getattr(torch, str(dtype), None)
    if not isinstance(found, torch.dtype):
        raise NotImplementedError(f"RelaxToPyFuncConverter: dtype {dtype!r} has no torch equivalent")
    return found


class RelaxToPyFuncConverter:
    """Turns Relax functions of ``ir_module`` into Python functions running PyTorch code."""

    def __init__(self, ir_module: IRModule):
        if not isinstance(ir_module, IRModule):
            raise TypeError(f"RelaxToPyFuncConverter needs an IRModule, got {type(ir_module).__name__}")
        self.ir_module = ir_module
        self._kernels: Any = None  # the module's PrimFuncs, compiled on the first R.call_tir

    def convert(self, relax_function_names: str | list[str]) -> IRModule:
        """A copy of the module with ``pyfuncs[name]`` the converted function, for each name."""
        names = [relax_function_names] if isinstance(relax_function_names, str) else list(relax_function_names)
        new_mod = self.ir_module.copy()
        new_mod.pyfuncs.update(self.ir_module.pyfuncs)
        relax_funcs = {gv.name_hint: f for gv, f in self.ir_module.functions_items() if isinstance(f, rx.Function)}
        for name in names:
            if name not in relax_funcs:
                raise ValueError(f"Relax function '{name}' not found in IRModule "
                                 f"(its Relax functions: {', '.join(relax_funcs) or 'none'})")
            new_mod.pyfuncs[name] = self._convert_function(name, relax_funcs[name])
        return new_mod

    def _convert_function(self, name: str, func: rx.Function) -> Callable[..., Any]:
        def converted(*args: Any) -> Any:
            if len(args) != len(func.params):
                raise ValueError(f"Expected {len(func.params)} arguments, got {len(args)}")
            return _Run(self, name).call(func, list(args))

        converted.__name__ = name
        converted.__doc__ = f"The Relax function {name!r} run as PyTorch code."
        return converted

    def kernel(self, name: str) -> Any:
        """The module's PrimFunc ``name``, compiled (all PrimFuncs are, once)."""
        if self._kernels is None:
            prims = {gv: f for gv, f in self.ir_module.functions_items() if isinstance(f, PrimFunc)}
            self._kernels = _tir_build(IRModule(prims), "llvm") if prims else {}
        try:
            return self._kernels[name]
        except (KeyError, AttributeError, ValueError):
            raise ValueError(f"R.call_tir: the module has no PrimFunc {name!r}") from None


class _Run:
    """One call of a converted function: the values of its variables, and its symbolic
    dimensions bound from the arguments' shapes."""

    def __init__(self, converter: RelaxToPyFuncConverter, name: str):
        self.converter = converter
        self.name = name
        self.torch, self.F = _torch()
        self.values: dict[Any, Any] = {}
        self.dims: dict[TirVar, int] = {}

    def call(self, func: rx.Function, args: list) -> Any:
        for param, arg in zip(func.params, args):
            value = self.as_torch(arg)
            self.bind_dims(param.struct_info, value)
            self.values[param] = value
        return self.eval(func.body)

    def as_torch(self, value: Any) -> Any:
        if isinstance(value, _nd.NDArray):
            return self.torch.from_dlpack(value)
        if isinstance(value, np.ndarray):
            return self.torch.from_numpy(value)
        return value

    def bind_dims(self, sinfo: Any, value: Any) -> None:
        """Learn symbolic dimensions (``n``) from the value a struct info describes."""
        if isinstance(sinfo, TensorStructInfo) and sinfo.shape_values is not None and hasattr(value, "shape"):
            for dim, actual in zip(sinfo.shape_values, value.shape):
                if isinstance(dim, TirVar):
                    self.dims.setdefault(dim, int(actual))
        elif isinstance(sinfo, TupleStructInfo) and isinstance(value, (tuple, list)):
            for field, v in zip(sinfo.fields, value):
                self.bind_dims(field, v)
        elif isinstance(sinfo, ShapeStructInfo) and sinfo.values is not None and isinstance(value, (tuple, list)):
            for dim, actual in zip(sinfo.values, value):
                if isinstance(dim, TirVar):
                    self.dims.setdefault(dim, int(actual))

    def dim(self, dim: Any) -> int:
        if isinstance(dim, (int, np.integer)):
            return int(dim)
        value = Analyzer().simplify(substitute(dim, {v: _tir_const(n, v.dtype) for v, n in self.dims.items()}))
        if not isinstance(value, IntImm):
            raise ValueError(f"{self.name}: cannot tell the value of the dimension {dim} from the arguments' shapes")
        return int(value.value)

    # -- expressions ----------------------------------------------------------------------------
    def eval(self, expr: Any) -> Any:  # noqa: C901, PLR0911 - one case per kind of expression
        if isinstance(expr, rx.Var):
            if expr not in self.values:
                raise ValueError(f"{self.name}: variable {expr.name} is used before it is bound")
            return self.values[expr]
        if isinstance(expr, rx.Constant):
            return self.torch.from_numpy(expr.data.numpy())
        if isinstance(expr, rx.SeqExpr):
            for block in expr.blocks:
                for binding in block.bindings:
                    value = self.eval(binding.value)
                    if isinstance(binding, rx.MatchCast):
                        self.bind_dims(binding.struct_info, value)
                    self.values[binding.var] = value
            return self.eval(expr.body)
        if isinstance(expr, rx.Tuple):
            return tuple(self.eval(f) for f in expr.fields)
        if isinstance(expr, rx.TupleGetItem):
            return self.eval(expr.tuple_value)[expr.index]
        if isinstance(expr, rx.If):
            return self.eval(expr.true_branch if bool(self.eval(expr.cond)) else expr.false_branch)
        if isinstance(expr, rx.ShapeExpr):
            return tuple(self.dim(d) for d in expr.values)
        if isinstance(expr, rx.PrimValue):
            return self.dim(expr.value) if isinstance(expr.value, PrimExpr) and "int" in expr.value.dtype \
                else getattr(expr.value, "value", expr.value)
        if isinstance(expr, (rx.StringImm, rx.DataTypeImm)):
            return expr.value
        if isinstance(expr, rx.Call):
            return self.call_expr(expr)
        raise NotImplementedError(f"RelaxToPyFuncConverter: cannot run a {type(expr).__name__} "
                                  f"(in function {self.name})")

    def call_expr(self, call: rx.Call) -> Any:
        op = call.op
        if isinstance(op, GlobalVar):
            callee = self.converter.ir_module[op]
            if not isinstance(callee, rx.Function):
                raise NotImplementedError(f"RelaxToPyFuncConverter: a direct call of {op.name_hint}, "
                                          f"a {type(callee).__name__} (in function {self.name})")
            return _Run(self.converter, op.name_hint).call(callee, [self.eval(a) for a in call.args])
        if isinstance(op, rx.ExternFunc):
            return self.packed(op.global_symbol, [self.eval(a) for a in call.args], None)
        name = op.name if isinstance(op, Op) else repr(op)
        if name in ("relax.call_tir", "relax.call_dps_packed", "relax.call_pure_packed", "relax.call_py_func"):
            return self.cross_level(name, call)
        run = _OPS.get(name)
        if run is None:
            raise NotImplementedError(f"RelaxToPyFuncConverter: no PyTorch equivalent for operator {name} "
                                      f"(in function {self.name})")
        return run(self.torch, self.F, [self.eval(a) for a in call.args], dict(call.attrs or {}))

    # -- calls across levels --------------------------------------------------------------------
    def cross_level(self, name: str, call: rx.Call) -> Any:
        if name == "relax.call_pure_packed":
            return self.packed(call.args[0].global_symbol, [self.eval(a) for a in call.args[1:]], None)
        args = list(self.eval(call.args[1]))
        if name == "relax.call_py_func":
            func = self.converter.ir_module.pyfuncs.get(call.args[0].value)
            if func is None:
                raise NotImplementedError(f"RelaxToPyFuncConverter: R.call_py_func({call.args[0].value!r}) "
                                          "names no Python function of the module")
            return func(*args)
        outs = self.outputs(call.sinfo_args[0])
        if name == "relax.call_dps_packed":
            return self.packed(call.args[0].global_symbol, args, outs)
        extra = list(self.eval(call.args[2])) if len(call.args) > 2 else []
        self.converter.kernel(call.args[0].name_hint)(*self.to_tvm(args), *self.to_tvm(outs), *extra)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def outputs(self, sinfo: Any) -> list:
        fields = list(sinfo.fields) if isinstance(sinfo, TupleStructInfo) else [sinfo]
        return [self.torch.zeros([self.dim(d) for d in s.shape_values], dtype=_torch_dtype(self.torch, s.dtype))
                for s in fields]

    def to_tvm(self, values: list) -> list:
        return [_nd.from_dlpack(v.detach()) if isinstance(v, self.torch.Tensor) else v for v in values]

    def packed(self, symbol: str, args: list, outs: list | None) -> Any:
        """Call the registered function ``symbol``: in destination-passing style when given
        ``outs`` (returned, filled), else its result.  A DPS call of a Python function that takes
        the inputs only is made as TVM's converter makes it: inputs in, its result out."""
        func = get_global_func(symbol, allow_missing=True)
        if func is None:
            raise NotImplementedError(f"RelaxToPyFuncConverter: no registered function {symbol!r} "
                                      f"(in function {self.name})")
        if outs is not None and _takes(func, len(args)) and not _takes(func, len(args) + len(outs)):
            outs = None
        result = func(*self.to_tvm(args), *self.to_tvm(outs or []))
        if outs is not None:
            return outs[0] if len(outs) == 1 else tuple(outs)
        return tuple(self.as_torch(r) for r in result) if isinstance(result, (tuple, list)) else self.as_torch(result)


def _takes(func: Any, count: int) -> bool:
    """Whether ``func`` accepts ``count`` positional arguments (True when it cannot be told)."""
    try:
        inspect.signature(func).bind(*range(count))
    except TypeError:
        return False
    except ValueError:
        return True
    return True


def convert_relax_to_pyfunc(ir_module: IRModule, relax_function_names: str | list[str]) -> IRModule:
    """``RelaxToPyFuncConverter(ir_module).convert(relax_function_names)``."""
    return RelaxToPyFuncConverter(ir_module).convert(relax_function_names)
