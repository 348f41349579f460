"""Access paths: how to reach a part of an object from its root (``tvm_ffi.access_path``).

A path is a chain of steps -- an attribute, an array item, a map item, or one of those found
missing -- hung off a root.  The printer underlines or annotates the text of the object a path
names, and ``AccessPath.root().attr("body").array_item(1)`` reads as ``<root>.body[1]``.
Paths compare and hash by their steps, so two paths built alike are equal.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any

__all__ = ["AccessKind", "AccessStep", "AccessPath"]


class AccessKind(IntEnum):
    """What one step of a path does."""

    ATTR = 0
    ARRAY_ITEM = 1
    MAP_ITEM = 2
    ATTR_MISSING = 3
    ARRAY_ITEM_MISSING = 4
    MAP_ITEM_MISSING = 5


def _key_text(key: Any) -> str:
    if isinstance(key, str):
        return '"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if hasattr(key, "script"):  # an IR object used as a map key (a GlobalVar, a Var)
        try:
            return key.script()
        except Exception:  # a node the printer cannot print alone still names the step
            return repr(key)
    return repr(key)


class AccessStep:
    """One step: ``kind`` and the attribute name, index or map key it takes."""

    __slots__ = ("kind", "key")

    def __init__(self, kind: AccessKind, key: Any) -> None:
        self.kind, self.key = AccessKind(kind), key

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, AccessStep) and self.kind == other.kind
                and (self.key is other.key or (type(self.key) is type(other.key) and _same_key(self.key, other.key))))

    def __hash__(self) -> int:
        try:
            return hash((int(self.kind), self.key))
        except TypeError:  # an unhashable key: the kind alone keeps hashing consistent with ==
            return hash(int(self.kind))

    def __repr__(self) -> str:
        kind, key = self.kind, self.key
        if kind == AccessKind.ATTR:
            return f".{key}"
        if kind in (AccessKind.ARRAY_ITEM, AccessKind.MAP_ITEM):
            return f"[{key}]" if kind == AccessKind.ARRAY_ITEM else f"[{_key_text(key)}]"
        shown = key if kind == AccessKind.ARRAY_ITEM_MISSING else _key_text(key)
        return f"[<missing:{shown}>]"

    __str__ = __repr__


def _same_key(a: Any, b: Any) -> bool:
    # IR objects as keys are the same key only when they are the same object (TVM compares
    # map keys by identity); plain values by value
    if isinstance(a, (str, int, float, bool)) or a is None:
        return a == b
    return a is b


class AccessPath:
    """A path from a root object to one of its parts; build with :meth:`root` and the step
    methods (``attr``, ``array_item``, ``map_item`` and their ``*_missing`` twins)."""

    __slots__ = ("parent", "step", "depth")

    def __init__(self) -> None:
        raise ValueError("AccessPath can't be initialized directly. "
                         "Use AccessPath.root() to create a path to the root object")

    @classmethod
    def _make(cls, parent: AccessPath | None, step: AccessStep | None) -> AccessPath:
        path = object.__new__(cls)
        path.parent, path.step = parent, step
        path.depth = 0 if parent is None else parent.depth + 1
        return path

    @staticmethod
    def root() -> AccessPath:
        return AccessPath._make(None, None)

    def extend(self, step: AccessStep) -> AccessPath:
        return AccessPath._make(self, step)

    def attr(self, attr_key: str) -> AccessPath:
        return self.extend(AccessStep(AccessKind.ATTR, attr_key))

    def attr_missing(self, attr_key: str) -> AccessPath:
        return self.extend(AccessStep(AccessKind.ATTR_MISSING, attr_key))

    def array_item(self, index: int) -> AccessPath:
        return self.extend(AccessStep(AccessKind.ARRAY_ITEM, int(index)))

    def array_item_missing(self, index: int) -> AccessPath:
        return self.extend(AccessStep(AccessKind.ARRAY_ITEM_MISSING, int(index)))

    def map_item(self, key: Any) -> AccessPath:
        return self.extend(AccessStep(AccessKind.MAP_ITEM, key))

    def map_item_missing(self, key: Any) -> AccessPath:
        return self.extend(AccessStep(AccessKind.MAP_ITEM_MISSING, key))

    def to_steps(self) -> list[AccessStep]:
        steps, path = [], self
        while path.parent is not None:
            steps.append(path.step)
            path = path.parent
        return steps[::-1]

    def is_prefix_of(self, other: AccessPath) -> bool:
        """Whether ``other`` starts with every step of this path (a path is its own prefix)."""
        if self.depth > other.depth:
            return False
        while other.depth > self.depth:
            other = other.parent
        return self == other

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AccessPath) and self.depth == other.depth and self.to_steps() == other.to_steps()

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(tuple(self.to_steps()))

    def __repr__(self) -> str:
        return "<root>" + "".join(map(repr, self.to_steps()))

    __str__ = __repr__
