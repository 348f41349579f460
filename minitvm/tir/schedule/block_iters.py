"""Primitives that rewrite one block's iterators: reorder_block_iter_var.

``reorder_block_iter_var(block, new_order)`` permutes the block's iterator list (and its
bindings along with it); the computation is unchanged, only the order the block declares
``vi, vj, vk`` in — what ``blockize`` and tensorization match against — changes.
"""

from __future__ import annotations

from ...ir import replace
from ..stmt import BlockRealize, Stmt
from .error import ScheduleError
from .tree import replace_stmt

__all__ = ["reorder_block_iter_var"]


def reorder_block_iter_var(root: Stmt, realize: BlockRealize, new_order: list[int]) -> Stmt:
    """``root`` with the iterators of ``realize``'s block in the order ``new_order``."""
    block = realize.block
    n = len(block.iter_vars)
    if sorted(new_order) != list(range(n)):
        raise ScheduleError(f"cannot reorder_block_iter_var of block {block.name_hint}: {list(new_order)} "
                            f"is not a permutation of [0, ..., {n - 1}] (the block has {n} iterators)")
    new_block = replace(block, iter_vars=tuple(block.iter_vars[k] for k in new_order))
    new_realize = replace(realize, block=new_block,
                          iter_values=tuple(realize.iter_values[k] for k in new_order))
    return replace_stmt(root, realize, new_realize)
