"""tir.Schedule and its primitives (see schedule.py for the tour).

Where things live: ``schedule.py`` checks arguments and calls a primitive; its ``@primitive``
declaration (``primitive.py``) records it in the trace (``trace.py``) and replays it; each
primitive is a module of its own (``loops``, ``compute``, ``rfactor``, ``cache`` ...) whose
entry function reads as its steps; ``checks`` holds TVM's block conditions (complete,
reduction, affine), ``region_cover`` the region solving of compute_at, ``shared_analyses``
what several primitives compute (index bounds, access regions, predicates), ``tree`` how a
statement is found, replaced or removed in the immutable tree, ``state`` the srefs TVM's
readers ask for (``sch.get_sref``, ``sch.state``).
"""

from . import state
from .blockize import TensorIntrin
from .error import ScheduleError
from .schedule import Schedule
from .state import BlockScope, Dependency, DepKind, ScheduleDebugMask, ScheduleState, StmtSRef
from .trace import BlockRV, ExprRV, Instruction, InstructionKind, LoopRV, Trace

SBlockRV = BlockRV  # TVM 0.27's name (tvm.s_tir.schedule.SBlockRV; see minitvm.eras)

__all__ = ["Schedule", "ScheduleError", "BlockRV", "LoopRV", "ExprRV", "Trace", "Instruction", "InstructionKind",
           "TensorIntrin", "SBlockRV", "ScheduleState", "StmtSRef", "ScheduleDebugMask", "state",
           "BlockScope", "Dependency", "DepKind"]
