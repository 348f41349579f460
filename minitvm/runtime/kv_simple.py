"""TVM's simple ("legacy") attention KV cache, the runtime half of ``nn.KVCache``: one growable
array whose first axis is the sequence, filled from the front.

==============================================  ==================================================
``vm.builtin.attention_kv_cache_create``         ``(init_data, reserve_shape, init_fill_count)``: an
                                                 array of ``reserve_shape`` holding ``init_data``
                                                 first; ``init_fill_count >= 0`` then sets how many
                                                 rows count as filled
``vm.builtin.attention_kv_cache_append``         ``(cache, value)``: ``value``'s rows (first axis)
                                                 after the filled ones; the array doubles when full
``vm.builtin.attention_kv_cache_update``         ``(cache, value)``: overwrite the filled rows
``vm.builtin.attention_kv_cache_view``           ``(cache, shape)``: the filled rows as a tensor of
                                                 ``shape`` (``shape[0]`` must be the fill count)
``vm.builtin.attention_kv_cache_window_override``  ``(cache, value, max_cache_size)``: a sliding
                                                 window of ``max_cache_size`` rows, written as a ring
                                                 from the current position
``..._window_override_with_sinks``               ``(..., num_attention_sinks)``: the same, the first
                                                 rows (the "attention sinks") never overwritten
==============================================  ==================================================

The paged cache (``vm.builtin.kv_state_*``, ``paged_attention_kv_cache_create``) lives elsewhere.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .ndarray import NDArray, as_numpy
from .object import Object
from .registry import register_func

__all__ = ["AttentionKVCacheLegacy", "GLOBALS"]


class AttentionKVCacheLegacy(Object):
    """A runtime object (the VM hands it through ``R.Object`` parameters).  ``data``: the
    reserved array (numpy); ``fill_count``: rows in use."""

    def __init__(self, data: np.ndarray) -> None:
        self.data = data
        self.fill_count = 0
        self.window_pos = 0  # where the next row of a sliding window goes

    def _check_rows(self, value: np.ndarray, what: str) -> None:
        if value.dtype != self.data.dtype:
            raise TypeError(f"{what}: dtype {value.dtype} for a cache of {self.data.dtype}")
        if value.shape[1:] != self.data.shape[1:]:
            raise ValueError(f"{what}: rows of shape {value.shape[1:]} for a cache of rows {self.data.shape[1:]}")

    def append(self, value: Any) -> "AttentionKVCacheLegacy":
        value = as_numpy(value)
        self._check_rows(value, "vm.builtin.attention_kv_cache_append")
        need = self.fill_count + value.shape[0]
        self._grow(need)
        self.data[self.fill_count:need] = value
        self.fill_count = need
        return self

    def _grow(self, need: int) -> None:
        reserved = max(self.data.shape[0], 1)
        while need > reserved:
            reserved *= 2
        if reserved != self.data.shape[0]:
            grown = np.empty((reserved, *self.data.shape[1:]), self.data.dtype)
            grown[: self.data.shape[0]] = self.data
            self.data = grown

    def window_override(self, value: Any, max_cache_size: int, sinks: int = 0) -> "AttentionKVCacheLegacy":
        """Write ``value``'s rows at the window position; rows past ``max_cache_size`` wrap to just
        after the ``sinks`` first rows (TVM's ring, ``WindowOverride``)."""
        what = "vm.builtin.attention_kv_cache_window_override"
        value = as_numpy(value)
        self._check_rows(value, what)
        rows = value.shape[0]
        if rows > max_cache_size - sinks:
            raise ValueError(f"{what}: {rows} rows exceed the window of {max_cache_size} rows less "
                             f"{sinks} sinks")
        if self.fill_count + rows <= max_cache_size:
            self._grow(self.fill_count + rows)
        first = max(0, min(rows, max_cache_size - self.window_pos))
        self.fill_count = min(self.fill_count + rows, max_cache_size)
        self.data[self.window_pos:self.window_pos + first] = value[:first]
        self.window_pos = min(self.window_pos + rows, max_cache_size)
        if first < rows:  # the rest wraps around, after the sinks
            self.data[sinks:sinks + rows - first] = value[first:]
            self.window_pos = rows - first + sinks
        return self

    def update(self, value: Any) -> "AttentionKVCacheLegacy":
        value = as_numpy(value)
        self._check_rows(value, "vm.builtin.attention_kv_cache_update")
        if value.shape[0] != self.fill_count:
            raise ValueError(f"vm.builtin.attention_kv_cache_update: {value.shape[0]} rows for a cache "
                             f"holding {self.fill_count}")
        self.data[: value.shape[0]] = value
        return self

    def view(self, shape: Any) -> NDArray:
        shape = tuple(int(s) for s in shape)
        if shape[0] != self.fill_count or shape[1:] != self.data.shape[1:]:
            raise ValueError(f"vm.builtin.attention_kv_cache_view: shape {shape} but the cache holds "
                             f"{(self.fill_count, *self.data.shape[1:])}")
        return NDArray(self.data[: self.fill_count])  # a view, as TVM's (later appends may move it)

    def __repr__(self) -> str:
        return f"AttentionKVCacheLegacy(fill_count={self.fill_count}, reserved={self.data.shape})"


def create(init_data: Any, reserve_shape: Any, init_fill_count: int) -> AttentionKVCacheLegacy:
    init = as_numpy(init_data)
    cache = AttentionKVCacheLegacy(np.empty(tuple(int(s) for s in reserve_shape), init.dtype))
    cache.append(init)
    if int(init_fill_count) >= 0:
        cache.fill_count = cache.window_pos = int(init_fill_count)
    return cache


def _cache(obj: Any, what: str) -> AttentionKVCacheLegacy:
    if not isinstance(obj, AttentionKVCacheLegacy):
        raise TypeError(f"{what}: the first argument must be an attention KV cache, got {type(obj).__name__}")
    return obj


GLOBALS = {
    "vm.builtin.attention_kv_cache_create": create,
    "vm.builtin.attention_kv_cache_append":
        lambda c, v: _cache(c, "vm.builtin.attention_kv_cache_append").append(v),
    "vm.builtin.attention_kv_cache_update":
        lambda c, v: _cache(c, "vm.builtin.attention_kv_cache_update").update(v),
    "vm.builtin.attention_kv_cache_view":
        lambda c, s: _cache(c, "vm.builtin.attention_kv_cache_view").view(s),
    "vm.builtin.attention_kv_cache_window_override":
        lambda c, v, size: _cache(c, "vm.builtin.attention_kv_cache_window_override").window_override(v, int(size)),
    "vm.builtin.attention_kv_cache_window_override_with_sinks":
        lambda c, v, size, sinks: _cache(c, "vm.builtin.attention_kv_cache_window_override_with_sinks")
        .window_override(v, int(size), int(sinks)),
}

for _name, _fn in GLOBALS.items():
    register_func(_name, _fn, override=True)  # override: re-importing (autoreload) is harmless
