"""The pieces of ``relax.frontend.nn``: :class:`Tensor` (a traced Relax value),
:class:`Parameter` (a model weight), :class:`Module` and :class:`ModuleList`.

A model is ordinary Python.  Export (:meth:`Module.export_tvm`) calls ``forward`` once
with :class:`Tensor` s that wrap Relax variables; every operation on them emits one binding
through the :class:`~minitvm.relax.BlockBuilder` that is active during the export, so the
traced program *is* the Relax function.
"""

from __future__ import annotations

from collections import OrderedDict
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import numpy as np

from ....runtime.ndarray import as_numpy
from ... import expr as rx
from ...block_builder import BlockBuilder
from ...struct_info import TensorStructInfo

__all__ = ["Tensor", "Parameter", "Module", "ModuleList", "current_builder"]

_BUILDER: list[BlockBuilder] = []


@contextmanager
def tracing(bb: BlockBuilder) -> Iterator[BlockBuilder]:
    """Make ``bb`` the builder that nn operations emit into (used by the exporter)."""
    _BUILDER.append(bb)
    try:
        yield bb
    finally:
        _BUILDER.pop()


def current_builder() -> BlockBuilder:
    if not _BUILDER:
        raise RuntimeError("nn: tensor operations run only while a model is traced; "
                           "call model.export_tvm(spec=...) instead of calling the model on data")
    return _BUILDER[-1]


def _as_shape(shape: Sequence[Any]) -> tuple:
    return tuple(int(d) if isinstance(d, (int, np.integer)) else d for d in shape)


class Tensor:
    """A Relax value seen from the model's code: ``.shape``, ``.dtype`` and ``+ - * / @``
    (a Python number on either side becomes a constant of the tensor's dtype)."""

    def __init__(self, expr: rx.Expr):
        self._expr = expr

    @property
    def _relax(self) -> rx.Expr:
        return self._expr

    @property
    def _sinfo(self) -> TensorStructInfo:
        sinfo = self._relax.struct_info
        if not isinstance(sinfo, TensorStructInfo):
            raise TypeError(f"nn.Tensor wraps a non-tensor value of struct info {sinfo}")
        return sinfo

    @property
    def shape(self) -> list:
        """The dimensions: Python ints, or ``tir`` expressions for symbolic ones."""
        values = self._sinfo.shape_values
        if values is None:
            raise ValueError("nn.Tensor: the shape is unknown")
        return [int(v.value) if hasattr(v, "value") and isinstance(v.value, (int, np.integer)) else v
                for v in values]

    @property
    def ndim(self) -> int:
        return self._sinfo.ndim

    @property
    def dtype(self) -> str:
        return self._sinfo.dtype

    def __repr__(self) -> str:
        return f'Tensor({self.shape}, "{self.dtype}")'

    # arithmetic: each emits one binding (see nn.op)
    def __add__(self, other: Any) -> "Tensor":
        return op.add(self, other)

    def __radd__(self, other: Any) -> "Tensor":
        return op.add(other, self)

    def __sub__(self, other: Any) -> "Tensor":
        return op.subtract(self, other)

    def __rsub__(self, other: Any) -> "Tensor":
        return op.subtract(other, self)

    def __mul__(self, other: Any) -> "Tensor":
        return op.multiply(self, other)

    def __rmul__(self, other: Any) -> "Tensor":
        return op.multiply(other, self)

    def __truediv__(self, other: Any) -> "Tensor":
        return op.divide(self, other)

    def __rtruediv__(self, other: Any) -> "Tensor":
        return op.divide(other, self)

    def __matmul__(self, other: Any) -> "Tensor":
        return op.matmul(self, other)

    def __neg__(self) -> "Tensor":
        return op.negative(self)


class Parameter(Tensor):
    """A model weight of fixed ``shape`` and ``dtype``.  During export it is a parameter of
    the Relax function; ``.data`` optionally holds its value (a numpy array)."""

    def __init__(self, shape: Sequence[int], dtype: str = "float32"):
        self._shape = _as_shape(shape)
        for d in self._shape:
            if not isinstance(d, int) or d < 0:
                raise ValueError(f"nn.Parameter: shape {tuple(shape)} must hold non-negative ints")
        self._dtype = str(dtype)
        self._data: np.ndarray | None = None
        self._expr = None  # set by the exporter while tracing

    @property
    def shape(self) -> list:  # type: ignore[override]
        return list(self._shape)

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def dtype(self) -> str:
        return self._dtype

    @property
    def _relax(self) -> rx.Expr:
        if self._expr is None:
            raise RuntimeError("nn.Parameter is used outside export_tvm (it has no Relax variable)")
        return self._expr

    @property
    def data(self) -> np.ndarray | None:
        return self._data

    @data.setter
    def data(self, value: Any) -> None:
        if value is None:
            self._data = None
            return
        arr = as_numpy(value)
        if tuple(arr.shape) != self._shape:
            raise ValueError(f"nn.Parameter: data of shape {tuple(arr.shape)} for a parameter of shape {self._shape}")
        if str(arr.dtype) != self._dtype:
            raise ValueError(f"nn.Parameter: data of dtype {arr.dtype} for a parameter of dtype {self._dtype}")
        self._data = arr

    def __repr__(self) -> str:
        return f'Parameter({self._shape}, "{self._dtype}")'


class Module:
    """Base class of models: assign submodules and :class:`Parameter` s as attributes in
    ``__init__`` (they are registered in that order), write ``forward``."""

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, (Parameter, Module)) and "_parameters" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__}: call super().__init__() before assigning {name!r}")
        params, modules = self.__dict__.get("_parameters"), self.__dict__.get("_modules")
        if params is not None:
            params.pop(name, None)
            modules.pop(name, None)
            if isinstance(value, Parameter):
                params[name] = value
            elif isinstance(value, Module):
                modules[name] = value
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        object.__delattr__(self, name)

    def named_children(self) -> Iterator[tuple[str, "Module"]]:
        yield from self._modules.items()

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Parameter]]:
        """``("fc1.weight", Parameter)`` pairs: own parameters, then each submodule's, in
        the order they were assigned; a parameter shared by two modules comes once."""
        seen: set[int] = set()
        for name, p in self._named_parameters(prefix):
            if id(p) not in seen:
                seen.add(id(p))
                yield name, p

    def _named_parameters(self, prefix: str) -> Iterator[tuple[str, Parameter]]:
        for name, p in self._parameters.items():
            yield prefix + name, p
        for name, m in self._modules.items():
            yield from m._named_parameters(f"{prefix}{name}.")

    def parameters(self) -> Iterator[Parameter]:
        for _, p in self.named_parameters():
            yield p

    def state_dict(self) -> dict[str, Parameter]:
        return dict(self.named_parameters())

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Set each parameter's ``.data`` from ``state`` (numpy arrays or NDArrays by name)."""
        own = dict(self.named_parameters())
        missing = [k for k in own if k not in state]
        unexpected = [k for k in state if k not in own]
        if missing or unexpected:
            raise KeyError(f"load_state_dict: missing {missing}, unexpected {unexpected}")
        for k, p in own.items():
            p.data = state[k]

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not define forward")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    def export_tvm(self, spec: dict[str, dict[str, Any]], debug: bool = False) -> tuple:
        """Trace ``forward`` (and any other method named in ``spec``) into an IRModule.

        Returns ``(mod, [(name, Parameter), ...])``: one Relax function per spec entry,
        taking the spec's inputs followed by every parameter of :meth:`named_parameters`."""
        if debug:
            raise NotImplementedError("export_tvm(debug=True) (effects) is not supported")
        return exporter.export_module(self, spec)

    def __repr__(self) -> str:
        kids = "".join(f"\n  ({n}): " + repr(m).replace("\n", "\n  ") for n, m in self._modules.items())
        return f"{type(self).__name__}({self._extra_repr()}{kids}{chr(10) if kids else ''})"

    def _extra_repr(self) -> str:
        return ""


class ModuleList(Module):
    """A list of submodules, registered as ``"0"``, ``"1"``, ... (so ``layers.0.weight``)."""

    def __init__(self, modules: Sequence[Module] = ()):
        super().__init__()
        for m in modules:
            self.append(m)

    def append(self, module: Module) -> None:
        if not isinstance(module, Module):
            raise TypeError(f"ModuleList holds nn.Module objects, got {type(module).__name__}")
        setattr(self, str(len(self._modules)), module)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(list(self._modules.values()))

    def __getitem__(self, i: int) -> Module:
        return list(self._modules.values())[i]

    def forward(self, x: Any) -> Any:
        for m in self:
            x = m(x)
        return x


# Tensor's operators emit nn.op calls and Module.export_tvm runs the exporter; both modules build
# on the classes above, so they are imported here, after them (their names are looked up at call time).
from . import exporter, op  # noqa: E402
