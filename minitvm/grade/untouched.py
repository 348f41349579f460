"""Which exercises of a file are still the untouched stub, read without running the file.

An untouched exercise raises ``NotImplementedError("exercise N.M: ...")`` as the first thing it
does, so its grader can only end as ``todo``; running it anyway costs the chapter's grading
process its start-up (torch and an export warm-up for chapters 3 and 5: seconds) to learn what
the file's text already says.  :func:`check` reports such an exercise as ``todo`` from this
reading and runs the graders of the others.

Read conservatively: an exercise counts as untouched only when its function's whole body is the
docstring and that one ``raise`` (as ``make_stubs`` writes it), and no other top-level statement
of the file binds the function's name.  Anything else -- a file that does not parse, a body with
one more line, a name assigned again further down -- is graded by running it.
"""

from __future__ import annotations

import ast
import re

__all__ = ["untouched_exercises"]

_NUMBER = re.compile(r"^[Ee]xercise (\d+\.\d+)")


def untouched_exercises(source: str) -> dict[str, str]:
    """Exercise number -> the message its stub raises, for each exercise of ``source`` (an
    exercise file's text) whose function is still the untouched stub."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    bound: dict[str, int] = {}
    for node in tree.body:
        for name in _names_bound(node):
            bound[name] = bound.get(name, 0) + 1
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and bound.get(node.name) == 1:
            found = _stub_message(node)
            if found is not None:
                out[found[0]] = found[1]
    return out


def _names_bound(node: ast.stmt) -> list[str]:
    """The names a top-level statement binds (any statement that might rebind a function counts)."""
    names = []
    for n in ast.walk(node):  # nested too: a def inside an `if` or a `try` at the top level binds a global
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            names += [(a.asname or a.name).split(".")[0] for a in n.names]
        elif isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            names.append(n.id)
    return names


def _stub_message(func: ast.FunctionDef) -> tuple[str, str] | None:
    """(exercise number, message) when ``func`` is docstring + ``raise NotImplementedError("exercise N.M...")``
    for the exercise its docstring names, else None."""
    number = _NUMBER.match(ast.get_docstring(func) or "")
    body = func.body[1:] if ast.get_docstring(func) is not None else func.body
    if number is None or func.decorator_list or len(body) != 1 or not isinstance(body[0], ast.Raise):
        return None
    exc = body[0].exc
    if not (isinstance(exc, ast.Call) and isinstance(exc.func, ast.Name) and exc.func.id == "NotImplementedError"
            and len(exc.args) == 1 and not exc.keywords and isinstance(exc.args[0], ast.Constant)
            and isinstance(exc.args[0].value, str)):
        return None
    message = exc.args[0].value
    if not message.startswith(f"exercise {number.group(1)}"):
        return None
    return number.group(1), f"NotImplementedError: {message}"
