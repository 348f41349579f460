"""TVMScript: write IR as Python (``from minitvm.script import tir as T, relax as R, ir as I``)
and print it back.

``from_source(text)`` parses printed text, the inverse of ``node.script()``.
"""

from __future__ import annotations

import ast
import contextlib
from typing import Any

from ..ir import diagnostics as _diagnostics
from ..ir import json_io as _json_io
from ..ir.deep import deep
from ..ir.span import Span
from . import ir, relax, relax_parser, relax_printer, tir  # noqa: F401 - register the Relax dialect
from .data_mode import data_only as data_only_parsing
from .diagnostics import Source, TVMScriptError
from .ir import function_decorator, ir_module, parse_module_class
from .parser import _TIRParser
from .printer import script, show, to_html

__all__ = ["tir", "relax", "ir", "ir_module", "from_source", "TVMScriptError", "script", "show", "to_html"]


@deep
def from_source(text: str, extra_vars: dict[str, Any] | None = None, check_well_formed: bool = True, *,
                data_only: bool = False) -> Any:
    """Parse TVMScript text (an ``@I.ir_module`` class or one ``@T.prim_func``).

    Names the text uses besides ``T``, ``R`` and ``I`` come from ``extra_vars``;
    ``check_well_formed=False`` skips the well-formedness check of its Relax functions
    (as their own ``@R.function(check_well_formed=False)`` would).  ``data_only=True`` is for
    text read from a file (a tuning database): only TVMScript is built, and any other Python
    in it (a lambda, ``__import__``, an attribute of a string) is refused, never evaluated.
    """

    source = Source.from_text(text)
    namespace = {"T": tir, "R": relax, "I": ir, **(extra_vars or {})}
    try:
        with data_only_parsing() if data_only else contextlib.nullcontext():
            return _parse_text(source, namespace, check_well_formed)
    except TVMScriptError as err:
        # a renderer set with tvm.ir.diagnostics.override_renderer sees the error first
        _diagnostics.render([_diagnostics.Diagnostic(
            _diagnostics.DiagnosticLevel.ERROR, Span(err.filename, err.lineno, err.col, err.line_text),
            err.reason)])
        raise err.with_traceback(None) from None


def _parse_text(source: Source, namespace: dict, check_well_formed: bool) -> Any:
    tree = source.parse()
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef):
            return parse_module_class(stmt, source, namespace, check_well_formed)
        if isinstance(stmt, ast.FunctionDef):
            evaluator = _TIRParser(source, namespace)
            parser, options = function_decorator(stmt, evaluator)
            if not check_well_formed:
                options = {**options, "check_well_formed": False}
            return parser.parse(stmt, source, namespace, options, {}, None)
    raise TVMScriptError("from_source found no @I.ir_module class or decorated function")


def _read_saved(text: str) -> Any:
    return from_source(text, data_only=True)


_json_io.READER = _read_saved  # tvm.ir.load_json reads the TVMScript that save_json wrote
