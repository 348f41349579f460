"""PrimFunc: a TensorIR function — parameters, their buffers, a body."""

from __future__ import annotations

from typing import Any

from ..ir.node import Node, defines, node
from .buffer import Buffer
from .expr import Var

__all__ = ["PrimFunc"]


@node
class PrimFunc(Node):
    """A kernel.  ``params`` are handle variables (one per array) or scalar
    variables; ``buffer_map`` gives each handle parameter its buffer."""

    params: tuple = defines()
    buffer_map: dict = defines(default=None)
    body: Any = None
    ret_type: Any = None
    attrs: dict = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.buffer_map is None:
            object.__setattr__(self, "buffer_map", {})
        if self.attrs is None:
            object.__setattr__(self, "attrs", {})

    def with_attr(self, key: str | dict, value: Any = None) -> "PrimFunc":
        """A copy with an attribute set (``with_attr("global_symbol", "mm")`` or a dict)."""
        new_attrs = dict(self.attrs)
        new_attrs.update(key if isinstance(key, dict) else {key: value})
        return PrimFunc(self.params, self.buffer_map, self.body, self.ret_type, new_attrs)

    def with_body(self, body: Any) -> "PrimFunc":
        return PrimFunc(self.params, self.buffer_map, body, self.ret_type, self.attrs)

    @property
    def name(self) -> str | None:
        return self.attrs.get("global_symbol")

    @property
    def buffers(self) -> list[Buffer]:
        """The parameter buffers, in parameter order."""
        return [self.buffer_map[p] for p in self.params if p in self.buffer_map]

    def param_buffer(self, param: Var) -> Buffer | None:
        return self.buffer_map.get(param)
