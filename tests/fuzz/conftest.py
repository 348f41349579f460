"""Hypothesis profiles for the fuzz suite.

``ci`` (the default): a fixed, derandomized set of 200 examples per test, so every run
checks the same cases and the directory takes under a minute on one core
(``MINITVM_FUZZ_CI_EXAMPLES`` changes the count).  ``long``: 2,000 examples per test from
fresh random seeds, about ten minutes, for hunting bugs::

    HYPOTHESIS_PROFILE=long .venv/bin/python -m pytest tests/fuzz -q --hypothesis-show-statistics

A failure prints the shrunk example and a ``@reproduce_failure`` blob that replays it.
"""

import os

from hypothesis import HealthCheck, settings

_COMMON = {"deadline": None, "print_blob": True,
           "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.filter_too_much]}

settings.register_profile("ci", max_examples=int(os.environ.get("MINITVM_FUZZ_CI_EXAMPLES", "200")),
                          derandomize=True, database=None, **_COMMON)
settings.register_profile("long", max_examples=2000, derandomize=False, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
