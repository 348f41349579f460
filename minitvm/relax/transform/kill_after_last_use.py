"""KillAfterLastUse: release every allocated object right after the binding that last uses it.

::

    storage = R.memory.alloc_storage(R.shape([2048]), 0, "global", "uint8")
    y = R.memory.alloc_tensor(storage, 0, R.shape([16, 32]), "float32")
    _ = R.memory.kill_storage(storage)        # storage's last use was y's allocation
    _1 = cls.add(x, y, z)
    _ = R.memory.kill_tensor(y)               # y's last use was the kernel call

Per sequence of bindings (a function body, a branch of an ``If``), as TVM's pass: a variable
bound there (never a parameter) that is used later gets, after its last use,
``R.memory.kill_storage`` (a storage), ``R.memory.kill_tensor`` (a tensor) or
``R.vm.kill_object`` (any other object, a tuple say).  Nothing is killed that is returned or
used in the result, already killed, a constant, or not held in a VM register (shapes,
scalars, functions).  Trivial rebindings (``y = x``) go first, so a use through an alias counts
as a use of the original.  ``LowerRuntimeBuiltin`` turns the kills
into ``R.vm.kill_object``, for which the VM empties the register: a tensor's memory can then go
before the function returns (and, for storages the VM pools, be reused).
"""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...ir.op import Op
from ...ir.structural import structural_equal
from ...transform import PassContext, module_pass
from ..expr import (
    Binding,
    Call,
    Constant,
    DataflowVar,
    ExternFunc,
    Function,
    MatchCast,
    SeqExpr,
    Var,
    struct_info_of,
)
from ..expr_functor import ExprVisitor
from ..op.memory import ALLOC_STORAGE, KILL_STORAGE, KILL_TENSOR, kill_storage, kill_tensor
from ..op.vm import KILL_OBJECT, kill_object
from ..struct_info import FuncStructInfo, PrimStructInfo, ShapeStructInfo, TensorStructInfo
from ._util import KernelCallMutator, map_functions

__all__ = ["KillAfterLastUse"]

_KILLS = (KILL_STORAGE, KILL_TENSOR, KILL_OBJECT)


def _op_name(value: Any) -> str | None:
    if isinstance(value, Call) and isinstance(value.op, Op):
        return value.op.name
    if isinstance(value, Call) and isinstance(value.op, ExternFunc):
        return value.op.global_symbol
    return None


class _LastUses(ExprVisitor):
    """For one sequence of bindings: binding variable -> the kills to emit after it."""

    def __init__(self) -> None:
        self.current: Var | None = None  # the binding being visited; None in the result
        self.depth = 0  # > 0 inside a nested sequence (a branch), whose bindings are planned apart
        self.order: list[Var] = []
        self.last_use: dict[Var, Var | None] = {}
        self.storages: set[Var] = set()
        self.constants: set[Var] = set()
        self.killed: set[Var] = set()

    def visit_seq_expr_(self, op: SeqExpr) -> None:
        # a use inside a branch counts as a use by the binding holding the If
        self.depth += 1
        try:
            super().visit_seq_expr_(op)
        finally:
            self.depth -= 1

    def visit_binding(self, binding: Binding) -> None:
        if self.depth > 1:
            super().visit_binding(binding)
            return
        outer, self.current = self.current, binding.var
        self.order.append(binding.var)
        name = _op_name(binding.value)
        if name in _KILLS:
            self.killed.add(binding.value.args[0])  # a kill is no use
        else:
            if name in (ALLOC_STORAGE, "vm.builtin.alloc_storage"):
                self.storages.add(binding.var)
            elif isinstance(binding.value, Constant):
                self.constants.add(binding.var)
            super().visit_binding(binding)
        self.current = outer

    def visit_var_(self, op: Var) -> None:
        self.last_use[op] = self.current  # the later use overwrites: the last one stays

    visit_dataflow_var_ = visit_var_

    def kills(self) -> dict[Var, list[Call]]:
        out: dict[Var, list] = {}
        for var in self.order:
            if var not in self.last_use or var in self.killed or self.last_use[var] is None:
                continue  # unused, killed already, or part of the result
            sinfo = struct_info_of(var)
            in_register = var not in self.constants and not isinstance(
                sinfo, (FuncStructInfo, ShapeStructInfo, PrimStructInfo))
            if var in self.storages:
                kind = 1
            elif not in_register:
                continue
            else:
                kind = 0 if isinstance(sinfo, TensorStructInfo) else 2
            out.setdefault(self.last_use[var], [[], [], []])[kind].append(var)
        # tensors first, then storages, then other objects, each in binding order (as TVM)
        return {at: [kill_tensor(v) for v in groups[0]] + [kill_storage(v) for v in groups[1]]
                + [kill_object(v) for v in groups[2]] for at, groups in out.items()}


def _collect(seq: SeqExpr) -> dict[Var, list[Call]]:
    uses = _LastUses()
    uses.visit_expr(seq)
    return uses.kills()


class _KillInserter(KernelCallMutator):
    def __init__(self, mod: IRModule | None) -> None:
        super().__init__(mod)
        self.pending: dict[Var, list[Call]] = {}

    def visit_seq_expr_(self, op: SeqExpr) -> Any:
        # a branch's bindings are planned on their own; the outer plan resumes after it
        outer, self.pending = self.pending, _collect(op)
        try:
            return super().visit_seq_expr_(op)
        finally:
            self.pending = outer

    def visit_binding(self, binding: Binding) -> None:
        super().visit_binding(binding)
        for kill in self.pending.get(binding.var, ()):
            self.builder_.emit(kill, "_")


class _TrivialBindings(ExprVisitor):
    """``y = x`` and ``y = R.match_cast(x, s)`` with ``x`` already of struct info ``s``: y -> x
    (followed through chains).  The VM gives y the register of x, so a kill of either would
    empty the other: uses of y become uses of x, and only x is killed."""

    def __init__(self) -> None:
        self.alias: dict[Var, Var] = {}

    def visit_binding(self, binding: Binding) -> None:
        value = binding.value
        # a Var may not stand for a DataflowVar (it is read outside the dataflow block)
        leaves_block = isinstance(value, DataflowVar) and not isinstance(binding.var, DataflowVar)
        if isinstance(value, Var) and not leaves_block and (
                not isinstance(binding, MatchCast) or structural_equal(binding.struct_info, struct_info_of(value))):
            self.alias[binding.var] = self.alias.get(value, value)
        super().visit_binding(binding)


class _DropTrivialBindings(KernelCallMutator):
    def __init__(self, mod: IRModule | None, alias: dict[Var, Var]) -> None:
        super().__init__(mod)
        self.var_remap_.update(alias)

    def visit_binding(self, binding: Binding) -> None:
        if binding.var not in self.var_remap_:
            super().visit_binding(binding)


def _rewrite(func: Function, mod: IRModule) -> Function:
    # TVM runs CanonicalizeBindings here; its alias removal is the part that matters for the kills
    finder = _TrivialBindings()
    finder.visit_expr(func)
    if finder.alias:
        func = _DropTrivialBindings(mod, finder.alias).visit_expr(func)
    return _KillInserter(mod).visit_expr(func)


@module_pass(opt_level=0, name="KillAfterLastUse")
class KillAfterLastUse:
    """Kill storages, tensors and objects after their last use: ``KillAfterLastUse()(mod)``."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, _rewrite)
