"""Naming the mistake behind a wrong answer.

A grader knows the wrong answers learners often give for its exercise: a reduction without
``T.init()``, a reduction axis declared spatial, a loop one short, a kernel flipped, a softmax
over the wrong axis, a split with its factors swapped. Each is a :class:`Mistake`: a sentence that
names it and a function that *runs the mistaken program* (the same inputs through the same
compiler), so the diagnosis is what that mistake really computes, not a guess.

When the learner's answer fails, the grader tries its catalogue: if the answer equals what one
mistake computes (numbers within the tolerance, or the same program), the failure message ends
with ``likely mistake: <sentence>``. The catalogue is only run after a failure, so a right answer
costs nothing extra.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..ir.structural import StructuralEqualError, assert_structural_equal, structural_equal
from ..testing.compare import NumericMismatch, as_numpy, assert_allclose

__all__ = ["Mistake", "assert_allclose_or_name", "assert_equal_or_name", "assert_structural_equal_or_name"]

LIKELY = "likely mistake:"


@dataclass(frozen=True)
class Mistake:
    """A wrong answer a learner often gives: ``says`` names it (the idea to fix, not the fixed
    code); ``computes()`` runs the mistaken program and returns what it produces — an array for a
    numeric grader, a program (PrimFunc / IRModule) for a structural one."""

    says: str
    computes: Callable[[], Any]


def _same_numbers(yours: np.ndarray, wrong: Any, rtol: float, atol: float) -> bool:
    wrong = as_numpy(wrong)
    if wrong.shape != yours.shape:
        return False
    with np.errstate(invalid="ignore", over="ignore"):
        return bool(np.allclose(yours, wrong, rtol=rtol, atol=atol, equal_nan=True))


def _name(err: BaseException, mistakes: Sequence[Mistake], matches: Callable[[Any], bool]) -> None:
    """Add the first mistake whose program ``matches`` as a note on ``err`` (the learner's message
    ends with it; a plain traceback shows it too)."""
    for mistake in mistakes:
        if matches(mistake.computes()):
            err.add_note(f"{LIKELY} {mistake.says}")
            return


def assert_allclose_or_name(yours: Any, expected: Any, mistakes: Sequence[Mistake] = (), *, rtol: float = 1e-7,
                            atol: float = 1e-7, err_msg: str = "") -> None:
    """:func:`minitvm.testing.assert_allclose`; on failure, the first catalogued mistake whose
    program computes ``yours`` is named at the end of the message."""
    try:
        assert_allclose(yours, expected, rtol=rtol, atol=atol, err_msg=err_msg)
    except NumericMismatch as err:
        got = as_numpy(yours)
        _name(err, mistakes, lambda wrong: _same_numbers(got, wrong, rtol, atol))
        raise


def assert_structural_equal_or_name(yours: Any, expected: Any, mistakes: Sequence[Mistake] = ()) -> None:
    """:func:`minitvm.ir.assert_structural_equal`; on failure, the first catalogued mistake whose
    program is ``yours`` is named after the diff."""
    try:
        assert_structural_equal(yours, expected)
    except StructuralEqualError as err:
        _name(err, mistakes, lambda wrong: structural_equal(yours, wrong))
        raise


def assert_equal_or_name(yours: Any, expected: Any, mistakes: Sequence[Mistake] = (), message: str = "") -> None:
    """``yours == expected`` for plain values (loop kinds, lists of names); on failure, the first
    catalogued mistake that computes ``yours`` is named after ``message``."""
    if yours == expected:
        return
    err = AssertionError(message or f"got {yours!r}, expected {expected!r}")
    _name(err, mistakes, lambda wrong: wrong == yours)
    raise err
