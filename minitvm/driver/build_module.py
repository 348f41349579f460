"""From a model to a runnable module: ``minitvm.compile``.

``compile`` is the entry point for whole models: TIR-only modules go to the TIR build
(``minitvm.target.tir_build.build``, re-exported here as ``minitvm.build``); modules with Relax
functions go to the Relax virtual-machine builder.
"""

from __future__ import annotations

from typing import Any

from ..ir.deep import deep
from ..ir.module import IRModule
from ..target import Target
from ..target.tir_build import (  # noqa: F401 - minitvm.driver re-exports the TIR build
    KERNEL_CACHE_SIZE,
    build,
    build_kernels,
    check_default_tir_pipeline,
    clear_kernel_cache,
    export_name,
    in_notebook,
    kernel_cache_info,
    lower,
    lower_to_module,
    normalize_module,
    resolve_target,
)
from ..tir.function import PrimFunc

__all__ = ["build", "build_kernels", "compile", "lower", "lower_to_module", "normalize_module", "in_notebook",
           "KERNEL_CACHE_SIZE", "clear_kernel_cache", "kernel_cache_info"]


def _has_relax(mod: IRModule) -> bool:
    return any(not isinstance(f, PrimFunc) for _, f in mod.items())


@deep
def compile(mod_or_func: Any, target: Any = None, *, relax_pipeline: Any = "default",  # noqa: A001 - TVM's name
            tir_pipeline: Any = "default", **kwargs: Any) -> Any:
    """Compile a module for ``target`` (default: the current target, else llvm), as TVM's
    ``tvm.compile``: modules with Relax functions go to ``relax.build`` (the Relax pipeline
    ``relax_pipeline`` -- a name, a Pass or None -- then the lowering to the VM; a VM
    Executable); TIR-only modules go to ``build`` (a runtime Module), where
    ``relax_pipeline`` does not apply."""
    if isinstance(mod_or_func, IRModule) and _has_relax(mod_or_func):
        return _compile_relax(mod_or_func, resolve_target(target), relax_pipeline=relax_pipeline,
                              tir_pipeline=tir_pipeline, **kwargs)
    check_default_tir_pipeline("minitvm.compile(tir_pipeline=...)", tir_pipeline)
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"minitvm.compile: unexpected arguments {', '.join(kwargs)}")
    return build(mod_or_func, target, name=name)


def _compile_relax(mod: IRModule, target: Target, **kwargs: Any) -> Any:
    """Relax functions -> VM bytecode, PrimFuncs -> kernels: ``relax.build`` (a VM Executable)."""
    from ..relax.vm_build import build as relax_build  # lazy: building PrimFuncs alone loads no Relax

    return relax_build(mod, target, **kwargs)
