"""Visitors and mutators over TIR.

Subclass :class:`StmtExprVisitor` or :class:`StmtExprMutator` and define
``visit_<node>_`` for the nodes you care about (``visit_for_``, ``visit_buffer_load_``,
``visit_add_`` ...); every other node is walked (or rebuilt) generically through its
fields.  Buffers are leaves: their shapes are not walked.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from ..ir.node import Node, fields_not_declared, replace
from .buffer import Buffer
from .expr import PrimExpr, Var
from .stmt import Stmt

__all__ = ["StmtExprVisitor", "StmtExprMutator", "post_order_visit", "pre_order_visit",
           "substitute", "method_name", "hook_of", "walked_fields", "visitor", "mutator"]

_NAMES: dict[type, str] = {}
#: field values no walk descends into (checked before the call that would return at once)
_LEAVES = (str, int, float)
#: field annotations that declare a leaf (the walks skip such values anyway)
_LEAF_TYPES = frozenset({"str", "int", "float", "bool", "str | None", "int | None", "float | None"})
#: node class -> the fields a walk looks into: those not declared as leaves (a Var's name and
#: dtype, an IntImm's value), worked out once per class -- the walks visit every node
_WALKED: dict[type, tuple[str, ...]] = {}


def walked_fields(cls: type) -> tuple[str, ...]:
    """The fields of node class ``cls`` that may hold nodes (leaf-typed ones left out), cached."""
    fields = _WALKED.get(cls)
    return fields if fields is not None else _walked_fields(cls)


def _walked_fields(cls: type) -> tuple[str, ...]:
    found = _WALKED[cls] = fields_not_declared(cls, _LEAF_TYPES)
    return found


def method_name(cls: type) -> str:
    """``BlockRealize`` -> ``visit_block_realize_`` (cached)."""
    name = _NAMES.get(cls)
    if name is None:
        snake = re.sub(r"(?<=[a-z0-9])([A-Z])|(?<=[A-Z])([A-Z][a-z])", r"_\1\2", cls.__name__).lower()
        name = _NAMES[cls] = f"visit_{snake}_"
    return name


#: what the walks do with a value that is no node to hook (:func:`_find_hook`): walk a
#: sequence's items, or leave it (a number, a name, a buffer)
_ITEMS, _LEAF = 1, 2


def _find_hook(visitor: Any, kind: type) -> str | int | None:
    """What ``visitor`` does with a value of type ``kind``: the name of its hook (None: walk
    the node's children), ``_ITEMS`` or ``_LEAF``; remembered in the visitor class's own
    ``_hooks``, so a walk pays one dict lookup per value, not a getattr that misses (~1 us) or
    three isinstance checks."""
    if issubclass(kind, PrimExpr) and _hooks_statements_only(type(visitor)):
        found = _LEAF
    elif issubclass(kind, Node) and not issubclass(kind, Buffer):
        found = _hook_name(type(visitor), kind)
        if found is None and not walked_fields(kind) and _walks_children_as_base(type(visitor)):
            found = _LEAF  # (a constant: nothing inside to walk or rebuild)
    elif issubclass(kind, tuple) or (issubclass(kind, list) and not isinstance(visitor, StmtExprMutator)):
        found = _ITEMS  # (a mutator leaves lists alone: nodes hold tuples)
    else:
        found = _LEAF
    visitor._hooks[kind] = found
    return found


def _hooks_statements_only(cls: type) -> bool:
    """Whether a walk of class ``cls`` may leave expressions unvisited: it keeps the base
    ``visit`` and ``visit_children`` and its hooks are all for statements (or a PrimFunc).  An
    expression holds no statement, so none of its hooks could run inside one, and a mutator
    would give it back as it is -- passes that look for blocks or loops need not walk every
    index and value."""
    known = cls.__dict__.get("_statements_only")
    if known is None:
        hooks = {name for name in dir(cls) if name.startswith("visit_") and name.endswith("_")}
        known = cls.visit is _base_walker(cls).visit and _walks_children_as_base(cls) and hooks <= _statement_hooks()
        cls._statements_only = known  # (the class's own: a subclass decides for itself)
    return known


def _base_walker(cls: type) -> type:
    """The base class whose walk ``cls`` extends: StmtExprMutator or StmtExprVisitor."""
    return StmtExprMutator if issubclass(cls, StmtExprMutator) else StmtExprVisitor


def _walks_children_as_base(cls: type) -> bool:
    return cls.visit_children is _base_walker(cls).visit_children


def _statement_hooks() -> set[str]:
    """The hook names of every statement class (and of a PrimFunc)."""
    names = {"visit_prim_func_"}
    todo = [Stmt]
    while todo:
        cls = todo.pop()
        names.add(method_name(cls))
        todo += cls.__subclasses__()
    return names


def _hook_name(cls: type, node: type) -> str | None:
    """``visit_<node>_`` when class ``cls`` defines it, else None."""
    name = method_name(node)
    return name if hasattr(cls, name) else None


#: (class, node class) -> hook name or None, for the emitters' dispatch (:func:`hook_of`)
_CLASS_HOOKS: dict[tuple[type, type], str | None] = {}


def hook_of(obj: Any, node: type) -> Any:
    """``obj``'s bound ``visit_<node>_`` method, or None: as ``getattr(obj, name, None)``, with
    the class's answer remembered (for classes made once, such as the code emitters)."""
    key = (type(obj), node)
    name = _CLASS_HOOKS.get(key, False)
    if name is False:
        name = _CLASS_HOOKS[key] = _hook_name(type(obj), node)
    return None if name is None else getattr(obj, name)


def _own_hooks(cls: type) -> None:
    cls._hooks = {}  # per class (a subclass has hooks of its own), gone with the class


def _walkable(value: Any) -> bool:
    return isinstance(value, Node) and not isinstance(value, Buffer)


class StmtExprVisitor:
    """Walks statements and expressions; override ``visit_<node>_`` hooks."""

    _hooks: dict[type, str | None] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _own_hooks(cls)

    def visit(self, n: Any) -> None:
        hook = self._hooks.get(type(n), False)
        if hook is False:
            hook = _find_hook(self, type(n))
        if hook is None:
            self.visit_children(n)
        elif hook.__class__ is str:
            getattr(self, hook)(n)
        elif hook is _ITEMS:
            for x in n:
                self.visit(x)

    # TVM spells these visit_stmt / visit_expr
    visit_stmt = visit
    visit_expr = visit

    def visit_children(self, n: Node) -> None:
        fields = _WALKED.get(type(n))
        for name in fields if fields is not None else _walked_fields(type(n)):
            value = getattr(n, name)
            if isinstance(value, _LEAVES) or value is None:  # a dtype, a name, a number: nothing to walk
                continue
            if isinstance(value, dict):
                if name == "buffer_map":
                    continue
                value = tuple(value.values())
            self.visit(value)


class StmtExprMutator:
    """Rebuilds a tree bottom-up; nodes whose children did not change are kept as they are."""

    _hooks: dict[type, str | None] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _own_hooks(cls)

    def visit(self, n: Any) -> Any:
        hook = self._hooks.get(type(n), False)
        if hook is False:
            hook = _find_hook(self, type(n))
        if hook is None:
            return self.visit_children(n)
        if hook.__class__ is str:
            return getattr(self, hook)(n)
        if hook is _ITEMS:
            new = [self.visit(x) for x in n]
            for a, b in zip(new, n):
                if a is not b:
                    return tuple(new)
        return n

    visit_stmt = visit
    visit_expr = visit

    def visit_children(self, n: Node) -> Node:
        changes = {}
        fields = _WALKED.get(type(n))
        for name in fields if fields is not None else _walked_fields(type(n)):
            value = getattr(n, name)
            if isinstance(value, _LEAVES) or value is None or isinstance(value, dict):
                continue
            new = self.visit(value)
            if new is not value:
                changes[name] = new
        if not changes:
            return n
        if type(n).__name__ in ("IRModule",):
            return n
        return replace(n, **changes)


def _python_functor(base: type, what: str) -> Callable[[type], type]:
    def decorate(cls: type) -> type:
        if not (isinstance(cls, type) and issubclass(cls, base)):
            raise TypeError(f"tir.functor.{what} decorates a subclass of {base.__name__}, got {cls!r}")
        return cls

    decorate.__doc__ = (f"TVM's ``@tir.functor.{what}``: TVM registers the class with its C++ {what}; "
                        f"minitvm's {base.__name__} is Python already, so the class is returned as it is.")
    return decorate


visitor = _python_functor(StmtExprVisitor, "visitor")
mutator = _python_functor(StmtExprMutator, "mutator")


def _children(x: Node) -> Any:
    """What the visitors walk inside ``x``: its fields (a dict field's values; no buffer_map)."""
    fields = _WALKED.get(type(x))
    for name in fields if fields is not None else _walked_fields(type(x)):
        value = getattr(x, name)
        if isinstance(value, _LEAVES) or value is None:
            continue
        if isinstance(value, dict):
            if name == "buffer_map":
                continue
            value = tuple(value.values())
        yield value


#: how the plain walks (:func:`post_order_visit`, :func:`pre_order_visit`) treat a value, by its
#: type: a node to visit, a sequence of values, a dict (a field's values are walked), or nothing
#: (all true: ``_KINDS.get(t) or _kind(t)``)
_NODE, _SEQ, _DICT, _SKIP = 1, 2, 3, 4
_KINDS: dict[type, int] = {}


def _kind(cls: type) -> int:
    if issubclass(cls, (tuple, list)):
        kind = _SEQ
    elif issubclass(cls, dict):
        kind = _DICT
    elif issubclass(cls, Node) and not issubclass(cls, Buffer):
        kind = _NODE
    else:
        kind = _SKIP
    _KINDS[cls] = kind
    return kind


def _plain_walk(n: Any, before: Callable[[Any], Any] | None, after: Callable[[Any], None] | None) -> None:
    """Call ``before`` (parents first; False skips the subtree) or ``after`` (children first)
    on every node under ``n``: a field's dict gives its values (no buffer_map), a sequence its
    items.  One call per node, none per leaf value (a dtype, a name, None): these walks run
    thousands of times per compile."""
    kinds = _KINDS

    def node(x: Any) -> None:
        if before is not None and before(x) is False:
            return
        fields = _WALKED.get(type(x))
        for name in fields if fields is not None else _walked_fields(type(x)):
            value = getattr(x, name)
            kind = kinds.get(type(value)) or _kind(type(value))
            if kind == _NODE:
                node(value)
            elif kind == _SEQ:
                items(value)
            elif kind == _DICT and name != "buffer_map":
                items(tuple(value.values()))
        if after is not None:
            after(x)

    def items(xs: Any) -> None:
        for x in xs:
            kind = kinds.get(type(x)) or _kind(type(x))
            if kind == _NODE:
                node(x)
            elif kind == _SEQ:
                items(x)

    items((n,))


def post_order_visit(n: Any, fvisit: Callable[[Any], None]) -> None:
    """Call ``fvisit`` on every node (children before parents), as TVM's ``stmt_functor``.

    Plain recursion (no visitor class per call: this runs thousands of times per compile)."""
    _plain_walk(n, None, fvisit)


def pre_order_visit(n: Any, fvisit: Callable[[Any], bool | None]) -> None:
    """Call ``fvisit`` on every node, parents first; return False to skip a subtree."""
    _plain_walk(n, fvisit, None)


class _Substitute(StmtExprMutator):
    def __init__(self, vmap: dict):
        self.vmap = {id(k): v for k, v in vmap.items()}

    def visit(self, n: Any) -> Any:
        if isinstance(n, Var):
            return self.vmap.get(id(n), n)
        return super().visit(n)


class _SubstituteBy(StmtExprMutator):
    def __init__(self, fn: Callable[[Var], PrimExpr | None]):
        self.fn = fn

    def visit(self, n: Any) -> Any:
        if isinstance(n, Var):
            r = self.fn(n)
            return n if r is None else r
        return super().visit(n)


def substitute(n: Any, vmap: dict[Var, PrimExpr] | Callable[[Var], PrimExpr | None]) -> Any:
    """Replace variables in ``n``: ``vmap`` maps Var -> PrimExpr (or is a function)."""
    if callable(vmap) and not isinstance(vmap, dict):
        return _SubstituteBy(vmap).visit(n)
    if not vmap:  # nothing to replace: the walk would give ``n`` back (lowering a root block asks)
        return n
    return _Substitute(vmap).visit(n)
