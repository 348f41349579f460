"""Operators: named primitives (``relax.add``) and the registry of their attributes.

An :class:`Op` is a singleton per name: ``Op.get("relax.add")`` always returns the same
object, so ``call.op == Op.get("relax.add")`` compares by identity.  What an operator
*means* lives in its attributes, set by the layer that defines it:
``"FInferStructInfo"`` (output struct info of a call), ``"FLegalize"`` (lowering to
TensorIR), ``"TOpPattern"`` (fusion kind), ``"FPurity"`` (no side effects) ...
"""

from __future__ import annotations

from typing import Any, Callable

from ..error import TVMError
from .node import Node, node

__all__ = ["Op", "register_op", "register_op_attr", "OpNotRegisteredError"]


class OpNotRegisteredError(TVMError, KeyError):
    """``Op.get`` of a name nobody registered."""

    def __str__(self) -> str:  # KeyError quotes its message; show it plainly
        return str(self.args[0])


_OPS: dict[str, "Op"] = {}
# attribute name -> {op name -> (value, level)}
_ATTRS: dict[str, dict[str, tuple[Any, int]]] = {}


@node
class Op(Node):
    """A primitive operator; compare ops with ``is`` / ``==`` (one object per name)."""

    name: str
    description: str = ""
    num_inputs: int = -1  # -1: variadic

    def __repr__(self) -> str:
        return f"Op({self.name})"

    @staticmethod
    def get(op_name: str) -> "Op":
        """The registered operator ``op_name`` (``Op.get("relax.add")``)."""
        try:
            return _OPS[op_name]
        except KeyError:
            close = sorted(n for n in _OPS if n.split(".")[-1] == op_name.split(".")[-1])
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise OpNotRegisteredError(f"operator {op_name!r} is not registered{hint}") from None

    @staticmethod
    def list_op_names() -> list[str]:
        return sorted(_OPS)

    def get_attr(self, attr_name: str) -> Any:
        """The value of attribute ``attr_name`` for this op, or None when unset."""
        entry = _ATTRS.get(attr_name, {}).get(self.name)
        return None if entry is None else entry[0]

    def has_attr(self, attr_name: str) -> bool:
        return self.name in _ATTRS.get(attr_name, {})

    def set_attr(self, attr_name: str, value: Any, plevel: int = 10) -> None:
        """Set an attribute; a value at a higher ``plevel`` overrides a lower one, an equal
        level may not be set twice (two layers disagreeing is a bug worth hearing about)."""
        table = _ATTRS.setdefault(attr_name, {})
        old = table.get(self.name)
        if old is not None:
            if old[1] > plevel:
                return
            if old[1] == plevel and old[0] is not value:
                raise ValueError(f"attribute {attr_name!r} of operator {self.name} is already set "
                                 f"at level {plevel}; use a higher plevel to override it")
        table[self.name] = (value, plevel)

    def reset_attr(self, attr_name: str) -> None:
        _ATTRS.get(attr_name, {}).pop(self.name, None)


def register_op(op_name: str, description: str = "", num_inputs: int = -1) -> Op:
    """Create the operator ``op_name`` (or return it when it exists)."""
    op = _OPS.get(op_name)
    if op is None:
        op = _OPS[op_name] = Op(op_name, description, num_inputs)
    return op


def register_op_attr(op_name: str, attr_key: str, value: Any = None,
                     level: int = 10) -> Callable | None:
    """Set ``attr_key`` of an op, registering the op when nobody has (as TVM does, so a
    custom operator is defined by its attributes); without ``value`` it is a decorator::

        @register_op_attr("relax.add", "FLegalize")
        def _legalize_add(bb, call): ...
    """
    op = register_op(op_name)

    def apply(v: Any) -> Any:
        op.set_attr(attr_key, v, level)
        return v

    return apply if value is None else apply(value)
