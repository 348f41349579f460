"""DataflowUseInplaceCalls (TVM's ``relax.transform.DataflowUseInplaceCalls``) is not in
minitvm: the name is here so code naming it imports, and calling it says what is missing.
Its analyses -- liveness and aliasing in a dataflow block -- are
(``relax.analysis.dataflow_alias``)."""

from __future__ import annotations

from typing import Any

__all__ = ["DataflowUseInplaceCalls"]


def DataflowUseInplaceCalls() -> Any:  # noqa: N802 - TVM's name
    """Refused: minitvm does not rewrite operator calls to in-place PrimFunc calls."""
    raise NotImplementedError(
        "relax.transform.DataflowUseInplaceCalls is not implemented in minitvm (its liveness and alias "
        "analyses are: relax.testing.transform.dataflow_liveness_analysis / dataflow_alias_analysis)")
