"""Helpers shared by tests, chapters and benchmarks: hand-built kernels and random inputs."""

from . import tir_builders

__all__ = ["tir_builders"]
