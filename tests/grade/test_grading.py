"""CI proves the graders: they pass on solutions/ (the normal run of test_ch*.py), fail on the
untouched exercises/ with the stub's NotImplementedError, cover every exercise, and the
stubs are what make_stubs generates. Also: the runner isolates crashes and endless loops.

The stubs and solutions checked are the committed ones (``tests/committed.py``): a learner
solving ``exercises/chNN.py`` in this clone does not turn these tests red."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from committed import committed_paths, committed_text, materialise

import minitvm
from minitvm.grade import check, list_graders
from minitvm.grade.make_stubs import make_stub

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted(p.stem for p in (ROOT / "solutions").glob("ch*.py"))
PKG_PARENT = str(Path(minitvm.__file__).resolve().parents[1])


def _exercise_functions(chapter: str) -> dict[str, str]:
    """name -> exercise number, for each solution function with a '# BEGIN SOLUTION' body."""
    path = ROOT / "solutions" / f"{chapter}.py"
    text = path.read_text()
    out = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef):
            src = ast.get_source_segment(text, node)
            if "# BEGIN SOLUTION" in src:
                m = re.match(r"Exercise (\d+\.\d+)", ast.get_docstring(node) or "")
                assert m, f"{chapter}.{node.name}: docstring must start with 'Exercise N.M'"
                out[node.name] = m.group(1)
    return out


def test_there_are_chapters():
    assert CHAPTERS == ["ch01", "ch02", "ch03", "ch04", "ch05", "ch06", "ch07", "ch08", "ch09", "ch10"]


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_committed_stubs_match_the_solutions(chapter):
    generated = make_stub(committed_text(f"solutions/{chapter}.py"), f"{chapter}.py")
    committed = committed_text(f"exercises/{chapter}.py")
    assert committed == generated, (f"exercises/{chapter}.py is committed stale or edited: regenerate it with "
                                    "`python -m minitvm.grade.make_stubs` and commit it with the solution")


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_exercise_has_a_grader_with_points(chapter):
    functions = _exercise_functions(chapter)
    assert len(functions) >= 6
    graders = list_graders(chapter, ROOT)
    source = (ROOT / "tests" / "grade" / f"test_{chapter}.py").read_text()
    used = {n.attr for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "ex"}
    assert not set(functions) - used, f"exercises without a grader: {sorted(set(functions) - used)}"
    assert {g.exercise for g in graders} == set(functions.values())
    for g in graders:
        assert g.points >= 1 and f"@pytest.mark.points({g.points})" in source
    text = (ROOT / "solutions" / f"{chapter}.py").read_text()
    assert text.count("# BEGIN SOLUTION") == text.count("# END SOLUTION") == len(functions)


def _hint_levels(chapter: str) -> dict[str, list[str]]:
    """grader name -> its ``@pytest.mark.hint`` levels (empty: none), for each grader with points."""
    tree = ast.parse((ROOT / "tests" / "grade" / f"test_{chapter}.py").read_text())
    out = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        marks = {d.func.attr: d for d in node.decorator_list
                 if isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute)}
        if "points" in marks:
            out[node.name] = [ast.literal_eval(a) for a in marks["hint"].args] if "hint" in marks else []
    return out


def _sections(chapter: str) -> list[str]:
    """Patterns for a hint naming a section of the chapter: "section N" (or "sections M and N")
    for a numbered heading, else the heading's name, up to its colon or dash (backticks dropped)."""
    notebook = next((ROOT / "chapters").glob(f"{chapter[2:]}_*.ipynb"))
    patterns = []
    for cell in json.loads(notebook.read_text())["cells"]:
        for line in "".join(cell["source"]).splitlines() if cell["cell_type"] == "markdown" else ():
            heading = re.match(r"#{2,3} (?:(\d+)\. )?(.+)", line)
            if heading is None or heading.group(2) in ("Summary", "Exercises", "What to remember"):
                continue
            if heading.group(1):
                patterns.append(rf"\bsections? (?:\d+ and )?{heading.group(1)}\b")
            else:
                patterns.append(re.escape(re.split(r": | — ", heading.group(2).replace("`", ""))[0]))
    return patterns


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_grader_hints_in_levels_starting_from_a_section(chapter):
    """At least two levels, the first pointing to where the chapter teaches the idea. (That no
    level gives the answer is for people to read: see exercises/README.md.)"""
    sections = _sections(chapter)
    wrong = [f"{name}: {len(levels)} level(s), give it at least two" for name, levels in _hint_levels(chapter).items()
             if len(levels) < 2]
    wrong += [f"{name}: level 1 names no section of the chapter: {levels[0]!r}"
              for name, levels in _hint_levels(chapter).items()
              if levels and not any(re.search(s, levels[0]) for s in sections)]
    assert not wrong, f"{chapter}'s hints:\n" + "\n".join(wrong)


def _untouched_course(dest: Path) -> Path:
    """A copy of the course at ``dest`` whose ``exercises/`` are the committed stubs (a learner's
    answers in this clone are not untouched), with this clone's graders and pytest set-up."""
    materialise(committed_paths("exercises", "*.py"), dest)
    for rel in ("pyproject.toml", "tests/conftest.py", *(f"tests/grade/test_{c}.py" for c in CHAPTERS)):
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / rel, dest / rel)
    return dest


def test_graders_fail_on_untouched_exercises_with_not_implemented(tmp_path):
    xml = tmp_path / "report.xml"
    course = _untouched_course(tmp_path / "course")
    # the grade plugin puts the course's root first on sys.path: its exercises/ are the ones imported
    env = dict(os.environ, PYTHONPATH=PKG_PARENT)
    files = [f"tests/grade/test_{c}.py" for c in CHAPTERS]
    # --tb=line: the report's failure messages are the same; 88 formatted tracebacks cost 1.5 s
    proc = subprocess.run([sys.executable, "-m", "pytest", *files, "--grade-target=exercises", f"--junitxml={xml}",
                           "-q", "--tb=line", "-p", "no:cacheprovider", "-p", "no:xdist"],
                          cwd=course, env=env, capture_output=True, text=True, timeout=300)
    cases = list(ET.parse(xml).getroot().iter("testcase"))
    expected = sum(1 for c in CHAPTERS for _ in list_graders(c, ROOT))
    assert len({c.get("name").split("[")[0] for c in cases}) == expected, proc.stdout[-2000:]
    for case in cases:
        failure = case.find("failure")
        assert failure is not None, f"{case.get('name')} did not fail on the stub"
        assert failure.get("message", "").startswith("NotImplementedError: exercise"), \
            f"{case.get('name')} failed for another reason: {failure.get('message')}"


#: the MLC course's spelling (TVM 0.20-0.23) of the names the solutions write in TVM 0.27's
_MLC_SPELLING = [(r"\bT\.sblock_alloc_buffer\b", "T.alloc_buffer"), (r"\bT\.sblock", "T.block"),
                 (r"\bget_sblock\b", "get_block"), (r"\b(s_tir|tirx)\b", "tir")]


def test_graders_accept_the_mlc_courses_spelling(tmp_path):
    # a learner following the MLC course writes `tir as T`, T.block, tir.Schedule, get_block:
    # the TVMScript and schedule graders pass on the solutions spelled that way too
    course = tmp_path / "course"
    (course / "solutions").mkdir(parents=True)
    (course / "solutions" / "__init__.py").write_text("")
    for chapter in ("ch01", "ch02"):
        text = (ROOT / "solutions" / f"{chapter}.py").read_text()
        for pattern, older in _MLC_SPELLING:
            text = re.sub(pattern, older, text)
        assert "sblock" not in text and 'T.block("' in text and "tirx" not in text
        (course / "solutions" / f"{chapter}.py").write_text(text)
    for rel in ("pyproject.toml", "tests/conftest.py", "tests/grade/test_ch01.py", "tests/grade/test_ch02.py"):
        (course / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / rel, course / rel)
    proc = subprocess.run([sys.executable, "-m", "pytest", "tests/grade/test_ch01.py", "tests/grade/test_ch02.py",
                           "--grade-target=solutions", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"],
                          cwd=course, env=dict(os.environ, PYTHONPATH=PKG_PARENT), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0 and " passed" in proc.stdout, proc.stdout[-3000:]


def test_make_stub_replaces_only_marked_bodies():
    src = textwrap.dedent('''\
        """Demo (solved)."""
        X = 1


        def f(a):
            """Exercise 9.1: double it."""
            # BEGIN SOLUTION
            return 2 * a
            # END SOLUTION
        ''')
    out = make_stub(src, "ch09.py")
    assert 'raise NotImplementedError("exercise 9.1: write f")' in out
    assert "return 2 * a" not in out and "X = 1" in out and "(to solve)" in out
    with pytest.raises(ValueError, match="Exercise N.M"):
        make_stub("def g():\n    # BEGIN SOLUTION\n    pass\n    # END SOLUTION\n")


_FAKE_GRADERS = '''
import pytest

@pytest.fixture
def ex(grade_module):
    return grade_module("ch99")

@pytest.mark.points(2)
def test_ok(ex):
    """Exercise 9.1"""
    assert ex.ok() == 1

@pytest.mark.points(1)
def test_wrong(ex):
    """Exercise 9.2"""
    assert ex.wrong() == 1, "wrong() should return 1"

@pytest.mark.points(3)
def test_loops(ex):
    """Exercise 9.3"""
    ex.loops()

@pytest.mark.points(1)
def test_crashes(ex):
    """Exercise 9.4"""
    ex.crashes()

@pytest.mark.points(1)
def test_todo(ex):
    """Exercise 9.5"""
    ex.todo()
'''

_FAKE_EXERCISES = '''
import os

def ok():
    return 1

def wrong():
    return 2

def loops():
    while True:
        pass

def crashes():
    os.abort()

def todo():
    raise NotImplementedError("exercise 9.5: write todo")
'''


def _fake_repository(root: Path, monkeypatch, chapter: str, graders: str, exercises: str) -> None:
    """A repository at ``root`` with one chapter's graders and exercises, graded with this minitvm."""
    (root / "tests" / "grade").mkdir(parents=True)
    for pkg in ("solutions", "exercises"):  # regular packages, as in the repository
        (root / pkg).mkdir()
        (root / pkg / "__init__.py").write_text("")
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = "-p minitvm.grade.plugin"\n')
    (root / "tests" / "grade" / f"test_{chapter}.py").write_text(graders)
    (root / "exercises" / f"{chapter}.py").write_text(exercises)
    monkeypatch.setenv("PYTHONPATH", PKG_PARENT)


def test_runner_isolates_crashes_and_timeouts(tmp_path, monkeypatch):
    _fake_repository(tmp_path, monkeypatch, "ch99", _FAKE_GRADERS, _FAKE_EXERCISES)
    # the clock starts when the exercise's child is forked, not with an interpreter: 2 s is plenty
    # for test_ok on a loaded machine, and test_loops is stopped after 2 s, not 20
    report = check("ch99", root=tmp_path, timeout=2)
    status = {r.grader: r.status for r in report.results}
    assert status == {"test_ok": "passed", "test_wrong": "failed", "test_loops": "timeout",
                      "test_crashes": "crashed", "test_todo": "todo"}, str(report)
    assert (report.earned, report.total) == (2, 8)
    crash = next(r for r in report.results if r.grader == "test_crashes")
    assert crash.message.endswith("(signal 6); Fatal Python error: Aborted"), crash.message
    assert "exercises/ch99.py\", line 15 in crashes" in crash.details  # where, in the learner's file
    text = str(report)
    assert "total: 2/8 points" in text and "wrong() should return 1" in text
    assert "<table>" in report._repr_html_()



_FAKE_FORKED_GRADERS = '''
import os

import pytest

@pytest.fixture
def ex(grade_module):
    return grade_module("ch96")

@pytest.fixture
def broken():
    raise RuntimeError("the fixture broke")

@pytest.mark.points(1)
def test_first(ex):
    """Exercise 9.1"""
    ex.note_parent()
    assert ex.bump() == 1

@pytest.mark.points(1)
def test_second(ex):
    """Exercise 9.2"""
    ex.note_parent()
    assert ex.bump() == 1

@pytest.mark.points(1)
def test_exits(ex):
    """Exercise 9.3"""
    ex.leave()

@pytest.mark.points(1)
def test_set_up_fails(broken):
    """Exercise 9.4"""
'''

_FAKE_FORKED_EXERCISES = '''
import os
import sys

COUNT = 0

def bump():
    global COUNT
    COUNT += 1
    return COUNT

def note_parent():
    with open(os.environ["PARENTS_FILE"], "a") as f:
        f.write(f"{os.getppid()} {int('torch' in sys.modules)}\\n")

def leave():
    os._exit(3)
'''


def test_graders_share_one_warm_process_and_no_state(tmp_path, monkeypatch):
    """One process per chapter, a child per grader: the children have one parent that is not
    the caller, no grader sees what another changed (a module global counts 1 in both), and an
    os._exit or a broken fixture costs only its own exercise."""
    _fake_repository(tmp_path, monkeypatch, "ch96", _FAKE_FORKED_GRADERS, _FAKE_FORKED_EXERCISES)
    parents = tmp_path / "parents.txt"
    monkeypatch.setenv("PARENTS_FILE", str(parents))
    report = check("ch96", root=tmp_path, timeout=30)
    by_name = {r.grader: r for r in report.results}
    assert {n: r.status for n, r in by_name.items()} == {"test_first": "passed", "test_second": "passed",
                                                           "test_exits": "crashed", "test_set_up_fails": "error"}, \
        str(report)
    assert by_name["test_exits"].message.startswith("the grader process died: exit code 3")
    assert "the fixture broke" in by_name["test_set_up_fails"].message
    lines = parents.read_text().split()
    assert len(lines) == 4 and lines[0] == lines[2] != str(os.getpid()), lines
    assert lines[1] == lines[3] == "0"  # neither the graders nor the exercises import torch: not loaded


_FAKE_MEMORY_GRADERS = '''
import pytest

@pytest.fixture
def ex(grade_module):
    return grade_module("ch97")

@pytest.mark.points(2)
def test_ok(ex):
    """Exercise 9.1"""
    assert ex.ok() == 1

@pytest.mark.points(1)
def test_hungry(ex):
    """Exercise 9.2"""
    assert ex.hungry() == 1

@pytest.mark.points(1)
def test_wrong(ex):
    """Exercise 9.3"""
    assert ex.wrong() == 1, "wrong() should return 1"
'''

_FAKE_MEMORY_EXERCISES = '''
import numpy as np

def ok():
    return 1

def hungry():
    chunks = []
    while len(chunks) < 32:  # 2 GiB at most, should the limit ever fail, so the test cannot take the machine
        chunks.append(np.ones(1 << 23))  # 64 MiB at a time, written: memory, not a reservation
    return len(chunks)

def wrong():
    return 2
'''


def test_an_answer_that_allocates_without_bound_costs_only_its_exercise(tmp_path, monkeypatch):
    _fake_repository(tmp_path, monkeypatch, "ch97", _FAKE_MEMORY_GRADERS, _FAKE_MEMORY_EXERCISES)
    monkeypatch.setenv("MINITVM_GRADE_MEMORY_GIB", "1")  # the environment's limit (the default is 4 GiB)
    report = check("ch97", root=tmp_path, timeout=60)
    by_name = {r.grader: r for r in report.results}
    assert {n: r.status for n, r in by_name.items()} == {"test_ok": "passed", "test_hungry": "memory",
                                                           "test_wrong": "failed"}, str(report)
    assert by_name["test_hungry"].message.startswith("used more than 1 GiB of memory (the limit of one exercise")
    assert "MemoryError" in by_name["test_hungry"].message
    assert (report.earned, report.total) == (2, 4)
    assert "exercise 9.2 (test_hungry): memory" in str(report)


def test_the_memory_limit_comes_from_the_argument_the_environment_or_the_default(monkeypatch):
    from minitvm.grade.runner import DEFAULT_MEMORY_GIB, memory_limit_gib

    monkeypatch.delenv("MINITVM_GRADE_MEMORY_GIB", raising=False)
    assert memory_limit_gib() == DEFAULT_MEMORY_GIB == 4.0
    monkeypatch.setenv("MINITVM_GRADE_MEMORY_GIB", "2.5")
    assert (memory_limit_gib(), memory_limit_gib(8)) == (2.5, 8.0)
    assert memory_limit_gib(0) is None
    monkeypatch.setenv("MINITVM_GRADE_MEMORY_GIB", "lots")
    with pytest.raises(ValueError, match="MINITVM_GRADE_MEMORY_GIB='lots': expected a number of GiB"):
        memory_limit_gib()


def test_cli_grades_one_exercise():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), PKG_PARENT]))
    proc = subprocess.run([sys.executable, "-m", "minitvm.cli", "grade", "ch01", "--target", "solutions",
                           "--only", "1.1"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "total: 1/1 points (ch01, solutions/)" in proc.stdout


_FAKE_OOB_GRADERS = '''
import numpy as np
import pytest

import minitvm

@pytest.fixture
def ex(grade_module):
    return grade_module("ch98")

@pytest.mark.points(2)
def test_far_index(ex):
    """Exercise 9.1"""
    lib = minitvm.build(ex.far_index, target="llvm")
    lib["far_index"](np.ones(8, "float32"), np.zeros(8, "float32"))
'''

_FAKE_OOB_EXERCISES = '''
from minitvm.script import tir as T

@T.prim_func
def far_index(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi * 100000000] = A[vi]  # 400 MB past the end: unchecked, this write is a segfault
'''


def test_a_wrong_index_fails_its_exercise_before_it_runs(tmp_path, monkeypatch):
    _fake_repository(tmp_path, monkeypatch, "ch98", _FAKE_OOB_GRADERS, _FAKE_OOB_EXERCISES)
    (result,) = check("ch98", root=tmp_path, timeout=60).results
    assert result.status == "failed", result
    assert ("Out of bounds memory access on buffer B dimension 0: index vi * 100000000 reaches "
            "[0, 700000000] but the valid range is [0, 7] (extent 8)") in result.message


@pytest.mark.points(1)
def test_graders_run_in_bounds_checked_mode():
    from minitvm.transform import PassContext

    assert PassContext.current().get_config("tir.bounds_check") is True


def test_other_tests_run_without_it():
    from minitvm.transform import PassContext

    assert PassContext.current().get_config("tir.bounds_check") is None
