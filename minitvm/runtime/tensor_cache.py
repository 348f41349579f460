"""The process's tensor cache: named weights read from a ``tensor-cache.json`` directory.

``tvm.contrib.tvmjs.dump_tensor_cache`` writes a model's parameters as raw shards plus a JSON
index (name, shape, dtype, byte offset, encoding); TVM's runtime reads them into a global table
(``vm.builtin.tensor_cache.load``) that compiled code and tests fetch by name
(``vm.builtin.param_array_from_cache("param", -1)`` gives ``param_0, param_1, ...``).  The
files are data: the JSON names shapes, dtypes and offsets only, every offset is checked
against its shard, and only numeric dtypes are made.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from .ndarray import NDArray
from .registry import register_func
from .vm.builtins import check_dtype

__all__ = ["load", "get", "update", "remove", "clear", "param_array_from_cache", "bf16_to_f32",
           "f32_to_bf16", "GLOBALS"]

#: name -> tensor, one table for the process as TVM's
_CACHE: dict[str, NDArray] = {}
_FORMATS = ("raw", "f32-to-bf16")


def f32_to_bf16(value: np.ndarray) -> np.ndarray:
    """float32 values as bfloat16 bit patterns (uint16), rounded to nearest even; values beyond
    bfloat16's largest finite one are truncated, so they clip to it rather than become inf."""
    value = np.ascontiguousarray(value, dtype="float32")
    bits = value.view("uint32")
    limit = np.array([np.finfo("float32").max], "float32").view("uint32") >> 16 << 16
    in_range = np.abs(value) < limit.view("float32")[0]
    bias = np.where(in_range, ((bits >> 16) & 1) + 0x7FFF, 0).astype("uint32")
    return ((bits + bias) >> 16).astype("uint16")


def bf16_to_f32(value: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns (uint16) as float32 values (exact)."""
    return (np.ascontiguousarray(value).view("uint16").astype("uint32") << 16).view("float32")


def _decode(rec: dict, shard: bytes, where: str) -> NDArray:
    """One record of a shard as a tensor, every field checked before it is used."""
    try:
        name, shape, dtype = str(rec["name"]), [int(d) for d in rec["shape"]], str(rec["dtype"])
        fmt, offset, nbytes = str(rec["format"]), int(rec["byteOffset"]), int(rec["nbytes"])
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"{where}: malformed record {rec!r}: {err}") from None
    if fmt not in _FORMATS:
        raise ValueError(f"{where}: {name}: unknown format {fmt!r} (known: {', '.join(_FORMATS)})")
    if offset < 0 or nbytes < 0 or offset + nbytes > len(shard) or any(d < 0 for d in shape):
        raise ValueError(f"{where}: {name}: bytes {offset}..{offset + nbytes} lie outside its shard "
                         f"of {len(shard)} bytes")
    dt = check_dtype(dtype, where)
    stored = np.dtype("uint16") if fmt == "f32-to-bf16" and dt == np.float32 else dt
    count = int(np.prod(shape, dtype="int64"))
    if count * stored.itemsize != nbytes:
        raise ValueError(f"{where}: {name}: {nbytes} bytes for {count} elements of {stored}")
    data = np.frombuffer(shard, dtype=stored, count=count, offset=offset).reshape(shape)
    return NDArray(bf16_to_f32(data).reshape(shape) if stored != dt else data.copy())


def load(cache_path: str, device_type: int = 1, device_id: int = 0) -> None:
    """Read every tensor of the cache at ``cache_path`` (a directory or its JSON file) into the table."""
    del device_type, device_id  # the CPU is the only device here
    path = str(cache_path)
    index = path if path.endswith(".json") else os.path.join(path, "tensor-cache.json")
    where = f"vm.builtin.tensor_cache.load({index!r})"
    with open(index, encoding="utf-8") as f:
        info = json.load(f)
    base = os.path.dirname(index)
    for shard_rec in info.get("records", ()):
        data_path = str(shard_rec.get("dataPath", ""))
        if os.path.isabs(data_path) or ".." in data_path.replace("\\", "/").split("/"):
            raise ValueError(f"{where}: shard path {data_path!r} leaves the cache directory")
        with open(os.path.join(base, data_path), "rb") as f:
            shard = f.read()
        for rec in shard_rec.get("records", ()):
            _CACHE[str(rec.get("name"))] = _decode(rec, shard, f"{where}, {data_path}")


def get(name: str) -> NDArray | None:
    """The cached tensor ``name``, or None."""
    return _CACHE.get(str(name))


def update(name: str, value: Any, is_override: bool = False) -> None:
    """Put ``value`` in the table as ``name``; an existing name needs ``is_override``."""
    if str(name) in _CACHE and not is_override:
        raise ValueError(f"vm.builtin.tensor_cache.update: {name!r} is already cached (pass is_override=True)")
    _CACHE[str(name)] = value if isinstance(value, NDArray) else NDArray(np.asarray(value))


def remove(name: str) -> None:
    _CACHE.pop(str(name), None)


def clear() -> None:
    _CACHE.clear()


def param_array_from_cache(prefix: str, num_params: int = -1) -> list[NDArray]:
    """``prefix_0, prefix_1, ...``: ``num_params`` of them (each must be cached), or with -1 as
    many as are cached in a row."""
    out: list[NDArray] = []
    i = 0
    while num_params < 0 or i < num_params:
        value = _CACHE.get(f"{prefix}_{i}")
        if value is None:
            if num_params < 0:
                break
            raise KeyError(f"vm.builtin.param_array_from_cache: cannot find {prefix}_{i} in the tensor cache")
        out.append(value)
        i += 1
    return out


def param_array_from_cache_by_name(names: Any) -> list[NDArray]:
    """The cached tensors named ``names``, each required."""
    missing = [n for n in names if str(n) not in _CACHE]
    if missing:
        raise KeyError(f"vm.builtin.param_array_from_cache_by_name: not in the tensor cache: {missing}")
    return [_CACHE[str(n)] for n in names]


GLOBALS = {
    "vm.builtin.tensor_cache.load": load,
    "vm.builtin.tensor_cache.get": get,
    "vm.builtin.tensor_cache.update": update,
    "vm.builtin.tensor_cache.remove": remove,
    "vm.builtin.tensor_cache.clear": clear,
    "vm.builtin.param_array_from_cache": param_array_from_cache,
    "vm.builtin.param_array_from_cache_by_name": param_array_from_cache_by_name,
}

# TVM before 0.21 called it the NDArray cache
GLOBALS.update({k.replace("tensor_cache", "ndarray_cache"): v for k, v in list(GLOBALS.items())
                if "tensor_cache." in k})

for _name, _fn in GLOBALS.items():
    register_func(_name, _fn, override=True)  # override: re-importing (autoreload) is harmless
