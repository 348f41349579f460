"""``PyStmtExprVisitor`` / ``PyStmtExprMutator`` (TVM's ``tvm.tir``): visitors whose every
``visit_<node>_`` hook exists, so a subclass's hook can call ``super().visit_add_(op)`` to go
on into the node's children as TVM's base classes do."""

from __future__ import annotations

from typing import Any, Callable

from ..ir.node import Node
from . import expr as _expr
from . import stmt as _stmt
from .functor import StmtExprMutator, StmtExprVisitor, method_name

__all__ = ["PyStmtExprVisitor", "PyStmtExprMutator"]


def _node_classes() -> list[type]:
    found = []
    for module in (_expr, _stmt):
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Node) and value.__module__ == module.__name__:
                found.append(value)
    return found


def _children_hook() -> Callable[[Any, Any], Any]:
    def hook(self: Any, op: Any) -> Any:
        return self.visit_children(op)

    return hook


class PyStmtExprVisitor(StmtExprVisitor):
    """A visitor with a default ``visit_<node>_`` for every TIR node: visit its children."""


class PyStmtExprMutator(StmtExprMutator):
    """A mutator with a default ``visit_<node>_`` for every TIR node: rebuild it from its
    visited children (the node itself when none changed)."""


for _cls in _node_classes():
    for _base in (PyStmtExprVisitor, PyStmtExprMutator):
        setattr(_base, method_name(_cls), _children_hook())
