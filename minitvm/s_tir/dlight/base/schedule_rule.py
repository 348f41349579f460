"""ScheduleRule: a function from (PrimFunc, Target, tunable) to a schedule, or None when it does not fit."""

from __future__ import annotations

from typing import Callable

from ....target import Target
from ....tir import PrimFunc, Schedule

__all__ = ["ScheduleRule"]

#: what a rule returns: a schedule, several (a tuning space), or None ("not my kind of function")
RuleResult = "Schedule | list[Schedule] | None"


class ScheduleRule:
    """A default-schedule rule, as TVM's ``dlight.ScheduleRule``.

    ``apply(func, target, tunable)`` returns a ``Schedule`` of ``func`` for ``target`` (with
    ``tunable`` it may return several, or sampling instructions), or None when the rule does not
    apply to ``func`` or to ``target`` -- then the next rule is tried.
    """

    def apply(self, func: PrimFunc, target: Target, tunable: bool) -> Schedule | list[Schedule] | None:
        raise NotImplementedError(f"{type(self).__name__}.apply: a ScheduleRule subclass defines apply(func, "
                                  "target, tunable)")

    @staticmethod
    def from_callable(name: str) -> Callable[[Callable[[PrimFunc, Target, bool], object]], "ScheduleRule"]:
        """A decorator turning ``f(func, target, tunable)`` into a ScheduleRule named ``name``."""

        def decorator(f: Callable[[PrimFunc, Target, bool], object]) -> "ScheduleRule":
            if not callable(f):
                raise TypeError(f"ScheduleRule.from_callable({name!r}): expected a function, got {f!r}")

            def apply(self: ScheduleRule, func: PrimFunc, target: Target, tunable: bool) -> object:
                return f(func, target, tunable)

            rule_type = type(name, (ScheduleRule,), {"apply": apply, "__doc__": f.__doc__})
            return rule_type()

        return decorator

    def is_target_available(self, target: Target) -> bool:
        """Whether this rule schedules for ``target`` at all (every target, here)."""
        return True

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
