"""A switch that is on within a ``with`` block: a context variable set to True, then restored
(per thread and per task, as context variables are)."""

from __future__ import annotations

import contextlib
import contextvars
from typing import Iterator

__all__ = ["switched_on"]


@contextlib.contextmanager
def switched_on(flag: contextvars.ContextVar[bool]) -> Iterator[None]:
    """Within: ``flag.get()`` is True; after, what it was before."""
    token = flag.set(True)
    try:
        yield
    finally:
        flag.reset(token)
