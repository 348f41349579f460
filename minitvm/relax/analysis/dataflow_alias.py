"""Liveness and aliasing of a dataflow block's variables: the analyses TVM's
``DataflowUseInplaceCalls`` decides on (exposed, as TVM exposes them, through
``relax.testing.transform.dataflow_liveness_analysis`` / ``dataflow_alias_analysis``).

Liveness: each variable's live range ``(first, last)`` in binding indices -- -1 when defined
before the block; a variable that is no DataflowVar lives to the end of the block (``len``),
being read after it; a TupleGetItem reads nothing (as TVM counts it).

Aliasing: each variable's set of memory indices, a fresh index per new value (parameters,
constants, operator results; -1 for a value from outside the block), ``tuple_map`` the sets of
each tuple's fields.  A binding ``y = x``, a view operator (reshape, squeeze ...) and a tuple
field read share indices; a call minitvm cannot see into (a Relax function, call_pure_packed)
may alias any argument and any part of them, and its result's fields may alias all of those.
"""

from __future__ import annotations

from typing import Any

from ...ir.op import Op
from ..expr import Call, Constant, DataflowBlock, DataflowVar, Function, Tuple, TupleGetItem, Var, struct_info_of
from ..struct_info import TupleStructInfo
from .vars import all_vars, free_vars

__all__ = ["dataflow_liveness_analysis", "dataflow_alias_analysis"]

_VIEW_OPS = {"relax.expand_dims", "relax.squeeze", "relax.reshape", "relax.permute_dims", "relax.flatten",
             "relax.nn.batch_flatten", "relax.memory.view", "relax.memory.ensure_zero_offset"}


def dataflow_liveness_analysis(block: DataflowBlock) -> dict[Var, tuple[int, int]]:
    """Each variable the block defines or reads, mapped to its live range (see the module)."""
    n = len(block.bindings)
    ranges: dict[Var, tuple[int, int]] = {}
    for i in range(n - 1, -1, -1):
        b = block.bindings[i]
        value = b.value
        used = free_vars(value) if isinstance(value, Function) else \
            [] if isinstance(value, TupleGetItem) else all_vars(value)
        for var in used:
            if var not in ranges:
                ranges[var] = (-1, i if isinstance(var, DataflowVar) else n)
        if b.var in ranges:
            ranges[b.var] = (i, ranges[b.var][1])
        else:
            ranges[b.var] = (i, i) if isinstance(b.var, DataflowVar) else (i, n)
    return ranges


class _AliasAnalyzer:
    def __init__(self) -> None:
        self.alias: dict[Var, set[int]] = {}
        self.tuples: dict[int, list[set[int]]] = {}
        self.next = 0

    def fresh(self) -> int:
        self.next += 1
        return self.next - 1

    def fresh_tuple(self, idx: int, sinfo: TupleStructInfo) -> None:
        fields = []
        for field in sinfo.fields:
            k = self.fresh()
            fields.append({k})
            if isinstance(field, TupleStructInfo):
                self.fresh_tuple(k, field)
        self.tuples[idx] = fields

    def add_captured(self, into: set[int], idx: int) -> None:
        into.add(idx)
        for comp in self.tuples.get(idx, ()):
            for k in list(comp):
                self.add_captured(into, k)

    def widen_tuple(self, idx: int, members: set[int]) -> None:
        for i, comp in enumerate(self.tuples.get(idx, ())):
            for k in list(comp):
                if k in self.tuples and k != idx:
                    self.widen_tuple(k, members)
            self.tuples[idx][i] = comp | members

    def mystery_call(self, call: Call, bound: Var, skip_first: bool = False) -> set[int]:
        out: set[int] = set()
        res = self.fresh()
        sinfo = struct_info_of(bound)
        if isinstance(sinfo, TupleStructInfo):
            self.fresh_tuple(res, sinfo)
        self.add_captured(out, res)
        for arg in call.args[1 if skip_first else 0:]:
            for k in self.alias_set(arg, bound):
                self.add_captured(out, k)
        self.widen_tuple(res, out)
        return out

    def alias_set(self, value: Any, bound: Var) -> set[int]:  # noqa: C901 - one case per expression kind
        if isinstance(value, (Constant, Function)):
            return {self.fresh()}
        if isinstance(value, Var):
            return set(self.alias[value]) if value in self.alias else {-1}
        if isinstance(value, Tuple):
            idx = self.fresh()
            self.tuples[idx] = [self.alias_set(f, bound) for f in value.fields]
            return {idx}
        if isinstance(value, TupleGetItem):
            tup = self.alias_set(value.tuple_value, bound)
            if -1 in tup:
                return {-1}
            out: set[int] = set()
            for k in tup:
                if k in self.tuples and len(self.tuples[k]) > value.index:
                    out |= self.tuples[k][value.index]
            return out
        if isinstance(value, Call):
            if not isinstance(value.op, Op):
                return self.mystery_call(value, bound)
            name = value.op.name
            if name == "relax.call_pure_packed":
                return self.mystery_call(value, bound, skip_first=True)
            if name == "relax.call_tir":
                return self.fresh_value(value.sinfo_args[0] if value.sinfo_args else None)
            if name in _VIEW_OPS and value.args:
                return self.alias_set(value.args[0], bound)
            return self.fresh_value(struct_info_of(bound))
        return {self.fresh()}  # a PrimValue, a shape: a new value

    def fresh_value(self, sinfo: Any) -> set[int]:
        idx = self.fresh()
        if isinstance(sinfo, TupleStructInfo):
            self.fresh_tuple(idx, sinfo)
        return {idx}


def dataflow_alias_analysis(block: DataflowBlock, inputs: list[Var]) -> tuple[dict[Var, set[int]],
                                                                              dict[int, list[set[int]]]]:
    """``(alias sets of each variable, fields of each tuple index)`` for ``block`` whose
    function takes ``inputs`` (see the module)."""
    analyzer = _AliasAnalyzer()
    for var in inputs:
        analyzer.alias[var] = analyzer.fresh_value(struct_info_of(var))
    for b in block.bindings:
        analyzer.alias[b.var] = analyzer.alias_set(b.value, b.var)
    return analyzer.alias, analyzer.tuples
