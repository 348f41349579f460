"""Speed comparisons whose sentence is computed from their numbers.

A chapter that says "twice as fast" next to a measurement that shows the opposite teaches the
wrong thing; on a learner's laptop something else is always running, so no sentence written in
advance can be true everywhere. Here the verdict is printed by the same code that measured:

    from minitvm.testing.speed import compare, measure

    compare({"minitvm": measure(lambda: f(a, b, c)), "numpy": measure(lambda: a @ b)})

shows (as a notebook cell's value, or with ``print``) each time, one ``verdict:`` line comparing
the first entry with each other one, and the machine's load while measuring (a busy machine is
named, so its numbers are read as such)::

    minitvm     0.212 ms
    numpy       0.074 ms
    verdict: minitvm is 2.9x slower than numpy (0.212 ms vs 0.074 ms)
    machine: load 0.4 on 2 cores

``compare(..., unit="GFLOP/s")`` compares rates (higher is faster). The verdict line has one
fixed form, so a test can read it back and check it against its own numbers.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["Comparison", "compare", "measure", "VERDICT_SAME"]

#: two measurements closer than this are "about as fast" (run-to-run noise is of this order)
VERDICT_SAME = 0.10

_TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}


def measure(fn: Callable[[], Any], repeat: int = 5, min_seconds: float = 0.02) -> float:
    """Median seconds per call of ``fn()``: one warm-up call, then ``repeat`` rounds of as many
    calls as fill ``min_seconds`` (so a fast function is not timed by the clock's grain)."""
    fn()
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-9)
    number = max(1, int(min_seconds / once))
    rounds = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        rounds.append((time.perf_counter() - start) / number)
    return sorted(rounds)[len(rounds) // 2]


def _fmt(value: float) -> str:
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def _ratio(x: float) -> str:
    return f"{x:.1f}" if x < 100 else f"{x:.0f}"


def _time_unit(seconds: list[float]) -> str:
    smallest = min(seconds)
    return "s" if smallest >= 1 else "ms" if smallest >= 1e-3 else "us"


@dataclass(frozen=True)
class Comparison:
    """Measurements by name (seconds, or rates in ``unit``) and the sentences they support."""

    values: dict[str, float]
    unit: str = "s"  # "s": times, lower is faster; anything else: a rate, higher is faster
    load: float | None = None  # the 1-minute load average when compared
    cores: int = 1

    def _shown(self) -> tuple[dict[str, float], str]:
        if self.unit != "s":
            return dict(self.values), self.unit
        unit = _time_unit(list(self.values.values()))
        return {k: v / _TIME_UNITS[unit] for k, v in self.values.items()}, unit

    def verdicts(self) -> list[str]:
        """``A is 2.9x faster than B (x unit vs y unit)``, or ``about as fast as``, from the numbers."""
        shown, unit = self._shown()
        names = list(shown)
        first, out = names[0], []
        for other in names[1:]:
            a, b = shown[first], shown[other]
            speed = (b / a) if self.unit == "s" else (a / b)  # > 1: the first is faster
            numbers = f"({_fmt(a)} {unit} vs {_fmt(b)} {unit})"
            if abs(speed - 1) < VERDICT_SAME:
                out.append(f"{first} is about as fast as {other} {numbers}")
            elif speed > 1:
                out.append(f"{first} is {_ratio(speed)}x faster than {other} {numbers}")
            else:
                out.append(f"{first} is {_ratio(1 / speed)}x slower than {other} {numbers}")
        return out

    def busy(self) -> bool:
        """More runnable work than cores while measuring: other programs shared the machine."""
        return self.load is not None and self.load > self.cores

    def machine(self) -> str:
        """``machine: load 0.4 on 2 cores``, saying so when the machine was busy."""
        if self.load is None:
            return "machine: load not measured"
        note = " (busy: other programs shared the cores, so these numbers move)" if self.busy() else ""
        return f"machine: load {self.load:.1f} on {self.cores} cores{note}"

    def __str__(self) -> str:
        shown, unit = self._shown()
        width = max(len(k) for k in shown)
        lines = [f"{name:<{width}}  {_fmt(value):>7} {unit}" for name, value in shown.items()]
        lines += [f"verdict: {v}" for v in self.verdicts()]
        return "\n".join([*lines, self.machine()])

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))


def compare(values: dict[str, float], unit: str = "s") -> Comparison:
    """Compare measurements (seconds by default; ``unit="GFLOP/s"`` for rates): the result shows
    them with a verdict for the first against each other one and the machine's load."""
    if len(values) < 2:
        raise ValueError(f"compare needs at least two measurements, got {list(values)}")
    bad = {k: v for k, v in values.items() if not v > 0}
    if bad:
        raise ValueError(f"compare: measurements must be positive numbers, got {bad}")
    return Comparison(dict(values), unit, os.getloadavg()[0], os.cpu_count() or 1)
