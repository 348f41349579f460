"""The autograder: run the graders in ``tests/grade`` against ``exercises/`` and report points.

``minitvm grade ch01`` on the command line, or ``minitvm.grade.check("ch01")`` in a notebook
cell (after ``import minitvm.grade``). Each grader runs in its own subprocess with a time
limit, so a crash or an endless loop costs only that exercise.
"""

from __future__ import annotations

from .runner import GradeReport, GradeResult, check, find_root, list_graders

__all__ = ["GradeReport", "GradeResult", "check", "find_root", "list_graders"]
