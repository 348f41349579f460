"""Helpers the converter modules share: reading ATen call arguments."""

from __future__ import annotations

from typing import Any


def arg_or(node: Any, index: int, name: str, default: Any) -> Any:
    """Positional argument ``index`` or keyword ``name`` of an ATen call, else ``default``."""
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def norm_dim(dim: int, ndim: int, who: str) -> int:
    """``dim`` counted from 0 (torch allows negatives), or an error naming the op."""
    if not -ndim <= int(dim) < max(ndim, 1):
        raise ValueError(f"from_exported_program: {who}: dim {dim} is out of range for a {ndim}-d tensor")
    return int(dim) % max(ndim, 1)
