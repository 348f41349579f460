"""The autograder: run the graders in ``tests/grade`` against ``exercises/`` and report points.

``minitvm grade ch01`` on the command line, or ``minitvm.grade.check("ch01")`` in a notebook
cell (after ``import minitvm.grade``). Each grader runs in its own subprocess with a time
and a memory limit, so a crash, an endless loop or an answer that allocates without bound
costs only that exercise.
"""

from __future__ import annotations

from .runner import GradeReport, GradeResult, check, find_root, list_graders

__all__ = ["GradeReport", "GradeResult", "check", "find_root", "list_graders"]
