"""The pass infrastructure: passes, sequences of passes, the context they run in.

A pass is a function ``IRModule -> IRModule`` plus :class:`PassInfo` (its name, the
lowest ``opt_level`` at which it runs, the passes it needs).  :class:`PassContext`
holds the settings every pass sees and the instruments that watch each pass run —
the pass-stepper widget records the IR through one of those.
"""

from .instrument import PassInstrument, PassPrintingInstrument, PassRecordingInstrument, PassTimingInstrument, PrintIR
from .pass_infra import ModulePass, Pass, PassContext, PassInfo, Sequential, module_pass, register_pass_config

__all__ = ["Pass", "PassInfo", "ModulePass", "Sequential", "PassContext", "module_pass",
           "register_pass_config", "PassInstrument", "PassTimingInstrument",
           "PassPrintingInstrument", "PassRecordingInstrument", "PrintIR"]
