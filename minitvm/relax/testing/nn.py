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


def _no_checkpoints(*_: Any, **__: Any) -> Any:
    raise NotImplementedError("relax.testing.nn checkpoints (checkpoint, emit_checkpoint, "
                              "emit_checkpoint_sequential) need relax.op.grad.start_checkpoint / "
                              "end_checkpoint and the Gradient pass, which minitvm does not have")


checkpoint = emit_checkpoint = emit_checkpoint_sequential = _no_checkpoints


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
