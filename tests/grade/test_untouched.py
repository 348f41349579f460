"""An untouched exercise is graded ``todo`` from the file's text, without running anything.

Proven both ways: every committed stub is recognised (so an untouched chapter starts no grading
process), no solution is, and any change to a stub -- one more line, a name bound again, a
decorator, a file that does not parse -- sends the exercise to its grader as before.
"""

from __future__ import annotations

import textwrap

import pytest
from committed import committed_text
from test_grading import CHAPTERS, ROOT, _fake_repository

from minitvm.grade import check, list_graders
from minitvm.grade.untouched import untouched_exercises

_STUB = '''
def f(a):
    """Exercise 9.1: double a."""
    raise NotImplementedError("exercise 9.1: write f")
'''


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_committed_stub_reads_as_untouched_and_no_solution_does(chapter):
    stubs = untouched_exercises(committed_text(f"exercises/{chapter}.py"))
    graders = list_graders(chapter, ROOT)
    assert set(stubs) == {g.exercise for g in graders}
    assert all(m.startswith(f"NotImplementedError: exercise {n}: write ") for n, m in stubs.items())
    assert untouched_exercises(committed_text(f"solutions/{chapter}.py")) == {}


@pytest.mark.parametrize("changed", [
    _STUB.replace("    raise", "    print(a)\n    raise"),              # one more line before the raise
    _STUB + "\nf = lambda a: 2 * a\n",                                 # the name bound again further down
    _STUB + "\ntry:\n    from answers import f\nexcept ImportError:\n    pass\n",  # or imported
    "import functools\n\n@functools.cache" + _STUB,                    # a decorator may replace the function
    _STUB.replace("exercise 9.1", "exercise 9.2"),                     # raises for another exercise
    _STUB + "\ndef g(:\n",                                             # the file does not parse
], ids=["extra-line", "rebound", "imported", "decorated", "other-number", "syntax-error"])
def test_a_changed_stub_is_run_by_its_grader(changed):
    assert untouched_exercises(_STUB) == {"9.1": "NotImplementedError: exercise 9.1: write f"}
    assert untouched_exercises(changed) == {}


_GRADERS = '''
import pytest

@pytest.fixture
def ex(grade_module):
    return grade_module("ch96")

@pytest.mark.points(1)
def test_f(ex):
    """Exercise 9.1"""
    assert ex.f(2) == 4

@pytest.mark.points(1)
def test_g(ex):
    """Exercise 9.2"""
    assert ex.g(2) == 3
'''

_EXERCISES = '''
from pathlib import Path

Path({marker!r}).write_text("imported")  # the file ran


def f(a):
    """Exercise 9.1: double a."""
    {f_body}


def g(a):
    """Exercise 9.2: add one."""
    raise NotImplementedError("exercise 9.2: write g")
'''


def test_check_runs_nothing_for_an_untouched_chapter(tmp_path, monkeypatch):
    root, marker = tmp_path / "course", tmp_path / "marker"
    untouched = _EXERCISES.format(marker=str(marker), f_body='raise NotImplementedError("exercise 9.1: write f")')
    _fake_repository(root, monkeypatch, "ch96", _GRADERS, textwrap.dedent(untouched))
    report = check("ch96", root=root, progress=False)
    assert [(r.exercise, r.status) for r in report.results] == [("9.1", "todo"), ("9.2", "todo")]
    assert report.results[0].message == "NotImplementedError: exercise 9.1: write f"
    assert not marker.exists(), "the untouched exercise file was run"
    # one exercise solved: its grader runs (the file is imported), the other stays todo
    (root / "exercises" / "ch96.py").write_text(untouched.replace('raise NotImplementedError("exercise 9.1: write f")',
                                                                  "return 2 * a"))
    report = check("ch96", root=root, progress=False)
    assert [(r.exercise, r.status) for r in report.results] == [("9.1", "passed"), ("9.2", "todo")]
    assert marker.exists()
