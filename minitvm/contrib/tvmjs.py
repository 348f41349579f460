"""``tvm.contrib.tvmjs``: a model's weights as a tensor cache (TVM's web runtime's format).

``dump_tensor_cache(params, dir)`` writes each array into ``params_shard_<k>.bin`` files of at
most ``shard_cap_mb`` and an index ``tensor-cache.json`` (name, shape, dtype, format, byte
offset, md5 of each shard); float32 arrays are stored as bfloat16 unless ``encode_format="raw"``.
``load_tensor_cache(dir)`` and the runtime's ``vm.builtin.tensor_cache.load`` read it back.
The wasm build of TVM's web runtime is not here.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..runtime import tensor_cache as _cache
from ..runtime.ndarray import NDArray

__all__ = ["dump_tensor_cache", "load_tensor_cache"]

_convert_f32_to_bf16 = _cache.f32_to_bf16
_convert_bf16_to_f32 = _cache.bf16_to_f32
_FORMATS = ("raw", "f32-to-bf16")


def _md5(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.md5(f.read()).hexdigest()


def _format_of(encode_format: str | Mapping[str, str], name: str) -> str:
    fmt = encode_format if isinstance(encode_format, str) else encode_format.get(name, encode_format.get("*"))
    if fmt not in _FORMATS:
        raise ValueError(f"Invalid encode_format for parameter {name}: {fmt}")
    return fmt


class _Shards:
    """Records packed into shard files of at most ``cap`` bytes (an array of half the cap or more
    gets a shard of its own); existing records can be overwritten in place."""

    def __init__(self, cache_dir: str, cap: int, old: list[dict]):
        self.dir, self.cap, self.shards = cache_dir, cap, old
        self.data, self.records = bytearray(), []
        self.by_name = {rec["name"]: (i, rec) for i, shard in enumerate(old) for rec in shard["records"]}
        self.touched: set[int] = set()

    def add(self, data: bytes, rec: dict, allow_update: bool) -> None:
        name = rec["name"]
        if name in self.by_name:
            if not allow_update:
                raise ValueError(f"Duplicate name {name} found in the cache.")
            idx, old = self.by_name[name]
            if old["nbytes"] != rec["nbytes"]:
                raise ValueError(f"Cannot update record {name}, size mismatch.")
            with open(os.path.join(self.dir, self.shards[idx]["dataPath"]), "r+b") as f:
                f.seek(old["byteOffset"])
                f.write(data)
            self.touched.add(idx)
            return
        self.by_name[name] = (len(self.shards), rec)
        if len(self.data) + len(data) >= self.cap:
            if 2 * len(data) >= self.cap:
                self._write(data, [dict(rec, byteOffset=0)])
                return
            self.flush()
        rec["byteOffset"] = len(self.data)
        self.records.append(rec)
        self.data += data

    def flush(self) -> None:
        if self.data:
            self._write(bytes(self.data), self.records)
            self.data, self.records = bytearray(), []

    def _write(self, data: bytes, records: list[dict]) -> None:
        path = f"params_shard_{len(self.shards)}.bin"
        with open(os.path.join(self.dir, path), "wb") as f:
            f.write(data)
        self.shards.append({"dataPath": path, "format": "raw-shard", "nbytes": len(data), "records": records,
                            "md5sum": _md5(os.path.join(self.dir, path))})

    def finish(self) -> list[dict]:
        self.flush()
        for idx in self.touched:
            self.shards[idx]["md5sum"] = _md5(os.path.join(self.dir, self.shards[idx]["dataPath"]))
        return self.shards


def dump_tensor_cache(params: Any, cache_dir: str, encode_format: str | Mapping[str, str] = "f32-to-bf16",
                      meta_data: Any = None, shard_cap_mb: int = 32, show_progress: bool = True,
                      update_if_exists: bool = False) -> None:
    """Write ``params`` (a mapping or (name, array) pairs) as a tensor cache in ``cache_dir``."""
    del show_progress  # minitvm prints no progress line
    if isinstance(encode_format, str):
        _format_of(encode_format, "")
    elif not isinstance(encode_format, Mapping):
        raise TypeError("encode_format must be a string or parameter-name mapping")
    cache_dir = str(cache_dir)
    os.makedirs(cache_dir, exist_ok=True)
    index = os.path.join(cache_dir, "tensor-cache.json")
    old: list[dict] = []
    if update_if_exists and os.path.exists(index):
        with open(index, encoding="utf-8") as f:
            previous = json.load(f)
        old = previous["records"]
        meta_data = previous.get("metadata") if meta_data is None else meta_data
    shards = _Shards(cache_dir, shard_cap_mb << 20, old)
    for name, value in (params.items() if isinstance(params, Mapping) else params):
        arr = value.numpy() if isinstance(value, NDArray) else np.asarray(value)
        fmt = _format_of(encode_format, name)
        data = (_convert_f32_to_bf16(arr) if fmt == "f32-to-bf16" and arr.dtype == np.float32 else arr).tobytes()
        rec = {"name": name, "shape": list(arr.shape), "dtype": str(arr.dtype), "format": fmt, "nbytes": len(data)}
        shards.add(data, rec, update_if_exists)
    records = shards.finish()
    meta = {} if meta_data is None else meta_data() if callable(meta_data) else meta_data
    with open(index, "w", encoding="utf-8") as f:
        json.dump({"metadata": meta, "records": records}, f, indent=4)


def load_tensor_cache(cachepath: str, device: Any = None) -> tuple[dict[str, NDArray], dict]:
    """The tensors of a cache by name, and its metadata (decoding bfloat16-stored float32)."""
    del device
    path = str(cachepath)
    index = path if path.endswith(".json") else os.path.join(path, "tensor-cache.json")
    with open(index, encoding="utf-8") as f:
        metadata = json.load(f).get("metadata", {})
    before = dict(_cache._CACHE)
    try:
        _cache.clear()
        _cache.load(index)
        loaded = dict(_cache._CACHE)
    finally:
        _cache._CACHE.clear()
        _cache._CACHE.update(before)
    return loaded, metadata
