"""Data types are plain strings, as in TVM's Python API: ``"float32"``, ``"int64"``,
``"bool"``, ``"handle"``.  This module knows their properties."""

from __future__ import annotations

import re
from enum import IntEnum

import numpy as np

__all__ = ["DataType", "DataTypeCode", "is_float", "is_int", "is_uint", "is_bool", "bits", "to_numpy", "from_numpy",
           "SUPPORTED", "lanes", "element", "with_lanes"]

#: dtypes kernels can compute with
SUPPORTED = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
             "float16", "float32", "float64")

#: TVM's narrow floats (``T.float8_e4m3fn(0.0)``): names the IR and printer carry; kernels do not
#: compute with them (``check`` refuses them, as it refuses any dtype codegen lacks)
CUSTOM_FLOATS = ("bfloat16", "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn",
                 "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
                 "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn")


class DataTypeCode(IntEnum):
    """DLPack's type codes (``DLDataTypeCode``), as TVM numbers them."""

    INT = 0
    UINT = 1
    FLOAT = 2
    HANDLE = 3
    BFLOAT = 4
    FLOAT8_E4M3FN = 10  # TVM's extension codes for the 8-bit floats
    FLOAT8_E5M2 = 12


class DataType(str):
    """A dtype string with TVM's ``DataType`` fields: ``DataType("float32x4")`` has
    ``type_code == DataTypeCode.FLOAT``, ``bits == 32`` and ``lanes == 4``."""

    def _split(self) -> tuple[str, int]:
        base, _, lanes = str(self).partition("x")
        return base, int(lanes) if lanes.isdigit() else 1

    @property
    def bits(self) -> int:
        base = self._split()[0]
        return 16 if base in ("bfloat", "bfloat16") else bits(base)

    @property
    def lanes(self) -> int:
        return self._split()[1]

    @property
    def type_code(self) -> int:
        base = self._split()[0]
        if base.startswith("bfloat"):
            return DataTypeCode.BFLOAT
        if base.startswith("float8_e4m3"):
            return DataTypeCode.FLOAT8_E4M3FN
        if base.startswith("float8_e5m2"):
            return DataTypeCode.FLOAT8_E5M2
        if base in ("handle", "void"):
            return DataTypeCode.HANDLE
        return DataTypeCode.FLOAT if is_float(base) else DataTypeCode.UINT if is_uint(base) else DataTypeCode.INT


def lanes(dtype: str) -> int:
    """Lanes of a vector dtype (``"float32x4"`` has 4); 1 for a scalar."""
    text = str(dtype)
    if "x" not in text:
        return 1
    tail = text.rpartition("x")[2]
    return int(tail) if tail.isdigit() else 1


def element(dtype: str) -> str:
    """The scalar dtype of a vector's lanes (``"float32x4"`` -> ``"float32"``)."""
    text = str(dtype)
    return text.rpartition("x")[0] if lanes(text) > 1 else text


def with_lanes(dtype: str, n: int) -> str:
    """``dtype``'s element type with ``n`` lanes (``n == 1``: the scalar)."""
    base = element(dtype)
    return base if n == 1 else f"{base}x{n}"


def check(dtype: str) -> str:
    dtype = str(dtype)
    if dtype not in SUPPORTED and dtype != "handle" and dtype != "void":
        raise TypeError(f"unknown dtype {dtype!r}; expected one of {', '.join(SUPPORTED)}")
    return dtype


#: answers of is_float / is_uint / is_int by dtype: asked for every expression built (a few dozen dtypes)
_FLOAT: dict[str, bool] = {}
_UINT: dict[str, bool] = {}
_INT: dict[str, bool] = {}


def _remember(table: dict, dtype: str, answer: bool) -> bool:
    if len(table) < 1024:
        table[str(dtype)] = answer
    return answer


def is_float(dtype: str) -> bool:
    known = _FLOAT.get(dtype)
    return known if known is not None else _remember(_FLOAT, dtype, str(dtype).startswith("float"))


def is_uint(dtype: str) -> bool:
    known = _UINT.get(dtype)
    return known if known is not None else _remember(_UINT, dtype, str(dtype).startswith("uint"))


def is_int(dtype: str) -> bool:
    """Signed or unsigned integer (bool excluded)."""
    known = _INT.get(dtype)
    return known if known is not None else _remember(_INT, dtype, str(dtype).startswith(("int", "uint")))


def is_bool(dtype: str) -> bool:
    return str(dtype) == "bool"


#: bits by dtype text, filled as asked: every constant and every codegen type asks (a few dozen dtypes)
_BITS: dict[str, int] = {}


def bits(dtype: str) -> int:
    known = _BITS.get(dtype)
    if known is not None:
        return known
    text = str(dtype)
    if text == "bool":
        n = 1
    elif text == "handle":
        n = 64
    else:
        # the width is the digits after the kind: "float8_e4m3fn" is 8 bits, "int32x4" 32
        n = int(re.match(r"[a-z]*(\d*)", text).group(1))  # (no digits: int('') raises, as before)
    if len(_BITS) < 1024:
        _BITS[text] = n
    return n


def to_numpy(dtype: str) -> np.dtype:
    return np.dtype(str(dtype))


def from_numpy(dtype) -> str:
    return str(np.dtype(dtype))
