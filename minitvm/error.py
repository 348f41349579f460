"""Error classes with TVM's names (``tvm.error``, ``tvm.TVMError``).

TVM reports failures inside the compiler as ``TVMError`` (a ``RuntimeError``), and
TVMScript mistakes as ``DiagnosticError`` (a ``TVMError``).  minitvm's own error
classes (struct info inference, schedule preconditions, TVMScript) derive from these
as well as from the builtin class they always had, so code written for TVM
(``pytest.raises(tvm.TVMError)``) and code written for minitvm both catch them.

This module imports nothing, so every layer may use it.
"""

from __future__ import annotations

__all__ = ["TVMError", "InternalError", "DiagnosticError", "OutOfBoundsError"]


class TVMError(RuntimeError):
    """Base of the errors the compiler raises (TVM's name)."""


class InternalError(TVMError):
    """An invariant inside the compiler was broken (TVM's name)."""


class DiagnosticError(TVMError):
    """A program (e.g. TVMScript) was rejected with a located diagnostic (TVM's name)."""


class OutOfBoundsError(TVMError, IndexError):
    """A buffer access the compiler proves out of bounds before anything runs (TVM's
    ``tir.analysis.OOBChecker``, which reports it as a ``TVMError``); an ``IndexError`` as
    :class:`minitvm.runtime.BoundsError`, its run-time counterpart.  ``locations`` holds each
    access found (``tir.oob_checker.OOBLocation``: buffer, index, range, extent, span)."""

    locations: tuple = ()
