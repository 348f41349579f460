"""Pictures of what the compiler does: Relax dataflow graphs, loop nests, iteration order,
IR diffs, tensor lifetimes after memory planning, and two widgets: the pass stepper and the schedule lab."""

from .diff import IRDiff, diff
from .graph import graph, graph_dot
from .iteration_order import IterationOrder, iteration_order
from .loop_nest import loop_nest, loop_nest_dot
from .memory_plan import MemoryPlanPicture, memory_plan
from .pass_stepper import PassStepper
from .schedule_lab import ScheduleLab

__all__ = ["diff", "IRDiff", "graph", "graph_dot", "loop_nest", "loop_nest_dot", "iteration_order", "IterationOrder",
           "PassStepper", "ScheduleLab", "memory_plan", "MemoryPlanPicture"]
