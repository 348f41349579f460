"""A small memo of answers about immutable objects, by identity, for the last few objects.

IR nodes are immutable, so an answer computed from one (its loops, its split into parts) stays
right for as long as the same object is asked about.  The memo holds the object itself beside
its answer: while it is remembered its ``id`` cannot be reused by another object.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable

__all__ = ["IdentityCache"]


class IdentityCache:
    """``build(obj)`` remembered for the last ``size`` objects asked about (least recent dropped)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[int, tuple[Any, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, obj: Any, build: Callable[[Any], Any]) -> Any:
        with self._lock:
            hit = self._entries.get(id(obj))
            if hit is not None and hit[0] is obj:
                self._entries.move_to_end(id(obj))
                return hit[1]
        found = build(obj)  # (outside the lock: building may ask this memo about other objects)
        with self._lock:
            self._entries[id(obj)] = (obj, found)
            if len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return found

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
