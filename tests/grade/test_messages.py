"""The grader's failure messages: what a learner reads when an exercise is wrong.

One made-up chapter (``ch97``) with the usual mistakes is graded once, the way ``minitvm
grade`` does it; the messages are checked here and shown in ``exercises/README.md`` (the
block between the ``grader-messages`` markers is generated from this run, so it cannot drift).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from minitvm.grade import check, plugin

ROOT = Path(__file__).resolve().parents[2]
PKG_PARENT = str(Path(__import__("minitvm").__file__).resolve().parents[1])
README = ROOT / "exercises" / "README.md"

_GRADERS = '''
import numpy as np
import pytest

from minitvm.grade.mistakes import Mistake, assert_allclose_or_name
from minitvm.ir import assert_structural_equal
from minitvm.script import tir as T
from minitvm.testing import assert_allclose


@pytest.fixture
def ex(grade_module):
    return grade_module("ch97")


@T.prim_func
def expected_scale(A: T.Buffer((4, 4), "float32"), B: T.Buffer((4, 4), "float32")):
    for i, j in T.grid(4, 4):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2.0)


@pytest.mark.points(1)
@pytest.mark.hint("a sum over k starts from zero: is the reduction initialised?",
                  "look at what the output holds before the first k")
def test_row_sums(ex):
    """Exercise 9.1"""
    a = np.random.default_rng(0).standard_normal((4, 8)).astype("float32")
    assert_allclose(ex.row_sums(a), a.sum(axis=1), rtol=1e-5, atol=1e-5)


@pytest.mark.points(1)
def test_scale_loops(ex):
    """Exercise 9.2"""
    assert_structural_equal(ex.scale, expected_scale)


@pytest.mark.points(1)
def test_broken(ex):
    """Exercise 9.3"""
    assert ex.broken() == 3


@pytest.mark.points(1)
def test_fine(ex):
    """Exercise 9.4"""
    assert ex.fine() == 4


@pytest.mark.points(1)
def test_col_sums(ex):
    """Exercise 9.5"""
    a = np.random.default_rng(5).standard_normal((4, 4)).astype("float32")
    mistakes = [Mistake("the sum runs along the rows: columns sum over axis 0", lambda: a.sum(axis=1))]
    assert_allclose_or_name(ex.col_sums(a), a.sum(axis=0), mistakes, rtol=1e-5, atol=1e-5)
'''

_EXERCISES = '''
import numpy as np
from minitvm.script import tir as T


def row_sums(a):
    out = a.sum(axis=1)
    out[2] += 1.5  # a wrong element
    return out


@T.prim_func
def scale(A: T.Buffer((4, 4), "float32"), B: T.Buffer((4, 4), "float32")):
    for i, j in T.grid(4, 4):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + T.float32(2.0)


def broken():
    for i in range(3)
        pass
    return 3


def fine():
    return 4


def col_sums(a):
    return a.sum(axis=1)
'''


def _course(root: Path, chapter: str, graders: str, exercises: str) -> Path:
    """A made-up course under ``root``: one chapter's graders and the learner's exercise file."""
    (root / "tests" / "grade").mkdir(parents=True)
    for pkg in ("solutions", "exercises"):
        (root / pkg).mkdir()
        (root / pkg / "__init__.py").write_text("")
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = "-p minitvm.grade.plugin"\n')
    (root / "tests" / "grade" / f"test_{chapter}.py").write_text(graders)
    (root / "exercises" / f"{chapter}.py").write_text(exercises)
    return root


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory):
    root = _course(tmp_path_factory.mktemp("course"), "ch97", _GRADERS, _EXERCISES)
    mp = pytest.MonkeyPatch()
    mp.setenv("PYTHONPATH", PKG_PARENT)
    try:
        report = check("ch97", root=root, timeout=60, progress=False)
    finally:
        mp.undo()
    return root, report


def _result(report, exercise):
    return next(r for r in report.results if r.exercise == exercise)


def test_numbers_that_differ_say_how_many_and_the_worst(graded):
    r = _result(graded[1], "9.1")
    assert r.status == "failed"
    assert r.message.startswith("1 of 4 elements differ (rtol=1e-05, atol=1e-05)"), r.message
    assert "the worst at index [2]: expected" in r.message
    assert "hint: (1 of 2) a sum over k starts from zero" in r.message


def test_hints_come_in_levels_one_more_per_failure(graded, monkeypatch):
    """The learner's second failure shows the second level; after the last, the last repeats."""
    monkeypatch.setenv("PYTHONPATH", PKG_PARENT)
    seen = [_result(graded[1], "9.1").message]
    for _ in range(2):
        seen.append(_result(check("ch97", root=graded[0], only=["9.1"], timeout=60, progress=False), "9.1").message)
    levels = [next(line for line in m.splitlines() if line.startswith("hint:")) for m in seen]
    assert levels == ["hint: (1 of 2) a sum over k starts from zero: is the reduction initialised?",
                      "hint: (2 of 2) look at what the output holds before the first k",
                      "hint: (2 of 2) look at what the output holds before the first k"], levels


def _grader_fails(root: Path, err: BaseException) -> str:
    """What the plugin reports when a grader with two hint levels fails with ``err`` while grading
    the learner's exercises under ``root`` (its report hook driven directly: no pytest process)."""
    marker = SimpleNamespace(args=("the idea", "closer to it"))
    item = SimpleNamespace(
        config=SimpleNamespace(rootpath=root, getoption=lambda name: "exercises"),
        path=root / "tests" / "grade" / "test_ch96.py", originalname="test_later",
        get_closest_marker=lambda name: marker if name in ("points", "hint") else None)
    report = SimpleNamespace(when="call", failed=True, longrepr="pytest's own report")
    hook = plugin.pytest_runtest_makereport(item, SimpleNamespace(excinfo=SimpleNamespace(value=err)))
    next(hook)
    with pytest.raises(StopIteration):
        hook.send(SimpleNamespace(get_result=lambda: report))
    return str(report.longrepr)


def test_a_stub_spends_no_hint_level(tmp_path):
    """A stub that still raises its NotImplementedError is not an attempt: the first real failure
    after it shows the first level, not a later one."""
    (tmp_path / "exercises").mkdir()
    for _ in range(2):
        shown = _grader_fails(tmp_path, NotImplementedError("exercise 9.6: return six"))
        assert shown == "pytest's own report", shown  # left for the runner, which calls it todo
    assert _grader_fails(tmp_path, AssertionError("5 != 6")).endswith("hint: (1 of 2) the idea")
    assert _grader_fails(tmp_path, AssertionError("5 != 6")).endswith("hint: (2 of 2) closer to it")


def test_a_catalogued_mistake_is_named(graded):
    r = _result(graded[1], "9.5")
    assert r.status == "failed"
    last = r.message.splitlines()[-1]
    assert last == "likely mistake: the sum runs along the rows: columns sum over axis 0", r.message


def test_a_structure_that_differs_shows_both_programs_around_the_difference(graded):
    r = _result(graded[1], "9.2")
    assert r.status == "failed"
    lines = r.message.splitlines()
    assert lines[0].startswith("the program differs from the expected one at root"), r.message
    assert "--- yours" in lines and "+++ expected" in lines
    assert any(x.startswith("-") and "A[vi, vj] + T.float32(2.0)" in x for x in lines)
    assert any(x.startswith("+") and "A[vi, vj] * T.float32(2.0)" in x for x in lines)


def test_a_syntax_error_costs_only_its_exercise(graded):
    report = graded[1]
    broken, fine = _result(report, "9.3"), _result(report, "9.4")
    assert broken.status == "failed"
    assert broken.message.splitlines()[:3] == [
        "syntax error in exercises/ch97.py, line 21: expected ':'",
        "    for i in range(3)",
        "                     ^"], broken.message
    assert fine.status == "passed"  # the rest of the file still loads and is graded
    assert _result(report, "9.1").status == "failed"  # graded on its own merits, not the syntax error


def test_failures_are_shown_whole_below_the_table_and_cut_unless_verbose(graded):
    report = graded[1]
    text = str(report)
    assert "exercise 9.2 (test_scale_loops): failed" in text and "+++ expected" in text
    long = _result(report, "9.2")
    long_message, long.message = long.message, "\n".join(f"line {k}" for k in range(40))
    try:
        assert "more lines: `minitvm grade -v`" in str(report)
        report.verbose = True
        assert "more lines" not in str(report)
    finally:
        long.message, report.verbose = long_message, False


def test_progress_lines_while_grading(tmp_path, capsys, monkeypatch, graded):
    monkeypatch.setenv("PYTHONPATH", PKG_PARENT)
    check("ch97", root=graded[0], only=["9.4"], timeout=60)
    out = capsys.readouterr().out
    assert "grading ch97 (exercises/): 1 exercises" in out and "[1/1] exercise 9.4: passed" in out


def test_cli_verbose_flag():
    proc = subprocess.run([sys.executable, "-m", "minitvm.cli", "grade", "--help"], capture_output=True, text=True)
    assert "-v, --verbose" in proc.stdout


def _examples(report) -> str:
    blocks = []
    for exercise, what in (("9.1", "numbers that differ (with the grader's hint)"),
                           ("9.2", "a loop nest that differs from the target"),
                           ("9.5", "a wrong answer the grader knows (its catalogue names the mistake)"),
                           ("9.3", "a syntax error in the exercise file")):
        blocks.append(f"{what}:\n\n```text\n{_result(report, exercise).message.rstrip()}\n```")
    return "\n\n".join(blocks)


def test_readme_shows_the_messages_as_generated(graded):
    text = README.read_text()
    found = re.search(r"<!-- grader-messages:begin -->\n(.*?)\n<!-- grader-messages:end -->", text, re.S)
    expected = _examples(graded[1])
    assert found, "exercises/README.md lacks the grader-messages block; put this between the markers:\n" + expected
    assert found.group(1).strip() == expected.strip(), (
        "exercises/README.md's grader-messages block is out of date; replace it with:\n" + expected)
