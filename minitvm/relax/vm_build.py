"""``relax.build(mod, target)``: a module of Relax functions and PrimFuncs -> VM Executable.

1. the Relax pipeline (``relax_pipeline``, default ``"default"``: legalization, fusion and
   schedules, see :mod:`minitvm.relax.pipeline`; ``None`` runs none), under ``target``;
2. the lowering to VM builtins (:func:`~minitvm.relax.pipeline.vm_lowering_passes`:
   ``ToNonDataflow``, ``CallTIRRewrite``, ``StaticPlanBlockMemory``, ``VMBuiltinLower``,
   ``VMShapeLower``), as TVM's default build pipeline ends with it -- unless the module is
   lowered already (:func:`is_vm_lowered`: a pipeline that ends with TVM's lowering passes, as
   ``optimize_llm.py``'s does); the passes also leave lowered code alone, so a module lowered
   in part is not lowered twice;
3. the PrimFuncs -> ``minitvm.build`` -> the kernel library (LLVM machine code; LLVM starts on
   each kernel as ``DefaultCPUSchedule`` schedules it, see ``tir_build.compiling_as_scheduled``);
4. the Relax functions -> bytecode (:func:`minitvm.relax.vm.codegen`); the runtime modules
   in the module attribute ``"external_mods"`` (``AttachExternModules``) are imported into
   the kernel library, where the VM looks functions up;

packed into a :class:`minitvm.runtime.vm.Executable` that ``relax.VirtualMachine`` runs
and ``ex.save(path)`` writes (kernels as optimized LLVM IR, re-JIT-compiled on load).
"""

from __future__ import annotations

import contextlib
import gc
import threading
from typing import Any, Iterator

from ..ir.deep import deep
from ..ir.module import IRModule
from ..ir.op import Op
from ..runtime.module import Module
from ..runtime.vm import Executable, VirtualMachine, VMFunction, VMInstrumentReturnKind
from ..target import Target
from ..target.codegen import llvm_export  # noqa: F401 - registers the hooks that save/load kernels
from ..target.tir_build import build_kernels, compiling_as_scheduled
from ..tir.function import PrimFunc
from ..transform import Pass, Sequential
from . import transform, vm
from .analysis.struct_info_analysis import tir_vars_in_struct_info
from .expr import Call, ExternFunc, Function
from .expr_functor import ExprVisitor
from .pipeline import get_pipeline, register_pipeline, vm_lowering_passes
from .transform.split_layout_rewrite_preproc import split_prim_func
from .vm.codegen import codegen, codegen_into

# re-exported so that minitvm/relax/__init__.py needs a single import line
__all__ = ["build", "VirtualMachine", "VMInstrumentReturnKind", "get_pipeline", "register_pipeline", "transform", "vm"]


def _as_target(target: Any) -> Target:
    """``target`` as a Target (a string names one); ``with`` it, passes see it as current."""
    if target is None:
        return Target.current() or Target("llvm")
    return target if isinstance(target, Target) else Target(target)


#: ``exec_mode`` values: bytecode only (TVM's default), or a native entry per function where it can
EXEC_MODES = ("bytecode", "compiled")


def _lowered_function(func: Function) -> bool:
    """No dataflow block, match_cast or operator call but ``R.vm.kill_object`` is left,
    and a function with symbolic shapes has its shape heap: what VMShapeLower leaves."""
    found = _Unlowered()
    found.visit_expr(func)
    if found.unlowered:
        return False
    symbolic = any(tir_vars_in_struct_info(p.struct_info) for p in func.params)
    return not symbolic or found.shape_heap


class _Unlowered(ExprVisitor):
    def __init__(self) -> None:
        self.unlowered = False
        self.shape_heap = False

    def visit_dataflow_block_(self, block: Any) -> None:
        self.unlowered = True

    def visit_match_cast_(self, binding: Any) -> None:
        self.unlowered = True

    def visit_call_(self, op: Call) -> None:
        if isinstance(op.op, Op) and op.op.name != "relax.vm.kill_object":  # the code generator's own
            self.unlowered = True
        if isinstance(op.op, ExternFunc) and op.op.global_symbol == "vm.builtin.alloc_shape_heap":
            self.shape_heap = True
        super().visit_call_(op)


def is_vm_lowered(mod: IRModule) -> bool:
    """True when every Relax function of ``mod`` is what the VM code generator takes (the VM
    lowering has run, in a pipeline of the user's say): ``relax.build`` then lowers nothing."""
    return all(_lowered_function(f) for _, f in mod.items() if isinstance(f, Function))


def _import_external_modules(exe: Executable, mod: IRModule) -> None:
    """The runtime modules ``AttachExternModules`` attached, imported into the kernel library."""
    ext_mods = list((mod.attrs or {}).get("external_mods", ()))
    if not ext_mods:
        return
    if exe._lib is None:  # no kernels: a library of no functions of its own holds the imports
        exe._lib = Module({}, type_key="library")
    for ext in ext_mods:
        exe._lib.import_module(ext)


_gc_lock = threading.Lock()
_gc_depth = 0


@contextlib.contextmanager
def _heap_frozen() -> Iterator[None]:
    """The objects alive before the build (torch's, the user's) moved out of the collector's
    sight while it runs: a full collection in a big compile then scans only the compile's own
    objects (measured: 0.38 -> 0.14 CPU s of ResNet-18's compile at 224 px, after torch was
    imported).  Not when something else froze objects (``gc.freeze()`` before a fork): their
    freeze is left as it is."""
    global _gc_depth
    with _gc_lock:
        mine = _gc_depth > 0 or gc.get_freeze_count() == 0
        if mine:
            if _gc_depth == 0:
                gc.freeze()
            _gc_depth += 1
    try:
        yield
    finally:
        if mine:
            with _gc_lock:
                _gc_depth -= 1
                if _gc_depth == 0:
                    gc.unfreeze()


def _vmcodegen(builder: Any, mod: IRModule, exec_mode: str = "bytecode") -> IRModule:
    """TVM's first half of ``relax.build``: the bytecode of ``mod``'s Relax functions (already
    lowered for the VM; no pass runs) into ``builder`` (a ``relax.ExecBuilder``); returns the
    PrimFuncs left to compile, for :func:`_vmlink`."""
    if exec_mode not in EXEC_MODES:
        raise ValueError(f"relax.vm_build._vmcodegen: exec_mode {exec_mode!r} is not one of {', '.join(EXEC_MODES)}")
    codegen_into(builder._eb, mod)
    for func in builder._eb._exe.func_table:
        if isinstance(func, VMFunction):
            # the VM checks arguments against their struct info only through what VMShapeLower
            # emits (TVM's design); code generated without that pass checks nothing, as in TVM
            func.param_info = None
    builder._exec_mode, builder._ir_module = exec_mode, mod
    return IRModule({gv: f for gv, f in mod.items() if isinstance(f, PrimFunc)})


def _vmlink(builder: Any, target: Any, tir_mod: IRModule | None = None, ext_libs: Any = None,
            params: dict | None = None, *, system_lib: bool | None = None) -> Executable:
    """TVM's second half of ``relax.build``: the executable of ``builder``'s bytecode with the
    kernels of ``tir_mod`` compiled for ``target`` (and, in ``compiled`` mode, native entries)."""
    if ext_libs or params or system_lib:
        raise NotImplementedError("relax.vm_build._vmlink: ext_libs, params and system_lib are not supported")
    exe = builder.get()
    exec_mode = getattr(builder, "_exec_mode", "bytecode")
    prims = dict(tir_mod.items()) if tir_mod is not None else {}
    entries: tuple = ()
    if exec_mode == "compiled":
        names = tuple(exe.func_names)
        entries = tuple((f, names, exe.constants) for f in exe.func_table if isinstance(f, VMFunction))
    exe._lib = build_kernels(IRModule(prims), _as_target(target), entries=entries) if prims else None
    mod = getattr(builder, "_ir_module", None)
    if mod is not None:
        _import_external_modules(exe, mod)
        exe.ir_module = mod
    exe.exec_mode = exec_mode
    return exe


def build(mod: IRModule, target: Any = None, params: dict | None = None,
          relax_pipeline: str | Pass | None = "default", tir_pipeline: str | None = "default",
          exec_mode: str = "compiled", *, system_lib: bool | None = None, **kwargs: Any) -> Executable:
    """Compile ``mod`` for the VM: ``relax_pipeline`` (a name for :func:`get_pipeline`, a Pass
    or a function of the module; None runs none) under ``target`` (default: the current
    target, else llvm), then the lowering to VM builtins, the bytecode, the kernels.
    ``params`` binds function parameters by name to constants (not supported yet: pass
    weights as arguments); the TIR pipeline is always ``minitvm.tir.transform.lower_pipeline()``.

    ``exec_mode``: ``"compiled"`` (minitvm's default) also generates, for every Relax function
    whose shapes are static and whose bytecode is a straight line of allocations and kernel
    calls, a *native entry*: the whole instruction sequence as one LLVM function in the same
    module as the kernels (storage carved from one arena planned at compile time, kernels
    called directly, the arguments checked once); ``relax.VirtualMachine`` then runs a call
    from Python as one native call.  The bytecode is kept and printed beside it, and runs
    whenever an instrument or the profiler watches the VM, and for functions without an
    entry (``ex.as_text()`` says why).  ``"bytecode"`` (TVM's default) builds the bytecode only.
    The default differs from TVM's because the results are identical and the native entry
    only removes Python between kernels (see :mod:`minitvm.runtime.vm.native`)."""
    with _heap_frozen():
        return _build(mod, target, params, relax_pipeline, tir_pipeline, exec_mode, system_lib=system_lib, **kwargs)


def _prepacked(name: str, scheduled: PrimFunc) -> tuple[str, PrimFunc] | None:
    """What the default pipeline builds of a kernel whose schedule packs a constant weight at
    its root: SplitLayoutRewritePreproc's ``<name>_prepacked`` (the packing itself is folded
    into a constant), compiled early in its place."""
    split = split_prim_func(scheduled)
    return None if split is None else (name + "_prepacked", split[1])


@deep
def _build(mod: IRModule, target: Any = None, params: dict | None = None,
           relax_pipeline: str | Pass | None = "default", tir_pipeline: str | None = "default",
           exec_mode: str = "compiled", *, system_lib: bool | None = None, **kwargs: Any) -> Executable:
    """:func:`build` on a deep thread."""

    if not isinstance(mod, IRModule):
        raise TypeError(f"relax.build expects an IRModule, got {type(mod).__name__}")
    if exec_mode not in EXEC_MODES:
        raise ValueError(f"relax.build: exec_mode {exec_mode!r} is not supported; use 'compiled' (a native entry "
                         "per function where it can, the default) or 'bytecode'")
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
    if relax_pipeline is not None and not callable(relax_pipeline):
        raise TypeError(f"relax.build: relax_pipeline must be a pipeline name, a Pass (or a function of "
                        f"the module) or None, got {type(relax_pipeline).__name__}")
    # LLVM starts on each kernel as DefaultCPUSchedule schedules it, while the rest is done
    with compiling_as_scheduled(target, _prepacked) as early:
        if relax_pipeline is not None:
            with target:
                mod = relax_pipeline(mod)
        if not is_vm_lowered(mod):  # a pipeline that lowers (TVM's optimize_llm.py's) is not lowered twice
            mod = Sequential(vm_lowering_passes(target), name="vm_lowering")(mod)
        exe = codegen(mod)  # the bytecode first: native entries are planned from it
        prims = {gv: f for gv, f in mod.items() if isinstance(f, PrimFunc)}
        entries: tuple = ()
        if exec_mode == "compiled":
            names = tuple(exe.func_names)
            entries = tuple((f, names, exe.constants) for f in exe.func_table if isinstance(f, VMFunction))
        exe._lib = build_kernels(IRModule(prims), target, entries=entries, early=early) if prims else None
    _import_external_modules(exe, mod)
    exe.exec_mode = exec_mode
    exe.ir_module = mod  # what was compiled, for inspection
    return exe
