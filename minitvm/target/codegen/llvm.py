"""LLVM code generation: lowered TIR -> LLVM IR -> optimized machine code (MCJIT).

This module is the public entry (:func:`build_llvm`); the work is done by files named for
their concern:

* ``llvm_emit.py``   -- TIR -> LLVM IR (:class:`CodeGenLLVM`; SIMD loops in ``vector.py``,
  float32 math in ``fastmath.py``, shared types and IR helpers in ``llvm_types.py``);
* ``llvm_jit.py``    -- LLVM's setup, the O3 pipeline and its cache, the MCJIT engine, and
  :class:`LLVMModule` (assembly and object code);
* ``calling.py``     -- the calling convention: how Python arguments reach a compiled
  function and how its error code comes back (:class:`CompiledFunction`);
* ``thread_pool.py`` -- minitvm's own pool for parallel loops (no stalls on a busy machine);
* ``native_entry.py`` -- a VM function's native entry, beside its kernels.
"""

from __future__ import annotations

from ...runtime.vm.native import EntryPlan, plan_entry
from ...tir.function import PrimFunc
from ...transform import PassContext
from ..signature import FunctionSignature
from ..target import Target
from .calling import ERROR_INDEX_SYMBOL, CompiledFunction
from .llvm_emit import CodeGenLLVM
from .llvm_jit import LLVM_LOCK, LLVMModule, jit_compile, optimized_ir
from .llvm_types import CodegenError, llvm_type
from .native_entry import emit_entries, kernel_info

__all__ = ["build_llvm", "LLVMModule", "CodeGenLLVM", "llvm_type", "CompiledFunction",
           "CodegenError", "ERROR_INDEX_SYMBOL"]


def build_llvm(funcs: dict[str, PrimFunc], target: Target | str = "llvm",
               module_name: str = "minitvm", entries: tuple = ()) -> LLVMModule:
    """Compile lowered PrimFuncs (global name -> function) into a runnable module.

    ``entries``: ``(vm_function, func_names, constants)`` of bytecode functions that should get
    a native entry (see :mod:`minitvm.runtime.vm.native`), generated into the same LLVM module
    as the kernels when the function can have one.

    Honors the current PassContext's ``tir.noalias`` (default for functions without the
    attribute) and ``tir.disable_vectorize`` settings.  Bounds checks
    (:class:`~minitvm.tir.transform.InstrumentBoundCheckers`, which ``minitvm.build`` runs under
    ``tir.bounds_check``) become :class:`~minitvm.runtime.BoundsError` s naming the check.
    """
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
    infos = {name: kernel_info(sig) for name, sig in sigs.items()}
    entry_symbols = []
    for vm_func, func_names, constants in entries:
        plan = plan_entry(vm_func, func_names, constants, infos.get)
        if isinstance(plan, EntryPlan) and cg.module.globals.get(plan.symbol) is None:
            emit_entries(cg.module, plan, cg._decorate)
            entry_symbols.append(plan.symbol)
    raw = str(cg.module)
    messages: list[str] = []
    with LLVM_LOCK:
        mod, optimized = optimized_ir(raw, target, not disable_vectorize, messages)
        engine, entry = jit_compile(mod, cg.tm, sigs, messages)
    for name, (addr, _) in entry.items():
        if not addr:
            raise RuntimeError(f"LLVM JIT: no code for function {name!r}")
    lib = LLVMModule(raw, optimized, engine, cg.tm, target, entry, cg.failures, messages)
    lib.add_native_entries(entry_symbols)
    return lib
