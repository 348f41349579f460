"""Relax backends: the pattern registry of bring-your-own-codegen (BYOC) backends and one backend.

A backend registers named patterns (``"<backend>.<what>"``) with :func:`register_patterns` and a
code generator as the global function ``"relax.ext.<backend>"``; then::

    from minitvm.relax.backend import get_patterns_with_prefix
    mod = relax.transform.FuseOpsByPattern(get_patterns_with_prefix("ccompiler"), annotate_codegen=True)(mod)
    mod = relax.transform.RunCodegen()(mod)        # C source -> gcc -> a module the VM calls
    ex = relax.build(mod, "llvm")

:mod:`.contrib.ccompiler` is minitvm's example backend: C for matrix products (with a bias and
a ReLU), compiled by gcc.
"""

from . import contrib, cuda, patterns, utils
from .pattern_registry import get_pattern, get_patterns_with_prefix, register_patterns

__all__ = ["contrib", "cuda", "patterns", "utils", "get_pattern", "get_patterns_with_prefix", "register_patterns"]
