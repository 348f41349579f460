"""MetaScheduleTuneTIR: tune every PrimFunc of a module with MetaSchedule, leaving the module as it is.

::

    with target:
        mod = Sequential([relax.get_pipeline("zero"), MetaScheduleTuneTIR(work_dir, max_trials_global=64),
                          MetaScheduleApplyDatabase(work_dir)])(mod)

As TVM's pass: the target is the one in scope when the pass is made, each PrimFunc (not marked
``tir.is_scheduled``) is tuned on its own with up to ``max_trials_global`` trials into the JSON
database in ``work_dir``, and the functions come back unchanged -- ``MetaScheduleApplyDatabase``
applies what was found.  The tuner is reached through ``minitvm.transform.tuning_database``:
Relax does not import it.
"""

from __future__ import annotations

from ...ir.module import IRModule
from ...target import Target
from ...tir.function import PrimFunc
from ...transform import PassContext, module_pass
from ...transform import tuning_database as _scope

__all__ = ["MetaScheduleTuneTIR"]


@module_pass(opt_level=0, name="MetaScheduleTuneTIR")
class MetaScheduleTuneTIR:
    """``MetaScheduleTuneTIR(work_dir, max_trials_global)``: needs a target in scope (``with target:``)."""

    def __init__(self, work_dir: str, max_trials_global: int):
        self.target = Target.current()
        if self.target is None:
            raise ValueError("MetaScheduleTuneTIR: no target in scope; create the pass under `with target:`")
        self.work_dir, self.max_trials_global = str(work_dir), int(max_trials_global)

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        for _, func in mod.functions_items():
            if isinstance(func, PrimFunc) and not func.attrs.get("tir.is_scheduled"):
                workload = IRModule({"main": func.with_attr("global_symbol", "main")})
                _scope.tune_tir(workload, self.target, self.work_dir, self.max_trials_global)
        return mod
