"""AnnotateTIROpPattern: tell fusion what kind of computation each PrimFunc is.

Every PrimFunc of the module gets ``attrs["op_pattern"]``, TVM's ``OpPatternKind`` as an
int (:class:`~minitvm.relax.op.registry.OpPattern`): 0 elementwise, 1 broadcast,
2 injective, 3 comm_reduce, 4 out_ewise_fusable, 8 opaque.  ``FuseOps`` reads it.

The analysis looks at the blocks of the function (the root block aside), one at a time:

* a block whose body is not a single ``BufferStore`` (an ``if``, an extern call, several
  stores), or that reads the buffer it writes outside a reduction -> **opaque**;
* a block with reduction iter vars -> **comm_reduce**; if its update is
  ``out = out + a[...] * b[...]`` with ``a`` and ``b`` two different inputs (matmul,
  dense, conv2d) -> **out_ewise_fusable**, as TVM marks those;
* a spatial block whose store is indexed by plain iter vars compares each load with the
  store: the same index list -> **elementwise**; indices that are some of the store's
  variables, in the same order (``b0[v_i1]`` in ``T_add[v_i0, v_i1]``) -> **broadcast**;
  anything else (a transpose, a reshape, an index expression) -> **injective**.  A store
  indexed by anything but plain iter vars is injective too.

The function's pattern is the largest over its blocks, with one refinement: a reduction
followed only by elementwise/broadcast blocks (``linear = matmul + bias`` written as one
PrimFunc) is out_ewise_fusable.  A PrimFunc that already has ``op_pattern`` keeps it.

    mod = relax.transform.AnnotateTIROpPattern()(mod)
    mod["matmul"].attrs["op_pattern"]   # 4
"""

from __future__ import annotations

from ...ir.module import IRModule
from ...tir.expr import Add, BufferLoad, IterVar, Mul, Var
from ...tir.function import PrimFunc
from ...tir.functor import post_order_visit
from ...tir.stmt import Block, BlockRealize, BufferStore
from ...transform import PassContext, module_pass
from ..op.registry import OpPattern

__all__ = ["AnnotateTIROpPattern", "analyze_op_pattern"]


def _loads(expr) -> list[BufferLoad]:
    found: list[BufferLoad] = []
    post_order_visit(expr, lambda n: found.append(n) if isinstance(n, BufferLoad) else None)
    return found


def _same_var(a, b) -> bool:
    return isinstance(a, Var) and isinstance(b, Var) and a is b


def _is_ordered_subset(sub: tuple, full: tuple) -> bool:
    """Each index of ``sub`` is a plain variable of ``full``, in the same order."""
    pos = 0
    for v in sub:
        while pos < len(full) and not _same_var(v, full[pos]):
            pos += 1
        if pos == len(full):
            return False
        pos += 1
    return True


def _is_multiply_add(store: BufferStore) -> bool:
    """``out[i] = out[i] + a[...] * b[...]`` with ``a`` and ``b`` two other buffers."""
    value = store.value
    if not isinstance(value, Add):
        return False
    operands = (value.a, value.b)
    for acc, prod in (operands, operands[::-1]):
        if (isinstance(acc, BufferLoad) and acc.buffer is store.buffer and isinstance(prod, Mul)
                and isinstance(prod.a, BufferLoad) and isinstance(prod.b, BufferLoad)
                and prod.a.buffer is not prod.b.buffer
                and store.buffer not in (prod.a.buffer, prod.b.buffer)):
            return True
    return False


def _block_pattern(block: Block) -> OpPattern:
    store = block.body
    if not isinstance(store, BufferStore):
        return OpPattern.OPAQUE
    if any(iv.iter_type == IterVar.CommReduce for iv in block.iter_vars):
        return OpPattern.OUT_ELEMWISE_FUSABLE if _is_multiply_add(store) else OpPattern.COMM_REDUCE
    if any(iv.iter_type != IterVar.DataPar for iv in block.iter_vars):
        return OpPattern.OPAQUE
    loads = _loads(store.value)
    if any(load.buffer is store.buffer for load in loads):
        return OpPattern.OPAQUE  # reads what it writes, outside a reduction
    if not all(isinstance(i, Var) for i in store.indices):
        return OpPattern.INJECTIVE
    kind = OpPattern.ELEMWISE
    for load in loads:
        if len(load.indices) == len(store.indices) and all(map(_same_var, load.indices, store.indices)):
            continue
        if _is_ordered_subset(load.indices, store.indices):
            kind = max(kind, OpPattern.BROADCAST)
        else:
            kind = max(kind, OpPattern.INJECTIVE)
    return kind


def analyze_op_pattern(func: PrimFunc) -> OpPattern:
    """The :class:`OpPattern` of one PrimFunc (see the module docstring for the rules)."""
    blocks: list[Block] = []
    post_order_visit(func.body, lambda n: blocks.append(n) if isinstance(n, Block) else None)
    root = func.body.block if isinstance(func.body, BlockRealize) else None
    blocks = [b for b in blocks if b is not root]  # post order: producers before consumers
    if not blocks:
        return OpPattern.OPAQUE
    kinds = [_block_pattern(b) for b in blocks]
    first = kinds[0]
    if (len(kinds) > 1 and first in (OpPattern.COMM_REDUCE, OpPattern.OUT_ELEMWISE_FUSABLE)
            and all(k <= OpPattern.BROADCAST for k in kinds[1:])):
        return OpPattern.OUT_ELEMWISE_FUSABLE
    return max(kinds)


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
        return IRModule({gv: changed.get(gv, f) for gv, f in mod.functions.items()}, mod.attrs)
