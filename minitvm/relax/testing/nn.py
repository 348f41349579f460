"""``tvm.relax.testing.nn``: a PyTorch-like module API that builds Relax with the current
BlockBuilder (TVM's test workloads: ``nn.Placeholder``, ``nn.Parameter``, ``nn.Linear`` ...).

``Placeholder`` and ``Parameter`` make plain ``relax.Var``s (as TVM's do, they are Vars) and
remember which ones they made, so ``isinstance(v, nn.Parameter)`` and ``Module.parameters()``
still tell a parameter from an input.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

import numpy as np

from ... import topi
from ...ir.module import IRModule
from ...runtime.ndarray import array as _tensor
from ...tir.expr import IntImm
from ..block_builder import BlockBuilder
from ..expr import Expr, ShapeExpr, Var
from ..op.grad import end_checkpoint, start_checkpoint
from ..struct_info import TensorStructInfo

__all__ = ["emit", "emit_te", "checkpoint", "emit_checkpoint", "emit_checkpoint_sequential", "Placeholder",
           "Parameter", "Module", "init_params", "Sequential", "ReLU", "LogSoftmax", "Linear"]


def _builder(what: str) -> BlockBuilder:
    bb = BlockBuilder.current()
    if bb is None:
        raise RuntimeError(f"relax.testing.nn.{what} needs an open `with bb.function(...)` scope")
    return bb


def emit(expr: Expr, name_hint: str = "") -> Var:
    """Emit ``expr`` in the current BlockBuilder."""
    return _builder("emit").emit(expr, name_hint=name_hint)


def emit_te(func: Callable, *args: Any, **kwargs: Any) -> Var:
    """``emit_te`` in the current BlockBuilder."""
    return _builder("emit_te").emit_te(func, *args, **kwargs)


def checkpoint(func: Callable, *args: Any, **kwargs: Any) -> Any:
    """``func`` on its arguments wrapped in ``start_checkpoint`` and its results in
    ``end_checkpoint``, unbound: what the Gradient pass keeps from the forward run."""
    args = [start_checkpoint(v) if isinstance(v, Expr) else v for v in args]
    kwargs = {k: start_checkpoint(v) if isinstance(v, Expr) else v for k, v in kwargs.items()}
    result = func(*args, **kwargs)
    if isinstance(result, (list, tuple)):
        return [end_checkpoint(v) if isinstance(v, Expr) else v for v in result]
    if not isinstance(result, Expr):
        raise TypeError(f"relax.testing.nn.checkpoint: the function returned {type(result).__name__}, "
                        "not a Relax expression")
    return end_checkpoint(result)


def emit_checkpoint(func: Callable, *args: Any, **kwargs: Any) -> Any:
    """As :func:`checkpoint`, each mark bound in the current BlockBuilder (``<name>_scp``,
    ``<name>_ecp``)."""
    bb = _builder("emit_checkpoint")
    args = [bb.emit(start_checkpoint(v), v.name_hint + "_scp") if isinstance(v, Var) else v for v in args]
    kwargs = {k: bb.emit(start_checkpoint(v), v.name_hint + "_scp") if isinstance(v, Var) else v
              for k, v in kwargs.items()}
    result = func(*args, **kwargs)
    if isinstance(result, (list, tuple)):
        result = list(result)
        for i, v in enumerate(result):
            if isinstance(v, Expr):
                v = v if isinstance(v, Var) else bb.emit(v)
                result[i] = bb.emit(end_checkpoint(v), v.name_hint + "_ecp")
        return result
    if not isinstance(result, Expr):
        raise TypeError(f"relax.testing.nn.emit_checkpoint: the function returned {type(result).__name__}, "
                        "not a Relax expression")
    bound = bb.emit(result)
    return bb.emit(end_checkpoint(bound), bound.name_hint + "_ecp")


def emit_checkpoint_sequential(functions: list, segments: Any, input: Var,  # noqa: A002 - TVM's name
                               checkpoint_last: bool = False) -> Any:
    """``functions`` applied in turn to ``input``, cut into ``segments`` (a count, or the
    indices where segments start), each segment checkpointed -- the last only when
    ``checkpoint_last``."""
    bb = _builder("emit_checkpoint_sequential")

    def run(start: int, end: int) -> Callable:
        def forward(value: Any) -> Any:
            for j in range(start, end):
                value = functions[j](value)
            return value
        return forward

    n = len(functions)
    if not isinstance(segments, list):
        segments = list(range(0, n, n // segments)) + [n]
    if segments[-1] != n:
        segments = segments + [n]
    if len(segments) < 2:
        raise ValueError("relax.testing.nn.emit_checkpoint_sequential: needs at least one segment")
    for i in range(len(segments) - 1):
        if i == len(segments) - 2 and not checkpoint_last:
            input = run(segments[i], segments[i + 1])(input)
        else:
            input = emit_checkpoint(run(segments[i], segments[i + 1]), input)
    return input if isinstance(input, Var) else bb.emit(input)


class _VarKind(type):
    """A kind of relax.Var: calling the class makes a plain Var and remembers it, so
    ``isinstance`` answers for the Vars it made."""

    def __call__(cls, shape: Any, dtype: str = "float32", name: str | None = None) -> Var:
        if not isinstance(shape, (list, tuple)):
            raise TypeError(f"the shape of {cls.__name__} is expected to be a list or a tuple, got {shape!r}")
        var = Var(name or cls.default_name, TensorStructInfo(list(shape), dtype))
        cls._made.add(var)
        return var

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Var) and obj in cls._made


class Placeholder(metaclass=_VarKind):
    """``Placeholder(shape, dtype="float32", name="data")``: a model input, a relax.Var."""

    default_name = "data"
    _made: "weakref.WeakSet[Var]" = weakref.WeakSet()


class Parameter(metaclass=_VarKind):
    """``Parameter(shape, dtype="float32", name="param")``: a model weight, a relax.Var."""

    default_name = "param"
    _made: "weakref.WeakSet[Var]" = weakref.WeakSet()


class Module:
    """Base of the model modules: ``forward`` builds the module's Relax in the current
    BlockBuilder; ``parameters()`` lists the Parameters it (and its submodules) hold.

    ``define_subroutine = True`` (TVM: build the module as a private function and call it) is
    refused: minitvm's BlockBuilder builds one function at a time."""

    define_subroutine: bool = False

    def parameters(self) -> list[Var]:
        return _unpack_params(self.__dict__)

    def forward(self, input: Expr) -> Var:  # noqa: A002 - TVM's name
        raise NotImplementedError(f"{type(self).__name__}.forward is not defined")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.define_subroutine:
            raise NotImplementedError(f"{type(self).__name__}.define_subroutine = True: building a module as "
                                      "a subroutine needs a function built inside another, which minitvm's "
                                      "BlockBuilder does not do; leave define_subroutine False")
        return self.forward(*args, **kwargs)


def _unpack_params(value: object) -> list[Var]:
    if isinstance(value, Parameter):
        return [value]
    if isinstance(value, Module):
        return value.parameters()
    if isinstance(value, dict):
        return [p for v in value.values() for p in _unpack_params(v)]
    if isinstance(value, (list, tuple)):
        return [p for v in value for p in _unpack_params(v)]
    return []


def init_params(mod: IRModule) -> list:
    """Zero tensors for ``main``'s parameters whose names do not start with ``data``."""
    params = []
    for var in mod["main"].params:
        if var.name.startswith("data"):
            continue
        shape = getattr(var.struct_info, "shape", None)
        if not isinstance(shape, ShapeExpr) or not all(isinstance(d, IntImm) for d in shape.values):
            raise TypeError(f"cannot initialize parameter {var.name}: its shape is not known")
        params.append(_tensor(np.zeros([int(d) for d in shape.values], "float32")))
    return params


class Sequential(Module):
    """Modules applied one after another."""

    def __init__(self, *modules: Module) -> None:
        self.modules = modules

    def forward(self, input: Expr) -> Var:  # noqa: A002
        for module in self.modules:
            input = module(input)
        return input


class ReLU(Module):
    def forward(self, input: Expr) -> Var:  # noqa: A002
        return emit_te(topi.nn.relu, input)


class LogSoftmax(Module):
    def forward(self, input: Expr) -> Var:  # noqa: A002
        return emit_te(topi.nn.log_softmax, input)


class Linear(Module):
    """``y = x @ weight (+ bias)``, weight of shape ``(in_features, out_features)``."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True) -> None:
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter((in_features, out_features), name="linear_weight")
        self.bias = Parameter((out_features,), name="linear_bias") if bias else None

    def forward(self, input: Expr) -> Var:  # noqa: A002
        y = emit_te(topi.nn.matmul, input, self.weight)
        return emit_te(topi.add, y, self.bias) if self.bias is not None else y
