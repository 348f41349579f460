"""Doc tree -> Python text (``tvm.script.printer.doc_printer.to_python_script``).

Lays a :mod:`doc` tree out as TVM's printer does: parentheses only where Python's precedence
needs them, statement comments inline (``x = y  # note``) or above a compound statement,
function and class comments as docstrings.  ``path_to_underline`` marks with carets the text of
the Docs whose ``source_paths`` best match each path (the deepest path that is a prefix of it),
and ``num_context_lines`` keeps that many lines around each underline, cutting the rest.
"""

from __future__ import annotations

import bisect
import io
import math
from collections.abc import Callable, Sequence

from ...ir.access_path import AccessPath
from ...tir.expr import FloatImm, IntImm
from .doc import (
    AssertDoc,
    AssignDoc,
    AttrAccessDoc,
    BreakDoc,
    CallDoc,
    ClassDoc,
    CommentDoc,
    ContinueDoc,
    DictDoc,
    Doc,
    DocStringDoc,
    ExprDoc,
    ExprStmtDoc,
    ForDoc,
    FunctionDoc,
    IdDoc,
    IfDoc,
    IndexDoc,
    LambdaDoc,
    ListDoc,
    LiteralDoc,
    OperationDoc,
    OperationKind,
    ReturnDoc,
    ScopeDoc,
    SliceDoc,
    StmtBlockDoc,
    StmtDoc,
    TupleDoc,
    WhileDoc,
)

__all__ = ["to_python_script", "str_escape"]

# Python's operator precedence, loosest first
(_LAMBDA, _IF_THEN_ELSE, _OR, _AND, _NOT, _COMPARISON, _BIT_OR, _BIT_XOR, _BIT_AND, _SHIFT, _ADD, _MULT,
 _UNARY, _EXP, _ATOM) = range(1, 16)

_K = OperationKind
#: operator -> (token, precedence)
_OPERATORS: dict[OperationKind, tuple[str, int]] = {
    _K.USub: ("-", _UNARY), _K.Invert: ("~", _UNARY), _K.Not: ("not ", _NOT),
    _K.Add: ("+", _ADD), _K.Sub: ("-", _ADD), _K.Mult: ("*", _MULT), _K.Div: ("/", _MULT),
    _K.FloorDiv: ("//", _MULT), _K.Mod: ("%", _MULT), _K.Pow: ("**", _EXP), _K.LShift: ("<<", _SHIFT),
    _K.RShift: (">>", _SHIFT), _K.BitAnd: ("&", _BIT_AND), _K.BitOr: ("|", _BIT_OR), _K.BitXor: ("^", _BIT_XOR),
    _K.Lt: ("<", _COMPARISON), _K.LtE: ("<=", _COMPARISON), _K.Eq: ("==", _COMPARISON),
    _K.NotEq: ("!=", _COMPARISON), _K.Gt: (">", _COMPARISON), _K.GtE: (">=", _COMPARISON),
    _K.And: ("and", _AND), _K.Or: ("or", _OR), _K.IfThenElse: ("", _IF_THEN_ELSE),
}


def _precedence(doc: ExprDoc) -> int:
    if isinstance(doc, OperationDoc):
        if doc.kind not in _OPERATORS:
            raise ValueError(f"Invalid operation: {doc.kind!r}")
        return _OPERATORS[doc.kind][1]
    if isinstance(doc, LambdaDoc):
        return _LAMBDA
    if isinstance(doc, (LiteralDoc, IdDoc, AttrAccessDoc, IndexDoc, CallDoc, TupleDoc, ListDoc, DictDoc)):
        return _ATOM
    raise TypeError(f"Precedence for doc type {type(doc).__name__} is unknown")


def _split_lines(text: str) -> list[str]:
    """Lines of ``text`` as C++'s getline reads them: no last empty line, none at all for ""."""
    lines = text.split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def str_escape(text: str) -> str:
    """A string's bytes escaped for a double-quoted literal (TVM's ``StrEscape``: printable ASCII
    kept, quotes, backslashes, tab, newline and return escaped, other bytes as ``\\xNN``)."""
    out = []
    for b in text.encode("utf-8"):
        c = chr(b)
        if " " <= c <= "~" and c not in '\\"':
            out.append(c)
        else:
            out.append({'"': '\\"', "\\": "\\\\", "\t": "\\t", "\r": "\\r", "\n": "\\n"}.get(c, f"\\x{b:02X}"))
    return "".join(out)


def _literal_text(value: object) -> str:
    if value is None:
        return "None"
    if isinstance(value, IntImm):
        return ("True" if value.value else "False") if value.dtype == "bool" else str(value.value)
    if isinstance(value, FloatImm):
        v = value.value
        if math.isinf(v) or math.isnan(v):
            return f'"{"nan" if math.isnan(v) else "inf" if v > 0 else "-inf"}"'
        if v == round(v):  # a whole number keeps its ".0", or it would read back as an int
            return f"{v:.1f}"
        return f"{v:.17g}"
    if isinstance(value, str):
        return f'"{str_escape(value)}"'
    raise TypeError(f"Unsupported literal value type: {type(value).__name__}")


class _PythonDocPrinter:
    """Writes Docs into a buffer, recording line starts, underline candidates and the spans
    (newlines, indentation, comments) no underline may cover."""

    def __init__(self, indent_spaces: int, paths: Sequence[AccessPath]) -> None:
        self.out = io.StringIO()
        self.indent_spaces, self.indent = indent_spaces, 0
        self.line_starts = [0]
        self.exempt: list[tuple[int, int]] = []
        self.paths = list(paths)
        self.depths = [0] * len(self.paths)
        self.visible: list[AccessPath | None] = [None] * len(self.paths)
        self.candidates: list[list[tuple[int, int]]] = [[] for _ in self.paths]

    def write(self, text: str) -> None:
        self.out.write(text)

    def pos(self) -> int:
        return self.out.tell()

    # -- layout -----------------------------------------------------------------------------
    def newline(self) -> None:
        start = self.pos()
        self.write("\n")
        self.line_starts.append(self.pos())
        self.write(" " * self.indent)
        self.exempt.append((start, self.pos()))

    def newline_without_indent(self) -> None:
        start = self.pos()
        self.write("\n")
        self.exempt.append((start, self.pos()))

    def joined(self, docs: Sequence[Doc], sep: str) -> None:
        for i, d in enumerate(docs):
            if i:
                self.write(sep)
            self.print(d)

    def indented_block(self, docs: Sequence[StmtDoc]) -> None:
        self.indent += self.indent_spaces
        for d in docs:
            self.newline()
            self.print(d)
        if not docs:
            self.newline()
            self.write("pass")
        self.indent -= self.indent_spaces

    def decorators(self, decorators: Sequence[ExprDoc]) -> None:
        for d in decorators:
            self.write("@")
            self.print(d)
            self.newline()

    def child(self, doc: ExprDoc, parent_precedence: int, parenthesize_equal: bool = False) -> None:
        p = _precedence(doc)
        if p < parent_precedence or (parenthesize_equal and p == parent_precedence):
            self.write("(")
            self.print(doc)
            self.write(")")
        else:
            self.print(doc)

    # -- comments ---------------------------------------------------------------------------
    def comment_inline(self, stmt: StmtDoc) -> None:
        if stmt.comment is not None:
            if "\n" in stmt.comment:
                raise ValueError(f"the comment string of {type(stmt).__name__} cannot have newline.")
            start = self.pos()
            self.write(f"  # {stmt.comment}")
            self.exempt.append((start, self.pos()))

    def comment_lines(self, stmt: StmtDoc, new_line: bool) -> None:
        if stmt.comment is not None:
            start = self.pos()
            for i, line in enumerate(_split_lines(stmt.comment)):
                if i:
                    self.newline()
                self.write(f"# {line}")
            self.exempt.append((start, self.pos()))
            if new_line:
                self.newline()

    def docstring(self, comment: str) -> None:
        start = self.pos()
        self.write('"""')
        for line in _split_lines(comment):
            if line:
                self.newline()
                self.write(line)
            else:
                self.write("\n")  # an empty line carries no indentation
        self.newline()
        self.write('"""')
        self.exempt.append((start, self.pos()))

    def block_comment(self, comment: str) -> None:
        self.indent += self.indent_spaces
        self.newline()
        self.docstring(comment)
        self.indent -= self.indent_spaces

    # -- docs -------------------------------------------------------------------------------
    def print(self, doc: Doc) -> None:
        start = self.pos()
        method = _PRINTERS.get(type(doc))
        if method is None:
            raise TypeError(f"Do not know how to print {type(doc).__name__}")
        method(self, doc)
        end = self.pos()
        for path in doc.source_paths:
            self.mark(start, end, path)

    def mark(self, start: int, end: int, path: AccessPath) -> None:
        """Keep the span as an underline candidate of every asked path ``path`` is a prefix of;
        a deeper (more specific) path replaces the candidates found so far."""
        for i, want in enumerate(self.paths):
            if path.depth >= self.depths[i] and path.is_prefix_of(want):
                if path.depth > self.depths[i] or self.visible[i] is None:
                    self.depths[i], self.visible[i] = path.depth, path
                    self.candidates[i].clear()
                self.candidates[i].append((start, end))


def _print_operation(p: _PythonDocPrinter, doc: OperationDoc) -> None:
    kind, ops = doc.kind, doc.operands
    token, prec = _OPERATORS.get(kind, ("", 0))
    if kind < _K._UnaryEnd:
        if len(ops) != 1:
            raise ValueError(f"{kind.name} takes 1 operand, got {len(ops)}")
        p.write(token)
        p.child(ops[0], prec)
    elif kind == _K.Pow:  # right-associative, and binds less tightly than a unary on its right
        p.child(ops[0], prec, True)
        p.write(" ** ")
        p.child(ops[1], _UNARY)
    elif kind < _K._BinaryEnd:
        if len(ops) != 2:
            raise ValueError(f"{kind.name} takes 2 operands, got {len(ops)}")
        p.child(ops[0], prec)
        p.write(f" {token} ")
        p.child(ops[1], prec, True)
    elif kind == _K.IfThenElse:
        if len(ops) != 3:
            raise ValueError(f"IfThenElse requires 3 operands, but got {len(ops)}")
        p.child(ops[1], prec)
        p.write(" if ")
        p.child(ops[0], prec, True)
        p.write(" else ")
        p.child(ops[2], prec, True)
    else:
        raise ValueError(f"Unknown OperationKind {kind!r}")


def _print_call(p: _PythonDocPrinter, doc: CallDoc) -> None:
    p.child(doc.callee, _ATOM)
    p.write("(")
    first = True
    for arg in doc.args:
        p.write("" if first else ", ")
        first = False
        p.print(arg)
    for key, value in zip(doc.kwargs_keys, doc.kwargs_values):
        p.write(("" if first else ", ") + f"{key}=")
        first = False
        p.print(value)
    p.write(")")


def _print_index(p: _PythonDocPrinter, doc: IndexDoc) -> None:
    p.child(doc.value, _ATOM)
    if not doc.indices:
        p.write("[()]")
    else:
        p.write("[")
        p.joined(doc.indices, ", ")
        p.write("]")


def _print_tuple(p: _PythonDocPrinter, doc: TupleDoc) -> None:
    p.write("(")
    if len(doc.elements) == 1:
        p.print(doc.elements[0])
        p.write(",")
    else:
        p.joined(doc.elements, ", ")
    p.write(")")


def _print_dict(p: _PythonDocPrinter, doc: DictDoc) -> None:
    p.write("{")
    for i, (k, v) in enumerate(zip(doc.keys, doc.values)):
        if i:
            p.write(", ")
        p.print(k)
        p.write(": ")
        p.print(v)
    p.write("}")


def _print_slice(p: _PythonDocPrinter, doc: SliceDoc) -> None:
    if doc.start is not None:
        p.print(doc.start)
    p.write(":")
    if doc.stop is not None:
        p.print(doc.stop)
    if doc.step is not None:
        p.write(":")
        p.print(doc.step)


def _print_stmt_block(p: _PythonDocPrinter, doc: StmtBlockDoc) -> None:
    for i, stmt in enumerate(doc.stmts):
        p.print(stmt)
        if i + 1 < len(doc.stmts):
            p.newline()


def _print_assign(p: _PythonDocPrinter, doc: AssignDoc) -> None:
    if isinstance(doc.lhs, TupleDoc):
        p.joined(doc.lhs.elements, ", ")
    else:
        p.print(doc.lhs)
    if doc.annotation is not None:
        p.write(": ")
        p.print(doc.annotation)
    if doc.rhs is not None:
        p.write(" = ")
        if isinstance(doc.rhs, TupleDoc) and len(doc.rhs.elements) > 1:
            p.joined(doc.rhs.elements, ", ")
        else:
            p.print(doc.rhs)
    p.comment_inline(doc)


def _print_if(p: _PythonDocPrinter, doc: IfDoc) -> None:
    p.comment_lines(doc, True)
    p.write("if ")
    p.print(doc.predicate)
    p.write(":")
    p.indented_block(doc.then_branch)
    if doc.else_branch:
        p.newline()
        p.write("else:")
        p.indented_block(doc.else_branch)


def _compound(p: _PythonDocPrinter, doc: StmtDoc, keyword: str, head: Callable[[], None],
              body: Sequence[StmtDoc]) -> None:
    """``keyword <head>:`` and the indented body, the comment lines above (while, for, with)."""
    p.comment_lines(doc, True)
    p.write(keyword)
    head()
    p.write(":")
    p.indented_block(body)


def _print_while(p: _PythonDocPrinter, doc: WhileDoc) -> None:
    _compound(p, doc, "while ", lambda: p.print(doc.predicate), doc.body)


def _print_for(p: _PythonDocPrinter, doc: ForDoc) -> None:
    def head() -> None:
        if isinstance(doc.lhs, TupleDoc) and len(doc.lhs.elements) == 1:
            p.print(doc.lhs.elements[0])
            p.write(",")
        elif isinstance(doc.lhs, TupleDoc):
            p.joined(doc.lhs.elements, ", ")
        else:
            p.print(doc.lhs)
        p.write(" in ")
        p.print(doc.rhs)
    _compound(p, doc, "for ", head, doc.body)


def _print_scope(p: _PythonDocPrinter, doc: ScopeDoc) -> None:
    def head() -> None:
        p.print(doc.rhs)
        if doc.lhs is not None:
            p.write(" as ")
            p.print(doc.lhs)
    _compound(p, doc, "with ", head, doc.body)


def _print_simple(prefix: str, field: str) -> Callable[[_PythonDocPrinter, StmtDoc], None]:
    def print_stmt(p: _PythonDocPrinter, doc: StmtDoc) -> None:
        p.write(prefix)
        p.print(getattr(doc, field))
        if isinstance(doc, AssertDoc) and doc.msg is not None:
            p.write(", ")
            p.print(doc.msg)
        p.comment_inline(doc)
    return print_stmt


def _print_function(p: _PythonDocPrinter, doc: FunctionDoc) -> None:
    if any(arg.comment is not None for arg in doc.args):
        raise ValueError("Function arg cannot have comment attached to them.")
    p.decorators(doc.decorators)
    p.write("def ")
    p.print(doc.name)
    p.write("(")
    p.joined(doc.args, ", ")
    p.write(")")
    if doc.return_type is not None:
        p.write(" -> ")
        p.print(doc.return_type)
    p.write(":")
    if doc.comment is not None:
        p.block_comment(doc.comment)
    p.indented_block(doc.body)
    p.newline_without_indent()


def _print_class(p: _PythonDocPrinter, doc: ClassDoc) -> None:
    p.decorators(doc.decorators)
    p.write("class ")
    p.print(doc.name)
    p.write(":")
    if doc.comment is not None:
        p.block_comment(doc.comment)
    p.indented_block(doc.body)


def _print_lambda(p: _PythonDocPrinter, doc: LambdaDoc) -> None:
    p.write("lambda ")
    p.joined(doc.args, ", ")
    p.write(": ")
    p.child(doc.body, _LAMBDA)


def _print_list(p: _PythonDocPrinter, doc: ListDoc) -> None:
    p.write("[")
    p.joined(doc.elements, ", ")
    p.write("]")


_PRINTERS: dict[type, Callable[[_PythonDocPrinter, Doc], None]] = {
    LiteralDoc: lambda p, d: p.write(_literal_text(d.value)),
    IdDoc: lambda p, d: p.write(d.name),
    AttrAccessDoc: lambda p, d: (p.child(d.value, _ATOM), p.write(f".{d.name}")),
    IndexDoc: _print_index, OperationDoc: _print_operation, CallDoc: _print_call, LambdaDoc: _print_lambda,
    ListDoc: _print_list, TupleDoc: _print_tuple, DictDoc: _print_dict, SliceDoc: _print_slice,
    StmtBlockDoc: _print_stmt_block, AssignDoc: _print_assign, IfDoc: _print_if, WhileDoc: _print_while,
    BreakDoc: lambda p, d: p.write("break"), ContinueDoc: lambda p, d: p.write("continue"),
    ForDoc: _print_for, ScopeDoc: _print_scope, ExprStmtDoc: _print_simple("", "expr"),
    AssertDoc: _print_simple("assert ", "test"), ReturnDoc: _print_simple("return ", "value"),
    FunctionDoc: _print_function, ClassDoc: _print_class,
    CommentDoc: lambda p, d: p.comment_lines(d, False),
    DocStringDoc: lambda p, d: p.docstring(d.comment) if d.comment else None,
}


# -- underlines and context lines -------------------------------------------------------------

def merge_spans(spans: Sequence[tuple[int, int]], exempt: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of ``spans`` outside every ``exempt`` span, touching parts joined."""
    heavy = len(spans) + 1  # one exempt span outweighs every underline over it
    stamps = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans]
                    + [(a, -heavy) for a, _ in exempt] + [(b, heavy) for _, b in exempt])
    merged: list[tuple[int, int]] = []
    total = 0
    for (pos, weight), (nxt, _) in zip(stamps, stamps[1:]):
        total += weight
        if total > 0 and pos < nxt:
            if merged and merged[-1][1] == pos:
                merged[-1] = (merged[-1][0], nxt)
            else:
                merged.append((pos, nxt))
    return merged


def _width(text: str, start: int, end: int) -> int:
    return sum(1 for c in text[start:end] if c.isprintable())


_MIN_LINES_TO_CUT = 2  # one line between two chunks prints as itself, not as "1 lines skipped"


def decorate(text: str, line_starts: list[int], underlines: list[tuple[int, int]], line_numbers: bool,
             context: int) -> str:
    """``text`` with carets under ``underlines``, line numbers if asked, and only ``context``
    lines around each underline (the cuts say how many lines they skip)."""
    num_lines = len(line_starts) - 1 if line_starts[-1] == len(text) else len(line_starts)
    number_width = len(str(num_lines)) + 1 if line_numbers else 0
    out: list[str] = []

    def line_of(pos: int) -> int:
        return bisect.bisect_right(line_starts, pos) - 1

    def chunk_for(span: tuple[int, int]) -> list[int]:
        first = max(line_of(span[0]) - context, 0)
        return [first, min(line_of(span[1] - 1) + 1 + context, num_lines)]

    def cut(n: int) -> None:
        if n:
            out.append(f"(... {n} lines skipped ...)\n")

    def chunk(lines: list[int], spans: list[tuple[int, int]]) -> None:
        _print_chunk(text, line_starts, lines, spans, number_width, line_numbers, out)

    if not underlines:
        chunk([0, num_lines], [])
        return "".join(out)
    last_end, cur = 0, chunk_for(underlines[0])
    if cur[0] < _MIN_LINES_TO_CUT:
        cur[0] = 0
    first_in_cur = 0
    for k in range(1, len(underlines)):
        new = chunk_for(underlines[k])
        if new[0] < cur[1] + _MIN_LINES_TO_CUT:
            cur[1] = new[1]
            continue
        cut(cur[0] - last_end)
        chunk(cur, underlines[first_in_cur:k])
        last_end, cur, first_in_cur = cur[1], new, k
    cut(cur[0] - last_end)
    if num_lines - cur[1] < _MIN_LINES_TO_CUT:
        cur[1] = num_lines
    chunk(cur, underlines[first_in_cur:])
    cut(num_lines - cur[1])
    return "".join(out)


def _print_chunk(text: str, line_starts: list[int], lines: list[int], spans: list[tuple[int, int]],
                 number_width: int, line_numbers: bool, out: list[str]) -> None:
    """Lines ``lines[0]:lines[1]`` of ``text``, each followed by its carets (if any)."""
    pending = [list(s) for s in spans]
    never = [len(text) + 1, len(text) + 1]
    current = pending.pop(0) if pending else never
    for idx in range(lines[0], lines[1]):
        if line_numbers:
            out.append(f"{idx + 1} ".rjust(number_width))
        start = line_starts[idx]
        end = line_starts[idx + 1] if idx + 1 < len(line_starts) else len(text)
        out.append(text[start:end])
        carets, pos, extra = [], start, False
        while current[0] < end:
            if not carets:
                carets.append(" " * number_width)
            stop = min(end, current[1])
            spaces = _width(text, pos, current[0])
            if spaces > 0 and extra:  # the caret printed for an empty span took this column
                spaces, extra = spaces - 1, False
            n = _width(text, current[0], stop)
            if n == 0 and not extra:  # an empty or unprintable span still gets one caret
                n, extra = 1, True
            elif n > 0 and extra:
                n, extra = n - 1, False
            carets.append(" " * spaces + "^" * n)
            pos = current[0] = stop
            if current[0] == current[1]:
                current = pending.pop(0) if pending else never
        if carets:
            out.append("".join(carets) + "\n")


def to_python_script(doc: Doc, indent_spaces: int = 4, print_line_numbers: bool = False,
                     num_context_lines: int | None = None, path_to_underline: Sequence[AccessPath] | None = None
                     ) -> str:
    """The Python text of ``doc``; ``path_to_underline`` puts carets under the Docs that show
    those paths, ``num_context_lines`` keeps only that many lines around each underline."""
    p = _PythonDocPrinter(indent_spaces, path_to_underline or ())
    p.print(doc)
    underlines = [span for spans in p.candidates for span in spans]
    text = p.out.getvalue().rstrip(" ")
    if text and not text.endswith("\n"):
        text += "\n"
    context = num_context_lines if num_context_lines is not None and num_context_lines >= 0 else 2**31 - 1
    script = decorate(text, p.line_starts, merge_spans(underlines, p.exempt), print_line_numbers, context)
    return script[:-1] if script.endswith("\n") else script
