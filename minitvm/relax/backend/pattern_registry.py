"""The registry of BYOC patterns: a backend registers its :class:`FusionPattern` s once, users
look them up by name or by the backend's prefix (TVM's ``relax.backend.pattern_registry``).

A pattern registered later has the higher priority: :func:`get_patterns_with_prefix` lists the
newest first, the order :class:`~minitvm.relax.transform.FuseOpsByPattern` tries them in -- so a
backend registers ``matmul`` before ``matmul_bias_relu`` and the larger match wins.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..transform.fuse_ops_by_pattern import FusionPattern

__all__ = ["register_patterns", "get_patterns_with_prefix", "get_pattern", "remove_patterns"]

_TABLE: list[FusionPattern] = []


def register_patterns(patterns: Sequence[Any]) -> None:
    """Add patterns: each a FusionPattern or the tuple of its arguments
    ``(name, pattern[, annotation_patterns[, check]])``; later ones take priority."""
    entries = []
    for item in patterns:
        if isinstance(item, FusionPattern):
            entries.append(item)
        elif isinstance(item, tuple):
            entries.append(FusionPattern(*item))
        else:
            raise TypeError(f"register_patterns: cannot register a {type(item).__name__} as a pattern "
                            "(give a FusionPattern or a tuple (name, pattern, ...))")
    _TABLE.extend(entries)


def get_patterns_with_prefix(prefix: str) -> list[FusionPattern]:
    """The registered patterns whose names start with ``prefix``, highest priority (newest) first."""
    return [p for p in reversed(_TABLE) if p.name.startswith(prefix)]


def get_pattern(name: str) -> FusionPattern | None:
    """The pattern registered (last) under ``name``, or None."""
    return next((p for p in reversed(_TABLE) if p.name == name), None)


def remove_patterns(names: Sequence[str]) -> None:
    """Unregister every pattern of these names (TVM's ``relax.backend.RemovePatterns``)."""
    drop = set(names)
    _TABLE[:] = [p for p in _TABLE if p.name not in drop]
