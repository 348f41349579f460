"""The node base every IR object derives from.

Nodes are small frozen dataclasses.  Each declares its child fields in order; the
generic machinery (structural equality, hashing, visitors, mutators) walks those
fields, so a new node class needs no code beyond its declaration.

A field declared with ``defines()`` is a *definition site*: the variables found
there are introduced by this node (a loop variable, a function parameter, a
block iteration variable).  Structural equality binds variables only at such
sites, which is how two functions with differently named but equivalently used
variables compare equal, as in TVM.
"""

from __future__ import annotations

import dataclasses
from types import ModuleType
from typing import Any, ClassVar

from .deep import deep_on_overflow

__all__ = ["Node", "node", "defines", "child_fields", "replace", "script_printer", "renamed_keywords"]


def script_printer() -> ModuleType:
    """The TVMScript printer (:mod:`minitvm.script.printer`), for objects that print themselves.

    ``ir`` sits on the lowest floor and the printer on the ``script`` floor; a node's
    ``.script()``/``.show()`` is one of the two upward calls the floors allow, and this is its
    one spot (imported on first print).  Other printable objects (IndexMap, Trace, Executable)
    call this too, rather than importing the printer themselves.
    """
    from ..script import printer  # lazy: the allowed upward call (tests/test_import_floors.py)

    return printer


def defines(default: Any = dataclasses.MISSING, **kwargs: Any) -> Any:
    """Mark a dataclass field as a definition site for variables."""
    if default is not dataclasses.MISSING:
        kwargs["default"] = default
    return dataclasses.field(metadata={"defines": True}, **kwargs)


#: annotations of fields that never hold a list: names, numbers, and single expressions (a list
#: there is no valid value, so __post_init__ need not look)
_SCALAR_TYPES = frozenset({"str", "int", "float", "bool", "PrimExpr", "Var"})
#: node class -> the fields __post_init__ looks at
_SEQUENCE_FIELDS: dict[type, tuple[str, ...]] = {}


def fields_not_declared(cls: type, annotations: frozenset[str]) -> tuple[str, ...]:
    """The fields of node class ``cls`` whose declared type is not one of ``annotations``
    (``"str"``, ``"int"`` ...), in order; all of them for a class that is not a dataclass."""
    if not dataclasses.is_dataclass(cls):
        return cls._field_names
    return tuple(f.name for f in dataclasses.fields(cls) if str(f.type) not in annotations)


def _sequence_fields(cls: type) -> tuple[str, ...]:
    found = _SEQUENCE_FIELDS[cls] = fields_not_declared(cls, _SCALAR_TYPES)
    return found


class Node:
    """Base class of all IR nodes: immutable, compared by identity with ``is``,
    structurally with :func:`minitvm.ir.structural_equal`."""

    __slots__ = ()
    #: field names, in declaration order
    _field_names: ClassVar[tuple[str, ...]] = ()
    #: names of the fields that are definition sites
    _def_fields: ClassVar[frozenset[str]] = frozenset()
    #: True for nodes compared by binding (variables and buffers), not by content
    _binds: ClassVar[bool] = False
    #: dict fields whose values each bind their own variables (a module's functions)
    _scoped_fields: ClassVar[frozenset[str]] = frozenset()
    #: fields structural equality and hashing skip (a block's name, as in TVM)
    _seq_ignore: ClassVar[frozenset[str]] = frozenset()

    def __post_init__(self) -> None:
        # lists become tuples; runs for every node built, so only the fields not declared as a
        # name, a dtype or a number are looked at
        fields = _SEQUENCE_FIELDS.get(type(self))
        for name in fields if fields is not None else _sequence_fields(type(self)):
            value = getattr(self, name)
            if isinstance(value, list):
                object.__setattr__(self, name, tuple(value))

    # -- printing ---------------------------------------------------------------
    def script(self, **kwargs: Any) -> str:
        """TVMScript-like text of this node."""
        return script_printer().script(self, **kwargs)

    def show(self, **kwargs: Any) -> None:
        """Print the TVMScript-like text (highlighted in Jupyter)."""
        script_printer().show(self, **kwargs)

    def _repr_html_(self) -> str:
        return script_printer().to_html(self)

    def __str__(self) -> str:
        try:
            return self.script()
        except Exception:  # printing must never hide the object itself
            return repr(self)

    def same_as(self, other: Any) -> bool:
        return self is other


def node(cls: type | None = None, *, binds: bool = False):
    """Class decorator turning ``cls`` into a frozen dataclass IR node."""

    def wrap(c: type) -> type:
        c = dataclasses.dataclass(frozen=True, eq=False, repr=False)(c)
        fields = dataclasses.fields(c)
        c._field_names = tuple(f.name for f in fields)
        c._def_fields = frozenset(f.name for f in fields if f.metadata.get("defines"))
        if binds:
            c._binds = True
        if "__repr__" not in c.__dict__:
            c.__repr__ = _default_repr
        return c

    return wrap if cls is None else wrap(cls)


@deep_on_overflow  # the fields' reprs nest as deep as the tree
def _default_repr(self: Node) -> str:
    parts = []
    for name in self._field_names[:3]:
        value = getattr(self, name)
        if isinstance(value, (tuple, dict)) and len(value) > 3:
            value = f"<{len(value)} items>"
        parts.append(f"{name}={value!r}")
    more = ", ..." if len(self._field_names) > 3 else ""
    return f"{type(self).__name__}({', '.join(parts)}{more})"


def child_fields(n: Node) -> tuple[str, ...]:
    return n._field_names


def replace(n: Node, **changes: Any) -> Node:
    """A copy of ``n`` with some fields changed (nodes are immutable): ``dataclasses.replace``
    without its per-call look at every field's declaration (node fields are all ``init``
    fields; mutators call this for every rebuilt node)."""
    if not (isinstance(n, Node) and hasattr(type(n), "__dataclass_fields__")):
        return dataclasses.replace(n, **changes)  # a plain dataclass (or refused there)
    kwargs = {name: getattr(n, name) for name in type(n)._field_names}
    for name in changes:
        if name not in kwargs:
            raise TypeError(f"{type(n).__name__}.__init__() got an unexpected keyword argument {name!r}")
    kwargs.update(changes)
    return type(n)(**kwargs)


def renamed_keywords(cls: type, renames: dict[str, str]) -> type:
    """Let ``cls(...)`` take TVM 0.27's keyword names (``ty=``) for its fields' older ones
    (``struct_info=``, ``dtype=``): one constructor, both spellings."""
    init = cls.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        for new, old in renames.items():
            if new in kwargs:
                if old in kwargs:
                    raise TypeError(f"{cls.__name__}: give {new}= or {old}=, not both (one field)")
                kwargs[old] = kwargs.pop(new)
        init(self, *args, **kwargs)

    __init__.__doc__, __init__.__wrapped__ = init.__doc__, init  # type: ignore[attr-defined]
    cls.__init__ = __init__  # type: ignore[method-assign]
    return cls
