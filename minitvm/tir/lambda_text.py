"""Index-map lambdas read back from text, by a parser that admits only index arithmetic.

A trace saved in a tuning database holds its index maps (``transform_layout``,
``reindex_cache_read``, ``annotate_buffer_access`` ...) as the text ``lambda i, j: (j, i)``.
That text comes from a file, so it is never given to ``eval``: :func:`parse_index_lambda`
walks its ``ast`` and admits the lambda's parameters, integer (and float, for a pad value)
literals, tuples and lists, ``+ - * // %``, comparisons, unary minus and the ``T.`` helpers
the printer writes for index expressions (``T.floordiv``, ``T.max``, ``T.int64(4)``,
``T.Cast("int64", i)`` ...).  Anything else is refused with a :class:`LambdaTextError`
naming the text.
"""

from __future__ import annotations

import ast
import inspect
import operator
from typing import Any, Callable

from . import op as _op
from .expr import const

__all__ = ["LambdaTextError", "parse_index_lambda"]


class LambdaTextError(ValueError):
    """Index-map text that is not arithmetic on the lambda's parameters."""


_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod}
_CMPOPS = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
           ast.Eq: operator.eq, ast.NotEq: operator.ne}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos}
# T.<name>(...) the printer writes inside index expressions
_HELPERS = {name: getattr(_op, name) for name in
            ("floordiv", "floormod", "truncdiv", "truncmod", "min", "max", "ceildiv", "if_then_else", "Select")}
_HELPERS["Div"] = _op.truncdiv  # how the printer (as TVM's) spells an integer Div
_DTYPES = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                     "float16", "float32", "float64", "bool"})
_DATA = "; a trace is read as data, never run"
_AXIS_SEPARATOR = "axis_separator"  # IndexMap.AXIS_SEPARATOR, as a mapping's result prints it


def parse_index_lambda(text: str) -> Callable[..., Any]:
    """The function ``text`` (``lambda i, j: (j, i)``) spells, built without evaluating it."""
    shown = text if len(text) <= 120 else text[:117] + "..."
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise LambdaTextError(f"index map {shown!r} is not a lambda ({e.msg}){_DATA}") from None
    except (ValueError, RecursionError, MemoryError) as e:  # a 5,000-digit literal, nesting too deep
        raise LambdaTextError(f"index map {shown!r} cannot be read ({type(e).__name__}: {e}){_DATA}") from None
    fn = tree.body
    if not isinstance(fn, ast.Lambda):
        raise LambdaTextError(f"index map {shown!r} is not a lambda{_DATA}")
    args = fn.args
    if args.posonlyargs or args.vararg or args.kwonlyargs or args.kwarg or args.defaults:
        raise LambdaTextError(f"index map {shown!r}: a lambda of plain parameters only{_DATA}")
    params = [a.arg for a in args.args]
    if len(set(params)) != len(params):
        raise LambdaTextError(f"index map {shown!r}: a parameter is named twice{_DATA}")
    try:
        _Checker(set(params), shown).check(fn.body)
    except RecursionError:
        raise LambdaTextError(f"index map {shown!r} is nested too deeply{_DATA}") from None

    def mapping(*values: Any) -> Any:
        if len(values) != len(params):
            raise TypeError(f"index map {shown!r} takes {len(params)} indices, got {len(values)}")
        return _evaluate(fn.body, dict(zip(params, values)))

    mapping.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in params])
    mapping.__name__ = mapping.__qualname__ = "<lambda>"
    return mapping


class _Checker:
    """Refuses, before anything is built, every node that is not index arithmetic."""

    def __init__(self, params: set[str], shown: str):
        self.params, self.shown = params, shown

    def refuse(self, node: ast.AST, why: str) -> LambdaTextError:
        part = ast.unparse(node)
        part = part if len(part) <= 60 else part[:57] + "..."
        return LambdaTextError(f"index map {self.shown!r}: {part} is not index arithmetic ({why}){_DATA}")

    def check(self, node: ast.AST) -> None:
        if isinstance(node, ast.Name):
            if node.id not in self.params:
                raise self.refuse(node, "not a parameter of the lambda")
        elif isinstance(node, ast.Constant):
            if node.value is True or node.value is False or not (
                    isinstance(node.value, (int, float)) or node.value == _AXIS_SEPARATOR):
                raise self.refuse(node, "only number literals")
        elif isinstance(node, (ast.Tuple, ast.List)):
            for e in node.elts:
                self.check(e)
        elif isinstance(node, ast.BinOp):
            if type(node.op) not in _BINOPS:
                raise self.refuse(node, "operators are + - * // %")
            self.check(node.left)
            self.check(node.right)
        elif isinstance(node, ast.UnaryOp):
            if type(node.op) not in _UNARY:
                raise self.refuse(node, "unary operators are - and +")
            self.check(node.operand)
        elif isinstance(node, ast.Compare):
            if any(type(o) not in _CMPOPS for o in node.ops):
                raise self.refuse(node, "comparisons are < <= > >= == !=")
            for e in (node.left, *node.comparators):
                self.check(e)
        elif isinstance(node, ast.Call):
            self.check_call(node)
        else:
            raise self.refuse(node, f"a {type(node).__name__}")

    def check_call(self, node: ast.Call) -> None:
        name = _helper_name(node.func)
        if name is None or not (name in _HELPERS or name in _DTYPES or name == "Cast"):
            raise self.refuse(node.func, "calls are to T.floordiv, T.floormod, T.truncdiv, T.truncmod, "
                                         "T.min, T.max, T.ceildiv, T.if_then_else, T.Select, T.Cast and "
                                         "T.<dtype>")
        if node.keywords:
            raise self.refuse(node, "positional arguments only")
        args = node.args
        if name == "Cast":
            if len(args) != 2 or not (isinstance(args[0], ast.Constant) and args[0].value in _DTYPES):
                raise self.refuse(node, 'T.Cast("<dtype>", value)')
            self.check(args[1])
            return
        if name in _DTYPES and len(args) != 1:
            raise self.refuse(node, f"T.{name} takes one value")
        for a in args:
            self.check(a)


def _helper_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "T":
        return func.attr
    return None


def _evaluate(node: ast.AST, env: dict[str, Any]) -> Any:
    """The value of a node :class:`_Checker` admitted, the parameters bound to ``env``."""
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Tuple):
        return tuple(_evaluate(e, env) for e in node.elts)
    if isinstance(node, ast.List):
        return [_evaluate(e, env) for e in node.elts]
    if isinstance(node, ast.BinOp):
        return _BINOPS[type(node.op)](_evaluate(node.left, env), _evaluate(node.right, env))
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_evaluate(node.operand, env))
    if isinstance(node, ast.Compare):
        left, result = _evaluate(node.left, env), None
        for o, right_node in zip(node.ops, node.comparators):
            right = _evaluate(right_node, env)
            this = _CMPOPS[type(o)](left, right)
            result = this if result is None else _op.logical_and(result, this)
            left = right
        return result
    name = _helper_name(node.func)  # a call, checked
    if name == "Cast":
        return _op.cast(_evaluate(node.args[1], env), node.args[0].value)
    args = [_evaluate(a, env) for a in node.args]
    if name in _DTYPES:
        return const(args[0], name)
    return _HELPERS[name](*args)
