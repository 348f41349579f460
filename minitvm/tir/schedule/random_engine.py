"""TVM's random engine: a linear congruential generator and its integer sampling.

TVM's schedules draw from a Park-Miller generator (multiplier 48271, modulus 2^31 - 1) and
turn its output into an integer in ``[lo, hi)`` the way the C++ standard library's
``uniform_int_distribution`` does (reject the top, then divide).  Using the same arithmetic
makes a seeded minitvm schedule sample the same decisions TVM samples for that seed.
"""

from __future__ import annotations

import random

__all__ = ["MODULUS", "normalize_seed", "next_state", "sample_int"]

MULTIPLIER = 48271
MODULUS = 2147483647


def normalize_seed(seed: int | None) -> int:
    """A valid generator state from a user seed (None or -1: a random one)."""
    if seed is None or seed == -1:
        seed = random.SystemRandom().randrange(MODULUS)
    if seed < 0:
        raise ValueError("Random seed must be non-negative")
    state = seed % MODULUS
    return state or 1


def next_state(state: int) -> int:
    return state * MULTIPLIER % MODULUS


def sample_int(state: int, lo: int, hi: int) -> tuple[int, int]:
    """``(value, new_state)``: a uniform integer in ``[lo, hi)``, as TVM's SampleInt draws it."""
    if lo >= hi:
        raise ValueError("max_exclusive must be greater than min_inclusive")
    if lo + 1 == hi:
        return lo, state
    urng_range = MODULUS - 1  # the generator's max() - min()
    span = hi - lo  # values in the distribution's closed range [lo, hi - 1]
    scaling = urng_range // span
    past = span * scaling
    while True:
        state = next_state(state)
        if state < past:
            return lo + state // scaling, state
