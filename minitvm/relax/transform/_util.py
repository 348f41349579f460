"""Shared by the Relax passes: apply a rewrite to every Relax function of a module."""

from __future__ import annotations

from typing import Any, Callable

from ...ir.module import GlobalVar, IRModule
from ...tir.function import PrimFunc
from ..expr import (
    Call,
    DataflowBlock,
    DataflowVar,
    Function,
    Tuple,
    TupleGetItem,
    Var,
    _set_struct_info,
    struct_info_of,
)
from ..expr_functor import ExprMutator
from ..struct_info import FuncStructInfo, TensorStructInfo, TupleStructInfo


def map_functions(mod: IRModule, rewrite: Callable[[Function, IRModule], Function]) -> IRModule:
    """A new module whose Relax functions are ``rewrite(func, mod)``; the same module
    object when nothing changed (other functions, PrimFuncs among them, are kept)."""
    changed = {}
    for gv, func in mod.items():
        if isinstance(func, Function):
            new = rewrite(func, mod)
            if new is not func:
                changed[gv] = new
    if not changed:
        return mod
    return IRModule({gv: changed.get(gv, f) for gv, f in mod.functions.items()}, mod.attrs, mod.global_infos)


def rewrite_with_builder(mod: IRModule, mutator: ExprMutator) -> tuple[IRModule, bool]:
    """Rewrite every Relax function of ``mod`` with ``mutator`` (built over ``mod``), whose
    BlockBuilder also collects the PrimFuncs it adds: (the builder's module, whether any
    function changed)."""
    changed = False
    for gv, func in list(mod.functions.items()):
        if isinstance(func, Function):
            new = mutator.visit_expr(func)
            if new is not func:
                mutator.builder_.update_func(gv, new)
                changed = True
    return mutator.builder_.get(), changed


class KernelCallMutator(ExprMutator):
    """An ExprMutator that can rebuild direct calls of PrimFuncs (``cls.kernel(x, out)``, as
    CallTIRRewrite leaves them): such a call keeps its struct info, since the BlockBuilder
    cannot infer one for a PrimFunc callee."""

    def __init__(self, mod: IRModule | None = None) -> None:
        super().__init__(mod)
        self.kernels = {gv for gv, f in (mod.functions.items() if mod is not None else ()) if isinstance(f, PrimFunc)}

    def visit_call_(self, op: Call) -> Any:
        new = ExprMutator.visit_call_(self, op)
        if new is not op and new.op in self.kernels and struct_info_of(new) is None:
            _set_struct_info(new, struct_info_of(op) or TupleStructInfo([]))
        return new

    def visit_children(self, op: Call) -> Any:
        """The call with its operands rewritten (normalized): call first in a visit_call_ override."""
        return self.builder_.normalize(KernelCallMutator.visit_call_(self, op))


class CopyWithNewVars(ExprMutator):
    """The function again, every variable it defines a new one (two functions of a module, or
    one function used twice, must not define the same variables)."""

    def visit_var_def_(self, var: Var) -> Var:
        new = (DataflowVar if isinstance(var, DataflowVar) else Var)(var.name_hint, var.struct_info)
        self.set_var_remap(var, new)
        return new

    visit_dataflow_var_def_ = visit_var_def_


#: rewrite_call(new_gv, call, mutator) -> the expression replacing a call of the old function
CallRewrite = Callable[[GlobalVar, Call, ExprMutator], Any]


class _CalleeCalls(ExprMutator):
    def __init__(self, updates: dict, after_change: Callable[[Function], Function] | None) -> None:
        super().__init__()
        self.updates, self.after_change = updates, after_change

    def visit_call_(self, op: Call) -> Any:
        new = super().visit_call_(op)
        entry = self.updates.get(new.op) if isinstance(new.op, GlobalVar) else None
        return new if entry is None else entry[1](entry[0], new, self)

    def visit_function_(self, op: Function) -> Any:
        new = super().visit_function_(op)
        return new if new is op or self.after_change is None else self.after_change(new)


def replace_callees(mod: IRModule, changes: dict[GlobalVar, tuple[Function, CallRewrite]],
                    after_change: Callable[[Function], Function] | None = None) -> IRModule:
    """``mod`` with each function of ``changes`` replaced by its new version under a new
    GlobalVar of the same name (carrying the new signature, as TVM's passes make one), and
    every call of the old one rewritten by its ``CallRewrite``; ``after_change`` tidies each
    caller that changed.  Used by the passes that change an internal function's signature."""
    if not changes:
        return mod
    funcs, updates = dict(mod.functions), {}
    for gv, (new, rewrite) in changes.items():
        new_gv = GlobalVar(gv.name_hint)
        _set_struct_info(new_gv, FuncStructInfo([p.struct_info for p in new.params], new.ret_struct_info,
                                                new.is_pure))
        del funcs[gv]
        funcs[new_gv] = new
        updates[gv] = (new_gv, rewrite)
    mutator = _CalleeCalls(updates, after_change)
    return IRModule({gv: mutator.visit_expr(f) if isinstance(f, Function) else f for gv, f in funcs.items()},
                    mod.attrs, mod.global_infos)


def unbound_item(tup: Any, index: int) -> TupleGetItem:
    """``tup[index]`` with its struct info and ``tup`` itself inside: neither rebuilt nor bound
    (a builder's normalize would bind a non-variable ``tup``), so passes can compare it by
    identity and drop it when nothing changes."""
    item = TupleGetItem(tup, index)
    _set_struct_info(item, tup.struct_info.fields[index])
    return item


def keeps_input_dtype(call: Call) -> bool:
    """Whether ``call``'s ``out_dtype`` leaves the result in its first input's dtype: unset
    (``"void"``) or that very dtype.  A model imported from torch names the dtype torch gives
    the result (``out_dtype="float32"`` on a float32 matmul), a hand-built op leaves it unset;
    rewrites that keep the dtype treat both alike."""
    out = call.attrs.get("out_dtype") if call.attrs else None
    if out in (None, "", "void"):
        return True
    sinfo = struct_info_of(call.args[0])
    return isinstance(sinfo, TensorStructInfo) and str(sinfo.dtype) == str(out)


def readers(func: Function) -> dict[Var, list[Any]]:
    """Each variable of ``func``'s blocks -> the values reading it (``None`` for the function's result)."""
    found: dict[Var, list[Any]] = {}

    def note(value: Any, arg: Any) -> None:
        if isinstance(arg, Var):
            found.setdefault(arg, []).append(value)
        elif isinstance(arg, Tuple):
            for field in arg.fields:
                note(value, field)

    body = func.body
    for block in getattr(body, "blocks", ()):
        for b in block.bindings:
            v = b.value
            for arg in (v.args if isinstance(v, Call) else v.fields if isinstance(v, Tuple) else
                        (v.tuple_value,) if isinstance(v, TupleGetItem) else (v,)):
                note(v, arg)
    note(None, getattr(body, "body", body))
    return found


class DataflowAwareMutator(ExprMutator):
    """An ExprMutator that knows whether it is inside a dataflow block (``self.in_dataflow``):
    graph rewrites that add bindings may only do so there."""

    def __init__(self) -> None:
        super().__init__()
        self.in_dataflow = False

    def visit_dataflow_block_(self, block: DataflowBlock) -> Any:
        self.in_dataflow = True
        try:
            return super().visit_dataflow_block_(block)
        finally:
            self.in_dataflow = False
