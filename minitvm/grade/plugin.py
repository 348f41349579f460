"""pytest plugin for the graders (loaded with ``-p minitvm.grade.plugin`` from pyproject's addopts).

It adds ``--grade-target=solutions|exercises`` (default ``solutions``, so the normal test
run proves every grader on the solved code), registers the ``points`` marker, puts the
repository root on ``sys.path`` so ``solutions.ch01`` / ``exercises.ch01`` import, and
provides the ``grade_module`` fixture that loads the chosen one.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable

import pytest

TARGETS = ("solutions", "exercises")


def pytest_addoption(parser: Any) -> None:
    parser.addoption("--grade-target", choices=TARGETS, default="solutions",
                     help="which package the graders in tests/grade import: solutions (default) or exercises")


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "points(n): what a grader in tests/grade is worth")
    root = str(config.rootpath)
    if root not in sys.path:
        sys.path.insert(0, root)


@pytest.fixture
def grade_module(request: Any) -> Callable[[str], Any]:
    """``grade_module("ch01")`` -> the module ``<grade-target>.ch01``."""
    target = request.config.getoption("--grade-target")

    def load(chapter: str) -> Any:
        return importlib.import_module(f"{target}.{chapter}")

    return load
