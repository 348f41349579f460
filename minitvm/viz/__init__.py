"""Pictures of what the compiler does: loop nests and IR diffs (graphs and widgets follow)."""

from .diff import IRDiff, diff
from .iteration_order import IterationOrder, iteration_order
from .loop_nest import loop_nest, loop_nest_dot

__all__ = ["diff", "IRDiff", "loop_nest", "loop_nest_dot", "iteration_order", "IterationOrder"]
