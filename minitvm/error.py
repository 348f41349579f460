"""Error classes by TVM's names (``tvm.error.DiagnosticError``, ``tvm.TVMError``).

A TVMScript mistake raises :class:`minitvm.script.TVMScriptError`, a ``DiagnosticError``,
so code written against TVM's exception names catches it.
"""

from __future__ import annotations

__all__ = ["TVMError", "DiagnosticError", "InternalError"]


class TVMError(RuntimeError):
    """Base of the errors minitvm raises under TVM's names."""


class DiagnosticError(TVMError):
    """A mistake in user-written IR, reported with where it is (TVMScript parse errors)."""


class InternalError(TVMError):
    """A check inside the compiler failed."""
