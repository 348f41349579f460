"""TVM's diagnostics interface (``tvm.ir.diagnostics``): a rejected program's errors, each a
:class:`Diagnostic` (level, span, message), handed to a renderer before the error is raised.

minitvm raises its errors with the location in the message; ``override_renderer(f)`` lets a
caller (TVM's tests do) collect them as diagnostics instead: ``f`` receives a
:class:`DiagnosticContext` whose ``diagnostics`` holds them, then the error is raised as ever.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Callable

from .span import Span

__all__ = ["DiagnosticLevel", "Diagnostic", "DiagnosticContext", "override_renderer", "render"]


class DiagnosticLevel(enum.IntEnum):
    BUG = 10
    ERROR = 20
    WARNING = 30
    NOTE = 40
    HELP = 50


@dataclass(frozen=True)
class Diagnostic:
    level: DiagnosticLevel
    span: Span
    message: str


@dataclass
class DiagnosticContext:
    """The diagnostics of one rejected program (TVM's context also holds the module)."""

    diagnostics: list
    module: Any = None


# one for the process, as TVM's (parsing may run on a helper thread with a deeper stack)
_RENDERER: list = [None]


def override_renderer(render_func: Callable[[DiagnosticContext], None] | None) -> None:
    """Hand later diagnostics to ``render_func`` (None: back to minitvm's own messages only)."""
    _RENDERER[0] = render_func


def render(diagnostics: list[Diagnostic]) -> None:
    """Give ``diagnostics`` to the overriding renderer, if one is set (the caller then raises)."""
    renderer = _RENDERER[0]
    if renderer is not None:
        renderer(DiagnosticContext(list(diagnostics)))
