"""TVM's IR types (``tvm.ir.PrimType``, ``PointerType``, ``TupleType``): the type of a value as
a PrimFunc's signature states it (``def f(...) -> T.int32`` has ``ret_type`` ``PrimType("int32")``)."""

from __future__ import annotations

from . import dtype as _dt
from .node import Node, node
from .structural import structural_equal, structural_hash

__all__ = ["Type", "PrimType", "PointerType", "TupleType"]


class Type(Node):
    """Base of the IR types; ``==`` compares structurally, as TVM's (``PrimType("int32") ==
    PrimType("int32")``)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Type) and structural_equal(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return structural_hash(self)


@node
class PrimType(Type):
    """A scalar of ``dtype`` (printed ``T.float32``)."""

    dtype: str

    def __post_init__(self) -> None:
        super().__post_init__()
        _dt.check(self.dtype)

    def __repr__(self) -> str:
        return f"PrimType({self.dtype!r})"


@node
class PointerType(Type):
    """A pointer to ``element_type`` in memory scope ``storage_scope`` (printed ``T.handle(...)``)."""

    element_type: Type
    storage_scope: str = ""

    def __repr__(self) -> str:
        return f"PointerType({self.element_type!r}, {self.storage_scope!r})"


@node
class TupleType(Type):
    """A tuple of ``fields`` (the empty tuple is TVM's ``void``)."""

    fields: tuple = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "fields", tuple(self.fields))

    def __repr__(self) -> str:
        return f"TupleType({list(self.fields)!r})"
