"""pytest plugin for the graders (loaded with ``-p minitvm.grade.plugin`` from pyproject's addopts).

It adds ``--grade-target=solutions|exercises`` (default ``solutions``, so the normal test
run proves every grader on the solved code), registers the ``points`` marker, puts the
repository root on ``sys.path`` so ``solutions.ch01`` / ``exercises.ch01`` import, and
provides the ``grade_module`` fixture that loads the chosen one.

Every grader (a test with a ``points`` marker) runs inside ``PassContext(config=GRADING_CONFIG)``:
bounds-checked native code, so a learner's wrong index fails that exercise with a
``BoundsError`` naming the buffer instead of crashing the grader.

A failing grader's message is written for the learner (see :mod:`minitvm.grade.messages`):
numbers that differ say how many and the worst one, a structure that differs shows the two
programs around the first difference, a broken exercise file names the line, and a
``@pytest.mark.hint("idea", "closer", ...)`` on the grader adds its hint, in levels: when
grading the learner's exercises, the first failure of a grader shows the first level (a pointer to
the idea), each further failure the next (never the answer), counted in ``exercises/.hints/``;
a stub still raising its ``NotImplementedError`` is not an attempt and moves no level.
Graders pass the learner's value first: ``assert_structural_equal(yours, expected)``,
``assert_allclose(yours, expected)``.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import pytest

from .loader import load_exercises

TARGETS = ("solutions", "exercises")
#: the PassContext config graded code runs under
GRADING_CONFIG = {"tir.bounds_check": True}


def pytest_addoption(parser: Any) -> None:
    parser.addoption("--grade-target", choices=TARGETS, default="solutions",
                     help="which package the graders in tests/grade import: solutions (default) or exercises")


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "points(n): what a grader in tests/grade is worth")
    config.addinivalue_line("markers", "hint(*levels): what a grader says when it fails, one level more per failure")
    root = str(config.rootpath)
    if root not in sys.path:
        sys.path.insert(0, root)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: Any) -> Any:
    """Run a grader's body in bounds-checked mode (other tests run as they are)."""
    if item.get_closest_marker("points") is None:
        yield
        return
    # lazy: every pytest run in the repository loads this plugin (pyproject addopts): minitvm is
    # imported when a graded test runs, not when pytest starts
    from minitvm.transform import PassContext

    with PassContext(config=GRADING_CONFIG):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Any:
    """A graded failure's report says what went wrong in the learner's words."""
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed or item.get_closest_marker("points") is None:
        return
    from .messages import is_stub, learner_message  # lazy: it imports the IR; only when a grader has failed

    err = call.excinfo.value
    if is_stub(err):
        return  # not an attempt: it spends no hint level (the runner reports it as "todo")
    hint = item.get_closest_marker("hint")
    levels = hint.args if hint else ()
    text = learner_message(err, _hint_at_level(item, levels) if levels else None)
    if text is not None:
        report.longrepr = text


def _hint_at_level(item: Any, levels: tuple[str, ...]) -> str:
    """The hint for this failure: level k on the learner's k-th failure of the grader (the last
    level repeats). Grading the solutions (the test suite) counts nothing and shows level 1."""
    if item.config.getoption("--grade-target") != "exercises":
        level = 1
    else:
        counter = item.config.rootpath / "exercises" / ".hints" / f"{item.path.stem}.{item.originalname}"
        try:
            level = int(counter.read_text()) + 1
        except (OSError, ValueError):  # the first failure (or a counter the learner emptied)
            level = 1
        counter.parent.mkdir(exist_ok=True)
        counter.write_text(str(level))
    shown = min(level, len(levels))
    return f"({shown} of {len(levels)}) {levels[shown - 1]}" if len(levels) > 1 else levels[0]


@pytest.fixture
def grade_module(request: Any) -> Callable[[str], Any]:
    """``grade_module("ch01")`` -> the module ``<grade-target>.ch01`` (a broken exercise in it
    costs only that exercise: see :mod:`minitvm.grade.loader`)."""
    target = request.config.getoption("--grade-target")

    def load(chapter: str) -> Any:
        return load_exercises(f"{target}.{chapter}")

    return load
