"""Code generators: lowered TIR -> runnable :class:`minitvm.runtime.Module`.

``build_module(funcs, target)`` picks the back end from the target kind: ``llvm`` compiles
to native code, ``python`` runs the numpy reference interpreter.
"""

from __future__ import annotations

from typing import Any

__all__ = ["build_module"]


def build_module(funcs: dict[str, Any], target: Any) -> Any:
    """Compile lowered PrimFuncs (global name -> PrimFunc) for ``target``."""
    from ..target import Target

    target = target if isinstance(target, Target) else Target(target)
    if target.kind.name == "llvm":
        from .llvm import build_llvm

        return build_llvm(funcs, target)
    if target.kind.name == "python":
        from .python import build_python

        return build_python(funcs, target)
    raise ValueError(f"no code generator for target kind {target.kind.name!r}")
