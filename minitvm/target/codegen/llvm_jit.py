"""From LLVM IR to machine code: LLVM's setup, the O3 pipeline (with its cache), the MCJIT
engine, and :class:`LLVMModule`, the runtime module that holds the compiled functions and
writes their assembly or object code.

LLVM's global state is not safe to drive from several threads at once: parse, optimize,
JIT-compile and emit code only with :data:`LLVM_LOCK` held.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Iterable

import llvmlite.binding as llvm

from ...runtime.module import Module
from ...runtime.registry import PackedFunc
from ..signature import FunctionSignature
from ..target import Target
from .calling import ERROR_INDEX_SYMBOL, CompiledFunction
from .openmp import load_openmp

__all__ = ["LLVM_LOCK", "init_llvm", "has_openmp", "target_machine", "features_string", "optimize",
           "optimized_ir", "jit_compile", "LLVMModule", "OPTIMIZED_IR_CACHE_SIZE"]

#: held while LLVM parses, optimizes, JIT-compiles or emits code
LLVM_LOCK = threading.Lock()
#: how many optimized modules :func:`optimized_ir` remembers
OPTIMIZED_IR_CACHE_SIZE = 64


@functools.lru_cache(maxsize=1)
def init_llvm() -> bool:
    """Initialise LLVM once; returns whether libgomp (for parallel loops) is available."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return load_openmp()


def has_openmp() -> bool:
    """True when parallel loops run on threads (libgomp could be loaded)."""
    return init_llvm()


def target_machine(cpu: str, features: str, opt: int) -> llvm.TargetMachine:
    """A new target machine: the MCJIT engine takes ownership of (and frees) the one it gets."""
    init_llvm()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=cpu, features=features, opt=opt, jit=True)


def features_string(features: Iterable[str]) -> str:
    """LLVM's spelling of a list of CPU features: ``+avx2,+fma``."""
    return ",".join(f"+{f}" for f in features)


def optimize(mod: llvm.ModuleRef, tm: llvm.TargetMachine, level: int, vectorize: bool = True) -> None:
    """LLVM's standard O<level> pipeline (new pass manager)."""
    pto = llvm.create_pipeline_tuning_options(speed_level=level)
    pto.loop_vectorization = vectorize and level >= 2
    pto.slp_vectorization = vectorize and level >= 2
    pb = llvm.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    try:
        mpm.run(mod, pb)
    finally:  # free the native objects now rather than whenever the garbage collector runs
        mpm.close()
        pb.close()
        pto.close()


@functools.lru_cache(maxsize=OPTIMIZED_IR_CACHE_SIZE)
def _optimized_text(raw: str, cpu: str, features: tuple[str, ...], level: int, vectorize: bool) -> str:
    """``raw`` LLVM IR after the O<level> pipeline for this CPU, as text (see :func:`optimized_ir`)."""
    mod = llvm.parse_assembly(raw)
    mod.verify()
    optimize(mod, target_machine(cpu, features_string(features), level), level, vectorize=vectorize)
    return str(mod)


def optimized_ir(raw: str, target: Target, vectorize: bool) -> tuple[llvm.ModuleRef, str]:
    """Parse and optimize ``raw`` LLVM IR: the module (ready for the JIT) and its optimized text.

    Every run of llvmlite's pass builder leaks ~65 KB of native memory (llvmlite 0.50 never
    frees the PassInstrumentationCallbacks it allocates per PassBuilder), so a notebook that
    rebuilds the same kernels again and again would grow without bound.  The same IR for the
    same target always optimizes to the same result: the last :data:`OPTIMIZED_IR_CACHE_SIZE`
    results are remembered, and the remembered text is JIT-compiled instead of optimizing
    again.  Call with :data:`LLVM_LOCK` held.
    """
    text = _optimized_text(raw, target.mcpu, tuple(target.features), target.opt_level, vectorize)
    return llvm.parse_assembly(text), text


def jit_compile(mod: llvm.ModuleRef, tm: llvm.TargetMachine,
                sigs: dict[str, FunctionSignature]) -> tuple[Any, dict[str, tuple[int, FunctionSignature]]]:
    """Machine code for ``mod``: the MCJIT engine (it owns ``tm`` from now on) and each named
    function's address (0 if the module has no code for it) with its signature.  Call with
    :data:`LLVM_LOCK` held."""
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    return engine, {name: (engine.get_function_address(name), sig) for name, sig in sigs.items()}


class LLVMModule(Module):
    """Native code for a set of PrimFuncs, JIT-compiled by LLVM's MCJIT."""

    def __init__(self, ll_unoptimized: str, ll_optimized: str, engine: Any, tm: llvm.TargetMachine,
                 target: Target, entry: dict[str, tuple[int, FunctionSignature]], failures: list[Any]):
        super().__init__(type_key="llvm")
        self._engine = engine
        self._tm = tm
        self._ll_raw = ll_unoptimized
        self._ll = ll_optimized
        self._asm: str | None = None
        self.target = target
        error_index = engine.get_global_value_address(ERROR_INDEX_SYMBOL) if ERROR_INDEX_SYMBOL in ll_optimized else 0
        for name, (addr, sig) in entry.items():
            fn = CompiledFunction(name, addr, sig, failures, engine, error_index)
            self._functions[name] = PackedFunc(fn, name)

    def get_source(self, fmt: str = "ll") -> str:
        """``"ll"``: optimized LLVM IR; ``"ll-raw"``: as generated; ``"asm"``/``"s"``: assembly."""
        if fmt in ("ll", "", "llvm"):
            return self._ll
        if fmt in ("ll-raw", "raw"):
            return self._ll_raw
        if fmt in ("asm", "s"):
            if self._asm is None:
                with LLVM_LOCK:
                    self._asm = self._tm.emit_assembly(llvm.parse_assembly(self._ll))
            return self._asm
        raise ValueError(f"get_source: unknown format {fmt!r}; use 'll', 'll-raw' or 'asm'")

    def save(self, path: str, fmt: str = "") -> None:
        """Write LLVM IR (``.ll``), assembly (``.s``) or an object file (``.o``)."""
        fmt = fmt or path.rsplit(".", 1)[-1]
        if fmt == "o":
            with LLVM_LOCK:
                data = self._tm.emit_object(llvm.parse_assembly(self._ll))
            with open(path, "wb") as f:
                f.write(data)
            return
        with open(path, "w") as f:
            f.write(self.get_source("asm" if fmt in ("s", "asm") else "ll"))

