"""AnnotateTIROpPattern: tell fusion what kind of computation each PrimFunc is.

Every PrimFunc of the module gets ``attrs["op_pattern"]``, TVM's ``OpPatternKind`` as an
int (:class:`~minitvm.relax.op.registry.OpPattern`): 0 elementwise, 1 broadcast,
2 injective, 3 comm_reduce, 4 out_ewise_fusable, 8 opaque.  ``FuseOps`` reads it.

The analysis is TVM's: the blocks are visited in order (the root block aside), the pattern
starting at elementwise and only growing, each block judged by its one ``BufferStore``:

* no store, or two stores with different indices -> **opaque**;
* each load against the store: the same index objects -> elementwise; every load index
  found among the store's, in order (a load dimension of extent 1 read at 0 skipped) ->
  broadcast; the load's variables all among the store's (plain-variable) indices ->
  injective.  Elementwise and broadcast loads together count as **elementwise**
  (``C[i, j] = A[i, j] + B[j]``);
* when every load fits one of those: a block writing a function parameter after a
  reduction block makes the function **out_ewise_fusable** (softmax, a reduction plus a
  cast); otherwise the block's pattern joins the function's;
* otherwise, a block with reduction iter vars: a multiply-add update
  (``C[i, j] = C[i, j] + A[i, k] * B[k, j]``, casts aside, both operands reusable across
  the store's indices) or a load whose reduction index is an expression (pooling) ->
  **out_ewise_fusable**; else **comm_reduce**; a block without reduction -> **opaque**.

A PrimFunc that already has ``op_pattern`` keeps it.

    mod = relax.transform.AnnotateTIROpPattern()(mod)
    mod["matmul"].attrs["op_pattern"]   # 4
"""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...tir.expr import Add, BufferLoad, Cast, IntImm, IterVar, Mul, Var
from ...tir.function import PrimFunc
from ...tir.functor import StmtExprVisitor, post_order_visit
from ...tir.stmt import Block, BufferStore
from ...transform import PassContext, module_pass
from ..op.registry import OpPattern

__all__ = ["AnnotateTIROpPattern", "analyze_op_pattern"]


def _same_array(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _is_broadcast(store: BufferStore, load: BufferLoad) -> bool:
    j, n = 0, len(store.indices)
    for dim, index in zip(load.buffer.shape, load.indices):
        if isinstance(dim, IntImm) and dim.value == 1 and isinstance(index, IntImm) and index.value == 0:
            continue  # a unit dimension read at 0
        while j < n and store.indices[j] is not index:
            j += 1
        if j == n:
            return False
    return True


def _vars_of(expr: Any) -> list[Var]:
    found: list[Var] = []
    post_order_visit(expr, lambda n: found.append(n) if isinstance(n, Var) else None)
    return found


def _store_vars(store: BufferStore) -> set[int] | None:
    """The store's index variables, or None when an index is not a plain variable."""
    if not all(isinstance(i, Var) for i in store.indices):
        return None
    return {id(i) for i in store.indices}


def _is_injective(store: BufferStore, load: BufferLoad) -> bool:
    known = _store_vars(store)
    return known is not None and all(id(v) in known for i in load.indices for v in _vars_of(i))


def _allows_reuse(store: BufferStore, load: BufferLoad) -> bool:
    """Some store index variable is missing from the load (``B[i, k]`` for ``A[i, j]``)."""
    known = _store_vars(store)
    if known is None:
        return False
    for index in load.indices:
        for v in _vars_of(index):
            known.discard(id(v))
    return bool(known)


def _no_cast(e: Any) -> Any:
    while isinstance(e, Cast):
        e = e.value
    return e


def _is_fma(body: Any) -> bool:
    """``C[i, j] = C[i, j] + A[...] * B[...]`` (casts aside), as TVM's IsFMA."""
    if not isinstance(body, BufferStore):
        return False
    add = _no_cast(body.value)
    if not isinstance(add, Add):
        return False
    mul, acc = _no_cast(add.b), _no_cast(add.a)
    if not isinstance(mul, Mul) or not isinstance(acc, BufferLoad) or acc.buffer is not body.buffer \
            or not _same_array(acc.indices, body.indices):
        return False
    lhs, rhs = _no_cast(mul.a), _no_cast(mul.b)
    return isinstance(lhs, BufferLoad) and isinstance(rhs, BufferLoad) and \
        _allows_reuse(body, lhs) and _allows_reuse(body, rhs)


def _is_pure_reduce(reduce_vars: list[Var], indices: tuple) -> bool:
    for index in indices:
        used = [v for v in _vars_of(index) if any(v is r for r in reduce_vars)]
        if used and index is not used[0]:
            return False
    return True


class _PatternAnalyzer(StmtExprVisitor):
    def __init__(self, func: PrimFunc) -> None:
        self.params = {id(b) for b in func.buffer_map.values()}
        self.kind = OpPattern.ELEMWISE
        self.store: BufferStore | None = None
        self.loads: list[BufferLoad] = []

    def visit_buffer_store_(self, op: BufferStore) -> None:
        if self.store is not None and not _same_array(op.indices, self.store.indices):
            self.kind = OpPattern.OPAQUE
            return
        self.store = op
        self.visit_children(op)

    def visit_buffer_load_(self, op: BufferLoad) -> None:
        self.loads.append(op)
        self.visit_children(op)

    def visit_block_(self, op: Block) -> None:
        if op.name_hint == "root":
            self.visit(op.body)
            return
        self.loads, self.store = [], None
        self.visit(op.body)
        if self.store is None:
            self.kind = OpPattern.OPAQUE
            return
        store = self.store
        pattern, elementwise = OpPattern.ELEMWISE, False
        for load in self.loads:
            if _same_array(store.indices, load.indices):
                elementwise = True
            elif _is_broadcast(store, load):
                pattern = max(pattern, OpPattern.BROADCAST)
            elif _is_injective(store, load):
                pattern = max(pattern, OpPattern.INJECTIVE)
            else:
                pattern = OpPattern.OPAQUE
                break
        if pattern == OpPattern.BROADCAST and elementwise:
            pattern = OpPattern.ELEMWISE
        if pattern != OpPattern.OPAQUE:
            writes_param = any(id(w.buffer) in self.params for w in op.writes)
            if writes_param and self.kind == OpPattern.COMM_REDUCE:
                self.kind = OpPattern.OUT_ELEMWISE_FUSABLE  # a reduction, then its epilogue
            else:
                self.kind = max(self.kind, pattern)
            return
        reduce_vars = [iv.var for iv in op.iter_vars if iv.iter_type == IterVar.CommReduce]
        if not reduce_vars:
            self.kind = OpPattern.OPAQUE
        elif _is_fma(op.body) or not all(_is_pure_reduce(reduce_vars, load.indices) for load in self.loads):
            self.kind = max(self.kind, OpPattern.OUT_ELEMWISE_FUSABLE)
        else:
            self.kind = max(self.kind, OpPattern.COMM_REDUCE)


def analyze_op_pattern(func: PrimFunc) -> OpPattern:
    """The :class:`OpPattern` of one PrimFunc (see the module docstring for the rules)."""
    analyzer = _PatternAnalyzer(func)
    analyzer.visit(func.body)
    return OpPattern(analyzer.kind)


@module_pass(opt_level=0, name="AnnotateTIROpPattern")
class AnnotateTIROpPattern:
    """Set ``attrs["op_pattern"]`` on every PrimFunc: ``AnnotateTIROpPattern()(mod)``."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        changed = {}
        for gv, func in mod.functions.items():
            if isinstance(func, PrimFunc) and "op_pattern" not in func.attrs:
                changed[gv] = func.with_attr("op_pattern", int(analyze_op_pattern(func)))
        if not changed:
            return mod
        return IRModule({gv: changed.get(gv, f) for gv, f in mod.functions.items()}, mod.attrs, mod.global_infos)
