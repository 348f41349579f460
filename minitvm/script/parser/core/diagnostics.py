"""TVM's ``tvm.script.parser.core.diagnostics.Source``: a program's text and where it sits."""

from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any

__all__ = ["Source"]


class Source:
    """The text of ``program`` (a string, or a function or class read from its file):
    ``source_name``, ``start_line``, ``start_column``, ``source``, ``full_source`` (the whole
    file), and ``as_ast()`` (the text parsed, dedented)."""

    def __init__(self, program: str | Any) -> None:
        if isinstance(program, str):
            self.source_name, self.start_line, self.start_column = "<str>", 1, 0
            self.source = self.full_source = program
            return
        self.source_name = inspect.getsourcefile(program)
        lines, self.start_line = inspect.getsourcelines(program)
        first = next((ln for ln in lines if ln.strip()), "")
        self.start_column = len(first) - len(first.lstrip())
        self.source = "".join(lines)
        module = inspect.getmodule(program)
        self.full_source = inspect.getsource(module) if module is not None else self.source

    def as_ast(self) -> ast.Module:
        return ast.parse(textwrap.dedent(self.source))
