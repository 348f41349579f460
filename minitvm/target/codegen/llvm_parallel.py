"""A large build compiled in pieces: LLVM works while Python lowers and emits the next kernels.

A model's kernels are one LLVM module when built serially (:func:`.llvm.build_llvm`): Python
lowers and emits every kernel, then LLVM optimizes and JIT-compiles the lot on one thread --
30-50% of a realistic model's compile, with the second core idle.  Here the kernels come in
pieces (a few kernels each, lowered when the piece is asked for); each piece is emitted into an
LLVM module of its own and handed to a worker thread that parses, optimizes (O3) and
JIT-compiles it in an LLVM context of its own, while the calling thread lowers and emits the
next piece.  LLVM releases the GIL and, in separate contexts, lets threads work at once; the
calls that take long skip llvmlite's process-wide lock (:func:`.llvm_jit.unlocked`).

The same machine code per kernel as the serial build (the same IR, the same O3 pipeline and
target machine; kernels do not call each other); the native entries (which call kernels) are a
module of their own, compiled last, their kernels mapped to the addresses the pieces got.  The
library's LLVM text is the pieces linked (made when asked for, from each piece's optimized
bitcode).  Builds with bounds checks stay one module (the index a failed check saw is one global
per module).

A worker never prints a module as text: llvmlite's printer (``LLVMPY_PrintModuleToString``) sets
the process-wide C locale around the call and restores the one it saw, so two threads printing
at once can leave the process in the "C" locale for good (the second saves the first's "C"
and restores it last; Python then reads text files as ASCII), and the main thread sees "C"
while any worker prints.  Writing bitcode touches no locale.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import llvmlite.binding as llvm
from llvmlite.binding import ffi
from llvmlite.binding.context import ContextRef
from llvmlite.binding.module import ModuleRef

from ...runtime.cpu import parallel_threads
from ...runtime.vm.native import EntryPlan, plan_entry
from ...tir.function import PrimFunc
from ...transform import PassContext
from ..signature import FunctionSignature
from ..target import Target
from .half_runtime import ensure_half_runtime
from .llvm_emit import CodeGenLLVM
from .llvm_jit import LLVM_LOCK, LLVMModule, optimize, quiet_llvm, target_machine_for, unlocked
from .native_entry import emit_entries, kernel_info
from .packed_call import ensure_packed_call_bridge
from .thread_pool import ensure_thread_pool

__all__ = ["PieceBuild", "llvm_threads", "split_pieces", "split_for_overlap", "LLVM_THREADS",
           "MIN_KERNELS", "PIECES_PER_THREAD", "ENTRY_OPT_LEVEL"]

#: worker threads compiling pieces (None: one per CPU, at most 2; 0: builds stay one module);
#: ``MINITVM_LLVM_THREADS`` in the environment sets it
LLVM_THREADS: int | None = None
#: a build of fewer kernels stays one module (a piece costs its own LLVM setup, ~10 ms)
MIN_KERNELS = 4
#: pieces per worker thread: the first starts after a fraction of the emission, and the last
#: (compiled after Python is done) is short
PIECES_PER_THREAD = 3
#: the native entries' optimization level (pipeline and machine code): their code is a straight
#: run of kernel calls, which O3 cannot speed up, and its machine code is the build's serial tail
#: (ViT-tiny: 126 KB of IR, 0.13 s of O3 + machine code at 3, 0.01 s at 0)
ENTRY_OPT_LEVEL = 0


def llvm_threads() -> int:
    """How many worker threads compile pieces (0: build as one module)."""
    if LLVM_THREADS is not None:
        return max(0, int(LLVM_THREADS))
    asked = os.environ.get("MINITVM_LLVM_THREADS", "").strip()
    if asked:
        try:
            return max(0, int(asked))
        except ValueError:
            raise ValueError(f"MINITVM_LLVM_THREADS={asked!r}: expected a whole number of threads "
                             "(0: compile each build as one LLVM module)") from None
    cpus = parallel_threads()
    return min(2, cpus) if cpus > 1 else 0


def split_pieces(items: list, pieces: int) -> list[list]:
    """``items`` in ``pieces`` runs of consecutive items, sizes differing by at most one."""
    pieces = max(1, min(pieces, len(items)))
    size, extra = divmod(len(items), pieces)
    out, start = [], 0
    for i in range(pieces):
        end = start + size + (i < extra)
        out.append(items[start:end])
        start = end
    return out


def split_for_overlap(items: list, pieces: int) -> list[list]:
    """``items`` in ``pieces`` runs of consecutive items, the first of one item and the others
    as :func:`split_pieces`: a worker starts on the first kernel while the calling thread
    lowers the next ones (until the first piece is handed over, the second core idles)."""
    if pieces < 2 or len(items) <= pieces:
        return split_pieces(items, pieces)
    return [items[:1], *split_pieces(items[1:], pieces - 1)]


#: whether llvmlite has seen the process start ending (it frees nothing from then on)
_llvmlite_ending: Any = getattr(ffi, "_is_shutting_down", lambda: False)


class _Context(ContextRef):
    """An LLVM context freed by its :class:`_Owner` only."""

    def _dispose(self) -> None:
        pass


class _Owner:
    """Frees a piece's engine (or, before there is one, its module), then its LLVM context: in
    that order whatever order the garbage collector finalizes them in (a context freed first
    frees the module under the engine, which then crashes freeing it again).  Whatever calls
    a piece's code holds this."""

    __slots__ = ("engine", "module", "context", "pointer")

    def __init__(self) -> None:
        self.engine = self.module = None
        self.context = _Context(ffi.lib.LLVMPY_ContextCreate())
        self.pointer = self.context._ptr  # (llvmlite forgets it when the ContextRef is finalized)

    def __del__(self, _finalizing: Any = sys.is_finalizing, _free: Any = ffi.lib.LLVMPY_ContextDispose,
                _ending: Any = _llvmlite_ending) -> None:
        if _finalizing() or _ending():  # the process is ending: llvmlite frees nothing then either
            return
        for owned in (self.engine, self.module):
            if owned is not None:
                owned.close()
                break
        _free(self.pointer)


@dataclass
class _Piece:
    raw: str
    optimized: bytes  # bitcode (see the module's docstring for why not text)
    engine: Any
    owner: _Owner
    tm: Any
    entry: dict[str, tuple[int, FunctionSignature]]


def _parse(text: str, context: Any) -> ModuleRef:
    """``llvm.parse_assembly`` into ``context`` without llvmlite's lock."""
    buf = ctypes.c_char_p(text.encode("utf-8"))
    with ffi.OutputString() as err:
        mod = ModuleRef(unlocked("LLVMPY_ParseAssembly")(context, buf, err), context)
        if err:
            mod.close()
            raise RuntimeError(f"LLVM IR parsing error\n{err}")
    return mod


def _bitcode(mod: ModuleRef) -> bytes:
    """``mod.as_bitcode()`` without llvmlite's lock."""
    ptr, size = ctypes.c_char_p(None), ctypes.c_size_t(-1)
    unlocked("LLVMPY_WriteBitcodeToString")(mod, ctypes.byref(ptr), ctypes.byref(size))
    if not ptr:
        raise MemoryError("LLVM: no memory for a piece's bitcode")
    try:
        return ctypes.string_at(ptr, size.value)
    finally:
        unlocked("LLVMPY_DisposeString")(ptr)


def _optimize_piece(raw: str, target: Target, vectorize: bool, level: int | None = None) -> tuple[_Owner, bytes]:
    """One piece's IR parsed, verified and optimized in an LLVM context of its own: the owner
    (holding the module) and the optimized module's bitcode.  ``level``: the pipeline's level
    when not the target's (0: none)."""
    owner = _Owner()
    owner.module = mod = _parse(raw, owner.context)
    with ffi.OutputString() as problem:
        if unlocked("LLVMPY_VerifyModule")(mod, problem):
            raise RuntimeError(str(problem))
    level = target.opt_level if level is None else level
    if level > 0:
        optimize(mod, target_machine_for(target, level), level, vectorize, own_context=True)
    return owner, _bitcode(mod)  # (the bitcode before the JIT's code generation changes the module)


def _compile_piece(raw: str, target: Target, vectorize: bool, sigs: dict[str, FunctionSignature],
                   elsewhere: dict[str, int] | None = None,
                   optimized: tuple[_Owner, bytes] | None = None, level: int | None = None) -> _Piece:
    """On a worker thread: one piece's IR parsed, verified, optimized and JIT-compiled, all in
    an LLVM context of its own.  ``elsewhere``: functions the piece declares and calls, compiled
    in other pieces (name -> address); ``optimized``: what :func:`_optimize_piece` made of
    ``raw`` already; ``level``: the optimization level when not the target's."""
    owner, optimized_bitcode = optimized or _optimize_piece(raw, target, vectorize, level)
    mod = owner.module
    tm = target_machine_for(target, level)
    owner.engine = engine = llvm.create_mcjit_compiler(mod, tm)  # owns mod from now on
    for name, address in (elsewhere or {}).items():
        # resolved within this engine (a process-wide symbol would clash with another build's
        # kernel of the same name, or shadow a C library function named like a kernel)
        engine.add_global_mapping(mod.get_function(name), address)
    unlocked("LLVMPY_FinalizeObject")(engine)  # the machine code
    entry = {name: (engine.get_function_address(name), sig) for name, sig in sigs.items()}
    return _Piece(raw, optimized_bitcode, engine, owner, tm, entry)


def _emit(funcs: dict[str, PrimFunc], target: Target, failures: list, noalias: bool,
          disable_vectorize: bool) -> tuple[str, dict[str, FunctionSignature]]:
    """One piece's LLVM IR (its failure codes numbered in the build's one ``failures`` list)."""
    cg = CodeGenLLVM(target, "minitvm", noalias=noalias, disable_vectorize=disable_vectorize)
    cg.failures = failures
    sigs: dict[str, FunctionSignature] = {}
    for name, func in funcs.items():
        sigs[name] = FunctionSignature.from_prim_func(name, func)
        cg.add_function(name, func, sigs[name])
    return str(cg.module), sigs


_POOLS: dict[tuple[int, int], ThreadPoolExecutor] = {}


def _pool(threads: int) -> ThreadPoolExecutor:
    """The process's worker threads for pieces (kept: new threads per build cost their start
    and leave memory behind).  By process id: a forked child has none of its parent's threads."""
    key = (os.getpid(), threads)
    pool = _POOLS.get(key)
    if pool is None:
        pool = _POOLS[key] = ThreadPoolExecutor(threads, "minitvm-llvm")
    return pool


def _emit_entries(entries: tuple, sigs: dict[str, FunctionSignature], target: Target, noalias: bool,
                  disable_vectorize: bool) -> tuple[str, list[str], list[str]] | None:
    """The native entries' LLVM module (see :func:`.llvm.build_llvm`), the kernels they call
    declared in it: its IR, the entries' symbols and the kernels it calls (None: no entry)."""
    infos = {name: kernel_info(sig) for name, sig in sigs.items()}
    cg = CodeGenLLVM(target, "minitvm_entries", noalias=noalias, disable_vectorize=disable_vectorize)
    symbols, called = [], {}
    for vm_func, func_names, constants in entries:
        plan = plan_entry(vm_func, func_names, constants, infos.get)
        if not isinstance(plan, EntryPlan) or cg.module.globals.get(plan.symbol) is not None:
            continue
        for kernel, _ in plan.calls:
            if kernel not in called:
                called[kernel] = cg.declare_kernel(kernel, sigs[kernel])
        emit_entries(cg.module, plan, cg._decorate)
        symbols.append(plan.symbol)
    return (str(cg.module), symbols, list(called)) if symbols else None


class PieceBuild:
    """One build compiled in pieces: :meth:`submit` emits a piece's LLVM IR on the calling
    thread and hands it to the worker threads; :meth:`finish` compiles the native entries and
    returns the runnable module of every piece kept.  ``limit``: how many pieces LLVM compiles
    at once (None: as many as there are workers; the others wait their turn, in order).  Open
    from the first submit until :meth:`finish` or :meth:`close`: ``LLVM_LOCK`` held and LLVM's
    stderr captured (so whatever the calling thread does meanwhile must not need the lock on
    another thread); the PassContext's ``tir.noalias`` and ``tir.disable_vectorize`` are read
    when it is made."""

    def __init__(self, target: Target | str = "llvm", limit: int | None = None) -> None:
        self.target = target if isinstance(target, Target) else Target(target)
        ctx = PassContext.current()
        self.disable_vectorize = bool(ctx.get_config("tir.disable_vectorize", False))
        self.noalias = bool(ctx.get_config("tir.noalias", True))
        self.limit = limit
        self.failures: list[Any] = []
        self.messages: list[str] = []
        self.sigs: dict[str, FunctionSignature] = {}
        self.pieces: list[Future] = []  # kept pieces, in order
        self._submitted: list[Future] = []  # every piece, kept or dropped (all are waited for)
        self._waiting: list[tuple[Future, str, dict[str, FunctionSignature]]] = []  # not started yet
        self._running = 0
        self._lock = threading.Lock()
        self._open: ExitStack | None = None

    def _ensure_open(self) -> None:
        if self._open is not None:
            return
        ensure_thread_pool()  # (takes LLVM_LOCK itself the first time)
        stack = ExitStack()
        stack.enter_context(LLVM_LOCK)
        try:
            ensure_half_runtime()  # what the kernels may call, before any is JIT-compiled
            ensure_packed_call_bridge()
            stack.enter_context(quiet_llvm(self.messages))
        except BaseException:
            stack.close()
            raise
        self._open = stack

    def submit(self, funcs: dict[str, PrimFunc]) -> Future:
        """Emit lowered ``funcs`` (global name -> function) as one piece and hand it to the
        workers: the future of its :class:`_Piece`."""
        self._ensure_open()
        raw, got = _emit(funcs, self.target, self.failures, self.noalias, self.disable_vectorize)
        self.sigs.update(got)
        piece: Future = Future()
        self.pieces.append(piece)
        self._submitted.append(piece)
        with self._lock:
            self._waiting.append((piece, raw, got))
        self._start_waiting()
        return piece

    def idle(self) -> bool:
        """Whether no piece is compiling or waiting its turn."""
        with self._lock:
            return not self._waiting and not self._running

    def set_limit(self, limit: int | None) -> None:
        """Change how many pieces LLVM compiles at once."""
        self.limit = limit
        self._start_waiting()

    def _start_waiting(self) -> None:
        pool = _pool(max(1, llvm_threads()))
        with self._lock:
            while self._waiting and (self.limit is None or self._running < self.limit):
                self._running += 1
                pool.submit(self._compile, *self._waiting.pop(0))

    def _compile(self, piece: Future, raw: str, sigs: dict[str, FunctionSignature]) -> None:
        """On a worker thread: one piece, then the next waiting one started."""
        try:
            if piece.set_running_or_notify_cancel():
                try:
                    piece.set_result(_compile_piece(raw, self.target, not self.disable_vectorize, sigs))
                except BaseException as exc:  # noqa: BLE001 - handed to whoever asks for the piece
                    piece.set_exception(exc)
        finally:
            with self._lock:
                self._running -= 1
            self._start_waiting()

    def drop(self, piece: Future) -> None:
        """Leave a submitted piece out of the module (it is still waited for)."""
        self.pieces.remove(piece)

    def finish(self, entries: tuple = ()) -> LLVMModule:
        """The runnable module of the kept pieces, with native entries for ``entries``
        (``(vm_function, func_names, constants)`` of bytecode functions, as
        :func:`.llvm.build_llvm`'s: their code is a module of its own, compiled last); closes the
        build."""
        self._ensure_open()
        self.set_limit(None)
        vectorize = not self.disable_vectorize
        try:
            entry_ir = (_emit_entries(entries, self.sigs, self.target, self.noalias, self.disable_vectorize)
                        if entries else None)
            # the entries are optimized while the last kernels compile; only their machine
            # code waits for the kernels' addresses
            pool = _pool(max(1, llvm_threads()))
            entry_opt = (pool.submit(_optimize_piece, entry_ir[0], self.target, vectorize, ENTRY_OPT_LEVEL)
                         if entry_ir is not None else None)
            self._submitted += [entry_opt] if entry_opt is not None else []
            wait(self._submitted)
            done = [f.result() for f in self.pieces]
            if entry_ir is not None:
                raw, symbols, called = entry_ir
                addresses = {name: addr for p in done for name, (addr, _) in p.entry.items()}
                done.append(_compile_piece(raw, self.target, vectorize, {}, {k: addresses[k] for k in called},
                                           optimized=entry_opt.result(), level=ENTRY_OPT_LEVEL))
        finally:  # every submitted piece finished (or failed) before LLVM's messages are read
            self.close()
        lib = _library(done, self.target, self.failures, self.messages, primary=-1 if entry_ir is not None else 0)
        if entry_ir is not None:
            lib.add_native_entries(entry_ir[1])
        return lib

    def close(self) -> None:
        """Forget the pieces not started, wait for the others, release ``LLVM_LOCK`` and stop
        capturing stderr."""
        with self._lock:
            waiting, self._waiting = self._waiting, []
        for piece, _, _ in waiting:
            piece.cancel()
            piece.set_running_or_notify_cancel()  # (else ``wait`` waits for it still)
        wait(self._submitted)
        if self._open is not None:
            stack, self._open = self._open, None
            stack.close()


def _library(done: list[_Piece], target: Target, failures: list, messages: list[str], primary: int) -> LLVMModule:
    """The runnable module of the compiled pieces (``primary``: the piece whose engine holds
    the native entries, if any)."""
    entry: dict[str, tuple[int, FunctionSignature]] = {}
    engines: dict[str, Any] = {}
    for piece in done:
        for name, (addr, sig) in piece.entry.items():
            if not addr:
                raise RuntimeError(f"LLVM JIT: no code for function {name!r}")
            entry[name], engines[name] = (addr, sig), piece.owner
    if not done:
        raise ValueError("build: the module has no PrimFunc to compile")
    # the library's target machine writes its assembly and object code: a kernel piece's (the
    # native entries' compiles at ENTRY_OPT_LEVEL)
    first = done[primary]
    lib = LLVMModule([p.raw for p in done], [p.optimized for p in done], first.engine, done[0].tm, target,
                     entry, failures, messages, engines=engines)
    lib._owners = [p.owner for p in done]  # the native entries' code too
    return lib
