"""The printer's Doc tree (``tvm.script.printer.doc``): Python syntax as objects.

A Doc is a piece of Python text not yet laid out -- an identifier, a call, an assignment, a
``with`` scope, a function.  ``doc_printer.to_python_script`` writes a Doc tree as Python with
TVM's spacing, parentheses and comments, and underlines the text of every Doc whose
``source_paths`` lead to a path asked for.  Sequences read back as tuples (TVM's immutable
arrays); literals hold TIR immediates (``LiteralDoc(1).value`` is ``T.int64(1)``) as in TVM.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum, unique
from typing import Any, Union

from ...ir.access_path import AccessPath
from ...tir.expr import FloatImm, IntImm

__all__ = ["Doc", "ExprDoc", "StmtDoc", "StmtBlockDoc", "LiteralDoc", "IdDoc", "AttrAccessDoc", "IndexDoc",
           "CallDoc", "OperationKind", "OperationDoc", "LambdaDoc", "TupleDoc", "ListDoc", "DictDoc", "SliceDoc",
           "AssignDoc", "IfDoc", "WhileDoc", "BreakDoc", "ContinueDoc", "ForDoc", "ScopeDoc", "ExprStmtDoc",
           "AssertDoc", "ReturnDoc", "FunctionDoc", "ClassDoc", "CommentDoc", "DocStringDoc"]


class Doc:
    """Base of every Doc: ``source_paths`` are the paths of the IR objects this text shows."""

    # __dict__ stays empty (every field is a slot or a property) but exists, as on TVM's objects
    __slots__ = ("_source_paths", "__dict__")

    def __init__(self) -> None:
        self._source_paths: tuple[AccessPath, ...] = ()

    @property
    def source_paths(self) -> tuple[AccessPath, ...]:
        return self._source_paths

    @source_paths.setter
    def source_paths(self, paths: Sequence[AccessPath]) -> None:
        self._source_paths = tuple(paths)

    def _fields(self) -> dict[str, Any]:
        return {k: getattr(self, k) for cls in type(self).__mro__ for k in getattr(cls, "__slots__", ())
                if not k.startswith("_")}

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self._fields().items())
        return f"{type(self).__name__}({fields})"


def _tuple(items: Any) -> tuple:
    return tuple(items) if items is not None else ()


class ExprDoc(Doc):
    """Base of expression Docs: ``.attr(name)``, ``.call(*args, **kwargs)`` and ``[indices]``
    build the Docs of those expressions."""

    __slots__ = ()

    def attr(self, name: str) -> AttrAccessDoc:
        return AttrAccessDoc(self, name)

    def call(self, *args: ExprDoc, **kwargs: ExprDoc) -> CallDoc:
        return CallDoc(self, *args, **kwargs)

    def __getitem__(self, indices: Any) -> IndexDoc:
        if not isinstance(indices, tuple):
            indices = (indices,)
        return IndexDoc(self, list(indices))

    def __iter__(self):
        # without this, Python would iterate through __getitem__ with 0, 1, 2 ... forever
        raise RuntimeError(f"{self.__class__} cannot be used as iterable.")


class StmtDoc(Doc):
    """Base of statement Docs; ``comment`` prints beside or above the statement."""

    __slots__ = ("_comment",)

    def __init__(self) -> None:
        super().__init__()
        self._comment: str | None = None

    @property
    def comment(self) -> str | None:
        return self._comment

    @comment.setter
    def comment(self, text: str | None) -> None:
        self._comment = None if text is None else str(text)


class StmtBlockDoc(Doc):
    """A list of statements printed one per line (a container, never a node of the IR)."""

    __slots__ = ("stmts",)

    def __init__(self, stmts: Sequence[StmtDoc]) -> None:
        super().__init__()
        self.stmts = _tuple(stmts)


class LiteralDoc(ExprDoc):
    """None, a bool, an int, a float or a string, printed as Python writes it."""

    __slots__ = ("value",)

    def __init__(self, value: str | float | bool | int | None, path: AccessPath | None = None) -> None:
        super().__init__()
        if value is None or isinstance(value, str):
            self.value = value
        elif isinstance(value, bool):  # before int: bool is an int in Python
            self.value = IntImm("bool", int(value))
        elif isinstance(value, int):
            self.value = IntImm("int64", value)
        elif isinstance(value, float):
            self.value = FloatImm("float64", value)
        else:
            raise TypeError(f"Unsupported type {type(value)} for LiteralDoc")
        if path is not None:
            self.source_paths = [path]


class IdDoc(ExprDoc):
    """An identifier."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name


class AttrAccessDoc(ExprDoc):
    """``value.name``."""

    __slots__ = ("value", "name")

    def __init__(self, value: ExprDoc, name: str) -> None:
        super().__init__()
        self.value, self.name = value, name


class IndexDoc(ExprDoc):
    """``value[indices]``; an index may be a :class:`SliceDoc`."""

    __slots__ = ("value", "indices")

    def __init__(self, value: ExprDoc, indices: Sequence[Union[ExprDoc, SliceDoc]]) -> None:
        super().__init__()
        self.value, self.indices = value, _tuple(indices)


class CallDoc(ExprDoc):
    """``callee(*args, **kwargs)``; keywords keep their order."""

    __slots__ = ("callee", "args", "kwargs_keys", "kwargs_values")

    def __init__(self, callee: ExprDoc, *args: ExprDoc, **kwargs: ExprDoc) -> None:
        super().__init__()
        self.callee, self.args = callee, tuple(args)
        self.kwargs_keys, self.kwargs_values = tuple(kwargs), tuple(kwargs.values())


@unique
class OperationKind(IntEnum):
    """The operator of an :class:`OperationDoc` (names as Python's ``ast``; the ``_...Start`` /
    ``_...End`` members bracket the unary, binary and special groups)."""

    _UnaryStart = 0
    USub = 1
    Invert = 2
    Not = 3
    _UnaryEnd = 4

    _BinaryStart = 5
    Add = 6
    Sub = 7
    Mult = 8
    Div = 9
    FloorDiv = 10
    Mod = 11
    Pow = 12
    LShift = 13
    RShift = 14
    BitAnd = 15
    BitOr = 16
    BitXor = 17
    Lt = 18
    LtE = 19
    Eq = 20
    NotEq = 21
    Gt = 22
    GtE = 23
    And = 24
    Or = 25
    _BinaryEnd = 26

    _SpecialStart = 27
    IfThenElse = 28
    _SpecialEnd = 29


class OperationDoc(ExprDoc):
    """A unary, binary or if-then-else operation on ``operands``."""

    __slots__ = ("kind", "operands")

    def __init__(self, kind: OperationKind, operands: Sequence[ExprDoc]) -> None:
        super().__init__()
        self.kind, self.operands = OperationKind(kind), _tuple(operands)


class LambdaDoc(ExprDoc):
    """``lambda args: body``."""

    __slots__ = ("args", "body")

    def __init__(self, args: Sequence[IdDoc], body: ExprDoc) -> None:
        super().__init__()
        self.args, self.body = _tuple(args), body


class TupleDoc(ExprDoc):
    """A tuple literal."""

    __slots__ = ("elements",)

    def __init__(self, elements: Sequence[ExprDoc]) -> None:
        super().__init__()
        self.elements = _tuple(elements)


class ListDoc(ExprDoc):
    """A list literal."""

    __slots__ = ("elements",)

    def __init__(self, elements: Sequence[ExprDoc]) -> None:
        super().__init__()
        self.elements = _tuple(elements)


class DictDoc(ExprDoc):
    """A dict literal; ``keys`` and ``values`` in insertion order."""

    __slots__ = ("keys", "values")

    def __init__(self, content: dict[ExprDoc, ExprDoc]) -> None:
        super().__init__()
        self.keys, self.values = tuple(content), tuple(content.values())


class SliceDoc(ExprDoc):
    """``start:stop:step`` inside an index; each part may be left out."""

    __slots__ = ("start", "stop", "step")

    def __init__(self, start: ExprDoc | None = None, stop: ExprDoc | None = None,
                 step: ExprDoc | None = None) -> None:
        super().__init__()
        self.start, self.stop, self.step = start, stop, step


class AssignDoc(StmtDoc):
    """``lhs: annotation = rhs`` (either the annotation or the value may be left out, not both)."""

    __slots__ = ("lhs", "rhs", "annotation")

    def __init__(self, lhs: ExprDoc, rhs: ExprDoc | None, annotation: ExprDoc | None = None) -> None:
        if rhs is None and annotation is None:
            raise ValueError("At least one of rhs and annotation needs to be non-null for AssignDoc.")
        if annotation is not None and not isinstance(lhs, IdDoc):
            raise ValueError("annotation can only be nonnull if lhs is an identifier.")
        super().__init__()
        self.lhs, self.rhs, self.annotation = lhs, rhs, annotation


class IfDoc(StmtDoc):
    """``if predicate: ... else: ...`` (at least one branch must hold a statement)."""

    __slots__ = ("predicate", "then_branch", "else_branch")

    def __init__(self, predicate: ExprDoc, then_branch: Sequence[StmtDoc], else_branch: Sequence[StmtDoc]) -> None:
        if not then_branch and not else_branch:
            raise ValueError("At least one of the then branch or else branch needs to be non-empty.")
        super().__init__()
        self.predicate, self.then_branch, self.else_branch = predicate, _tuple(then_branch), _tuple(else_branch)


class WhileDoc(StmtDoc):
    """``while predicate: body``."""

    __slots__ = ("predicate", "body")

    def __init__(self, predicate: ExprDoc, body: Sequence[StmtDoc]) -> None:
        super().__init__()
        self.predicate, self.body = predicate, _tuple(body)


class BreakDoc(StmtDoc):
    """``break``."""

    __slots__ = ()


class ContinueDoc(StmtDoc):
    """``continue``."""

    __slots__ = ()


class ForDoc(StmtDoc):
    """``for lhs in rhs: body``."""

    __slots__ = ("lhs", "rhs", "body")

    def __init__(self, lhs: ExprDoc, rhs: ExprDoc, body: Sequence[StmtDoc]) -> None:
        super().__init__()
        self.lhs, self.rhs, self.body = lhs, rhs, _tuple(body)


class ScopeDoc(StmtDoc):
    """``with rhs as lhs: body`` (``lhs`` may be None)."""

    __slots__ = ("lhs", "rhs", "body")

    def __init__(self, lhs: ExprDoc | None, rhs: ExprDoc, body: Sequence[StmtDoc]) -> None:
        super().__init__()
        self.lhs, self.rhs, self.body = lhs, rhs, _tuple(body)


class ExprStmtDoc(StmtDoc):
    """An expression on a line of its own."""

    __slots__ = ("expr",)

    def __init__(self, expr: ExprDoc) -> None:
        super().__init__()
        self.expr = expr


class AssertDoc(StmtDoc):
    """``assert test, msg``."""

    __slots__ = ("test", "msg")

    def __init__(self, test: ExprDoc, msg: ExprDoc | None = None) -> None:
        super().__init__()
        self.test, self.msg = test, msg


class ReturnDoc(StmtDoc):
    """``return value``."""

    __slots__ = ("value",)

    def __init__(self, value: ExprDoc) -> None:
        super().__init__()
        self.value = value


class FunctionDoc(StmtDoc):
    """A function definition: decorators, ``def name(args) -> return_type:`` and the body; a
    comment prints as its docstring."""

    __slots__ = ("name", "args", "decorators", "return_type", "body")

    def __init__(self, name: IdDoc, args: Sequence[AssignDoc], decorators: Sequence[ExprDoc],
                 return_type: ExprDoc | None, body: Sequence[StmtDoc]) -> None:
        super().__init__()
        self.name, self.args, self.decorators = name, _tuple(args), _tuple(decorators)
        self.return_type, self.body = return_type, _tuple(body)


class ClassDoc(StmtDoc):
    """A class definition; a comment prints as its docstring."""

    __slots__ = ("name", "decorators", "body")

    def __init__(self, name: IdDoc, decorators: Sequence[ExprDoc], body: Sequence[StmtDoc]) -> None:
        super().__init__()
        self.name, self.decorators, self.body = name, _tuple(decorators), _tuple(body)


class CommentDoc(StmtDoc):
    """Comment lines (``# ...``), one per line of ``comment``."""

    __slots__ = ()

    def __init__(self, comment: str) -> None:
        super().__init__()
        self.comment = comment


class DocStringDoc(StmtDoc):
    """A triple-quoted docstring."""

    __slots__ = ()

    def __init__(self, docs: str) -> None:
        super().__init__()
        self.comment = docs
