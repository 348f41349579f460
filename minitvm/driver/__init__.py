"""The build driver: ``minitvm.build`` / ``minitvm.compile`` / ``minitvm.lower``."""

from .build_module import build, compile, lower, lower_to_module, normalize_module

__all__ = ["build", "compile", "lower", "lower_to_module", "normalize_module"]
