"""The learner's workspace is theirs: after running the chapters and solving exercises in their
clone, the tests of what the repository ships still pass, and still fail on a commit that ships
outputs or an edited stub (``tests/committed.py`` reads the committed files)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
from committed import ROOT, committed_paths, committed_text, in_checkout, materialise

PKG_PARENT = str(Path(__import__("minitvm").__file__).resolve().parents[1])
#: the tests under test and what they need, from this working tree (their edits are tested here)
_TEST_FILES = ("pyproject.toml", "tests/conftest.py", "tests/committed.py", "tests/chapters/test_notebooks.py",
               "tests/grade/test_grading.py")
_TESTS = ["tests/chapters/test_notebooks.py", "tests/grade/test_grading.py", "-k",
          "committed_without_outputs or committed_stubs_match"]


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), "-c", "user.name=learner", "-c", "user.email=learner@invalid",
                           *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, f"git {' '.join(args)} in {repo}: {proc.stderr}"
    return proc.stdout


def _commit_all(repo: Path, message: str) -> None:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)


def test_committed_text_reads_head_and_falls_back_to_the_working_tree(tmp_path):
    repo = tmp_path / "repo"
    (repo / "d").mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "d" / "a.txt").write_text("as committed\n")
    _commit_all(repo, "a")
    (repo / "d" / "a.txt").write_text("edited\n")
    (repo / "d" / "b.txt").write_text("new\n")  # not committed
    assert in_checkout(repo)
    assert committed_text("d/a.txt", repo) == "as committed\n"
    assert committed_text(repo / "d" / "a.txt", repo) == "as committed\n"
    assert committed_text("d/b.txt", repo) == "new\n"
    assert committed_paths("d", "*.txt", repo) == [repo / "d" / "a.txt"]
    (written,) = materialise([repo / "d" / "a.txt"], tmp_path / "out", repo)
    assert written == tmp_path / "out" / "d" / "a.txt" and written.read_text() == "as committed\n"

    plain = tmp_path / "plain"  # an unpacked archive: no repository
    (plain / "d").mkdir(parents=True)
    (plain / "d" / "a.txt").write_text("only copy\n")
    assert not in_checkout(plain)
    assert committed_text("d/a.txt", plain) == "only copy\n"
    assert committed_paths("d", "*.txt", plain) == [plain / "d" / "a.txt"]


def _course_clone(dest: Path) -> Path:
    """A git repository with the course as committed here and this working tree's tests."""
    materialise([*committed_paths("chapters", "*.ipynb"), *committed_paths("exercises", "*.py"),
                 *committed_paths("solutions", "*.py")], dest)
    for rel in _TEST_FILES:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / rel, dest / rel)
    _git(dest, "init", "-q")
    _commit_all(dest, "the course")
    return dest


def _run(repo: Path, notebook: str, chapter: str) -> None:
    """What JupyterLab saves after a run of ``notebook``, and ``chapter``'s exercises solved."""
    path = repo / "chapters" / notebook
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    for k, cell in enumerate(code, 1):
        cell.execution_count = k
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"output {k}\n")]
    nbformat.write(nb, path)
    (repo / "exercises" / f"{chapter}.py").write_text((repo / "solutions" / f"{chapter}.py").read_text())


def test_a_learners_outputs_and_answers_pass_and_a_commit_of_them_fails(tmp_path):
    """One run of the tests (a pytest start costs seconds) proves both ways: chapter 2's outputs
    and answers are committed (they must fail), chapter 1's are the learner's (they must pass)."""
    repo = _course_clone(tmp_path / "clone")
    _run(repo, "02_schedule_transformations.ipynb", "ch02")
    _commit_all(repo, "a commit that ships outputs and an edited stub")
    _run(repo, "01_tensor_programs.ipynb", "ch01")
    status = _git(repo, "status", "--short")
    assert "chapters/01_tensor_programs.ipynb" in status and "exercises/ch01.py" in status, status
    proc = subprocess.run([sys.executable, "-m", "pytest", *_TESTS, "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "-p", "no:hypothesispytest"], cwd=repo, env=dict(os.environ, PYTHONPATH=PKG_PARENT),
                          capture_output=True, text=True, timeout=300)
    failed = sorted(line.split(" - ")[0] for line in proc.stdout.splitlines() if line.startswith("FAILED"))
    assert failed == [
        "FAILED tests/chapters/test_notebooks.py::test_committed_without_outputs[02_schedule_transformations]",
        "FAILED tests/grade/test_grading.py::test_committed_stubs_match_the_solutions[ch02]"], proc.stdout[-3000:]
    checked = len(committed_paths("chapters", "[0-9][0-9]_*.ipynb")) + len(committed_paths("solutions", "ch*.py"))
    assert f"2 failed, {checked - 2} passed" in proc.stdout, proc.stdout[-3000:]
