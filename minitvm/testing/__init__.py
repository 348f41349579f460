"""Helpers shared by tests, chapters and benchmarks: hand-built kernels, random inputs, and
``assert_allclose`` (TVM's name) with a message a learner can act on."""

from . import tir_builders
from .compare import NumericMismatch, assert_allclose

__all__ = ["tir_builders", "assert_allclose", "NumericMismatch"]
