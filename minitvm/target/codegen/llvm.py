"""LLVM code generation: lowered TIR -> LLVM IR -> optimized machine code (MCJIT).

This module is the public entry (:func:`build_llvm`); the work is done by files named for
their concern:

* ``llvm_emit.py``   -- TIR -> LLVM IR (:class:`CodeGenLLVM`; SIMD loops in ``vector.py``,
  float32 math in ``fastmath.py``, shared types and IR helpers in ``llvm_types.py``);
* ``llvm_jit.py``    -- LLVM's setup, the O3 pipeline and its cache, the MCJIT engine, and
  :class:`LLVMModule` (assembly and object code);
* ``calling.py``     -- the calling convention: how Python arguments reach a compiled
  function and how its error code comes back (:class:`CompiledFunction`);
* ``openmp.py``      -- loading libgomp for parallel loops, and its wait policy.
"""

from __future__ import annotations

from ...tir.function import PrimFunc
from ..signature import FunctionSignature
from ..target import Target
from .calling import ERROR_INDEX_SYMBOL, CompiledFunction
from .llvm_emit import CodeGenLLVM
from .llvm_jit import LLVM_LOCK, LLVMModule, has_openmp, jit_compile, optimized_ir
from .llvm_types import CodegenError, llvm_type

__all__ = ["build_llvm", "LLVMModule", "CodeGenLLVM", "llvm_type", "has_openmp", "CompiledFunction",
           "CodegenError", "ERROR_INDEX_SYMBOL"]


def build_llvm(funcs: dict[str, PrimFunc], target: Target | str = "llvm",
               module_name: str = "minitvm") -> LLVMModule:
    """Compile lowered PrimFuncs (global name -> function) into a runnable module.

    Honors the current PassContext's ``tir.noalias`` (default for functions without the
    attribute) and ``tir.disable_vectorize`` settings.  Bounds checks
    (:class:`~minitvm.tir.transform.InstrumentBoundCheckers`, which ``minitvm.build`` runs under
    ``tir.bounds_check``) become :class:`~minitvm.runtime.BoundsError` s naming the check.
    """
    from ...transform import PassContext

    target = target if isinstance(target, Target) else Target(target)
    ctx = PassContext.current()
    disable_vectorize = bool(ctx.get_config("tir.disable_vectorize", False))
    # distinct buffer parameters are assumed not to overlap unless a function says otherwise
    # ("tir.noalias": False) or the PassContext does: it is what lets LLVM vectorize freely
    cg = CodeGenLLVM(target, module_name, noalias=bool(ctx.get_config("tir.noalias", True)),
                     disable_vectorize=disable_vectorize)
    sigs: dict[str, FunctionSignature] = {}
    for name, func in funcs.items():
        sig = FunctionSignature.from_prim_func(name, func)
        sigs[name] = sig
        cg.add_function(name, func, sig)
    raw = str(cg.module)
    with LLVM_LOCK:
        mod, optimized = optimized_ir(raw, target, not disable_vectorize)
        engine, entry = jit_compile(mod, cg.tm, sigs)
    for name, (addr, _) in entry.items():
        if not addr:
            raise RuntimeError(f"LLVM JIT: no code for function {name!r}")
    return LLVMModule(raw, optimized, engine, cg.tm, target, entry, cg.failures)
