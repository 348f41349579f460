"""What a failing grader tells the learner.

The exceptions that graders meet most carry what a learner needs to act: which numbers are
wrong (:class:`~minitvm.testing.NumericMismatch`), where the program differs from the expected
one (:class:`~minitvm.ir.structural.StructuralEqualError`, shown as the two programs around the
first difference), or which line of the exercise file is broken
(:class:`~minitvm.grade.loader.ExerciseFileError`).  Anything else keeps pytest's message.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from ..ir.structural import StructuralEqualError
from ..testing.compare import NumericMismatch
from ..tir import PrimFunc
from .loader import ExerciseFileError
from .mistakes import LIKELY

__all__ = ["is_stub", "learner_message", "structure_message"]

def is_stub(err: BaseException) -> bool:
    """Whether ``err`` is an exercise's stub saying it is not written yet (``make_stubs``'s
    ``NotImplementedError("exercise N.M: ...")``), not a failed attempt."""
    return isinstance(err, NotImplementedError) and str(err).startswith("exercise")


def learner_message(err: BaseException, hint: str | None = None) -> str | None:
    """The report text for a grader that raised ``err``; None keeps pytest's own."""
    if is_stub(err):
        return None  # the untouched stub: the runner reports it as "todo"
    if isinstance(err, StructuralEqualError):
        text = structure_message(err)
    elif isinstance(err, (NumericMismatch, ExerciseFileError)):
        text = str(err)
    elif hint is not None or _named_mistakes(err):
        text = f"{type(err).__name__}: {err}"
    else:
        return None
    notes = _named_mistakes(err)
    return "\n".join([text, *notes] + ([f"hint: {hint}"] if hint else []))


def _named_mistakes(err: BaseException) -> list[str]:
    """The ``likely mistake: ...`` notes a grader's catalogue added (see :mod:`minitvm.grade.mistakes`)."""
    return [n for n in getattr(err, "__notes__", ()) if n.startswith(LIKELY)]


def _script(x: Any) -> str:
    return x.script() if hasattr(x, "script") else str(x)


def _texts(yours: Any, expected: Any) -> tuple[list[str], list[str]]:
    """Both programs as text; two PrimFuncs are printed under the learner's name, since their
    names are not part of the comparison."""
    a, b = _script(yours), _script(expected)
    if isinstance(yours, PrimFunc) and isinstance(expected, PrimFunc):
        mine, theirs = (re.search(r"^\s*def (\w+)\(", t, re.M) for t in (a, b))
        if mine and theirs:
            b = b.replace(f"def {theirs.group(1)}(", f"def {mine.group(1)}(", 1)
    return a.splitlines(), b.splitlines()


def structure_message(err: StructuralEqualError) -> str:
    """The first line of ``err`` in words, then a unified diff of yours against the expected
    program with a few lines of context around each change."""
    first = str(err).splitlines()[0].replace("StructuralEqual check failed at",
                                             "the program differs from the expected one at")
    yours, expected = _texts(err.lhs_root, err.rhs_root)
    diff = list(difflib.unified_diff(yours, expected, "yours", "expected", n=2, lineterm=""))
    if not diff:  # same text, different structure (e.g. two buffers that print alike)
        return f"{first}\n" + "\n".join(str(err).splitlines()[1:])
    return f"{first}\n" + "\n".join(diff)
