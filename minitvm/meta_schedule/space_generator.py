"""Search spaces (TVM's ``ms.space_generator``): each generates *design spaces*, schedules whose
traces hold sampling instructions; the search replays a trace with other decisions to get
other candidates from the same space.

* :class:`ScheduleFn` -- a user's stochastic schedule function ``f(sch)`` (it schedules ``sch``
  in place and returns nothing, or returns a Schedule or a list of them);
* :class:`PostOrderApply` -- the built-in rules (``schedule_rule.default_rules()``) applied to
  every block;
* :class:`SpaceGeneratorUnion` -- the design spaces of several generators together.

``create("post-order-apply")`` (what ``tune_tir`` uses when no ``space`` is given) is the
built-in rules *and* minitvm's rule-based default schedule (``tir.transform.DefaultCPUSchedule``,
what ``minitvm.compile`` applies) as one more design space: minitvm's difference from TVM, so
that tuning never ends slower than the schedule a model would get without it.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any, Callable

from ..ir.module import IRModule
from ..target import Target
from ..tir.schedule import Schedule, ScheduleError
from ..tir.transform.default_schedule import RULES
from .postproc import leaf_blocks
from .schedule_rule import ScheduleRule, default_rules

__all__ = ["SpaceGenerator", "ScheduleFn", "PostOrderApply", "SpaceGeneratorUnion", "DefaultScheduleSpace",
           "create", "design_spaces"]


class SpaceGenerator:
    """Makes the design spaces of a module; ``postprocs`` run after each candidate."""

    postprocs: Any = "default"

    def generate_design_space(self, mod: IRModule, target: Target | None = None, seed: int | None = None
                              ) -> list[Schedule]:
        raise NotImplementedError

    def clone(self) -> "SpaceGenerator":
        return self


def _as_schedules(result: Any, sch: Schedule, where: str) -> list[Schedule]:
    if result is None:
        return [sch]
    if isinstance(result, Schedule):
        return [result]
    if isinstance(result, (list, tuple)) and all(isinstance(s, Schedule) for s in result):
        return list(result)
    raise TypeError(f"{where} must return None, a tir.Schedule or a list of them; got {type(result).__name__}")


class ScheduleFn(SpaceGenerator):
    """A design space from a stochastic schedule function ``sch_fn(sch)`` (the MLC course's
    ``ms.space_generator.ScheduleFn(stochastic_schedule_mm)``)."""

    def __init__(self, sch_fn: Callable[[Schedule], Any], sch_rules: Any = None, postprocs: Any = "default",
                 mutator_probs: Any = None) -> None:
        if not callable(sch_fn):
            raise TypeError(f"ScheduleFn takes a function of a tir.Schedule, got {type(sch_fn).__name__}")
        if sch_rules not in (None, "default") or mutator_probs not in (None, "default"):
            raise NotImplementedError("ScheduleFn(sch_rules=, mutator_probs=): minitvm's ScheduleFn takes only "
                                      "the function and postprocs")
        self.sch_fn = sch_fn
        self.postprocs = postprocs

    def generate_design_space(self, mod: IRModule, target: Target | None = None, seed: int | None = None
                              ) -> list[Schedule]:
        sch = Schedule(mod, seed=seed)
        return _as_schedules(self.sch_fn(sch), sch, f"ScheduleFn({getattr(self.sch_fn, '__name__', 'f')})")

    def __repr__(self) -> str:
        return f"ScheduleFn({getattr(self.sch_fn, '__name__', self.sch_fn)!r})"


class PostOrderApply(SpaceGenerator):
    """The rules on every block (TVM's PostOrderApply): auto-inline, then multi-level tiling,
    then random compute location, each on the blocks still there; then the root-block rules."""

    def __init__(self, f_block_filter: Any = None, sch_rules: Any = "default", postprocs: Any = "default",
                 mutator_probs: Any = "default") -> None:
        if f_block_filter is not None:
            raise NotImplementedError("PostOrderApply(f_block_filter=...): minitvm applies the rules to every block")
        if mutator_probs != "default":
            raise NotImplementedError("PostOrderApply(mutator_probs=...): minitvm's mutators are chosen uniformly")
        self.sch_rules: list[ScheduleRule] = default_rules() if sch_rules == "default" else list(sch_rules)
        self.postprocs = postprocs

    def generate_design_space(self, mod: IRModule, target: Target | None = None, seed: int | None = None
                              ) -> list[Schedule]:
        target = Target(target) if isinstance(target, str) else target
        num_cores = target.num_cores if target is not None else 1
        sch = Schedule(mod, seed=seed)
        for rule in self.sch_rules:
            if rule.on_root:
                rule.apply(sch, sch.get_block("root"), num_cores=num_cores)
                continue
            # post order: consumers before producers, so an inlined producer's consumer is settled
            for block in reversed(leaf_blocks(sch)):
                try:
                    sch.get(block)
                except (ScheduleError, ValueError, KeyError):
                    continue  # inlined by an earlier rule
                rule.apply(sch, block)
        return [sch]

    def __repr__(self) -> str:
        return f"PostOrderApply({', '.join(r.name for r in self.sch_rules)})"


def _default_schedule(sch: Schedule) -> Schedule:
    """minitvm's rule-based default schedule as a (decision-free) design space."""
    for rule in RULES:
        trial = sch.copy()
        try:
            if rule(trial):
                return trial
        except ScheduleError:
            continue
    return sch


class DefaultScheduleSpace(ScheduleFn):
    """The schedule ``minitvm.compile`` gives the function (``DefaultCPUSchedule``), as one design
    space with no choices; its candidates get no postprocessing (the rules schedule completely)."""

    def __init__(self) -> None:
        super().__init__(_default_schedule, postprocs=())

    def generate_design_space(self, mod: IRModule, target: Target | None = None, seed: int | None = None
                              ) -> list[Schedule]:
        # the register tiles of the target's vector unit (the trace then records their sizes)
        with Target(target) if target is not None else nullcontext():
            return super().generate_design_space(mod, target, seed)

    def __repr__(self) -> str:
        return "DefaultScheduleSpace()"


class SpaceGeneratorUnion(SpaceGenerator):
    """The design spaces of every generator in ``space_generators``."""

    def __init__(self, space_generators: list[SpaceGenerator]) -> None:
        self.space_generators = list(space_generators)

    def generate_design_space(self, mod: IRModule, target: Target | None = None, seed: int | None = None
                              ) -> list[Schedule]:
        return [sch for sch, _ in design_spaces(self, mod, target, seed)]

    def __repr__(self) -> str:
        return f"SpaceGeneratorUnion({self.space_generators})"


def design_spaces(space: SpaceGenerator, mod: IRModule, target: Target | None = None, seed: int | None = None
                  ) -> list[tuple[Schedule, Any]]:
    """``(design space, its postprocessors)`` pairs: a union's members keep their own."""
    if isinstance(space, SpaceGeneratorUnion):
        return [pair for gen in space.space_generators for pair in design_spaces(gen, mod, target, seed)]
    return [(sch, space.postprocs) for sch in space.generate_design_space(mod, target, seed)]


def create(space: Any = "post-order-apply") -> SpaceGenerator:
    """A space generator from what ``tune_tir(space=...)`` takes: a SpaceGenerator, a function
    (a ScheduleFn), "post-order-apply" (the built-in rules + the default schedule) or "union"."""
    if isinstance(space, SpaceGenerator):
        return space
    if callable(space):
        return ScheduleFn(space)
    if space in ("post-order-apply", "union"):
        return SpaceGeneratorUnion([PostOrderApply(), DefaultScheduleSpace()])
    raise ValueError(f"space={space!r}: give a SpaceGenerator, a schedule function or 'post-order-apply'")
