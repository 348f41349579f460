"""``te.create_prim_func``: tensor expressions to the TensorIR a learner would write.

Every compute op becomes one loop nest (spatial loops, then reduce loops) around one
block named after the op, with block iterators ``v_<axis>`` bound to the loops, a
``T.init()`` for reductions, and the reads/writes TVMScript would infer.  Tensors in the
argument list become parameters; the other computed tensors become ``T.alloc_buffer``s
of the root block.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..ir import dtype as _dt
from ..ir.deep import deep_on_overflow
from ..tir import analysis
from ..tir import op as _op
from ..tir.buffer import Buffer, decl_buffer
from ..tir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    Call,
    Div,
    FloorDiv,
    FloorMod,
    IntImm,
    IterVar,
    Max,
    Min,
    Mod,
    Mul,
    PrimExpr,
    Range,
    Select,
    Sub,
    Var,
    const,
)
from ..tir.function import PrimFunc
from ..tir.functor import StmtExprMutator
from ..tir.stmt import Block, BlockRealize, BufferStore, For, IfThenElse, LetStmt, Stmt, seq
from .reduction import Reduce
from .tensor import ComputeOp, Operation, PlaceholderOp, ProducerLoad, Tensor

__all__ = ["create_prim_func"]


@deep_on_overflow  # pure: a deep body is walked again on a deep thread
def create_prim_func(ops: Sequence[Tensor | Var], index_dtype_override: str | None = None) -> PrimFunc:
    """A PrimFunc computing the tensors of ``ops``; the list is the parameter order.

    ``ops`` holds the input placeholders and the outputs (and scalar ``te.var``s, which
    become scalar parameters).  Computed tensors that are not listed become
    intermediate buffers allocated in the root block.  ``index_dtype_override``
    (``"int64"`` as Relax uses) gives shapes, loops, block iterators and indices that
    integer dtype instead of the one the shapes were written in.
    """
    if index_dtype_override is not None and not _dt.is_int(index_dtype_override):
        raise ValueError(f"create_prim_func: index_dtype_override must be an integer dtype, "
                         f"got {index_dtype_override!r}")
    args = list(ops)
    if not args:
        raise ValueError("create_prim_func needs a list of tensors (inputs and outputs)")
    for a in args:
        if not isinstance(a, (Tensor, Var)):
            raise TypeError(f"create_prim_func: expected te tensors (or scalar vars), got {a!r}")
    tensors = [a for a in args if isinstance(a, Tensor)]
    if len(set(tensors)) != len(tensors):
        raise ValueError("create_prim_func: a tensor appears twice in the argument list")

    order = _post_order_ops(tensors)
    # one unique name per operation, in topological order: its block and buffers share it
    names = _NameTable()
    op_names = {id(op): names.unique(op.name) for op in order}

    def new_buffer(t: Tensor) -> Buffer:
        name = op_names[id(t.op)]
        if t.op.num_outputs > 1:
            name = f"{name}_v{t.value_index}"
        return decl_buffer(_index_all(t.shape, index_dtype_override), t.dtype, name)

    buffers: dict[Tensor, Buffer] = {}
    params: list[Var] = []
    buffer_map: dict[Var, Buffer] = {}
    for a in args:
        if isinstance(a, Var):
            params.append(a)
            continue
        buf = new_buffer(a)
        param = Var(buf.name, "handle")
        params.append(param)
        buffer_map[param] = buf
        buffers[a] = buf

    alloc: list[Buffer] = []
    nests: list[Stmt] = []
    for op in order:
        if isinstance(op, PlaceholderOp):
            if op.output(0) not in buffers:
                users = [o.name for o in order if isinstance(o, ComputeOp)
                         and op.output(0) in o.input_tensors]
                raise ValueError(
                    f"create_prim_func: placeholder {op.name} is read by {', '.join(users)} "
                    "but is not in the argument list; add it to the list")
            continue
        if not isinstance(op, ComputeOp):
            raise TypeError(f"create_prim_func: unsupported operation {op!r}")
        outs = []
        for i in range(op.num_outputs):
            t = op.output(i)
            if t not in buffers:
                buffers[t] = new_buffer(t)
                alloc.append(buffers[t])
            outs.append(buffers[t])
        nests.append(_lower_compute(op, op_names[id(op)], outs, buffers, index_dtype_override))

    root = Block("root", iter_vars=(), alloc_buffers=tuple(alloc), reads=(), writes=(),
                 body=seq(*nests))
    body = BlockRealize((), IntImm("bool", 1), root)
    return PrimFunc(tuple(params), buffer_map, body,
                    attrs={"global_symbol": "main", "tir.noalias": True})


def _post_order_ops(tensors: list[Tensor]) -> list[Operation]:
    """Operations feeding ``tensors``, producers before consumers, first-visit order."""
    order: list[Operation] = []
    seen: set[int] = set()
    # iterative DFS so deep chains do not hit the recursion limit
    for root in tensors:
        stack: list[tuple[Operation, bool]] = [(root.op, False)]
        while stack:
            op, expanded = stack.pop()
            if expanded:
                order.append(op)
                continue
            if id(op) in seen:
                continue
            seen.add(id(op))
            stack.append((op, True))
            for t in reversed(op.input_tensors):
                if id(t.op) not in seen:
                    stack.append((t.op, False))
    return order


class _NameTable:
    """Unique names in one function: ``compute``, ``compute_1``, ``compute_2`` ..."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def unique(self, name: str) -> str:
        candidate, n = name, 0
        while candidate in self.used:
            n += 1
            candidate = f"{name}_{n}"
        self.used.add(candidate)
        return candidate


def _index_all(values: Sequence[PrimExpr], dtype: str | None) -> tuple[PrimExpr, ...]:
    """``values`` in the index dtype ``dtype`` (unchanged when None)."""
    return tuple(values) if dtype is None else tuple(_op.cast(v, dtype) for v in values)


# rebuilding these through the op helpers promotes mixed index dtypes (int32 constants
# next to int64 iterators) the way a hand-written expression would be
_REBUILD = {Add: _op.add, Sub: _op.sub, Mul: _op.mul, Div: _op.div, Mod: _op.truncmod,
            FloorDiv: _op.floordiv, FloorMod: _op.floormod, Min: _op.min, Max: _op.max,
            EQ: _op.equal, NE: _op.not_equal, LT: _op.less, LE: _op.less_equal, GT: _op.greater,
            GE: _op.greater_equal}


class _ToBuffers(StmtExprMutator):
    """Producer loads become buffer loads; axis variables become block iterators."""

    def __init__(self, buffers: dict[Tensor, Buffer], vmap: dict[int, PrimExpr], index_dtype: str | None):
        self.buffers, self.vmap, self.index_dtype = buffers, vmap, index_dtype

    def visit(self, n: Any) -> Any:
        if isinstance(n, Var):
            return self.vmap.get(id(n), n)
        new = super().visit(n)
        if self.index_dtype is not None and new is not n:
            new = self._promote(new)
        return new

    def _promote(self, n: Any) -> Any:
        if type(n) in _REBUILD and n.a.dtype != n.b.dtype:
            return _REBUILD[type(n)](n.a, n.b)
        if isinstance(n, Select) and n.true_value.dtype != n.false_value.dtype:
            wide = max(n.true_value.dtype, n.false_value.dtype, key=_dt.bits)
            return Select(n.condition, _op.cast(n.true_value, wide), _op.cast(n.false_value, wide))
        if isinstance(n, Call) and n.op == "tir.if_then_else":
            return _op.if_then_else(*n.args)
        return n

    def visit_producer_load_(self, n: ProducerLoad) -> PrimExpr:
        indices = tuple(self.visit(i) for i in n.indices)
        return self.buffers[n.producer][_index_all(indices, self.index_dtype)]


def _lower_compute(op: ComputeOp, name: str, outs: list[Buffer], buffers: dict[Tensor, Buffer],
                   index_dtype: str | None) -> Stmt:
    """One loop nest around one block computing every output of ``op``."""
    axes = list(op.axis) + list(op.reduce_axis)
    doms = [Range(*_index_all((iv.dom.min, iv.dom.extent), index_dtype)) for iv in axes]
    loop_vars = [Var(iv.var.name, index_dtype or iv.var.dtype) for iv in axes]
    block_vars = [Var(f"v_{iv.var.name}", index_dtype or iv.var.dtype) for iv in axes]
    iter_vars = tuple(IterVar(dom, bv, iv.iter_type) for iv, dom, bv in zip(axes, doms, block_vars))
    to_buffers = _ToBuffers(buffers, {id(iv.var): bv for iv, bv in zip(axes, block_vars)}, index_dtype)
    indices = tuple(block_vars[: len(op.axis)])

    init: Stmt | None = None
    first = op.body[0]
    if isinstance(first, Reduce):
        accumulated = [buf[indices] for buf in outs]
        source = [_op.cast(to_buffers.visit(s), s.dtype) for s in first.source]
        identity = first.init or first.combiner.identity_element
        init = seq(*(BufferStore(buf, value, indices) for buf, value in zip(outs, identity)))
        updated = first.combiner(accumulated, source)
        if len(outs) == 1:
            body: Stmt = BufferStore(outs[0], updated[0], indices)
        else:
            # every component is computed from the old values before any is stored
            temps = [Var(f"v_{buf.name}", buf.dtype) for buf in outs]
            body = seq(*(BufferStore(buf, t, indices) for buf, t in zip(outs, temps)))
            for t, value in reversed(list(zip(temps, updated))):
                body = LetStmt(t, value, body)
        condition = to_buffers.visit(first.condition)
        if not (isinstance(condition, IntImm) and condition.value == 1):
            body = IfThenElse(condition, body)
    else:
        # (the cast only acts when index_dtype_override widened an index used as a value)
        body = seq(*(BufferStore(buf, _op.cast(to_buffers.visit(value), value.dtype), indices)
                     for buf, value in zip(outs, op.body)))

    block = Block(name, iter_vars=iter_vars, init=init, body=body)
    reads, writes = analysis.get_block_read_write_region(block)
    block = Block(name, iter_vars=iter_vars, reads=tuple(reads), writes=tuple(writes),
                  init=init, body=body, annotations=dict(op.attrs) if op.attrs else None)
    bindings: tuple = tuple(loop_vars)
    if not axes:
        # a 0-d element-wise compute gets one unit spatial block var bound to 0, as in TVM
        dtype = index_dtype or "int32"
        unit = IterVar(Range(const(0, dtype), const(1, dtype)), Var("vi", dtype), IterVar.DataPar)
        block = Block(name, iter_vars=(unit,), reads=block.reads, writes=block.writes, init=init,
                      body=body, annotations=block.annotations)
        bindings = (const(0, dtype),)
    stmt: Stmt = BlockRealize(bindings, const(True, "bool"), block)
    for dom, lv in reversed(list(zip(doms, loop_vars))):
        stmt = For(lv, dom.min, dom.extent, "serial", stmt)
    return stmt
