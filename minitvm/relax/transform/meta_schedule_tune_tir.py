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

__all__ = ["MetaScheduleTuneTIR", "MetaScheduleTuneIRMod"]


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


@module_pass(opt_level=0, name="MetaScheduleTuneIRMod")
class MetaScheduleTuneIRMod:
    """``MetaScheduleTuneIRMod(params, work_dir, max_trials_global, max_trials_per_task=None,
    op_names=None)``: tune the module's kernels together, one task per distinct PrimFunc
    sharing ``max_trials_global`` trials (at most ``max_trials_per_task`` each), into the JSON
    database in ``work_dir``; the module comes back unchanged (``MetaScheduleApplyDatabase``
    applies the results).  Run it after legalization (the zero pipeline): the kernels are the
    module's PrimFuncs, so ``params`` (bound into Relax functions) cannot change them and must
    be empty.  ``op_names`` keeps only kernels whose name contains one of them.  Needs a
    target in scope (``with target:``) when the pass is made, as TVM's."""

    def __init__(self, params: dict | None, work_dir: str, max_trials_global: int,
                 max_trials_per_task: int | None = None, op_names: list[str] | None = None):
        self.target = Target.current()
        if self.target is None:
            raise ValueError("MetaScheduleTuneIRMod: no target in scope; create the pass under `with target:`")
        if params:
            raise NotImplementedError("MetaScheduleTuneIRMod: params are not supported; bind them first "
                                      "(relax.transform.BindParams) and tune the legalized module")
        self.work_dir, self.max_trials_global = str(work_dir), int(max_trials_global)
        self.max_trials_per_task = None if max_trials_per_task is None else int(max_trials_per_task)
        self.op_names = None if op_names is None else [str(n) for n in op_names]

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        kernels = {}
        for gv, func in mod.functions_items():
            if not isinstance(func, PrimFunc) or func.attrs.get("tir.is_scheduled"):
                continue
            if self.op_names is not None and not any(n in gv.name_hint for n in self.op_names):
                continue
            kernels[gv.name_hint] = func
        if kernels:
            _scope.tune_tir(IRModule(kernels), self.target, self.work_dir, self.max_trials_global,
                            max_trials_per_task=self.max_trials_per_task)
        return mod
