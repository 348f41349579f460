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
is refused with a message naming them, rather than crashing on an illegal instruction.

Importing this module registers both hooks (``relax.build`` and ``minitvm.relax`` import it).
"""

from __future__ import annotations

from typing import Any

import llvmlite.binding as llvm

from ...runtime.registry import register_func
from ...tir import expr as _e
from ..signature import FunctionSignature, ParamSpec
from ..target import Target, host_cpu_features
from . import llvm as _llvm

__all__ = ["export_llvm", "load_llvm_ir", "signature_to_json", "signature_from_json", "FORMAT"]

#: the kernel format name in an Executable file (the loader is ``runtime.module.loadfrom_<FORMAT>``)
FORMAT = "llvm_ir"
_METADATA_VERSION = 1
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
    params = [ParamSpec(str(p["name"]), variables[int(p["var"])], str(p["dtype"]), bool(p["is_buffer"]),
                        tuple(_expr_from_json(s, variables) for s in p["shape"]), bool(p["written"]))
              for p in d["params"]]
    return FunctionSignature(str(d["name"]), params, [variables[int(i)] for i in d["shape_vars"]])


# -- the hooks ---------------------------------------------------------------------------------------


def export_llvm(lib: _llvm.LLVMModule) -> dict:
    """``{"format", "payload", "metadata"}`` of an LLVM library, for an Executable file."""
    if not isinstance(lib, _llvm.LLVMModule):
        raise TypeError(f"export_llvm: expected an LLVMModule, got {type(lib).__name__}")
    signatures, messages = {}, None
    for name in lib.function_names():
        compiled = lib.get_function(name)._fn
        signatures[name] = signature_to_json(compiled.signature)
        messages = compiled._messages  # one list shared by the module's functions
    target = lib.target
    return {"format": FORMAT, "payload": lib.get_source("ll"),
            "metadata": {"version": _METADATA_VERSION, "functions": lib.function_names(),
                         "signatures": signatures, "assert_messages": list(messages or []),
                         "target": str(target), "mcpu": target.mcpu, "features": list(target.features),
                         "opt_level": target.opt_level}}


def load_llvm_ir(payload: str, metadata: dict) -> _llvm.LLVMModule:
    """JIT-compile saved, optimized LLVM IR again; functions get their saved signatures."""
    if int(metadata.get("version", 0)) != _METADATA_VERSION or "signatures" not in metadata:
        raise ValueError("the kernel library was saved without signatures (or by another minitvm version); "
                         "build the model again")
    missing = sorted(set(metadata["features"]) - set(host_cpu_features()))
    if missing:
        raise RuntimeError(f"the kernels were compiled for a CPU ({metadata['mcpu']}) with features this "
                           f"machine lacks: {', '.join(missing[:8])}{' ...' if len(missing) > 8 else ''}; "
                           "build the model again here")
    _llvm._init_llvm()  # the native target, and libgomp for parallel loops
    tm = _llvm._target_machine(str(metadata["mcpu"]), ",".join(f"+{f}" for f in metadata["features"]),
                               int(metadata["opt_level"]))
    sigs = {name: signature_from_json(d) for name, d in metadata["signatures"].items()}
    with _llvm._lock:
        mod = llvm.parse_assembly(payload)
        mod.verify()
        engine = llvm.create_mcjit_compiler(mod, tm)
        engine.finalize_object()
        entry = {name: (engine.get_function_address(name), sig) for name, sig in sigs.items()}
    for name, (addr, _) in entry.items():
        if not addr:
            raise RuntimeError(f"loading kernels: no code for function {name!r} in the saved LLVM IR")
    return _llvm.LLVMModule(payload, payload, engine, tm, Target(str(metadata["target"])), entry,
                            list(metadata.get("assert_messages", [])))


register_func("runtime.module.export_llvm", export_llvm, override=True)
register_func(f"runtime.module.loadfrom_{FORMAT}", load_llvm_ir, override=True)
