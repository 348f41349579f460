"""minitvm's own source files, read and parsed once per test process: the tests that read the
package as text (import floors and circles, function length, dispatch style) share one parse of
its ~500 files instead of each parsing all of them again."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import minitvm

PACKAGE_DIR = Path(minitvm.__file__).parent


@functools.cache
def package_files() -> tuple[Path, ...]:
    """Every ``.py`` file of the package, sorted."""
    return tuple(sorted(PACKAGE_DIR.rglob("*.py")))


@functools.cache
def source(path: Path) -> str:
    return path.read_text(encoding="utf-8")


@functools.cache
def source_lines(path: Path) -> tuple[str, ...]:
    return tuple(source(path).splitlines())


@functools.cache
def parsed(path: Path) -> ast.Module:
    """The file's syntax tree (shared: callers only read it)."""
    return ast.parse(source(path), filename=str(path))
