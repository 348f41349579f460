"""From LLVM IR to machine code: LLVM's setup, the O3 pipeline (with its cache), the MCJIT
engine, and :class:`LLVMModule`, the runtime module that holds the compiled functions and
writes their assembly or object code.

LLVM's global state is not safe to drive from several threads at once: parse, optimize,
JIT-compile and emit code only with :data:`LLVM_LOCK` held.

Quiet by default: what LLVM writes to the process's stderr while it optimizes and compiles
(optimization remarks such as "loop not vectorized: ...") never reaches a notebook.  It is
kept on the module (``lib.llvm_messages``) and logged on the ``minitvm.llvm`` logger at
INFO; ``MINITVM_LLVM_REMARKS=1`` in the environment prints it as it comes.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import tempfile
import threading
from contextlib import contextmanager
from typing import Any, Iterable, Iterator

import llvmlite.binding as llvm
from llvmlite.binding import ffi

from ...runtime.module import Module
from ...runtime.registry import PackedFunc
from ...runtime.vm.native import TIMED_SUFFIX
from ..signature import FunctionSignature
from ..target import Target
from .calling import ERROR_INDEX_SYMBOL, CompiledFunction, UnrunnableFunction
from .cpu_check import cpu_mismatch
from .half_runtime import ensure_half_runtime
from .native_entry import kernel_info
from .packed_call import ensure_packed_call_bridge

__all__ = ["LLVM_LOCK", "init_llvm", "target_machine", "target_machine_for", "features_string",
           "optimize", "optimized_ir", "jit_compile", "LLVMModule", "linked_text", "unlocked",
           "OPTIMIZED_IR_CACHE_SIZE", "quiet_llvm", "LOGGER"]

#: where LLVM's own messages (optimization remarks) go, at INFO
LOGGER = logging.getLogger("minitvm.llvm")

#: held while LLVM parses, optimizes, JIT-compiles or emits code (re-entrant: a build that
#: starts compiling kernels while the passes still run holds it across them, and a pass may
#: ask LLVM something, e.g. a named CPU's vector features)
LLVM_LOCK = threading.RLock()
#: how many optimized modules :func:`optimized_ir` remembers
OPTIMIZED_IR_CACHE_SIZE = 64


@functools.lru_cache(maxsize=1)
def init_llvm() -> None:
    """Initialise LLVM's native target and assembly printer, once per process."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()


def target_machine(cpu: str, features: str, opt: int) -> llvm.TargetMachine:
    """A new target machine: the MCJIT engine takes ownership of (and frees) the one it gets."""
    init_llvm()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=cpu, features=features, opt=opt, jit=True)


def target_machine_for(target: Target, level: int | None = None) -> llvm.TargetMachine:
    """The TargetMachine of ``target``: its CPU, the features it turns on and off, its -opt-level
    (``level`` when given)."""
    return target_machine(target.mcpu, features_string(target.features, target.features_off),
                          target.opt_level if level is None else level)


def features_string(features: Iterable[str], disabled: Iterable[str] = ()) -> str:
    """LLVM's spelling of CPU features on and off: ``+avx2,+fma,-avx512f``."""
    return ",".join([f"+{f}" for f in features] + [f"-{f}" for f in disabled])


def optimize(mod: llvm.ModuleRef, tm: llvm.TargetMachine, level: int, vectorize: bool = True,
             own_context: bool = False) -> None:
    """LLVM's standard O<level> pipeline (new pass manager).  ``own_context``: ``mod`` lives in
    an LLVM context of its own (not the global one), so the pipeline may run while other
    threads run LLVM on other contexts (without llvmlite's process-wide lock)."""
    pto = llvm.create_pipeline_tuning_options(speed_level=level)
    pto.loop_vectorization = vectorize and level >= 2
    pto.slp_vectorization = vectorize and level >= 2
    pb = llvm.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    try:
        if own_context:
            unlocked("LLVMPY_RunNewModulePassManager")(mpm, mod, pb)
        else:
            mpm.run(mod, pb)
    finally:  # free the native objects now rather than whenever the garbage collector runs
        _dispose_module_pass_manager(mpm)
        pb.close()
        pto.close()


def unlocked(name: str) -> Any:
    """llvmlite's C function ``name`` without the lock llvmlite takes around every call (one
    process-wide lock: two threads could never run LLVM at once).  LLVM itself lets threads
    work at once on different LLVM contexts: call it only on objects of a context no other
    thread uses.  (The locked function when llvmlite no longer wraps them this way.)"""
    fn = getattr(ffi.lib, name)
    return getattr(fn, "_cfn", fn)


def _dispose_module_pass_manager(mpm: Any) -> None:
    """Free a ModulePassManager's native pipeline (every pass and what it allocated while running).

    llvmlite's ``ModulePassManager.close()`` frees nothing: the class derives from ``ObjectRef``
    before ``NewPassManager``, so ``ObjectRef``'s empty ``_dispose`` hides the one that deletes
    the pipeline (llvmlite 0.50 and its main branch).  Each optimization then leaked ~74 KiB,
    which a tuning run building thousands of kernels cannot afford.  Call the dispose function
    directly, then detach so llvmlite never touches the freed pointer again.
    """
    if mpm.closed:
        return
    if type(mpm)._dispose is not ffi.ObjectRef._dispose:  # a fixed llvmlite frees it in close()
        mpm.close()
        return
    ffi.lib.LLVMPY_DisposeNewModulePassManger(mpm)
    mpm.detach()


@contextmanager
def quiet_llvm(messages: list[str]) -> Iterator[None]:
    """Run LLVM with the process's stderr (file descriptor 2) captured: its lines are appended
    to ``messages`` and logged on :data:`LOGGER` instead of reaching the user's terminal or
    notebook (``MINITVM_LLVM_REMARKS=1`` prints them).  Call with :data:`LLVM_LOCK` held."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no usable fd 2 (an embedded interpreter): nothing to hide
        yield
        return
    python_stderr = _python_stderr_apart(saved)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            if python_stderr is not None:
                original, apart = python_stderr
                if sys.stderr is apart:  # (unless someone redirected it meanwhile: theirs stays)
                    sys.stderr = original
                apart.close()
            sink.seek(0)
            text = sink.read().decode("utf-8", errors="replace")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    messages += lines
    for line in lines:
        LOGGER.info("%s", line)
    if lines and os.environ.get("MINITVM_LLVM_REMARKS", "") not in ("", "0"):
        print("\n".join(lines), file=sys.stderr)  # noqa: T201 - asked for


def _python_stderr_apart(saved: int) -> tuple[Any, Any] | None:
    """While fd 2 is captured, Python's own ``sys.stderr`` (warnings, tracebacks, prints of the
    compiling thread -- the early build captures fd 2 from its first piece to the build's end)
    keeps writing where it wrote before, through a copy of the saved descriptor: only what LLVM
    writes straight to fd 2 is captured.  Returns (the original ``sys.stderr``, the copy now
    installed), or None when ``sys.stderr`` is not a file on fd 2 (a notebook's stream, pytest's
    capture: nothing of it goes through fd 2)."""
    original = sys.stderr
    try:
        if original is None or original.fileno() != 2:
            return None
    except (OSError, ValueError, AttributeError):  # io.UnsupportedOperation is a ValueError/OSError
        return None
    apart = open(os.dup(saved), "w", buffering=1, encoding=original.encoding,  # noqa: SIM115 - closed on exit
                 errors=original.errors)
    sys.stderr = apart
    return original, apart


#: the module :func:`_optimized_text` has just optimized (a cache miss), for :func:`optimized_ir`
#: to JIT-compile as it is instead of parsing its text again (used with LLVM_LOCK held)
_JUST_OPTIMIZED: list = []


@functools.lru_cache(maxsize=OPTIMIZED_IR_CACHE_SIZE)
def _optimized_text(raw: str, cpu: str, features: tuple[str, ...], disabled: tuple[str, ...], level: int,
                    vectorize: bool) -> tuple[str, tuple[str, ...]]:
    """``raw`` LLVM IR after the O<level> pipeline for this CPU, as text, with what LLVM said
    while optimizing it (see :func:`optimized_ir`)."""
    messages: list[str] = []
    with quiet_llvm(messages):
        mod = llvm.parse_assembly(raw)
        mod.verify()
        optimize(mod, target_machine(cpu, features_string(features, disabled), level), level, vectorize=vectorize)
        text = str(mod)
    _JUST_OPTIMIZED[:] = [mod]
    return text, tuple(messages)


def optimized_ir(raw: str, target: Target, vectorize: bool,
                 messages: list[str] | None = None) -> tuple[llvm.ModuleRef, str]:
    """Parse and optimize ``raw`` LLVM IR: the module (ready for the JIT) and its optimized text.

    The same IR for the same target always optimizes to the same result: the last
    :data:`OPTIMIZED_IR_CACHE_SIZE` results are remembered, and the remembered text is
    JIT-compiled instead of optimizing again (a notebook rebuilding the same kernels saves the
    time, and the ~2 KiB llvmlite 0.50 still leaks per PassBuilder: the
    PassInstrumentationCallbacks it allocates and never frees).  Call with :data:`LLVM_LOCK` held.
    """
    _JUST_OPTIMIZED.clear()
    text, said = _optimized_text(raw, target.mcpu, target.features, target.features_off, target.opt_level,
                                 vectorize)
    if messages is not None:
        messages += said
    # a miss leaves the optimized module behind, the IR ``text`` prints: JIT it without parsing
    # the text back (a hit parses the remembered text)
    mod = _JUST_OPTIMIZED.pop() if _JUST_OPTIMIZED else llvm.parse_assembly(text)
    return mod, text


def jit_compile(mod: llvm.ModuleRef, tm: llvm.TargetMachine, sigs: dict[str, FunctionSignature],
                messages: list[str] | None = None) -> tuple[Any, dict[str, tuple[int, FunctionSignature]]]:
    """Machine code for ``mod``: the MCJIT engine (it owns ``tm`` from now on) and each named
    function's address (0 if the module has no code for it) with its signature.  Call with
    :data:`LLVM_LOCK` held."""
    ensure_half_runtime()  # float16 conversions the backend may call (else a call to address 0)
    ensure_packed_call_bridge()  # what T.call_packed calls
    with quiet_llvm([] if messages is None else messages):
        engine = llvm.create_mcjit_compiler(mod, tm)
        engine.finalize_object()
    return engine, {name: (engine.get_function_address(name), sig) for name, sig in sigs.items()}


def _as_list(text: str | list) -> list:
    return [text] if isinstance(text, str) else list(text)


def linked_text(modules: list[str | bytes]) -> str:
    """The LLVM modules ``modules`` (each text, or bitcode) linked into one, as text (internal
    names that clash are renamed by LLVM's linker)."""
    with LLVM_LOCK:
        context = llvm.create_context()
        mod = _parse_text_or_bitcode(modules[0], context)
        try:
            for module in modules[1:]:
                mod.link_in(_parse_text_or_bitcode(module, context))
            return str(mod)
        finally:
            mod.close()  # before its context goes (the context would free it first otherwise)


def _parse_text_or_bitcode(module: str | bytes, context: Any) -> llvm.ModuleRef:
    if isinstance(module, bytes):
        mod = llvm.parse_bitcode(module, context)
        mod.name = "<string>"  # the name a module parsed from text has (bitcode keeps none)
        return mod
    return llvm.parse_assembly(module, context)


class LLVMModule(Module):
    """Native code for a set of PrimFuncs, JIT-compiled by LLVM's MCJIT.

    Code compiled for a CPU this machine is not can be read and saved, but its functions (and
    native entries) refuse to run: :attr:`cpu_mismatch` says why.  ``built_for`` is the CPU name
    and features the code was compiled for when they are not ``target``'s (a loaded library).
    """

    def __init__(self, ll_unoptimized: str | list[str], ll_optimized: str | list[str] | list[bytes], engine: Any,
                 tm: llvm.TargetMachine, target: Target, entry: dict[str, tuple[int, FunctionSignature]],
                 failures: list[Any], messages: list[str] | None = None,
                 built_for: tuple[str, Iterable[str]] | None = None, engines: dict[str, Any] | None = None):
        super().__init__(type_key="llvm")
        #: what LLVM said while optimizing and compiling this library (remarks), kept out of stderr
        self.llvm_messages: list[str] = list(messages or ())
        self._engine = engine
        self._tm = tm
        # a build compiled in pieces (one LLVM module each, see llvm_parallel.py) keeps each
        # piece's text (its optimized module as bitcode); the library's text is the pieces
        # linked, made when first asked for
        self._texts = {"raw": _as_list(ll_unoptimized), "optimized": _as_list(ll_optimized)}
        self._linked: dict[str, str] = {}
        self._asm: str | None = None
        self.target = target
        cpu, features = built_for or (target.mcpu, target.features)
        #: the CPU name and features the code was compiled for
        self.built_for: tuple[str, tuple[str, ...]] = (cpu, tuple(features))
        #: why this CPU cannot run the code ("" when it can): then calling a function raises it
        self.cpu_mismatch = cpu_mismatch(cpu, features, lambda: self.get_source("asm"), named=not target.for_this_cpu)
        # (pieces, kept as bitcode, never have bounds checks: a build with them is one module)
        error_index = (engine.get_global_value_address(ERROR_INDEX_SYMBOL)
                       if any(isinstance(t, str) and ERROR_INDEX_SYMBOL in t for t in self._texts["optimized"])
                       else 0)
        for name, (addr, sig) in entry.items():
            owner = engine if engines is None else engines[name]  # what keeps its code alive
            if self.cpu_mismatch:
                fn = UnrunnableFunction(name, addr, sig, failures, owner, error_index, reason=self.cpu_mismatch)
            else:
                fn = CompiledFunction(name, addr, sig, failures, owner, error_index)
            self._functions[name] = PackedFunc(fn, name)
        #: native entries of VM functions in this module: symbol -> address (see runtime.vm.native)
        self.native_entries: dict[str, int] = {}
        #: the timed twin of each native entry that has one: entry symbol -> address
        self.timed_entries: dict[str, int] = {}
        self._kernel_infos: dict[str, Any] = {}

    @property
    def _ll(self) -> str:
        """The optimized LLVM IR of the whole library (one module)."""
        return self._text("optimized")

    @property
    def _ll_raw(self) -> str:
        """The LLVM IR as generated, of the whole library (one module)."""
        return self._text("raw")

    def _text(self, kind: str) -> str:
        texts = self._texts[kind]
        if len(texts) == 1 and isinstance(texts[0], str):
            return texts[0]
        if kind not in self._linked:
            self._linked[kind] = linked_text(texts)
        return self._linked[kind]

    def add_native_entries(self, symbols: Iterable[str]) -> None:
        """Look up the machine code of the native entries generated into this module, and of
        their timed twins where the module has them (one saved by an older minitvm may not)."""
        for symbol in symbols:
            with LLVM_LOCK:
                addr = self._engine.get_function_address(symbol)
                timed = self._engine.get_function_address(symbol + TIMED_SUFFIX)
            if not addr:
                raise RuntimeError(f"LLVM JIT: no code for the native entry {symbol!r}")
            self.native_entries[symbol] = addr
            if timed:
                self.timed_entries[symbol] = timed

    def kernel_info(self, name: str) -> Any:
        """A kernel's parameters as the native-entry planner needs them (None: no such kernel)."""
        known = self._kernel_infos.get(name)
        if known is None:
            fn = self._functions.get(name)
            if fn is None:
                return None
            compiled = fn._fn if isinstance(fn, PackedFunc) else fn
            known = self._kernel_infos[name] = kernel_info(compiled.signature)
        return known

    def raise_kernel_error(self, name: str, code: int) -> None:
        """Raise the exception kernel ``name`` would have raised for error code ``code``."""
        fn = self._functions[name]
        (fn._fn if isinstance(fn, PackedFunc) else fn)._raise(code)

    def get_source(self, fmt: str = "ll") -> str:
        """``"ll"``: optimized LLVM IR; ``"ll-raw"``: as generated; ``"asm"``/``"s"``: assembly."""
        if fmt in ("ll", "", "llvm"):
            return self._ll
        if fmt in ("ll-raw", "raw"):
            return self._ll_raw
        if fmt in ("asm", "s"):
            if self._asm is None:
                text = self._ll  # (before the lock: linking a library's pieces takes it)
                with LLVM_LOCK:
                    self._asm = self._tm.emit_assembly(llvm.parse_assembly(text))
            return self._asm
        raise ValueError(f"get_source: unknown format {fmt!r}; use 'll', 'll-raw' or 'asm'")

    def save(self, path: str, fmt: str = "") -> None:
        """Write LLVM IR (``.ll``), assembly (``.s``) or an object file (``.o``)."""
        fmt = fmt or path.rsplit(".", 1)[-1]
        if fmt == "o":
            text = self._ll  # (before the lock: linking a library's pieces takes it)
            with LLVM_LOCK:
                data = self._tm.emit_object(llvm.parse_assembly(text))
            with open(path, "wb") as f:
                f.write(data)
            return
        with open(path, "w") as f:
            f.write(self.get_source("asm" if fmt in ("s", "asm") else "ll"))

