"""Reading a printed speed verdict back and checking it against its own numbers.

Chapters print comparisons with :func:`minitvm.testing.speed.compare`; its ``verdict:`` lines say
``A is 2.9x slower than B (0.212 ms vs 0.074 ms)``. This reader is written apart from that
printer, so a verdict typed by hand into a cell (or a printer bug) is caught by the chapters'
browser run: the direction and the ratio must follow from the two numbers in the parentheses.
"""

from __future__ import annotations

import re

TIME_UNITS = {"s", "ms", "us"}

VERDICT = re.compile(
    r"verdict: (?P<a>.+?) is (?:(?P<ratio>[0-9.]+)x (?P<direction>faster|slower) than|about as fast as) "
    r"(?P<b>.+?) \((?P<x>[0-9.e+-]+) (?P<unit_x>\S+) vs (?P<y>[0-9.e+-]+) (?P<unit_y>\S+)\)\s*$")


def _problem(line: str) -> str | None:
    m = VERDICT.search(line)
    if m is None:
        return f"not a verdict of the form 'A is Nx faster|slower than B (x unit vs y unit)': {line!r}"
    x, y = float(m["x"]), float(m["y"])
    if m["unit_x"] != m["unit_y"] or x <= 0 or y <= 0:
        return f"numbers in different units or not positive: {line!r}"
    speed = y / x if m["unit_x"] in TIME_UNITS else x / y  # > 1: A is faster
    if m["ratio"] is None:  # "about as fast": within 10%, allowing for the printed rounding
        return None if abs(speed - 1) < 0.12 else f"'about as fast' but the numbers differ by {speed:.2f}x: {line!r}"
    said = float(m["ratio"])
    if (speed > 1) != (m["direction"] == "faster"):
        return f"says {m['direction']} but the numbers say the opposite: {line!r}"
    actual = speed if speed > 1 else 1 / speed
    if abs(actual - said) > 0.06 + 0.01 * actual:
        return f"says {said}x but the numbers give {actual:.2f}x: {line!r}"
    return None


def verdict_problems(text: str) -> list[str]:
    """Every ``verdict:`` line of ``text`` whose words disagree with its numbers."""
    lines = [line for line in text.splitlines() if "verdict:" in line]
    return [p for p in map(_problem, lines) if p is not None]
