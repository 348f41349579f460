"""Helpers shared by tests, chapters and benchmarks: hand-built kernels, random inputs, and
``assert_allclose`` (TVM's name) with a message a learner can act on."""

from ..runtime.cpu import host_cpu_lacks
from . import tir_builders
from .compare import NumericMismatch, assert_allclose

__all__ = ["tir_builders", "assert_allclose", "NumericMismatch", "feature_this_cpu_lacks"]


def feature_this_cpu_lacks() -> str:
    """An x86 instruction-set feature (LLVM's name) this machine does not have, AVX-512's first:
    code built with it must refuse to run here, whichever machine the tests run on."""
    import llvmlite.binding as llvm

    lacking = host_cpu_lacks(sorted(llvm.get_host_cpu_features()))
    if not lacking:
        raise RuntimeError("this CPU has every feature LLVM's detection knows")
    return min(lacking, key=lambda f: (f != "avx512f", not f.startswith("avx512"), f))


def __getattr__(name: str):
    # TVM's pytest helpers (tvm.testing.parameter, main, requires_*, CompareBeforeAfter, ...):
    # loaded on first use, so importing minitvm.testing does not import pytest
    import importlib

    if name.startswith("_") or name in ("utils", "plugin"):
        raise AttributeError(name)
    utils = importlib.import_module(__name__ + ".utils")

    try:
        return getattr(utils, name)
    except AttributeError:
        raise AttributeError(f"module 'minitvm.testing' has no attribute {name!r}") from None
