"""Errors in TVMScript, reported at the culprit's place in the learner's source.

A :class:`Source` remembers where a parsed function's text came from (file, first
line, indentation removed before parsing), so an ``ast`` node's position can be
mapped back to the line the learner wrote and underlined with carets.
"""

from __future__ import annotations

import ast
import inspect
import os
import textwrap
from dataclasses import dataclass, field
from types import CodeType

from ..error import DiagnosticError, InternalError, TVMError
from ..ir.span import Span

__all__ = ["TVMScriptError", "Source", "USER_ERRORS", "blames_script"]

#: What a mistake in a script raises besides :class:`TVMScriptError`: the argument checks of
#: the functions a script calls (``T.*``, ``R.*``, ``tir.op``, struct info inference ...) and
#: the compiler's own located errors.  Any other type (KeyError, IndexError, AttributeError,
#: AssertionError ...) out of minitvm's code is a bug in minitvm, reported as one.
USER_ERRORS = (TypeError, ValueError, NameError, ArithmeticError, NotImplementedError, TVMError)

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _in_minitvm(code: CodeType) -> bool:
    return os.path.abspath(code.co_filename).startswith(_PACKAGE)


def blames_script(e: BaseException, script_operations: frozenset) -> bool:
    """Whether ``e``, caught while parsing, is the script's mistake rather than minitvm's bug.

    Besides :data:`USER_ERRORS`, an exception is the script's when the last minitvm frame it
    passed through is one of ``script_operations``: the parser's code objects that perform a
    Python operation the script wrote (``t[5]`` of a 2-tuple, a call of the script's own helper
    or lambda), whether the operation itself failed or the script's code it ran did.
    """
    if isinstance(e, InternalError):
        return False
    if isinstance(e, (TVMScriptError, *USER_ERRORS)):
        return True
    last = None
    tb = e.__traceback__
    while tb is not None:
        if _in_minitvm(tb.tb_frame.f_code):
            last = tb.tb_frame.f_code
        tb = tb.tb_next
    return last is None or last in script_operations


class TVMScriptError(DiagnosticError):
    """A mistake in TVMScript: the message names file, line and column and shows the line.

    ``reason`` is the one-line explanation alone; ``filename``, ``lineno`` and
    ``col`` (both 1-based) say where.
    """

    def __init__(self, reason: str, filename: str = "<unknown>", lineno: int = 0, col: int = 0,
                 line_text: str = "", caret_col: int = 0, width: int = 1):
        self.reason, self.filename, self.lineno, self.col = reason, filename, lineno, col
        self.line_text = line_text
        super().__init__(self._render(caret_col, width))

    def _render(self, caret_col: int, width: int) -> str:
        where = f"{self.filename}:{self.lineno}:{self.col}"
        if not self.line_text:
            return f"{self.reason}\n  --> {where}"
        gutter = " " * len(str(self.lineno))
        return (f"{self.reason}\n"
                f"  --> {where}\n"
                f" {gutter} |\n"
                f" {self.lineno} | {self.line_text}\n"
                f" {gutter} | {' ' * caret_col}{'^' * max(1, width)}")


TVMScriptError.__module__ = "minitvm.script"  # where learners import it from; shorter in tracebacks


@dataclass
class Source:
    """The text of one parsed function (or module) and where it sits in its file."""

    text: str  # dedented text handed to ast.parse
    filename: str = "<string>"
    line_offset: int = 0  # file line of the text's first line, minus one
    col_offset: int = 0  # indentation removed by dedenting
    file_lines: list[str] = field(default_factory=list)

    @staticmethod
    def from_object(obj) -> "Source":
        """The source of a Python function (works in files and in Jupyter cells)."""
        try:
            lines, first_line = inspect.getsourcelines(obj)
        except (OSError, TypeError) as e:
            raise TVMScriptError(
                f"cannot read the source of {getattr(obj, '__qualname__', obj)!r} ({e}); "
                "TVMScript needs the function's text, e.g. from a .py file or a notebook cell",
                getattr(getattr(obj, "__code__", None), "co_filename", "<unknown>"),
            ) from None
        raw = "".join(lines)
        text = textwrap.dedent(raw)
        first_raw = next((ln for ln in lines if ln.strip()), "")
        first_dedented = next((ln for ln in text.splitlines(True) if ln.strip()), "")
        indent = len(first_raw) - len(first_dedented)
        if first_dedented[:1] in (" ", "\t"):
            # a continuation line (a closing parenthesis) sits left of the definition: strip the
            # definition's own indentation, and from such lines what they have (Python ignores
            # indentation inside brackets)
            indent = len(first_raw) - len(first_raw.lstrip())
            text = "".join(ln[min(indent, len(ln) - len(ln.lstrip())):] if ln.strip() else ln for ln in lines)
        filename = inspect.getsourcefile(obj) or obj.__code__.co_filename
        return Source(text, filename, first_line - 1, indent, [ln.rstrip("\n") for ln in lines])

    @staticmethod
    def from_text(text: str, filename: str = "<string>") -> "Source":
        return Source(text, filename, 0, 0, text.splitlines())

    def parse(self) -> ast.Module:
        try:
            return ast.parse(self.text)
        except SyntaxError as e:
            lineno = (e.lineno or 1)
            raise self.error_at(lineno, (e.offset or 1) - 1, 1, f"Python syntax error: {e.msg}") from None

    def span(self, node: ast.AST) -> Span:
        """Where ``node`` (an ast node of :attr:`text`) sits in its file."""
        lineno = getattr(node, "lineno", 1)
        index = lineno - 1
        line_text = self.file_lines[index].strip() if index < len(self.file_lines) else ""
        return Span(self.filename, lineno + self.line_offset, getattr(node, "col_offset", 0) + self.col_offset + 1,
                    line_text)

    def error(self, node: ast.AST, reason: str) -> TVMScriptError:
        """An error pointing at ``node`` (an ast node of :attr:`text`)."""
        lineno = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0)
        end_line = getattr(node, "end_lineno", lineno)
        end_col = getattr(node, "end_col_offset", None)
        if end_col is not None and end_line == lineno:
            width = end_col - col
        else:  # a compound statement: underline the rest of its first line
            index = lineno - 1
            line = self.text.splitlines()[index] if index < len(self.text.splitlines()) else ""
            width = max(1, len(line.rstrip()) - col)
        return self.error_at(lineno, col, width, reason)

    def internal_error(self, node: ast.AST, e: BaseException) -> InternalError:
        """A bug in minitvm met while parsing ``node``: says so, and where (raise it ``from e``)."""
        located = self.error(node, f"{type(e).__name__}: {e} (while parsing this TVMScript)")
        return InternalError(f"internal error in minitvm: {located}\n"
                             "This is a bug in minitvm, not in your script: the exception it chains "
                             "(above) shows where it happened.")

    def error_at(self, lineno: int, col: int, width: int, reason: str) -> TVMScriptError:
        """``lineno`` (1-based) and ``col`` (0-based) are positions in :attr:`text`."""
        index = lineno - 1
        line_text = self.file_lines[index] if 0 <= index < len(self.file_lines) else ""
        file_col = col + self.col_offset
        # show the line without its indentation; the caret moves left with it
        shown = line_text.lstrip()
        caret_col = max(0, file_col - (len(line_text) - len(shown)))
        return TVMScriptError(reason, self.filename, lineno + self.line_offset, file_col + 1,
                              shown.rstrip(), caret_col, width)
