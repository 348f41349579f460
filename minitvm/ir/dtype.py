"""Data types are plain strings, as in TVM's Python API: ``"float32"``, ``"int64"``,
``"bool"``, ``"handle"``.  This module knows their properties."""

from __future__ import annotations

import numpy as np

__all__ = ["DataType", "is_float", "is_int", "is_uint", "is_bool", "bits", "to_numpy", "from_numpy",
           "SUPPORTED"]

#: dtypes kernels can compute with
SUPPORTED = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
             "float16", "float32", "float64")


class DataType(str):
    """A dtype string with a few helpers (``DataType("float32").bits == 32``)."""

    @property
    def bits(self) -> int:
        return bits(self)

    @property
    def type_code(self) -> str:
        return "float" if is_float(self) else "uint" if is_uint(self) else "int" if is_int(self) else str(self)


def check(dtype: str) -> str:
    dtype = str(dtype)
    if dtype not in SUPPORTED and dtype != "handle" and dtype != "void":
        raise TypeError(f"unknown dtype {dtype!r}; expected one of {', '.join(SUPPORTED)}")
    return dtype


def is_float(dtype: str) -> bool:
    return str(dtype).startswith("float")


def is_uint(dtype: str) -> bool:
    return str(dtype).startswith("uint")


def is_int(dtype: str) -> bool:
    """Signed or unsigned integer (bool excluded)."""
    return str(dtype).startswith(("int", "uint"))


def is_bool(dtype: str) -> bool:
    return str(dtype) == "bool"


def bits(dtype: str) -> int:
    dtype = str(dtype)
    if dtype == "bool":
        return 1
    if dtype == "handle":
        return 64
    digits = "".join(ch for ch in dtype if ch.isdigit())
    return int(digits)


def to_numpy(dtype: str) -> np.dtype:
    return np.dtype(str(dtype))


def from_numpy(dtype) -> str:
    return str(np.dtype(dtype))
