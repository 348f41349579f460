"""Pictures of what the compiler does: Relax dataflow graphs, loop nests, iteration order,
IR diffs (the pass stepper and schedule lab widgets follow)."""

from .diff import IRDiff, diff
from .graph import graph, graph_dot
from .iteration_order import IterationOrder, iteration_order
from .loop_nest import loop_nest, loop_nest_dot
from .pass_stepper import PassStepper

__all__ = ["diff", "IRDiff", "graph", "graph_dot", "loop_nest", "loop_nest_dot", "iteration_order", "IterationOrder",
           "PassStepper"]
