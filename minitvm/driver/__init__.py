"""The build driver: ``minitvm.build`` / ``minitvm.compile`` / ``minitvm.lower``."""

from .build_module import build, compile, lower, normalize_module

__all__ = ["build", "compile", "lower", "normalize_module"]
