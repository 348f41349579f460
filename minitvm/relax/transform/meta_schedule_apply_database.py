"""MetaScheduleApplyDatabase: the tuned schedule of every PrimFunc found in the tuning database.

::

    with target, database, PassContext(opt_level=3):
        mod = relax.transform.MetaScheduleApplyDatabase()(mod)

Each PrimFunc of the module, as the workload ``IRModule({"main": func})`` (global symbol
"main", as the tuner extracted it), is looked up in the database in scope (``with database:``;
or the JSON database in ``work_dir``); when it was tuned, the best schedule replaces it, marked
``"tir.is_scheduled"`` so that no default schedule touches it again.  Functions never tuned are
left as they are (``enable_warning=True`` names them).  The database comes from
``minitvm.meta_schedule`` through the low-floor hook ``minitvm.transform.tuning_database``:
Relax does not import the tuner.
"""

from __future__ import annotations

import warnings

from ...ir.module import IRModule
from ...target import Target
from ...tir.function import PrimFunc
from ...transform import PassContext, module_pass
from ...transform import tuning_database as _scope

__all__ = ["MetaScheduleApplyDatabase", "apply_database"]


def apply_database(mod: IRModule, database: object, target: Target | str | None = None,
                   enable_warning: bool = False) -> IRModule:
    """``mod`` with each PrimFunc that ``database`` has a record of replaced by its tuned schedule."""
    target = Target.current() if target is None else target
    target = Target("llvm") if target is None else target
    out = mod
    for gv, func in mod.items():
        if not isinstance(func, PrimFunc) or func.attrs.get("tir.is_scheduled"):
            continue
        workload = IRModule({"main": func.with_attr("global_symbol", "main")})
        tuned = database.query_ir_module(workload, target, "main")
        if tuned is None:
            if enable_warning:
                warnings.warn(f"MetaScheduleApplyDatabase: no tuning record for {gv.name_hint}; it keeps its schedule",
                              stacklevel=2)
            continue
        new = tuned["main"]
        symbol = func.attrs.get("global_symbol")
        attrs = {k: v for k, v in new.attrs.items() if k != "global_symbol"}
        if symbol is not None:
            attrs["global_symbol"] = symbol
        new = PrimFunc(new.params, new.buffer_map, new.body, new.ret_type, attrs)
        out = out.with_function(gv.name_hint, new.with_attr("tir.is_scheduled", True))
    return out


@module_pass(opt_level=0, name="MetaScheduleApplyDatabase")
class MetaScheduleApplyDatabase:
    """``MetaScheduleApplyDatabase(work_dir=None, enable_warning=False)``: apply the database in
    scope (or, outside any, the one in ``work_dir``)."""

    def __init__(self, work_dir: str | None = None, enable_warning: bool = False):
        self.work_dir, self.enable_warning = work_dir, enable_warning

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        database = _scope.current()
        if database is None:
            if self.work_dir is None:
                raise ValueError("MetaScheduleApplyDatabase: no database in scope (use `with database:`) and no "
                                 "work_dir to open one from")
            database = _scope.open_work_dir(self.work_dir)
        return apply_database(mod, database, enable_warning=self.enable_warning)
