"""``tvm.base``: where TVM's Python code and tests import ``TVMError`` (and ``py_str``) from."""

from __future__ import annotations

from .error import TVMError

__all__ = ["TVMError", "py_str"]


def py_str(x: bytes) -> str:
    """Bytes from the runtime as a ``str`` (TVM's helper: UTF-8)."""
    return x.decode("utf-8")
