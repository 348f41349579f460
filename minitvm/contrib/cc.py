"""``tvm.contrib.cc``: TVM's calls of the system C compiler to package modules as shared or
static libraries.  minitvm saves its executables in its own signed format
(``export_library``) and JIT-compiles kernels in process, so it builds no such libraries:
each function refuses by name."""

from __future__ import annotations

from typing import Any

__all__ = ["create_shared", "create_staticlib", "create_executable", "get_cc"]


def _unavailable(name: str) -> NotImplementedError:
    return NotImplementedError(
        f"minitvm.contrib.cc.{name}: minitvm builds no shared or static libraries; "
        "save a compiled model with ex.export_library(path) and load it with runtime.load_module(path)")


def create_shared(output: str, objects: Any, options: Any = None, cc: str | None = None, **kwargs: Any) -> None:
    """Refused: minitvm links no shared libraries."""
    raise _unavailable("create_shared")


def create_staticlib(output: str, inputs: Any, ar: str | None = None, **kwargs: Any) -> None:
    """Refused: minitvm archives no static libraries."""
    raise _unavailable("create_staticlib")


def create_executable(output: str, objects: Any, options: Any = None, cc: str | None = None, **kwargs: Any) -> None:
    """Refused: minitvm links no executables."""
    raise _unavailable("create_executable")


def get_cc() -> None:
    """TVM's path of the system C compiler; minitvm calls none (None)."""
    return None
