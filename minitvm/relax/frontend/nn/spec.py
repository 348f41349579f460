"""Input specs for ``export_tvm``: ``{"forward": {"x": nn.spec.Tensor(("n", 784), "float32")}}``.

A string dimension is symbolic: it becomes an int64 ``tir.Var`` of that name, one per
name within a function, so two inputs with ``"n"`` share the dimension."""

from __future__ import annotations

from typing import Any, Sequence

from ....tir.expr import Var as TirVar

__all__ = ["Tensor", "Int"]


class Tensor:
    """A tensor input of ``shape`` (ints, or strings for symbolic dimensions) and ``dtype``."""

    def __init__(self, shape: Sequence[int | str], dtype: str = "float32"):
        self.shape = tuple(shape)
        for d in self.shape:
            if not isinstance(d, (int, str)) or (isinstance(d, int) and d < 0):
                raise TypeError(f"nn.spec.Tensor: dimension {d!r} must be a non-negative int or a name")
        self.dtype = str(dtype)

    def struct_shape(self, sym: dict[str, TirVar]) -> list[Any]:
        """The shape with each named dimension replaced by its (shared) tir.Var."""
        return [sym.setdefault(d, TirVar(d, "int64")) if isinstance(d, str) else d for d in self.shape]

    def __repr__(self) -> str:
        return f'spec.Tensor({list(self.shape)}, "{self.dtype}")'


class Int:
    """A Python int argument (not supported yet by the exporter)."""

    def __init__(self) -> None:
        raise NotImplementedError("nn.spec.Int is not supported yet; only nn.spec.Tensor inputs")
