"""The committed text of the project's files, for the tests about what the repository ships.

A learner works in the clone they run the tests in: JupyterLab autosaves a chapter's outputs into
``chapters/*.ipynb``, solving an exercise edits ``exercises/chNN.py``.  The tests that check what
is committed (notebooks without outputs, stubs generated from the solutions, every grader failing
on the untouched stubs) read the version in git's ``HEAD`` instead, so ``./dev test`` stays green
in a learner's clone while a commit with outputs or a stale stub still fails them.

Outside a git checkout (an unpacked archive, no ``git`` program) and for a file not yet committed,
the working tree's text is read instead: there it is the only version.  A fresh clone, as in CI,
is a git checkout, so CI checks exactly what was committed.
"""

from __future__ import annotations

import fnmatch
import functools
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _git(root: Path, *args: str) -> subprocess.CompletedProcess | None:
    """``git -C root args...``, or None when there is no git program."""
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, timeout=60)
    except OSError:
        return None


@functools.lru_cache(maxsize=None)
def in_checkout(root: Path = ROOT) -> bool:
    """Whether ``root`` is in a git checkout with at least one commit."""
    proc = _git(root, "rev-parse", "--verify", "--quiet", "HEAD")
    return proc is not None and proc.returncode == 0


def _rel(path: Path | str, root: Path) -> str:
    path = Path(path)
    return (path.resolve().relative_to(root) if path.is_absolute() else path).as_posix()


def committed_text(path: Path | str, root: Path = ROOT) -> str:
    """The text of ``path`` (absolute, or relative to ``root``) as committed in ``HEAD``; the
    working tree's text outside a git checkout or for a file ``HEAD`` does not have."""
    rel = _rel(path, root)
    if in_checkout(root):
        # "HEAD:./x" is x relative to -C's folder: right also when root is below the repository's top
        proc = _git(root, "show", f"HEAD:./{rel}")
        if proc is not None and proc.returncode == 0:
            return proc.stdout.decode("utf-8")
    return (root / rel).read_text(encoding="utf-8")


def committed_paths(folder: str, pattern: str, root: Path = ROOT) -> list[Path]:
    """The files of ``root/folder`` whose names match ``pattern`` (fnmatch) in ``HEAD``, sorted:
    a learner's own notebook next to the chapters is not the repository's (the working tree's
    files outside a git checkout)."""
    if in_checkout(root):
        proc = _git(root, "ls-tree", "--name-only", "HEAD", "--", f"{folder.rstrip('/')}/")
        if proc is not None and proc.returncode == 0:
            names = [Path(line).name for line in proc.stdout.decode("utf-8").splitlines()]
            return sorted(root / folder / n for n in names if fnmatch.fnmatch(n, pattern))
    return sorted((root / folder).glob(pattern))


def materialise(paths: list[Path], dest: Path, root: Path = ROOT) -> list[Path]:
    """Write the committed text of ``paths`` under ``dest`` at their places relative to ``root``
    (a package as committed, importable from ``dest``); returns the written paths."""
    out = []
    for path in paths:
        target = dest / _rel(path, root)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(committed_text(path, root), encoding="utf-8")
        out.append(target)
    return out
