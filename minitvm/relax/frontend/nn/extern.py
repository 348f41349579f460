"""``nn.ExternModule``, ``nn.ObjectModule``, ``nn.SourceModule``: C/C++ code linked into an
exported model.  Not implemented yet: constructing one raises NotImplementedError naming it."""

from __future__ import annotations

from typing import Any

__all__ = ["ExternModule", "ObjectModule", "SourceModule"]


class ExternModule:
    """Base of modules whose functions are implemented outside minitvm (not implemented yet)."""

    _symbols: dict[str, Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(f"nn.{type(self).__name__} (external C/C++ code in an exported model) "
                                  "is not supported yet")


class ObjectModule(ExternModule):
    """An object file's functions (not implemented yet)."""


class SourceModule(ExternModule):
    """A C/C++ source file's functions, compiled at build time (not implemented yet)."""
