"""Saving and loading an LLVM kernel library (the hooks a VM Executable's file uses).

``runtime.module.export_llvm(lib)`` gives the library's optimized LLVM IR and, as JSON
metadata, what is needed to call its functions again: each function's
:class:`~minitvm.target.signature.FunctionSignature` (parameters, dtypes, shapes with
their symbolic dimensions, which buffers are written), the assert messages, and the
target (CPU name and features).

``runtime.module.loadfrom_llvm_ir(ir_text, metadata)`` JIT-compiles that IR again -- no
TIR, no optimization passes (the IR is already optimized) -- and returns an
:class:`~minitvm.target.codegen.llvm.LLVMModule` whose functions check their arguments
exactly as the originals did.  A library compiled for CPU features this machine lacks
loads, but its functions refuse to run with a message naming them (:mod:`.cpu_check`),
rather than crashing on an illegal instruction.

Importing this module registers both hooks (``relax.build`` and ``minitvm.relax`` import it).
"""

from __future__ import annotations

import re
from typing import Any

import llvmlite.binding as llvm

from ...ir import dtype as _dt
from ...runtime.module import BoundsCheck
from ...runtime.registry import register_func
from ...runtime.vm.native import ENTRY_PREFIX
from ...tir import expr as _e
from ..signature import FunctionSignature, ParamSpec
from ..target import Target
from .llvm_jit import LLVM_LOCK, LLVMModule, features_string, init_llvm, jit_compile, target_machine
from .native_entry import CLOCK_SYMBOL
from .packed_call import PackedCallFailure
from .thread_pool import PARALLEL_RUN_SYMBOL, ensure_thread_pool

__all__ = ["export_llvm", "load_llvm_ir", "signature_to_json", "signature_from_json", "FORMAT"]

#: the kernel format name in an Executable file (the loader is ``runtime.module.loadfrom_<FORMAT>``)
FORMAT = "llvm_ir"
_METADATA_VERSION = 3  # 2: failures hold bounds checks as records; 3: parallel loops call the thread pool
_BINARY = {cls.__name__: cls for cls in (_e.Add, _e.Sub, _e.Mul, _e.Div, _e.Mod, _e.FloorDiv, _e.FloorMod,
                                         _e.Min, _e.Max)}


# -- signatures <-> JSON -------------------------------------------------------------------------


class _VarTable:
    def __init__(self) -> None:
        self.vars: list[_e.Var] = []

    def ref(self, v: _e.Var) -> int:
        for i, known in enumerate(self.vars):
            if known is v:
                return i
        self.vars.append(v)
        return len(self.vars) - 1


def _expr_to_json(e: Any, table: _VarTable) -> Any:
    if isinstance(e, _e.IntImm):
        return {"int": e.value, "dtype": e.dtype}
    if isinstance(e, _e.Var):
        return {"var": table.ref(e)}
    if isinstance(e, _e.Cast):
        return {"cast": e.dtype, "value": _expr_to_json(e.value, table)}
    if type(e).__name__ in _BINARY and type(e) is _BINARY[type(e).__name__]:
        return {"op": type(e).__name__, "a": _expr_to_json(e.a, table), "b": _expr_to_json(e.b, table)}
    raise ValueError(f"cannot save the shape expression {e!r} of a kernel signature")


def _expr_from_json(d: Any, variables: list[_e.Var]) -> Any:
    if "int" in d:
        return _e.IntImm(str(d["dtype"]), int(d["int"]))
    if "var" in d:
        return variables[int(d["var"])]
    if "cast" in d:
        return _e.Cast(str(d["cast"]), _expr_from_json(d["value"], variables))
    cls = _BINARY.get(d.get("op"))
    if cls is None:
        raise ValueError(f"unknown shape expression in kernel metadata: {d!r}")
    return cls(_expr_from_json(d["a"], variables), _expr_from_json(d["b"], variables))


def signature_to_json(sig: FunctionSignature) -> dict:
    """A JSON-able description of ``sig`` (variables shared between dims stay shared)."""
    table = _VarTable()
    params = []
    for p in sig.params:
        params.append({"name": p.name, "var": table.ref(p.var), "dtype": p.dtype, "is_buffer": p.is_buffer,
                       "shape": [_expr_to_json(d, table) for d in p.shape], "written": p.written})
    shape_vars = [table.ref(v) for v in sig.shape_vars]
    return {"name": sig.name, "vars": [{"name": v.name, "dtype": v.dtype} for v in table.vars],
            "params": params, "shape_vars": shape_vars}


def signature_from_json(d: dict) -> FunctionSignature:
    variables = [_e.Var(str(v["name"]), str(v["dtype"])) for v in d["vars"]]
    params = [ParamSpec(str(p["name"]), variables[int(p["var"])], _param_dtype(d, p), bool(p["is_buffer"]),
                        tuple(_expr_from_json(s, variables) for s in p["shape"]), bool(p["written"]))
              for p in d["params"]]
    return FunctionSignature(str(d["name"]), params, [variables[int(i)] for i in d["shape_vars"]])


def _param_dtype(sig: dict, param: dict) -> str:
    """A saved parameter's dtype, refused when the library loads if it is not one minitvm knows."""
    try:
        return _dt.check(str(param["dtype"]))
    except TypeError as err:
        raise ValueError(f"kernel {sig.get('name')!r}, parameter {param.get('name')!r}: {err}") from None


# -- checking a saved library before it is compiled ------------------------------------------------

#: external functions generated code may call: the C allocator, the thread pool, and libm
_RUNTIME_FUNCTIONS = frozenset({"malloc", "aligned_alloc", "free", PARALLEL_RUN_SYMBOL, CLOCK_SYMBOL})
_LIBM = re.compile(r"(a?sinh?|a?cosh?|a?tanh?|atan2|exp2?|expm1|log(2|10|1p)?|sqrt|cbrt|pow|erfc?|fabs|floor|ceil"
                   r"|round|roundeven|trunc|rint|nearbyint|fmod|fmin|fmax|hypot|ldexp|frexp)f?")


#: inline assembly (``call void asm "..."``, ``module asm "..."``), which our code generator never writes
_INLINE_ASM = re.compile(r'(^module\s+asm\s+"|\basm\s+(sideeffect\s+|alignstack\s+|inteldialect\s+|unwind\s+)*")',
                         re.MULTILINE)


def _parse_kernels(payload: Any) -> llvm.ModuleRef:
    """Parse and verify saved LLVM IR; refuse anything but IR our code generator could have written.

    The IR becomes machine code that runs in this process, so it may reach nothing outside
    itself except the allocator, minitvm's thread pool and libm, and may hold no inline assembly:
    a file that declares, say, ``system`` is refused before anything is compiled.
    """
    if not isinstance(payload, str):
        raise ValueError(f"the kernel library should be LLVM IR text, found {type(payload).__name__}")
    try:
        mod = llvm.parse_assembly(payload)
        mod.verify()
    except RuntimeError as err:
        detail = " ".join(str(err).split())[:200]
        raise ValueError(f"the saved kernel library is not valid LLVM IR ({detail})") from err
    if _INLINE_ASM.search(payload):
        raise ValueError("the saved kernel library contains inline assembly, which minitvm's code generator "
                         "never emits; refusing to compile it")
    for fn in mod.functions:
        name = fn.name
        if fn.is_declaration and not (name.startswith("llvm.") or name in _RUNTIME_FUNCTIONS
                                      or _LIBM.fullmatch(name)):
            raise ValueError(f"the saved kernel library calls the external function {name!r}, which minitvm's "
                             "code generator never emits; refusing to compile it")
    for gv in mod.global_variables:
        if gv.is_declaration:
            raise ValueError(f"the saved kernel library refers to the external variable {gv.name!r}, which "
                             "minitvm's code generator never emits; refusing to compile it")
    return mod


def _signatures(metadata: dict) -> dict[str, FunctionSignature]:
    """The kernels' signatures from saved metadata (ValueError if it is malformed)."""
    try:
        return {str(name): signature_from_json(d) for name, d in dict(metadata["signatures"]).items()}
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as err:
        raise ValueError(f"the kernel library's signatures are corrupted ({type(err).__name__}: {err})") from err


# -- the hooks ---------------------------------------------------------------------------------------


def export_llvm(lib: LLVMModule) -> dict:
    """``{"format", "payload", "metadata"}`` of an LLVM library, for an Executable file."""
    if not isinstance(lib, LLVMModule):
        raise TypeError(f"export_llvm: expected an LLVMModule, got {type(lib).__name__}")
    signatures, failures = {}, None
    for name in lib.function_names():
        compiled = lib.get_function(name)._fn
        signatures[name] = signature_to_json(compiled.signature)
        failures = compiled._failures  # one list shared by the module's functions
    target = lib.target
    return {"format": FORMAT, "payload": lib.get_source("ll"),
            "metadata": {"version": _METADATA_VERSION, "functions": lib.function_names(),
                         "signatures": signatures, "failures": [_failure_to_json(f) for f in failures or []],
                         "target": str(target), "mcpu": lib.built_for[0], "features": list(lib.built_for[1]),
                         "opt_level": target.opt_level, "native_entries": sorted(lib.native_entries)}}


def load_llvm_ir(payload: str, metadata: dict) -> LLVMModule:
    """JIT-compile saved, optimized LLVM IR again; functions get their saved signatures."""
    if not isinstance(metadata, dict):
        raise ValueError(f"the kernel library's metadata is corrupted: expected a JSON object, got {metadata!r:.60}")
    version = metadata.get("version", 0)
    if version != _METADATA_VERSION or "signatures" not in metadata:
        raise ValueError(f"the kernel library was saved without signatures or by another minitvm version "
                         f"(kernel metadata version {version!r}, this minitvm reads {_METADATA_VERSION}); "
                         "build the model again")
    features = metadata.get("features")
    if not isinstance(features, list) or not all(isinstance(f, str) for f in features):
        raise ValueError(f"the kernel library's CPU features are corrupted: {features!r}")
    init_llvm()  # the native target
    ensure_thread_pool()  # what parallel loops call
    sigs = _signatures(metadata)
    failures = _failures_from_json(metadata.get("failures", []))
    target = Target(str(metadata.get("target", "llvm")))  # its -mattr=-x entries are off again
    with LLVM_LOCK:
        mod = _parse_kernels(payload)
        switches = features_string(features, target.features_off_beyond(features))
        tm = target_machine(str(metadata.get("mcpu", "")), switches, int(metadata.get("opt_level", 3)))
        engine, entry = jit_compile(mod, tm, sigs)
    for name, (addr, _) in entry.items():
        if not addr:
            raise RuntimeError(f"loading kernels: no code for function {name!r} in the saved LLVM IR")
    # code for a CPU this one is not loads (to read or save again) but refuses to run
    lib = LLVMModule(payload, payload, engine, tm, target, entry, failures,
                     built_for=(str(metadata.get("mcpu", "")), features))
    entries = metadata.get("native_entries", [])
    if not isinstance(entries, list) or not all(isinstance(e, str) and e.startswith(ENTRY_PREFIX) for e in entries):
        raise ValueError(f"the kernel library's native entries are corrupted: {entries!r:.80}")
    lib.add_native_entries(entries)
    return lib


def _failure_to_json(failure: str | BoundsCheck | PackedCallFailure) -> str | dict:
    if isinstance(failure, PackedCallFailure):
        return {"packed_call": failure.name}
    return {"bounds_check": failure.to_json()} if isinstance(failure, BoundsCheck) else failure


def _failure_from_json(saved: Any) -> str | BoundsCheck | PackedCallFailure:
    if isinstance(saved, str):
        return saved
    if "packed_call" in saved:
        if not isinstance(saved["packed_call"], str):
            raise TypeError("a packed call named by a non-string")
        return PackedCallFailure(saved["packed_call"])
    return BoundsCheck.from_json(saved["bounds_check"])


def _failures_from_json(saved: Any) -> list[str | BoundsCheck | PackedCallFailure]:
    """What the kernels' failure codes mean: assert messages (strings) and bounds checks."""
    try:
        if not isinstance(saved, list):
            raise TypeError(f"a {type(saved).__name__}")
        return [_failure_from_json(f) for f in saved]
    except (TypeError, KeyError, ValueError) as err:
        raise ValueError("the kernel library's failure table is corrupted: expected strings and "
                         f"bounds-check records ({err})") from None


register_func("runtime.module.export_llvm", export_llvm, override=True)
register_func(f"runtime.module.loadfrom_{FORMAT}", load_llvm_ir, override=True)
