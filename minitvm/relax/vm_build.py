"""``relax.build(mod, target)``: a module of Relax functions and PrimFuncs -> VM Executable.

1. the Relax pipeline (``relax_pipeline``, default ``"default"``: legalization, fusion and
   schedules, see :mod:`minitvm.relax.pipeline`; ``None`` runs none), under ``target``;
2. the lowering to VM builtins (:func:`~minitvm.relax.pipeline.vm_lowering_passes`:
   ``ToNonDataflow``, ``CallTIRRewrite``, ``StaticPlanBlockMemory``, ``VMBuiltinLower``,
   ``VMShapeLower``) -- always, as TVM's default build pipeline ends with it; the passes leave
   already-lowered code alone, so a module lowered by hand is not lowered twice;
3. the PrimFuncs -> ``minitvm.build`` -> the kernel library (LLVM machine code);
4. the Relax functions -> bytecode (:func:`minitvm.relax.vm.codegen`);

packed into a :class:`minitvm.runtime.vm.Executable` that ``relax.VirtualMachine`` runs
and ``ex.save(path)`` writes (kernels as optimized LLVM IR, re-JIT-compiled on load).
"""

from __future__ import annotations

from typing import Any

from .. import driver
from ..ir.module import IRModule
from ..runtime.vm import Executable, VirtualMachine, VMInstrumentReturnKind
from ..target import Target
from ..target.codegen import llvm_export  # noqa: F401 - registers the hooks that save/load kernels
from ..tir.function import PrimFunc
from ..transform import Pass, Sequential
from . import transform, vm
from .expr import Function
from .pipeline import get_pipeline, register_pipeline, vm_lowering_passes
from .vm.codegen import codegen

# re-exported so that minitvm/relax/__init__.py needs a single import line
__all__ = ["build", "VirtualMachine", "VMInstrumentReturnKind", "get_pipeline", "register_pipeline", "transform", "vm"]


def _as_target(target: Any) -> Target:
    """``target`` as a Target (a string names one); ``with`` it, passes see it as current."""
    if target is None:
        return Target.current() or Target("llvm")
    return target if isinstance(target, Target) else Target(target)


def build(mod: IRModule, target: Any = None, params: dict | None = None,
          relax_pipeline: str | Pass | None = "default", tir_pipeline: str | None = "default",
          exec_mode: str = "bytecode", *, system_lib: bool | None = None, **kwargs: Any) -> Executable:
    """Compile ``mod`` for the VM: ``relax_pipeline`` (a name for :func:`get_pipeline`, a Pass
    or a function of the module; None runs none) under ``target`` (default: the current
    target, else llvm), then the lowering to VM builtins, the kernels, the bytecode.
    ``params`` binds function parameters by name to constants (not supported yet: pass
    weights as arguments); the TIR pipeline is always ``minitvm.tir.transform.lower_pipeline()``."""

    if not isinstance(mod, IRModule):
        raise TypeError(f"relax.build expects an IRModule, got {type(mod).__name__}")
    if exec_mode != "bytecode":
        raise ValueError(f"relax.build: exec_mode {exec_mode!r} is not supported; only 'bytecode'")
    if params:
        raise NotImplementedError("relax.build(params=...) is not supported yet; pass the weights as arguments")
    if tir_pipeline not in (None, "default"):
        raise NotImplementedError("relax.build: only the default TIR pipeline is supported")
    if kwargs:
        raise TypeError(f"relax.build: unexpected arguments {', '.join(kwargs)}")
    if system_lib:
        raise NotImplementedError("relax.build(system_lib=True): minitvm builds no system library; "
                                  "the kernels are JIT-compiled in process")
    if not any(isinstance(f, Function) for _, f in mod.items()):
        raise ValueError("relax.build: the module has no Relax function; use minitvm.build for TIR only")
    target = _as_target(target)
    if isinstance(relax_pipeline, str):
        relax_pipeline = get_pipeline(relax_pipeline)
    if relax_pipeline is not None:
        if not callable(relax_pipeline):
            raise TypeError(f"relax.build: relax_pipeline must be a pipeline name, a Pass (or a function of "
                            f"the module) or None, got {type(relax_pipeline).__name__}")
        with target:
            mod = relax_pipeline(mod)
    mod = Sequential(vm_lowering_passes(target), name="vm_lowering")(mod)
    prims = {gv: f for gv, f in mod.items() if isinstance(f, PrimFunc)}
    lib = driver.build_kernels(IRModule(prims), target) if prims else None
    exe = codegen(mod, lib)
    exe.ir_module = mod  # what was compiled, for inspection
    return exe
