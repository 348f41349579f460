"""tir.Schedule and its primitives (see schedule.py for the tour)."""

from .blockize import TensorIntrin
from .error import ScheduleError
from .schedule import Schedule
from .trace import BlockRV, ExprRV, Instruction, InstructionKind, LoopRV, Trace

__all__ = ["Schedule", "ScheduleError", "BlockRV", "LoopRV", "ExprRV", "Trace", "Instruction", "InstructionKind",
           "TensorIntrin"]
