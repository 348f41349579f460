"""The CPU this process runs on, as LLVM names it: the one place minitvm asks about it.

``Target("llvm")`` compiles for this CPU (:func:`host_cpu_name`, :func:`host_cpu_features`),
``tir.tensor_intrin.x86`` says whether its intrinsics are one instruction per step here, and a
compiled library checks that this CPU has what its code uses before any of it runs
(:func:`host_cpu_lacks`).  It lives in the runtime, the bottom floor, so that every floor above
reads the same facts.
"""

from __future__ import annotations

import functools
import os
from typing import Iterable

__all__ = ["host_cpu_name", "host_cpu_features", "host_cpu_feature_names", "host_cpu_lacks", "parallel_threads"]


@functools.lru_cache(maxsize=1)
def _host() -> tuple[str, dict[str, bool]]:
    """LLVM's name of this CPU and its feature table (every feature LLVM's detection checks: on or off)."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    try:
        features = dict(llvm.get_host_cpu_features())
    except RuntimeError:  # a platform where LLVM cannot read the CPU's features
        features = {}
    return llvm.get_host_cpu_name(), features


def host_cpu_name() -> str:
    """LLVM's name for this machine's CPU (e.g. ``"znver3"``, ``"sapphirerapids"``)."""
    return _host()[0]


def host_cpu_features() -> tuple[str, ...]:
    """The CPU features this machine has, as LLVM names them (``"avx2"``, ``"avx512f"``, ...), sorted."""
    return tuple(sorted(name for name, on in _host()[1].items() if on))


def host_cpu_feature_names() -> tuple[str, ...]:
    """Every feature LLVM's detection checks on this machine, on or off, sorted."""
    return tuple(sorted(_host()[1]))


def host_cpu_lacks(features: Iterable[str]) -> list[str]:
    """Those of ``features`` this CPU does not have, in their order.

    Only instruction-set features count: a name LLVM's detection does not check (a tuning flag
    such as ``prefer-256-bit``, or a name LLVM does not know) is never reported missing.
    """
    table = _host()[1]
    return [f for f in dict.fromkeys(features) if f in table and not table[f]]


def parallel_threads() -> int:
    """The threads a parallel loop runs on: ``MINITVM_NUM_THREADS`` if set, else the CPUs this
    process may use.  The thread pool starts this many; default schedules cut work into blocks
    for them."""
    text = os.environ.get("MINITVM_NUM_THREADS", "")
    if text.strip().isdigit() and int(text) >= 1:
        return int(text)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)
