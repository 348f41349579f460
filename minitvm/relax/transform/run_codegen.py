"""RunCodegen: compile the functions marked for an external backend and call the result.

Every Relax function with a ``"Codegen"`` attribute (made by ``FuseOpsByPattern(...,
annotate_codegen=True)`` or ``MergeCompositeFunctions``) goes to the code generator registered
as the global function ``"relax.ext.<codegen>"``, all of one backend's functions in one call::

    codegen(functions: list[Function], options: dict, constant_names: dict[Constant, str]) -> list[runtime.Module]

``options`` is ``target_options[<codegen>]``; ``constant_names`` names each constant the
functions hold (``<symbol>_<codegen>_const_<i>``).  The modules returned join the module
attribute ``"external_mods"``, which ``relax.build`` imports into the executable's library.  In
the entry functions -- those named in ``entry_functions`` and every public Relax function not
itself offloaded -- each call of an offloaded function becomes
``R.call_dps_packed("<its global_symbol>", args, out_sinfo)``, the symbol the external module
exports; the offloaded functions then leave the module (``DeadCodeElimination``), as in TVM.

    mod = relax.transform.RunCodegen()(mod)
    ex = relax.build(mod, "llvm")
"""

from __future__ import annotations

from typing import Any, Sequence

from ...ir.module import GlobalVar, IRModule
from ...runtime.module import Module
from ...runtime.ndarray import array
from ...runtime.registry import get_global_func, list_global_func_names
from ...transform import PassContext, module_pass
from ..expr import Call, Constant, ExternFunc, Function
from ..expr_functor import ExprMutator, ExprVisitor
from ..op.base import call_dps_packed
from ..struct_info import TupleStructInfo
from .attach_external_modules import EXTERNAL_MODS
from .dead_code_elimination import DeadCodeElimination

__all__ = ["RunCodegen"]


def _offloaded_functions(mod: IRModule) -> dict[str, list[Function]]:
    """Every function (local ones too) with a ``Codegen`` attribute, by backend, in module order."""
    found: dict[str, list[Function]] = {}

    class _Find(ExprVisitor):
        def visit_function_(self, op: Function) -> None:
            codegen = op.attrs.get("Codegen")
            if codegen:
                found.setdefault(str(codegen), []).append(op)
            super().visit_function_(op)

    for _, func in mod.functions.items():
        if isinstance(func, Function):
            _Find().visit_expr(func)
    return found


def _symbol(func: Function, where: str) -> str:
    symbol = func.attrs.get("global_symbol")
    if not symbol:
        raise ValueError(f"RunCodegen: the function {where} is marked for codegen {func.attrs.get('Codegen')!r} "
                         "but has no 'global_symbol' attribute to export its code under")
    return str(symbol)


class _Constants(ExprVisitor):
    def __init__(self) -> None:
        self.found: list[Constant] = []

    def visit_constant_(self, op: Constant) -> None:
        self.found.append(op)


def _constant_names(functions: dict[str, list[Function]]) -> dict[Constant, str]:
    names: dict[Constant, str] = {}
    for codegen, funcs in functions.items():
        for func in funcs:
            constants = _Constants()
            constants.visit_expr(func.body)
            symbol = _symbol(func, repr(func))
            for i, c in enumerate(constants.found):
                names.setdefault(c, f"{symbol}_{codegen}_const_{i}")
    return names


class _CallExternal(ExprMutator):
    """Calls of offloaded functions -> ``R.call_dps_packed`` of their exported symbol."""

    def __init__(self, mod: IRModule) -> None:
        super().__init__(mod)
        self.mod = mod
        self.offloaded: set[GlobalVar] = set()

    def visit_call_(self, op: Call) -> Any:
        new = super().visit_call_(op)
        func = self.mod.functions.get(op.op) if isinstance(op.op, GlobalVar) else None
        if not (isinstance(func, Function) and func.attrs.get("Codegen")):
            return new
        self.offloaded.add(op.op)
        sinfo = op.struct_info
        out = list(sinfo.fields) if isinstance(sinfo, TupleStructInfo) else sinfo
        return call_dps_packed(ExternFunc(_symbol(func, op.op.name_hint)), list(new.args), out)


def _invoke(codegen: str, functions: list[Function], options: dict, constants: dict[Constant, str]) -> list[Module]:
    fn = get_global_func(f"relax.ext.{codegen}", allow_missing=True)
    if fn is None:
        known = [n for n in list_global_func_names() if n.startswith("relax.ext.")]
        names = ", ".join(_symbol(f, "?") for f in functions)
        raise ValueError(f"RunCodegen: no codegen registered for {codegen!r}: the global function "
                         f"'relax.ext.{codegen}' is missing (asked for by {names} through its 'Codegen' attribute; "
                         f"registered: {', '.join(known) or 'none'})")
    mods = fn(list(functions), dict(options), constants)
    mods = [mods] if isinstance(mods, Module) else list(mods or [])
    for m in mods:
        if not isinstance(m, Module):
            raise TypeError(f"RunCodegen: relax.ext.{codegen} returned {type(m).__name__}, not runtime Modules")
    return mods


@module_pass(opt_level=0, name="RunCodegen")
class RunCodegen:
    """Compile the offloaded functions with their registered codegens and call the modules made:
    ``RunCodegen(target_options=None, entry_functions=None)`` (see the module docstring)."""

    def __init__(self, target_options: dict | None = None, entry_functions: Sequence[str] | None = None) -> None:
        self.target_options = dict(target_options or {})
        self.entry_functions = [entry_functions] if isinstance(entry_functions, str) else list(entry_functions or [])

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        functions = _offloaded_functions(mod)
        for name in self.entry_functions:
            if name not in mod:
                raise ValueError(f"RunCodegen: entry function {name!r} is not in the module")
        entries = list(dict.fromkeys([*self.entry_functions, *sorted(
            (gv.name_hint for gv, f in mod.functions.items() if isinstance(f, Function)
             and f.attrs.get("global_symbol") and not f.attrs.get("Codegen")), reverse=True)]))
        constants = _constant_names(functions)
        ext_mods: list[Module] = []
        for codegen, funcs in functions.items():
            options = self.target_options.get(codegen, {})
            ext_mods += _invoke(codegen, funcs, options, constants)
        rewriter = _CallExternal(mod)
        funcs = dict(mod.functions)
        for name in entries:
            gv = mod.get_global_var(name)
            funcs[gv] = rewriter.visit_expr(mod[gv])
        for gv in rewriter.offloaded:  # no longer exported: DeadCodeElimination may drop them
            funcs[gv] = funcs[gv].without_attr("global_symbol").without_attr("Codegen")
        attrs = dict(mod.attrs)
        attrs[EXTERNAL_MODS] = [*attrs.get(EXTERNAL_MODS, ()), *ext_mods]
        if constants:
            # what backends that take constants at instantiation read (TVM's kConstNameToConstant)
            attrs["const_name_to_constant"] = {name: array(c.data.numpy()) for c, name in constants.items()}
        return DeadCodeElimination(self.entry_functions)(IRModule(funcs, attrs))
