"""TVM's ``tvm.script.parser.core.evaluator.ExprEvaluator``: the value of a Python expression
node, its names read from a value table.  It is minitvm's TVMScript evaluator (no ``eval``)."""

from __future__ import annotations

import ast
from typing import Any

from ...diagnostics import Source
from .. import _TIRParser

__all__ = ["ExprEvaluator"]


class ExprEvaluator:
    """Evaluates expression nodes as the TVMScript parser does."""

    @staticmethod
    def eval(parser: Any, value_table: dict[str, Any], node: ast.expr) -> Any:
        """The value of ``node`` with ``value_table``'s names (``parser`` is TVM's parser object,
        unused: the evaluator needs only the names)."""
        return _TIRParser(Source.from_text(""), dict(value_table)).eval(node)
