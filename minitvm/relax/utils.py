"""Relax helpers under TVM's ``relax.utils`` names: ``convert_to_expr``, ``copy_with_new_vars``
and ``args_converter`` (decorators turning a function's Python arguments into Relax values)."""

from __future__ import annotations

import functools
import inspect
import typing
from typing import Any, Callable, List, Optional

from ..tir.expr import FloatImm, IntImm, PrimExpr
from ..tir.expr import StringImm as TirStringImm
from .expr import Expr, Function, PrimValue, StringImm, Tuple
from .transform._util import CopyWithNewVars

__all__ = ["convert_to_expr", "copy_with_new_vars", "args_converter"]


def convert_to_expr(value: Any) -> Expr:
    """A Relax value for ``value``: itself when it is one; an int or float or PrimExpr a
    ``PrimValue`` (int64 / float64 for Python numbers); a str a ``StringImm``; a tuple or list
    a ``Tuple`` of the converted items."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool) or isinstance(value, int):
        return PrimValue(IntImm("int64", int(value)))
    if isinstance(value, float):
        return PrimValue(FloatImm("float64", value))
    if isinstance(value, TirStringImm):
        raise TypeError("Cannot convert a tir.StringImm to a relax.Expr: it could be a relax.StringImm or "
                        "a relax.PrimValue")
    if isinstance(value, PrimExpr):
        return PrimValue(value)
    if isinstance(value, str):
        return StringImm(value)
    if isinstance(value, (tuple, list)):
        return Tuple([convert_to_expr(v) for v in value])
    raise TypeError(f"Cannot convert {value!r} of type {type(value).__name__} to a relax.Expr")


def copy_with_new_vars(func: Function) -> Function:
    """``func`` again with every variable it defines a new one (to add it to a module twice)."""
    return CopyWithNewVars().visit_expr(func)


class _ArgsConverter:
    """``args_converter.to_expr("x", ...)``, ``.to_list_expr(...)`` and ``.auto``: decorators
    converting the named arguments (``*args`` and ``**kwargs`` item by item) with
    :func:`convert_to_expr` before the call; None stays None."""

    @staticmethod
    def convert(args_to_expr: list[str], args_to_list_expr: list[str]) -> Callable:
        if set(args_to_expr) & set(args_to_list_expr):
            raise ValueError("`args_to_expr` and `args_to_list_expr` should be disjoint.")

        def convert_one(name: str, value: Any) -> Any:
            if value is None or (name not in args_to_expr and name not in args_to_list_expr):
                return value
            want = "Expr" if name in args_to_expr else "List[Expr]"
            try:
                if name in args_to_expr:
                    return convert_to_expr(value)
                return [convert_to_expr(v) for v in value]
            except Exception as err:
                raise TypeError(f"Argument `{name}` is expected to be converted to `{want}`, but failed with "
                                f"input value: {value!r}") from err

        def decorate(func: Callable) -> Callable:
            sig = inspect.signature(func)
            for name in args_to_expr + args_to_list_expr:
                if name not in sig.parameters:
                    raise ValueError(f"Argument `{name}` is not found in the signature of {func.__name__}.")

            @functools.wraps(func)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                bound = sig.bind(*args, **kwargs)
                bound.apply_defaults()
                for param in sig.parameters.values():
                    value = bound.arguments[param.name]
                    if param.kind == param.VAR_POSITIONAL:
                        bound.arguments[param.name] = tuple(convert_one(param.name, v) for v in value)
                    elif param.kind == param.VAR_KEYWORD:
                        bound.arguments[param.name] = {k: convert_one(param.name, v) for k, v in value.items()}
                    else:
                        bound.arguments[param.name] = convert_one(param.name, value)
                return func(*bound.args, **bound.kwargs)

            return wrapper

        return decorate

    @staticmethod
    def to_expr(*arg_names: str) -> Callable:
        return _ArgsConverter.convert(list(arg_names), [])

    @staticmethod
    def to_list_expr(*arg_names: str) -> Callable:
        return _ArgsConverter.convert([], list(arg_names))

    @staticmethod
    def auto(func: Callable) -> Callable:
        """Convert the arguments annotated ``Expr`` / ``Optional[Expr]`` (to Expr) and
        ``List[Expr]`` / ``Optional[List[Expr]]`` (to a list of Expr)."""
        try:
            hints = typing.get_type_hints(func)
        except Exception:  # an annotation that does not resolve: read them as written
            hints = {}
        to_expr, to_list = [], []
        for param in inspect.signature(func).parameters.values():
            anno = hints.get(param.name, param.annotation)
            if anno in (Expr, Optional[Expr]):
                to_expr.append(param.name)
            elif anno in (List[Expr], Optional[List[Expr]], list[Expr], Optional[list[Expr]]):
                to_list.append(param.name)
        return _ArgsConverter.convert(to_expr, to_list)(func)


args_converter = _ArgsConverter()
