"""minitvm.testing.speed: printed verdicts follow from the printed numbers, checked by a reader
written apart from the printer (tests/verdicts.py, which the chapters' browser run applies)."""

from __future__ import annotations

import pytest
from verdicts import verdict_problems

from minitvm.testing.speed import Comparison, compare, measure


@pytest.mark.parametrize("values, unit, said", [
    ({"minitvm": 0.212e-3, "numpy": 0.074e-3}, "s", "minitvm is 2.9x slower than numpy (212 us vs 74 us)"),
    ({"minitvm": 8.7e-3, "numpy": 54.4e-3}, "s", "minitvm is 6.3x faster than numpy (8.7 ms vs 54.4 ms)"),
    ({"tuned": 92.0, "default": 45.54}, "GFLOP/s", "tuned is 2.0x faster than default (92 GFLOP/s vs 45.5 GFLOP/s)"),
    ({"a": 1.0e-3, "b": 1.05e-3}, "s", "a is about as fast as b (1 ms vs 1.05 ms)"),
])
def test_the_verdict_is_computed_from_the_numbers(values, unit, said):
    printed = str(compare(values, unit=unit))
    assert f"verdict: {said}" in printed.splitlines(), printed
    assert verdict_problems(printed) == []
    assert printed.splitlines()[-1].startswith("machine: load ")


@pytest.mark.parametrize("line, why", [
    ("verdict: minitvm is 6.3x slower than numpy (8.7 ms vs 54.4 ms)", "opposite"),  # ch01's old sentence
    ("verdict: vectorized is 1.5x faster than parallel (118.8 us vs 342.6 us)", "says 1.5x"),
    ("verdict: tuned is 2.0x slower than best (92 GFLOP/s vs 45.54 GFLOP/s)", "opposite"),
    ("verdict: a is about as fast as b (1 ms vs 2 ms)", "about as fast"),
    ("verdict: minitvm is much faster", "not a verdict"),
])
def test_a_verdict_that_contradicts_its_numbers_is_caught(line, why):
    (problem,) = verdict_problems(f"some output\n{line}\n")
    assert why in problem


def test_a_busy_machine_is_named():
    busy, quiet = (Comparison({"a": 1.0, "b": 2.0}, "s", load, 2) for load in (5.3, 0.4))
    assert "busy" in str(busy).splitlines()[-1] and "busy" not in str(quiet)


def test_measure_is_the_median_time_of_a_call():
    calls = []
    seconds = measure(lambda: calls.append(1), repeat=3, min_seconds=0.001)
    assert 0 < seconds < 1e-3 and len(calls) > 3 + 2


def test_compare_refuses_what_it_cannot_compare():
    with pytest.raises(ValueError, match="at least two"):
        compare({"a": 1.0})
    with pytest.raises(ValueError, match="positive"):
        compare({"a": 1.0, "b": 0.0})
