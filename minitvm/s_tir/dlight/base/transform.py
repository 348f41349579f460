"""ApplyDefaultSchedule: the first ScheduleRule that fits schedules each unscheduled PrimFunc."""

from __future__ import annotations

from ....ir.module import IRModule
from ....target import Target
from ....tir import PrimFunc, Schedule
from ....tir.transform import DefaultCPUSchedule
from ....tir.transform.default_schedule import SCHEDULED_ATTR, is_scheduled
from ....transform import PassContext, module_pass
from .schedule_rule import ScheduleRule

__all__ = ["ApplyDefaultSchedule", "is_scheduled", "SCHEDULED_ATTR"]

def _target_of(func: PrimFunc, name: str) -> Target:
    target = func.attrs.get("target")
    if target is not None:
        return target if isinstance(target, Target) else Target(target)
    current = Target.current()
    if current is None:
        raise ValueError(f"ApplyDefaultSchedule: no target for PrimFunc {name!r}: it has no 'target' attribute "
                         "and no Target is in scope; run the pass inside `with Target(...):` (tvm.compile "
                         "puts its target in scope for the Relax pipeline)")
    return current


def apply_rules(func: PrimFunc, target: Target, rules: list[ScheduleRule], tunable: bool) -> list[Schedule] | None:
    """The schedules of the first rule that returns any (None when no rule fits)."""
    for rule in rules:
        space = rule.apply(func, target, tunable)
        if space is None:
            continue
        return [space] if isinstance(space, Schedule) else list(space)
    return None


@module_pass(opt_level=0, name="ApplyDefaultSchedule")
class ApplyDefaultSchedule:
    """``ApplyDefaultSchedule(*rules)``: for every PrimFunc not yet scheduled, the first rule that
    fits for the target (the function's ``target`` attribute, else the one in scope) schedules it,
    and the function is marked ``tir.is_scheduled``.

    Where no rule fits: on a GPU target the function is left as it is, as TVM does; on a CPU
    target (``llvm``) it gets minitvm's default CPU schedule (``tir.transform.DefaultCPUSchedule``)
    where TVM would leave a naive loop nest. That is where minitvm differs from TVM, on purpose:
    TVM's LLM tutorial lists only GPU rules, and run on a CPU as written its kernels would stay
    unscheduled, hundreds of times slower than they need to be."""

    def __init__(self, *rules: ScheduleRule):
        for rule in rules:
            if not isinstance(rule, ScheduleRule):
                raise TypeError(f"ApplyDefaultSchedule: expected ScheduleRule objects (e.g. dlight.gpu.Matmul()), "
                                f"got {rule!r}")
        self.rules = list(rules)

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        out, declined_on_cpu = mod, {}
        for gv, func in mod.functions_items():
            if not isinstance(func, PrimFunc) or is_scheduled(func):
                continue
            target = _target_of(func, gv.name_hint)
            spaces = apply_rules(func, target, self.rules, tunable=False)
            if spaces is None:
                if target.kind.name == "llvm":
                    declined_on_cpu[gv.name_hint] = func
                continue
            if len(spaces) != 1:
                raise ValueError(f"ApplyDefaultSchedule: a rule returned {len(spaces)} schedules for {gv.name_hint!r} "
                                 "with tunable=False; a default schedule is one schedule")
            scheduled = spaces[0].mod["main"]
            # the schedule's copy of the function names it "main": keep the original's attributes
            new = PrimFunc(scheduled.params, scheduled.buffer_map, scheduled.body, scheduled.ret_type,
                           {**dict(func.attrs), SCHEDULED_ATTR: True})
            out = out.with_function(gv.name_hint, new)
        if declined_on_cpu:
            scheduled = DefaultCPUSchedule()(IRModule(declined_on_cpu))
            for name in declined_on_cpu:
                out = out.with_function(name, scheduled[name])
        return out
