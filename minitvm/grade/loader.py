"""Load an exercise file so that one broken exercise costs only that exercise.

A syntax error (or a TVMScript error raised while a decorated function is parsed at import
time) normally stops the whole module from importing, and every exercise of the chapter
fails with the same line.  When the plain import fails, the file is run again piece by piece:
the header (imports, constants) and then each top-level ``def``/``class`` with its
decorators, each compiled at its own line numbers.  A piece that fails is replaced by stand-ins
for the names it defines, which raise :class:`ExerciseFileError` naming the problem, the file,
the line and a caret; the other exercises load and are graded.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import traceback
import types
from pathlib import Path
from typing import Any

__all__ = ["ExerciseFileError", "load_exercises"]

_TOP_LEVEL = re.compile(r"^(?:@|def |async def |class )")
_DEFINES = re.compile(r"^(?:async def|def|class)\s+(\w+)", re.M)


class ExerciseFileError(Exception):
    """The exercise file has a problem that stops this exercise from loading."""


def load_exercises(name: str) -> types.ModuleType:
    """``importlib.import_module(name)``, or, when that fails, the module loaded piece by piece."""
    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - any failure: fall back to loading what loads
        sys.modules.pop(name, None)
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.origin:
            raise
        return _load_in_pieces(name, Path(spec.origin))


def describe(err: BaseException, path: Path) -> str:
    """The problem in words: a syntax error with its line and a caret, or the exception with
    the line of the exercise file it came from."""
    shown = _shown_path(path)
    if isinstance(err, SyntaxError):
        where = f"{shown}, line {err.lineno}" if err.lineno else shown
        text = f"syntax error in {where}: {err.msg}"
        if err.text:
            raw = err.text.rstrip("\n")
            lead = len(raw) - len(raw.lstrip())
            column = max((err.offset or 1) - 1 - lead, 0)
            text += f"\n    {raw.strip()}\n    {' ' * column}^"
        return text
    frames = [f for f in traceback.extract_tb(err.__traceback__) if Path(f.filename) == path]
    where = f"{shown}, line {frames[-1].lineno}" if frames else shown
    return f"{shown} fails to load ({where}): {type(err).__name__}: {err}"


def _shown_path(path: Path) -> str:
    parts = path.parts
    return "/".join(parts[-2:]) if len(parts) >= 2 else str(path)


def _pieces(lines: list[str]) -> list[tuple[int, int]]:
    """[start, end) line ranges: the header, then each decorated top-level definition."""
    starts = [0]
    for k, line in enumerate(lines):
        if _TOP_LEVEL.match(line) and not (k and lines[k - 1].startswith("@")):
            starts.append(k)
    starts = sorted(set(starts))
    return [(a, b) for a, b in zip(starts, [*starts[1:], len(lines)]) if a < b]


def _load_in_pieces(name: str, path: Path) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module  # decorators that look the module up (TVMScript) find it
    lines = path.read_text().splitlines(keepends=True)
    header_error: str | None = None
    for k, (a, b) in enumerate(_pieces(lines)):
        text = "\n" * a + "".join(lines[a:b])  # keep the file's line numbers
        names = _DEFINES.findall("".join(lines[a:b]))
        if header_error is not None:
            _stand_ins(module, names, header_error)
            continue
        try:
            exec(compile(text, str(path), "exec"), module.__dict__)  # noqa: S102 - the learner's own file
        except Exception as err:  # noqa: BLE001
            message = describe(err, path)
            if k == 0:  # imports failed: nothing below can load
                header_error = message
            _stand_ins(module, names, message)
    return module


def _stand_ins(module: types.ModuleType, names: list[str], message: str) -> None:
    for fname in names:
        def broken(*args: Any, _message: str = message, **kwargs: Any) -> Any:
            raise ExerciseFileError(_message)
        broken.__name__ = fname
        setattr(module, fname, broken)
