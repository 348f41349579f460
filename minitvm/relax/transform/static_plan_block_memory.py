"""StaticPlanBlockMemory: tensors whose lifetimes do not overlap share one storage.

Works on the output of :func:`CallTIRRewrite`.  Every ``R.builtin.alloc_tensor`` with a
static shape in a function's top-level bindings is a candidate; those that reach the
function's result (directly or through aliases, tuples, unknown calls) escape and keep
their own memory.  Walking the bindings in order, each candidate takes the best-fitting
free storage (or grows the largest free one, or gets a new one), and its storage is
free again after the last binding that uses the tensor or anything that may alias it::

    storage = R.memory.alloc_storage(R.shape([512]), R.prim_value(0), R.str("global"), R.dtype("uint8"))
    alloc = R.memory.alloc_tensor(storage, R.prim_value(0), R.shape([1, 128]), R.dtype("float32"))
    ...
    alloc2 = R.memory.alloc_tensor(storage, ...)   # storage reused

``memory_plan(func)`` returns the plan without rewriting (a readable summary via ``str``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...ir.module import GlobalVar, IRModule
from ...tir.expr import IntImm
from ...tir.function import PrimFunc
from ...transform import PassContext, module_pass
from ..analysis.vars import free_vars
from ..block_builder import BlockBuilder
from ..expr import BindingBlock, Call, DataflowBlock, Function, SeqExpr, ShapeExpr, Var, VarBinding
from ..struct_info import ObjectStructInfo
from ..vm.ops import ALLOC_TENSOR, alloc_storage, is_op, memory_alloc_tensor
from ._util import map_functions

__all__ = ["StaticPlanBlockMemory", "memory_plan", "MemoryPlan"]


@dataclass
class _Storage:
    index: int
    nbytes: int
    tensors: list[str] = field(default_factory=list)


@dataclass
class MemoryPlan:
    """Which storage each planned allocation uses (by the allocation's variable)."""

    function: str
    storages: list[_Storage]
    assignment: dict[Var, _Storage]
    escaping: list[str]

    @property
    def num_allocations(self) -> int:
        return len(self.assignment)

    @property
    def total_bytes(self) -> int:
        return sum(s.nbytes for s in self.storages)

    def __str__(self) -> str:
        lines = [f"memory plan of {self.function}: {self.num_allocations} tensors in "
                 f"{len(self.storages)} storages ({self.total_bytes} bytes)"]
        for s in self.storages:
            lines.append(f"  storage{s.index or ''} ({s.nbytes} bytes): {', '.join(s.tensors)}")
        if self.escaping:
            lines.append(f"  not planned (escape as results): {', '.join(self.escaping)}")
        return "\n".join(lines)


def _static_nbytes(call: Call) -> int | None:
    shape, dtype = call.args[0], call.args[1]
    if not isinstance(shape, ShapeExpr) or not all(isinstance(v, IntImm) for v in shape.values):
        return None
    return math.prod(v.value for v in shape.values) * np.dtype(dtype.value).itemsize


def _is_kernel_call(value: Any, mod: IRModule) -> bool:
    """A call of a PrimFunc: writes its outputs in place and returns nothing (no aliasing)."""
    return isinstance(value, Call) and isinstance(value.op, GlobalVar) and \
        value.op in mod.functions and isinstance(mod[value.op], PrimFunc)


def memory_plan(func: Function, mod: IRModule | None = None, name: str = "") -> MemoryPlan:
    """Plan the static allocations of ``func``'s top-level bindings (see the module docstring)."""
    mod = mod or IRModule()
    name = name or func.attrs.get("global_symbol", "function")
    body = func.body
    bindings = [b for block in body.blocks for b in block.bindings] if isinstance(body, SeqExpr) else []
    sizes: dict[Var, int] = {}
    # var -> the candidate allocations its value may be (itself, an alias, a tuple holding them ...)
    holds: dict[Var, frozenset] = {}
    last_use: dict[Var, int] = {}
    for i, b in enumerate(bindings):
        used = free_vars(b.value) if not isinstance(b.value, Var) else [b.value]
        tokens = frozenset().union(*(holds.get(v, frozenset()) for v in used))
        for t in tokens:
            last_use[t] = i
        if isinstance(b, VarBinding) and is_op(b.value, ALLOC_TENSOR):
            nbytes = _static_nbytes(b.value)
            if nbytes is not None:
                sizes[b.var] = nbytes
                holds[b.var] = frozenset([b.var])
                last_use[b.var] = i
                continue
        if not _is_kernel_call(b.value, mod):
            holds[b.var] = tokens  # the result may be (or contain) any tensor the value uses
    escaping = set()
    for v in free_vars(body.body) if isinstance(body, SeqExpr) else []:
        escaping |= holds.get(v, frozenset())
    storages: list[_Storage] = []
    free: list[_Storage] = []
    assignment: dict[Var, _Storage] = {}
    ends: dict[int, list[Var]] = {}
    for t, i in last_use.items():
        ends.setdefault(i, []).append(t)
    for i, b in enumerate(bindings):
        t = b.var
        if t in sizes and t not in escaping:
            need = sizes[t]
            fits = [s for s in free if s.nbytes >= need]
            if fits:
                s = min(fits, key=lambda s: s.nbytes)
            elif free:
                s = max(free, key=lambda s: s.nbytes)
                s.nbytes = need
            else:
                s = _Storage(len(storages), need)
                storages.append(s)
            if s in free:
                free.remove(s)
            s.tensors.append(t.name)
            assignment[t] = s
        for done in ends.get(i, []):
            if done in assignment and assignment[done] not in free:
                free.append(assignment[done])
    return MemoryPlan(name, storages, assignment, sorted(v.name for v in escaping))


def _rewrite(func: Function, mod: IRModule) -> Function:
    plan = memory_plan(func, mod)
    if not plan.assignment:
        return func
    bb = BlockBuilder(mod)
    storage_vars = []
    for s in plan.storages:
        var = Var(f"storage{s.index or ''}", ObjectStructInfo())
        storage_vars.append(VarBinding(var, bb.normalize(alloc_storage(s.nbytes))))
    by_storage = {id(s): b.var for s, b in zip(plan.storages, storage_vars)}
    blocks = [BindingBlock(tuple(storage_vars))]
    for block in func.body.blocks:
        new = []
        for b in block.bindings:
            s = plan.assignment.get(b.var) if isinstance(b, VarBinding) else None
            if s is None:
                new.append(b)
                continue
            shape, dtype = b.value.args[0], b.value.args[1]
            value = bb.normalize(memory_alloc_tensor(by_storage[id(s)], 0, shape, dtype.value))
            new.append(VarBinding(b.var, value))
        blocks.append(type(block)(tuple(new)) if isinstance(block, DataflowBlock) else BindingBlock(tuple(new)))
    return Function(func.params, SeqExpr(tuple(blocks), func.body.body), func.ret_struct_info, func.is_pure,
                    func.attrs)


@module_pass(opt_level=0, name="StaticPlanBlockMemory")
class StaticPlanBlockMemory:
    """Share storage between static-shape tensors with disjoint lifetimes: ``StaticPlanBlockMemory()(mod)``."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, _rewrite)
