"""PrimFunc: a TensorIR function — parameters, their buffers, a body."""

from __future__ import annotations

from typing import Any, ClassVar

from ..eras import default_era, era_of
from ..ir.module import IRModule
from ..ir.node import Node, defines, node
from .buffer import Buffer
from .expr import Var

__all__ = ["PrimFunc", "FuncAttrs", "written_era"]


class FuncAttrs(dict):
    """A PrimFunc's attributes.  TVM 0.27 spells TIR's attribute keys ``tirx.<name>`` (the MLC
    course's TVM ``tir.<name>``): a key given either way is stored as ``tir.<name>`` and read
    either way, one attribute under two names (the printer writes the function's era's)."""

    def __init__(self, items: Any = ()) -> None:
        super().__init__()
        for key, value in dict(items).items():
            self[key] = value

    @staticmethod
    def stored_key(key: Any) -> Any:
        return "tir." + key[5:] if isinstance(key, str) and key.startswith("tirx.") else key

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(self.stored_key(key), value)

    def __getitem__(self, key: Any) -> Any:
        return super().__getitem__(self.stored_key(key))

    def __contains__(self, key: object) -> bool:
        return super().__contains__(self.stored_key(key))

    def get(self, key: Any, default: Any = None) -> Any:
        return super().get(self.stored_key(key), default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value


@node
class PrimFunc(Node):
    """A kernel.  ``params`` are handle variables (one per array) or scalar
    variables; ``buffer_map`` gives each handle parameter its buffer.

    ``era`` is the era of TVM's names the function was written in ("0.23": ``T.block``, or
    "0.27": ``T.sblock``; None when nothing says), which the printer answers in
    (:mod:`minitvm.eras`).  Like a span, it is no part of the function: structural equality
    and hashing skip it, and copies made with ``replace`` (schedules, passes) keep it.
    """

    _seq_ignore: ClassVar[frozenset[str]] = frozenset({"era"})

    params: tuple = defines()
    buffer_map: dict = defines(default=None)
    body: Any = None
    ret_type: Any = None
    attrs: dict = None  # type: ignore[assignment]
    era: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.body is None and isinstance(self.buffer_map, Node) and not isinstance(self.buffer_map, dict):
            # TVM's positional order is PrimFunc(params, body, ...): accept it
            object.__setattr__(self, "body", self.buffer_map)
            object.__setattr__(self, "buffer_map", None)
        if self.buffer_map is None:
            object.__setattr__(self, "buffer_map", {})
        if not isinstance(self.attrs, FuncAttrs):
            object.__setattr__(self, "attrs", FuncAttrs(self.attrs or {}))

    def with_attr(self, key: str | dict, value: Any = None) -> "PrimFunc":
        """A copy with an attribute set (``with_attr("global_symbol", "mm")`` or a dict)."""
        new_attrs = dict(self.attrs)
        new_attrs.update(key if isinstance(key, dict) else {key: value})
        return PrimFunc(self.params, self.buffer_map, self.body, self.ret_type, new_attrs, self.era)

    def with_body(self, body: Any) -> "PrimFunc":
        return PrimFunc(self.params, self.buffer_map, body, self.ret_type, self.attrs, self.era)

    @property
    def name(self) -> str | None:
        return self.attrs.get("global_symbol")

    @property
    def buffers(self) -> list[Buffer]:
        """The parameter buffers, in parameter order."""
        return [self.buffer_map[p] for p in self.params if p in self.buffer_map]

    def param_buffer(self, param: Var) -> Buffer | None:
        return self.buffer_map.get(param)


def written_era(node: Any) -> str:
    """The era of TVM's names ``node`` was written in: a PrimFunc's own, the one era a module's
    PrimFuncs name, else the default era, TVM 0.27's unless set (:func:`minitvm.eras.default_era`;
    the printer and a schedule's trace both answer in it)."""
    if isinstance(node, PrimFunc):
        return node.era or default_era()
    if isinstance(node, IRModule):
        return era_of({f.era for f in node.functions.values() if isinstance(f, PrimFunc) and f.era}) or default_era()
    return default_era()
