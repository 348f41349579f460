"""Structural equality and hashing of IR trees.

Two trees are structurally equal when they have the same shape and the same
constants, and their variables correspond one to one.  A variable may be
*bound* to its counterpart only where it is defined (loop variable, parameter,
block iteration variable ...); a free variable used without definition must be
the same object on both sides unless ``map_free_vars`` is set.  This mirrors
TVM's ``tvm.ir.structural_equal``.
"""

from __future__ import annotations

import functools
import hashlib
import math
from typing import Any

from .deep import deep_on_overflow
from .module import GlobalVar
from .node import Node

__all__ = ["structural_equal", "structural_hash", "assert_structural_equal", "StructuralMismatch",
           "StructuralEqualError", "StructuralEqMixin"]


class StructuralMismatch(Exception):
    """Where two trees first differ: ``path`` plus both sides."""

    def __init__(self, path: str, lhs: Any, rhs: Any, reason: str = ""):
        super().__init__(path)
        self.path, self.lhs, self.rhs, self.reason = path, lhs, rhs, reason


class _Equal:
    def __init__(self, map_free_vars: bool):
        self.map_free_vars = map_free_vars
        self.lmap: dict[int, Any] = {}
        self.rmap: dict[int, Any] = {}
        self.keep: list[Any] = []  # keep bound objects alive so ids stay unique
        self.log: list[tuple[Any, Any]] = []  # bindings in the order they were made

    def fail(self, path: str, lhs: Any, rhs: Any, reason: str = "") -> None:
        raise StructuralMismatch(path, lhs, rhs, reason)

    def equal(self, lhs: Any, rhs: Any, path: str, defining: bool) -> None:
        if lhs is rhs and not (isinstance(lhs, Node) and lhs._binds):
            return
        if isinstance(lhs, Node) or isinstance(rhs, Node):
            if type(lhs) is not type(rhs):
                self.fail(path, lhs, rhs, f"node kinds differ: {type(lhs).__name__} vs {type(rhs).__name__}")
            if lhs._binds:
                self._bind_or_check(lhs, rhs, path, defining)
                return
            self._fields(lhs, rhs, path, defining)
            return
        if isinstance(lhs, (tuple, list)) and isinstance(rhs, (tuple, list)):
            if len(lhs) != len(rhs):
                self.fail(path, lhs, rhs, f"lengths differ: {len(lhs)} vs {len(rhs)}")
            for i, (a, b) in enumerate(zip(lhs, rhs)):
                self.equal(a, b, f"{path}[{i}]", defining)
            return
        if isinstance(lhs, dict) and isinstance(rhs, dict):
            self._dicts(lhs, rhs, path, defining)
            return
        if isinstance(lhs, float) and isinstance(rhs, float):
            if lhs == rhs or (math.isnan(lhs) and math.isnan(rhs)):
                return
            self.fail(path, lhs, rhs)
        if type(lhs) is not type(rhs) or lhs != rhs:
            self.fail(path, lhs, rhs)

    def _scoped(self, lhs: Any, rhs: Any, path: str) -> None:
        """Compare with variable bindings local to this subtree (a module's functions each
        bind their own variables; only global names stay bound afterwards)."""

        start = len(self.log)
        self.equal(lhs, rhs, path, False)
        for a, b in self.log[start:]:
            if not isinstance(a, GlobalVar):
                self.lmap.pop(id(a), None)
                self.rmap.pop(id(b), None)
        del self.log[start:]

    def _dicts(self, lhs: dict, rhs: dict, path: str, defining: bool, scoped: bool = False) -> None:
        if len(lhs) != len(rhs):
            self.fail(path, lhs, rhs, f"sizes differ: {len(lhs)} vs {len(rhs)}")
        if all(isinstance(k, str) for k in lhs):
            if set(lhs) != set(rhs):
                self.fail(path, sorted(lhs), sorted(rhs), "keys differ")
            for k in lhs:
                self.equal(lhs[k], rhs[k], f"{path}[{k!r}]", defining)
            return
        # node-keyed maps (buffer_map, a module's functions): keys in order are definitions
        if scoped:  # all keys first (functions may call functions defined later), then each value
            for i, (ka, kb) in enumerate(zip(lhs, rhs)):
                self.equal(ka, kb, f"{path}.keys[{i}]", True)
            for i, (va, vb) in enumerate(zip(lhs.values(), rhs.values())):
                self._scoped(va, vb, f"{path}[{i}]")
            return
        for i, ((ka, va), (kb, vb)) in enumerate(zip(lhs.items(), rhs.items())):
            self.equal(ka, kb, f"{path}.keys[{i}]", defining)
            self.equal(va, vb, f"{path}[{i}]", defining)

    def _fields(self, lhs: Node, rhs: Node, path: str, defining: bool) -> None:
        for name in (_HASH_SHAPES.get(type(lhs)) or _hash_shape(type(lhs)))[1]:  # no span, no ignored field
            a, b = getattr(lhs, name), getattr(rhs, name)
            if name in lhs._scoped_fields and isinstance(a, dict) and isinstance(b, dict):
                if len(a) != len(b):
                    self.fail(f"{path}.{name}", a, b, f"sizes differ: {len(a)} vs {len(b)}")
                self._dicts(a, b, f"{path}.{name}", defining, scoped=True)
                continue
            self.equal(a, b, f"{path}.{name}", defining or name in lhs._def_fields)

    def _bind_or_check(self, lhs: Node, rhs: Node, path: str, defining: bool) -> None:
        bound = self.lmap.get(id(lhs))
        if bound is not None:
            if bound is not rhs:
                self.fail(path, lhs, rhs, "variables bound to different counterparts")
            return
        if id(rhs) in self.rmap:
            self.fail(path, lhs, rhs, "right-hand variable already bound to another one")
        if not (defining or self.map_free_vars or lhs is rhs or self._views_bound_memory(lhs, rhs)):
            self.fail(path, lhs, rhs, "free variables differ (not defined in the compared trees)")
        self.lmap[id(lhs)] = rhs
        self.rmap[id(rhs)] = lhs
        self.keep += [lhs, rhs]
        self.log.append((lhs, rhs))
        # compare the content (dtype, buffer shape ...) once, when bound
        self._fields_of_binding(lhs, rhs, path)

    def _views_bound_memory(self, lhs: Node, rhs: Node) -> bool:
        """A buffer viewing the memory of a bound one (``T.Buffer(..., data=A.data)``) is
        defined by that memory: TVM declares it with a DeclBuffer, which minitvm's TIR has not."""
        data_l, data_r = getattr(lhs, "data", None), getattr(rhs, "data", None)
        return (isinstance(data_l, Node) and isinstance(data_r, Node)
                and self.lmap.get(id(data_l)) is data_r)

    def _fields_of_binding(self, lhs: Node, rhs: Node, path: str) -> None:
        # names of variables never matter; GlobalVar names do (its field is name_hint)
        for name in (_HASH_SHAPES.get(type(lhs)) or _hash_shape(type(lhs)))[2]:
            self.equal(getattr(lhs, name), getattr(rhs, name), f"{path}.{name}", True)


@deep_on_overflow
def structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False) -> bool:
    """True when ``lhs`` and ``rhs`` are the same tree up to variable renaming."""
    try:
        _Equal(map_free_vars).equal(lhs, rhs, "root", False)
    except StructuralMismatch:
        return False
    return True


class _NeedsBinding(Exception):
    """equal_without_definitions met what only :class:`_Equal` can answer."""


def equal_without_definitions(lhs: Any, rhs: Any) -> bool | None:
    """:func:`structural_equal` (free variables not mapped) for trees with no definition site,
    such as index expressions, answered without its bookkeeping (no paths, no variable maps):
    there every variable or buffer must be the very same object on both sides.  None when the
    trees define a variable (a ``Let``, an ``IterVar``), hold a map, or two different buffers
    meet (a buffer may view a bound one's memory): ask :func:`structural_equal` then."""
    try:
        return _equal_plain(lhs, rhs)
    except _NeedsBinding:
        return None


def _equal_plain(lhs: Any, rhs: Any) -> bool:
    if lhs is rhs:
        return True  # (a binding node is bound to itself: the same answer as _Equal's)
    if isinstance(lhs, Node) or isinstance(rhs, Node):
        if type(lhs) is not type(rhs):
            return False
        if lhs._binds:
            if getattr(lhs, "data", None) is not None:
                raise _NeedsBinding  # see _Equal._views_bound_memory
            return False  # two different free variables
        if lhs._def_fields or lhs._scoped_fields:
            raise _NeedsBinding
        for name in (_HASH_SHAPES.get(type(lhs)) or _hash_shape(type(lhs)))[1]:
            if not _equal_plain(getattr(lhs, name), getattr(rhs, name)):
                return False
        return True
    if isinstance(lhs, (tuple, list)) and isinstance(rhs, (tuple, list)):
        return len(lhs) == len(rhs) and all(_equal_plain(a, b) for a, b in zip(lhs, rhs))
    if isinstance(lhs, dict) or isinstance(rhs, dict):
        raise _NeedsBinding
    if isinstance(lhs, float) and isinstance(rhs, float):
        return lhs == rhs or (math.isnan(lhs) and math.isnan(rhs))
    return type(lhs) is type(rhs) and lhs == rhs


def _show(x: Any, limit: int = 12) -> str:
    if isinstance(x, Node):
        try:
            text = x.script()
        except Exception:
            text = repr(x)
    else:
        text = repr(x)
    lines = text.splitlines() or [""]
    if len(lines) > limit:
        lines = lines[:limit] + [f"... ({len(lines) - limit} more lines)"]
    return "\n    ".join(lines)


class StructuralEqualError(ValueError):
    """``assert_structural_equal`` failed (a ``ValueError``, as TVM raises); ``lhs_root`` and
    ``rhs_root`` keep the two objects compared, so a reader (the grader) can show them."""

    def __init__(self, message: str, lhs_root: Any, rhs_root: Any, path: str):
        super().__init__(message)
        self.lhs_root, self.rhs_root, self.path = lhs_root, rhs_root, path


@deep_on_overflow
def assert_structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False) -> None:
    """Raise :class:`StructuralEqualError` saying where ``lhs`` and ``rhs`` first differ."""
    try:
        _Equal(map_free_vars).equal(lhs, rhs, "root", False)
    except StructuralMismatch as m:
        why = f" ({m.reason})" if m.reason else ""
        raise StructuralEqualError(
            f"StructuralEqual check failed at {m.path}{why}\n"
            f"  lhs: {_show(m.lhs)}\n"
            f"  rhs: {_show(m.rhs)}", lhs, rhs, m.path,
        ) from None


# tags that keep the hashed tuples of different kinds apart (not -1: hash(-1) == hash(-2))
_FREE, _DEF, _USE, _NONE = 0x2545F491, 0x4F6CDD1D, 0x1B873593, 0x68E31DA4


@functools.lru_cache(maxsize=4096)
def _stable_str_hash(text: str) -> int:
    """A hash of ``text`` that is the same in every process (Python salts ``hash(str)``)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little", signed=True)


def _leaf_hash(x: Any) -> int:
    # names, dtypes and enum members hash by their text; numbers by value (both unsalted)
    if isinstance(x, str):
        return _stable_str_hash(x)
    if x is None:  # hash(None) is its address before Python 3.12
        return _NONE
    if isinstance(x, (int, float, complex)):
        return hash(x)
    return hash((_stable_str_hash(type(x).__name__), _stable_str_hash(str(x))))


#: per node class: (hash of its name, the fields hashed, the fields hashed when it binds)
_HASH_SHAPES: dict[type, tuple[int, tuple[str, ...], tuple[str, ...]]] = {}


def _hash_shape(cls: type) -> tuple[int, tuple[str, ...], tuple[str, ...]]:
    """What :func:`structural_hash` reads of a node class, worked out once per class (it hashes
    every node of a tree).  A class's fields and ignored fields are fixed when it is declared."""
    shape = (_stable_str_hash(cls.__name__),
             tuple(f for f in cls._field_names if f != "span" and f not in cls._seq_ignore),
             tuple(f for f in cls._field_names if f not in ("name", "span")))
    _HASH_SHAPES[cls] = shape
    return shape


@deep_on_overflow
def structural_hash(value: Any, map_free_vars: bool = False) -> int:
    """A hash that agrees with :func:`structural_equal`, and is the same in every process for
    the same IR (as TVM's, so that a tuning database keyed by it can be read elsewhere); only a
    free variable (not defined inside ``value``, and ``map_free_vars=False``) hashes by identity."""
    numbering: dict[int, int] = {}
    keep: list[Any] = []

    def h(x: Any, defining: bool) -> int:
        if isinstance(x, Node):
            shape = _HASH_SHAPES.get(type(x)) or _hash_shape(type(x))
            if x._binds:
                if id(x) not in numbering:
                    if not (defining or map_free_vars):
                        return hash((_FREE, id(x)))
                    numbering[id(x)] = len(numbering)
                    keep.append(x)
                    content = tuple(h(getattr(x, f), True) for f in shape[2])
                    return hash((shape[0], _DEF, content))
                return hash((_USE, numbering[id(x)]))
            parts = []
            for f in shape[1]:
                value = getattr(x, f)
                if f in x._scoped_fields and isinstance(value, dict):
                    keys = tuple(h(k, True) for k in value)
                    values = []
                    for v in value.values():  # each value numbers its own variables
                        saved = dict(numbering)
                        values.append(h(v, False))
                        numbering.clear()
                        numbering.update(saved)
                    parts.append((keys, tuple(values)))
                else:
                    parts.append(h(value, defining or f in x._def_fields))
            return hash((shape[0],) + tuple(parts))
        if isinstance(x, (tuple, list)):
            return hash(tuple(h(e, defining) for e in x))
        if isinstance(x, dict):
            # string-keyed maps (attributes) are equal in any order (see _dicts), so they hash by key order
            items = sorted(x.items(), key=lambda kv: kv[0]) if all(isinstance(k, str) for k in x) else x.items()
            return hash(tuple((h(k, defining), h(v, defining)) for k, v in items))
        return _leaf_hash(x)

    return h(value, False)


class StructuralEqMixin:
    """Makes ``==`` on a node class structural equality, as TVM does for its struct infos,
    types and global infos (``same_as`` stays identity).  Put it before ``Node`` in the bases."""

    __slots__ = ()

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, StructuralEqMixin):
            return NotImplemented
        return structural_equal(self, other)

    def __ne__(self, other: Any) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return structural_hash(self)
