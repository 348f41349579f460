"""The TIR build: from IRModule (or PrimFunc) of TIR functions to a runnable module.

``build`` runs ``minitvm.tir.transform.lower_pipeline()`` under the current ``PassContext``
and hands every PrimFunc to the target's code generator; ``build_kernels`` is the same for
a Relax model's kernels (with the compiled-kernel cache).  It lives on the target floor (TVM
keeps it in ``tvm.tir.build``) so that Relax, which compiles its kernels with it, need not
reach up to the driver; ``minitvm.build`` re-exports it from ``minitvm.driver``.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from ..ir.deep import deep
from ..ir.module import GlobalVar, IRModule
from ..ir.notebook import in_notebook
from ..ir.structural import structural_equal, structural_hash
from ..runtime.module import Module
from ..tir.function import PrimFunc
from ..tir.functor import post_order_visit
from ..tir.stmt import BufferStore
from ..tir.transform import InstrumentBoundCheckers, device_lower_pipeline, lower_pipeline
from ..tir.transform.default_schedule import SCHEDULE_CACHE, scheduled_kernels_to
from ..tir.transform.instrument_bound_checkers import bounds_check_requested
from ..transform import PassContext
from .codegen import build_module, check_buildable
from .target import GPU_KINDS, Target

__all__ = ["build", "build_kernels", "lower", "lower_to_module", "normalize_module", "in_notebook", "export_name",
           "KERNEL_CACHE_SIZE", "clear_kernel_cache", "kernel_cache_info", "resolve_target",
           "check_default_tir_pipeline"]

#: kernel libraries remembered by :func:`build_kernels` (by the structural hash of their PrimFuncs)
KERNEL_CACHE_SIZE = 32


def normalize_module(mod_or_func: Any, name: str | None = None) -> IRModule:
    """An IRModule from a PrimFunc (named ``name``, its global_symbol, or "main") or an IRModule."""
    if isinstance(mod_or_func, IRModule):
        return mod_or_func
    if isinstance(mod_or_func, PrimFunc):
        if name:  # an explicit name is also the exported symbol
            return IRModule({name: mod_or_func.with_attr("global_symbol", name)})
        return IRModule({mod_or_func.attrs.get("global_symbol") or "main": mod_or_func})
    raise TypeError(f"expected an IRModule or a tir.PrimFunc, got {type(mod_or_func).__name__}")


def resolve_target(target: Any) -> Target:
    if target is None:
        return Target.current() or Target("llvm")
    return target if isinstance(target, Target) else Target(target)


@deep
def lower_to_module(mod_or_func: Any, name: str | None = None) -> IRModule:
    """An IRModule with every PrimFunc lowered (blocks -> loops, flat buffers, simplified): TVM's
    ``minitvm.lower`` (``lower`` below), which returns an IRModule even for one PrimFunc."""
    return lower_pipeline()(normalize_module(mod_or_func, name))


#: TVM's public name (``minitvm.lower``)
lower = lower_to_module


#: target kinds whose code generator turns a failed bounds check into a ``BoundsError``
_CHECKED_KINDS = ("llvm", "cuda-emulated")


def _instrument(mod: IRModule, target: Target, checks_by_default: bool) -> IRModule:
    """Bounds checks for native code when ``PassContext(config={"tir.bounds_check": ...})`` asks,
    else ``checks_by_default`` (the python target's interpreter checks every access itself).
    The one place the instrumentation runs, so that ``lib.ir_module`` shows the checks that were
    compiled.  The emulated GPU's kernels are checked as native code is (after the host/device
    split, the thread indices ranging over their launch): a bad shared-memory index raises the
    same ``BoundsError``; CUDA C source carries no checks."""
    if target.kind.name not in _CHECKED_KINDS or not bounds_check_requested(PassContext.current(),
                                                                             checks_by_default):
        return mod
    return InstrumentBoundCheckers()(mod)


def export_name(name_hint: str, func: PrimFunc) -> str:
    """The symbol a built PrimFunc is exported under: its ``global_symbol`` attribute when it
    has one, else its name in the module (as TVM: ``tir.Schedule(add1).mod`` names the
    function ``main`` but ``lib["add1"]`` calls it)."""
    symbol = func.attrs.get("global_symbol") if func.attrs else None
    return str(symbol) if symbol else name_hint


@deep
def build(mod_or_func: Any, target: Any = "llvm", pipeline: Any = "default", *, name: str | None = None) -> Module:
    """Compile the PrimFuncs of a module (or one PrimFunc) for ``target``, as TVM's ``tvm.build``
    (``pipeline``: "default" or None, the TIR lowering pipeline; ``name``: minitvm's, the
    name a lone PrimFunc is exported under).

    ``lib[symbol](*arrays)`` then calls a function by its exported symbol (``export_name``:
    the ``global_symbol``, else the module's name for it); arguments are checked (count,
    dtype, shape) before any code runs.  A provable out-of-bounds access is refused while
    lowering; what cannot be proven is checked at run time inside a notebook unless
    ``PassContext(config={"tir.bounds_check": False})`` says otherwise (a learner's wrong index
    then raises ``BoundsError`` instead of killing the kernel), and elsewhere only when the
    config asks.
    """
    check_default_tir_pipeline("minitvm.build(pipeline=...)", pipeline)
    return build_kernels(mod_or_func, target, name, checks_by_default=in_notebook())


def check_default_tir_pipeline(what: str, pipeline: Any) -> None:
    """TVM runs any TIR pipeline it is given; minitvm has its one lowering pipeline."""
    if pipeline not in (None, "default"):
        raise NotImplementedError(f"{what}: only the default TIR pipeline ('default' or None) is supported, "
                                  f"got {pipeline!r}")


class _KernelCache:
    """Compiled kernel libraries of this process by the structural hash of their PrimFuncs
    (with their names, the target and the PassContext): compiling the same model again --
    a notebook cell run twice, a model rebuilt after an unrelated edit -- reuses the machine
    code instead of lowering, optimizing and JIT-compiling every kernel again.  A hit is
    confirmed with ``structural_equal``; builds under pass instruments are never cached
    (the instruments are there to see the lowering run)."""

    def __init__(self, size: int):
        self.size = size
        self.entries: OrderedDict[tuple, tuple[list, Module]] = OrderedDict()
        self.hits = self.misses = 0
        self.lock = threading.Lock()

    @staticmethod
    def key(mod: IRModule, target: Target, checks_by_default: bool, entries: tuple = ()) -> tuple | None:
        ctx = PassContext.current()
        if ctx.instruments or target.kind.name != "llvm":
            return None
        try:
            config = tuple(sorted((k, repr(v)) for k, v in ctx.config.items()))
        except TypeError:
            return None
        funcs = tuple((gv.name_hint, structural_hash(f, map_free_vars=True)) for gv, f in mod.items())
        # a bounds check names the TVMScript line of its access, which structure does not see
        lines = _store_lines(mod) if bounds_check_requested(ctx, checks_by_default) else ()
        return (str(target), checks_by_default, ctx.opt_level, tuple(sorted(ctx.required_pass)),
                tuple(sorted(ctx.disabled_pass)), config, funcs, _entries_key(entries), lines)

    def get(self, key: tuple, mod: IRModule) -> Module | None:
        with self.lock:
            entry = self.entries.get(key)
            if entry is not None:
                self.entries.move_to_end(key)
        if entry is None:
            self.misses += 1
            return None
        funcs, lib = entry
        if len(funcs) != len(mod.functions) or not all(
                structural_equal(f, g, map_free_vars=True) for f, (_, g) in zip(funcs, mod.items())):
            self.misses += 1
            return None  # a hash collision
        self.hits += 1
        return lib

    def put(self, key: tuple, mod: IRModule, lib: Module) -> None:
        with self.lock:
            self.entries[key] = ([f for _, f in mod.items()], lib)
            self.entries.move_to_end(key)
            while len(self.entries) > self.size:
                self.entries.popitem(last=False)


def _store_lines(mod: IRModule) -> tuple:
    """Where TVMScript wrote each store of the module's PrimFuncs (file, line)."""
    found: list = []
    for _, f in mod.items():
        if isinstance(f, PrimFunc):
            post_order_visit(f.body, lambda n: found.append((n.span.source_name, n.span.line))
                             if isinstance(n, BufferStore) and n.span is not None else None)
    return tuple(found)


def _entries_key(entries: tuple) -> str:
    """What the native entries of a build depend on: the bytecode, the function table and the
    constants' kinds (a tensor's dtype and shape, not its values: entries take them by pointer)."""
    def describe(c: Any) -> Any:
        if hasattr(c, "dtype") and hasattr(c, "shape"):
            return ["tensor", str(c.dtype), list(c.shape)]
        if isinstance(c, tuple):
            return [type(c).__name__, [describe(v) for v in c]]
        return [type(c).__name__, repr(c)]

    text = json.dumps([[f.to_json(), list(names), [describe(c) for c in consts]] for f, names, consts in entries])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_KERNEL_CACHE = _KernelCache(KERNEL_CACHE_SIZE)


def clear_kernel_cache() -> None:
    """Forget every compiled kernel library and every default schedule (the next build
    schedules and compiles from scratch)."""
    with _KERNEL_CACHE.lock:
        _KERNEL_CACHE.entries.clear()
        _KERNEL_CACHE.hits = _KERNEL_CACHE.misses = 0
    SCHEDULE_CACHE.clear()


def kernel_cache_info() -> dict[str, Any]:
    """``{"hits", "misses", "size", "max_size"}`` of the compiled-kernel cache, and the same
    for the default schedules under ``"schedules"``."""
    return {"hits": _KERNEL_CACHE.hits, "misses": _KERNEL_CACHE.misses, "size": len(_KERNEL_CACHE.entries),
            "max_size": _KERNEL_CACHE.size, "schedules": SCHEDULE_CACHE.info()}


def _by_symbol(lowered: IRModule, taken: dict | set) -> dict[str, PrimFunc]:
    """The PrimFuncs of ``lowered`` by exported symbol (none already in ``taken``)."""
    funcs: dict[str, PrimFunc] = {}
    for gv, f in lowered.items():
        if isinstance(f, PrimFunc):
            symbol = export_name(gv.name_hint, f)
            if symbol in funcs or symbol in taken:
                raise ValueError(f"build: two functions export the symbol {symbol!r} (global_symbol)")
            funcs[symbol] = f
    return funcs


def _in_pieces(mod: IRModule, target: Target, checks_by_default: bool) -> bool:
    """Whether to lower and compile ``mod`` in pieces, LLVM working on one while the next is
    lowered (:mod:`.codegen.llvm_parallel`): a build :func:`_piece_build_possible` allows, of
    enough kernels."""
    if not _piece_build_possible(target, checks_by_default):
        return False
    from .codegen import llvm_parallel  # lazy: loads llvmlite

    return len(mod.functions) >= llvm_parallel.MIN_KERNELS


def _piece_build_possible(target: Target, checks_by_default: bool) -> bool:
    """A CPU build with a second CPU for LLVM, without bounds checks (those stay one LLVM
    module): what a build in pieces needs, whatever the number of kernels."""
    if target.kind.name != "llvm" or bounds_check_requested(PassContext.current(), checks_by_default):
        return False
    from .codegen import llvm_parallel  # lazy: loads llvmlite

    return llvm_parallel.llvm_threads() > 0


def _build_in_pieces(mod: IRModule, target: Target, entries: tuple, early: EarlyKernels | None = None) -> Module:
    """:func:`build_kernels`' lowering and compiling, a piece of the module at a time (the
    kernels ``early`` compiled or lowered already are not lowered again)."""
    from .codegen import llvm_parallel as lp  # lazy: loads llvmlite

    build, taken, unsent = early.take(mod) if early is not None else (lp.PieceBuild(target), {}, [])
    lowered: dict = {}  # name -> its lowered functions by GlobalVar
    funcs: dict[str, PrimFunc] = {}  # every lowered PrimFunc by symbol (no symbol twice)
    for name, (low, got) in taken.items():
        lowered[name] = low
        funcs.update(got)
    try:
        for group in lp.split_pieces(unsent, lp.llvm_threads()) if unsent else ():
            build.submit({symbol: f for got in group for symbol, f in got.items()})
        rest = [(gv, f) for gv, f in mod.items() if gv.name_hint not in taken]
        for part in lp.split_for_overlap(rest, lp.llvm_threads() * lp.PIECES_PER_THREAD) if rest else ():
            low = lower_pipeline()(IRModule(dict(part), attrs=mod.attrs, global_infos=mod.global_infos))
            for gv, f in low.items():
                lowered.setdefault(gv.name_hint, {})[gv] = f
            got = _by_symbol(low, funcs)
            funcs.update(got)
            check_buildable(got, target)
            build.submit(got)
    except BaseException:
        build.close()
        raise
    lib = build.finish(entries)
    in_order = {gv: f for name in [*(gv.name_hint for gv in mod.functions), *lowered] if name in lowered
                for gv, f in lowered.pop(name).items()}
    lib.ir_module = IRModule(in_order, attrs=mod.attrs, global_infos=mod.global_infos)  # what was compiled
    return lib


#: ``built_as(name, scheduled)`` of :func:`compiling_as_scheduled`
BuiltAs = Callable[[str, PrimFunc], "tuple[str, PrimFunc] | None"]

#: pieces LLVM compiles at once while the kernels are still being scheduled: one, so that LLVM
#: on one core leaves the other to the thread scheduling the rest (0: no kernel is compiled
#: before build_kernels, as before EarlyKernels)
EARLY_PIECES_AT_ONCE = 1


class EarlyKernels:
    """A build begun while ``DefaultCPUSchedule`` runs (in ``relax.build``, see
    :func:`compiling_as_scheduled`): each kernel its rules schedule is lowered at once; the
    kernels lowered are emitted and handed to LLVM as a piece whenever LLVM has nothing to do,
    or when they are as many as a piece of the usual split holds (a piece costs LLVM ~5 ms of
    its own).  LLVM compiles the pieces one at a time, in order, while the rest are scheduled
    and the VM lowering and the bytecode run, instead of after.  :func:`build_kernels` then
    lowers and compiles only the kernels not taken here: a kernel counts when the module built
    holds the very PrimFunc object scheduled, under the same name, or (one ``built_as`` made)
    a structurally equal one (else its piece is left out).  From the first piece until the
    build finishes, ``LLVM_LOCK`` is held and the process's stderr captured (see
    :class:`.codegen.llvm_parallel.PieceBuild`)."""

    def __init__(self, target: Target, built_as: BuiltAs | None = None) -> None:
        from .codegen import llvm_parallel as lp  # lazy: loads llvmlite

        self.target = target
        self.built_as = built_as
        self.pieces = lp.PieceBuild(target, limit=EARLY_PIECES_AT_ONCE)
        self.per_piece = 0  # kernels a piece holds at most (0: the module is too small for pieces)
        self.scheduled: dict[str, PrimFunc] = {}  # name -> the scheduled PrimFunc lowered here
        self.lowered: dict[str, dict] = {}  # name -> its lowered functions by GlobalVar
        self.symbols: dict[str, dict[str, PrimFunc]] = {}  # name -> its lowered PrimFuncs by symbol
        self.pending: list[str] = []  # lowered, not emitted yet
        self.piece_of: dict[str, Any] = {}  # name -> the piece (future) compiling it
        self.taken: set[str] = set()  # every symbol lowered here
        self.derived: set[str] = set()  # kernels ``built_as`` made (matched structurally in :meth:`take`)

    def __call__(self, gv: Any, func: PrimFunc, mod: IRModule) -> None:
        """``DefaultCPUSchedule`` has scheduled ``func`` (``gv`` in ``mod``)."""
        if not self.scheduled:
            from .codegen import llvm_parallel as lp  # lazy: loads llvmlite

            kernels = sum(isinstance(f, PrimFunc) for _, f in mod.items())
            pieces = lp.llvm_threads() * lp.PIECES_PER_THREAD
            self.per_piece = -(-kernels // pieces) if kernels >= lp.MIN_KERNELS else 0
        if not self.per_piece:
            return
        built = self.built_as(gv.name_hint, func) if self.built_as is not None else None
        if built is not None:
            gv, func = GlobalVar(built[0]), built[1]
            self.derived.add(built[0])
        try:
            low = lower_pipeline()(IRModule({gv: func}))
            got = _by_symbol(low, self.taken)
            check_buildable(got, self.target)
        except Exception:  # noqa: BLE001 - build_kernels lowers it again, and fails there if it must
            return
        name = gv.name_hint
        self.scheduled[name], self.lowered[name], self.symbols[name] = func, dict(low.functions), got
        self.taken.update(got)
        self.pending.append(name)
        if len(self.pending) >= self.per_piece or self.pieces.idle():
            piece = self.pieces.submit({s: f for n in self.pending for s, f in self.symbols[n].items()})
            self.piece_of.update(dict.fromkeys(self.pending, piece))
            self.pending = []

    def take(self, mod: IRModule) -> tuple[Any, dict[str, tuple[dict, dict[str, PrimFunc]]], list[dict[str, PrimFunc]]]:
        """For the build of ``mod``: the piece build (now compiling on every worker); the
        kernels of ``mod`` lowered here (by name: their lowered functions by GlobalVar, their
        lowered PrimFuncs by symbol); the lowered PrimFuncs (by symbol) of those not in a piece
        (not emitted yet, or their piece left out: it held a kernel ``mod`` lost or changed),
        a dict per kernel."""
        in_mod = {gv.name_hint: f for gv, f in mod.items()}
        kept = [name for name, f in self.scheduled.items() if in_mod.get(name) is f
                or (name in self.derived and name in in_mod and structural_equal(in_mod[name], f))]
        for name, piece in self.piece_of.items():
            if name not in kept and piece in self.pieces.pieces:
                self.pieces.drop(piece)
        self.pieces.set_limit(None)
        unsent = [self.symbols[n] for n in kept if n in self.pending or self.piece_of[n] not in self.pieces.pieces]
        return self.pieces, {n: (self.lowered[n], self.symbols[n]) for n in kept}, unsent

    def close(self) -> None:
        """End the build (pieces not started are forgotten; nothing to do after a finished one)."""
        self.pieces.close()


@contextmanager
def compiling_as_scheduled(target: Any, built_as: BuiltAs | None = None) -> Iterator[EarlyKernels | None]:
    """Within (``relax.build``'s pipeline up to its :func:`build_kernels`): kernels are compiled
    as ``DefaultCPUSchedule`` schedules them (:class:`EarlyKernels`, yielded for
    ``build_kernels(early=...)``), when the build would be in pieces anyway (a CPU build, a
    second CPU, no bounds checks); under pass instruments not (they watch passes run: the
    lowering's would run inside DefaultCPUSchedule).  Yields None when not.  ``built_as(name,
    scheduled)``: the (name, PrimFunc) a later pass of the pipeline will make of a scheduled
    kernel, compiled instead of it (None: the kernel as scheduled)."""
    target = resolve_target(target)
    if PassContext.current().instruments or EARLY_PIECES_AT_ONCE <= 0 or not _piece_build_possible(target, False):
        yield None
        return
    early = EarlyKernels(target, built_as)
    try:
        with scheduled_kernels_to(early):
            yield early
    finally:
        early.close()


@deep
def build_kernels(mod_or_func: Any, target: Any = "llvm", name: str | None = None, *,
                  checks_by_default: bool = False, entries: tuple = (), early: EarlyKernels | None = None,
                  one_module: bool = False) -> Module:
    """:func:`build` with the bounds-check default given: ``relax.build`` builds a model's
    kernels with checks only when the PassContext asks (a model's kernels are generated, and
    the checks would cost speed).  Every kernel of the module goes into one LLVM module (one
    optimization pipeline, one JIT); a module built before in this process (the same
    PrimFuncs, structurally) gets the library built then (see :class:`_KernelCache`).
    ``entries``: ``(vm_function, func_names, constants)`` of bytecode functions to give a
    native entry in the same LLVM module (``relax.build(exec_mode="compiled")``).  ``early``:
    kernels compiled as they were scheduled (:func:`compiling_as_scheduled`), used when the
    module is built in pieces.  ``one_module``: never in pieces (each piece pays LLVM's set-up:
    FoldConstant's chains of tiny kernels, needed at once, took 15% more CPU in six pieces)."""
    target = resolve_target(target)
    mod = normalize_module(mod_or_func, name)
    others = [gv.name_hint for gv, f in mod.items() if not isinstance(f, PrimFunc)]
    if others:
        raise TypeError(f"build compiles TIR functions only; {', '.join(others)} are not PrimFuncs — "
                        "use minitvm.compile for modules with Relax functions")
    # GPU builtins and thread launches are refused by name before lowering trips over them
    check_buildable({gv.name_hint: f for gv, f in mod.items()}, target)
    key = _KernelCache.key(mod, target, checks_by_default, entries)
    if key is not None:
        cached = _KERNEL_CACHE.get(key, mod)
        if cached is not None:
            if early is not None:
                early.close()
            return cached
    if not one_module and _in_pieces(mod, target, checks_by_default):
        lib = _build_in_pieces(mod, target, entries, early)
        if key is not None:
            _KERNEL_CACHE.put(key, mod, lib)
        return lib
    if early is not None:
        early.close()  # (what it compiled is not used: one LLVM module)
    lowered = lower_pipeline()(mod)  # ``mod`` is normalized: lower_to_module would normalize it again
    if target.kind.name in GPU_KINDS:  # barriers where threads share data, then kernels split off
        lowered = device_lower_pipeline()(lowered)
    lowered = _instrument(lowered, target, checks_by_default)
    funcs = _by_symbol(lowered, {})
    if not funcs:
        raise ValueError("build: the module has no PrimFunc to compile")
    lib = build_module(funcs, target, entries=entries)
    lib.ir_module = lowered  # what was compiled, for inspection
    if key is not None:
        _KERNEL_CACHE.put(key, mod, lib)
    return lib
