"""The build driver: ``minitvm.build`` / ``minitvm.compile`` / ``minitvm.lower``."""

from .build_module import build, build_kernels, compile, in_notebook, lower, lower_to_module, normalize_module

__all__ = ["build", "build_kernels", "compile", "lower", "lower_to_module", "normalize_module", "in_notebook"]
