"""The build driver: ``minitvm.build`` / ``minitvm.compile`` / ``minitvm.lower``."""

from .build_module import (
    build,
    build_kernels,
    clear_kernel_cache,
    compile,
    in_notebook,
    kernel_cache_info,
    lower,
    lower_to_module,
    normalize_module,
)

__all__ = ["build", "build_kernels", "compile", "lower", "lower_to_module", "normalize_module", "in_notebook",
           "clear_kernel_cache", "kernel_cache_info"]
