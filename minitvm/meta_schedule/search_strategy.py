"""Search strategies (TVM's ``ms.search_strategy``): which candidates to measure next.

* :class:`ReplayTrace` -- replay a design space's trace with every decision sampled afresh
  (random search over the space);
* :class:`ReplayFunc` -- call the space generator again for each candidate (for a schedule
  function that branches in Python on sampled values, which a trace cannot replay);
* :class:`EvolutionarySearch` -- keep a population of traces (fresh samples plus the best
  measured so far), mutate their decisions for a few generations, rank the children with the
  cost model and measure the most promising ones (plus a few random ones, ``eps_greedy``).

Every strategy measures a candidate (a distinct scheduled module) once; when the space has no
unmeasured candidate left the strategy stops early.
"""

from __future__ import annotations

import random
from typing import Any

from ..ir.module import IRModule
from ..ir.structural import structural_hash
from ..tir.schedule import Schedule, ScheduleError
from ..tir.schedule.trace import Trace
from .mutator import mutate
from .postproc import apply_postprocs
from .space_generator import SpaceGenerator, design_spaces

__all__ = ["MeasureCandidate", "SearchStrategy", "ReplayTrace", "ReplayFunc", "EvolutionarySearch", "create"]


class MeasureCandidate:
    """A scheduled candidate and its arguments ``[(dtype, shape), ...]``."""

    def __init__(self, sch: Schedule, args_info: list, postprocs: Any = "default") -> None:
        self.sch, self.args_info, self.postprocs = sch, args_info, postprocs

    def __repr__(self) -> str:
        return f"MeasureCandidate({len(self.sch.trace)} instructions)"


def args_info_of(mod: IRModule) -> list:
    func = mod["main"]
    return [(func.buffer_map[p].dtype, [int(s) for s in func.buffer_map[p].shape]) for p in func.params]


def replay(trace: Trace, mod: IRModule, seed: int, postprocs: Any, resample: bool) -> Schedule | None:
    """``trace`` (its postprocessing dropped) on a fresh schedule of ``mod``, sampling every
    decision afresh when ``resample``; then the postprocessors.  None when a decision does not
    fit (the primitive refused)."""
    sch = Schedule(mod, seed=seed)
    provider = (lambda inst, inputs, attrs, decision: None if inst.kind.decision else decision) if resample else None
    try:
        trace.apply_to_schedule(sch, remove_postproc=True, decision_provider=provider)
        apply_postprocs(sch, postprocs)
    except (ScheduleError, ValueError, TypeError, IndexError):
        return None
    return sch


class SearchStrategy:
    """Generates candidates in rounds; told the measured results after each round."""

    def __init__(self) -> None:
        self.mod: IRModule | None = None

    def pre_tuning(self, mod: IRModule, space: SpaceGenerator, target: Any, seed: int | None,
                   database: Any, cost_model: Any) -> None:
        self.mod, self.space, self.target, self.database, self.cost_model = mod, space, target, database, cost_model
        self.rng = random.Random(seed)
        self.args_info = args_info_of(mod)
        self.design = design_spaces(space, mod, target, self._seed())
        self.seen: set[int] = set()

    def _seed(self) -> int:
        return self.rng.randrange(1, 2**31 - 1)

    def _new(self, sch: Schedule | None, out: list[MeasureCandidate]) -> bool:
        """Add ``sch`` to ``out`` when it is a module not seen before."""
        if sch is None:
            return False
        key = structural_hash(sch.mod)
        if key in self.seen:
            return False
        self.seen.add(key)
        out.append(MeasureCandidate(sch, self.args_info))
        return True

    def _fixed_spaces(self, out: list[MeasureCandidate]) -> None:
        """Design spaces without a decision are one candidate each: measure them first."""
        if getattr(self, "_fixed_done", False):
            return
        self._fixed_done = True
        for design, postprocs in self.design:
            if not any(inst.kind.decision for inst in design.trace.insts):
                sch = replay(design.trace, self.mod, self._seed(), postprocs, resample=False)
                if self._new(sch, out):
                    out[-1].postprocs = postprocs

    def _sample(self) -> tuple[Schedule | None, Any]:
        design, postprocs = self.rng.choice(self.design)
        return replay(design.trace, self.mod, self._seed(), postprocs, resample=True), postprocs

    def generate_measure_candidates(self, n: int) -> list[MeasureCandidate]:
        raise NotImplementedError

    def notify_runner_results(self, candidates: list[MeasureCandidate], results: list) -> None:
        pass

    def post_tuning(self) -> None:
        pass


class ReplayTrace(SearchStrategy):
    """Random search: each candidate is a design space's trace with fresh decisions."""

    def __init__(self, max_fail_count: int = 100) -> None:
        super().__init__()
        self.max_fail_count = max_fail_count

    def generate_measure_candidates(self, n: int) -> list[MeasureCandidate]:
        out: list[MeasureCandidate] = []
        self._fixed_spaces(out)
        fails = 0
        while len(out) < n and fails < self.max_fail_count:
            if not self._new(self._sample()[0], out):
                fails += 1
        return out


class ReplayFunc(SearchStrategy):
    """Each candidate from calling the space generator again with a new seed."""

    def __init__(self, max_fail_count: int = 100) -> None:
        super().__init__()
        self.max_fail_count = max_fail_count

    def generate_measure_candidates(self, n: int) -> list[MeasureCandidate]:
        out: list[MeasureCandidate] = []
        fails = 0
        while len(out) < n and fails < self.max_fail_count:
            sch_post = design_spaces(self.space, self.mod, self.target, self._seed())
            sch, postprocs = self.rng.choice(sch_post)
            try:
                apply_postprocs(sch, postprocs)
            except ScheduleError:
                sch = None
            if not self._new(sch, out):
                fails += 1
        return out


class EvolutionarySearch(SearchStrategy):
    """Evolution of traces guided by the cost model (TVM's EvolutionarySearch, smaller defaults:
    a population of 32 and 2 generations keep a round to seconds in Python)."""

    def __init__(self, *, population_size: int = 32, init_measured_ratio: float = 0.2,
                 init_min_unmeasured: int = 16, max_fail_count: int = 20, genetic_num_iters: int = 2,
                 genetic_mutate_prob: float = 0.85, genetic_max_fail_count: int = 10,
                 eps_greedy: float = 0.05) -> None:
        super().__init__()
        if not 0 <= eps_greedy <= 1 or not 0 <= init_measured_ratio <= 1:
            raise ValueError("EvolutionarySearch: eps_greedy and init_measured_ratio are fractions in [0, 1]")
        self.population_size, self.init_measured_ratio = population_size, init_measured_ratio
        self.init_min_unmeasured, self.max_fail_count = init_min_unmeasured, max_fail_count
        self.genetic_num_iters, self.genetic_mutate_prob = genetic_num_iters, genetic_mutate_prob
        self.genetic_max_fail_count, self.eps_greedy = genetic_max_fail_count, eps_greedy
        self.measured: list[tuple[float, Trace, Any]] = []  # (seconds, trace, postprocs) of good candidates

    def notify_runner_results(self, candidates: list[MeasureCandidate], results: list) -> None:
        for cand, res in zip(candidates, results):
            if res.run_secs:
                self.measured.append((sum(res.run_secs) / len(res.run_secs), cand.sch.trace, cand.postprocs))
        self.measured.sort(key=lambda m: m[0])

    def _random_population(self, count: int) -> list[tuple[Schedule, Any]]:
        pop, fails = [], 0
        while len(pop) < count and fails < self.max_fail_count:
            sch, postprocs = self._sample()
            if sch is None:
                fails += 1
                continue
            pop.append((sch, postprocs))
        return pop

    def _evolve(self, population: list[tuple[Schedule, Any]]) -> list[tuple[Schedule, Any]]:
        """A few generations: parents drawn by predicted score, children by one mutation."""
        pool = list(population)
        for _ in range(self.genetic_num_iters):
            if not pool:
                break
            scores = self.cost_model.predict(None, [MeasureCandidate(s, self.args_info) for s, _ in pool])
            lo = min(scores)
            weights = [s - lo + 1e-6 for s in scores]
            children: list[tuple[Schedule, Any]] = []
            fails = 0
            while len(children) < self.population_size and fails < self.genetic_max_fail_count * 4:
                parent, postprocs = self.rng.choices(pool, weights=weights)[0]
                if self.rng.random() > self.genetic_mutate_prob:
                    children.append((parent, postprocs))
                    continue
                trace = mutate(parent.trace, self.rng)
                child = None if trace is None else replay(trace, self.mod, self._seed(), postprocs, resample=False)
                if child is None:
                    fails += 1
                    continue
                children.append((child, postprocs))
            pool = children
        return pool

    def generate_measure_candidates(self, n: int) -> list[MeasureCandidate]:
        n_best = int(self.population_size * self.init_measured_ratio)
        population: list[tuple[Schedule, Any]] = []
        for _, trace, postprocs in self.measured[:n_best]:
            sch = replay(trace, self.mod, self._seed(), postprocs, resample=False)
            if sch is not None:
                population.append((sch, postprocs))
        population += self._random_population(max(self.population_size - len(population), self.init_min_unmeasured))
        evolved = self._evolve(population)
        pool = evolved + population
        scores = self.cost_model.predict(None, [MeasureCandidate(s, self.args_info) for s, _ in pool])
        ranked = [p for _, p in sorted(zip(scores, range(len(pool))), key=lambda x: -x[0])]
        out: list[MeasureCandidate] = []
        self._fixed_spaces(out)
        n_random = int(round(n * self.eps_greedy))
        for k in ranked:
            if len(out) >= n - n_random:
                break
            self._add(pool[k], out)
        fails = 0
        while len(out) < n and fails < self.max_fail_count:  # eps-greedy: random ones, and fill up
            if not self._add(self._sample(), out):
                fails += 1
        return out

    def _add(self, pair: tuple[Schedule | None, Any], out: list[MeasureCandidate]) -> bool:
        sch, postprocs = pair
        if not self._new(sch, out):
            return False
        out[-1].postprocs = postprocs
        return True


def create(strategy: Any = "evolutionary", **kwargs: Any) -> SearchStrategy:
    if isinstance(strategy, SearchStrategy):
        return strategy
    kinds = {"evolutionary": EvolutionarySearch, "replay-trace": ReplayTrace, "replay-func": ReplayFunc}
    if strategy not in kinds:
        raise ValueError(f"strategy={strategy!r}: one of {', '.join(kinds)} or a SearchStrategy")
    return kinds[strategy](**kwargs)
