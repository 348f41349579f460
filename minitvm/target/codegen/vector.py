"""Vectorized loops as SIMD code: one pass over the body with every value ``lanes`` wide.

A ``T.vectorized`` loop of constant extent ``L`` is emitted once, not ``L`` times: the
loop variable becomes the vector ``<begin, begin+1, ..., begin+L-1>``, values that do
not depend on it stay scalars (broadcast where they meet a vector), and memory accesses
whose index grows by exactly 1 per lane become single vector loads and stores.  This is
what TVM's VectorizeLoop pass does in TIR; doing it here keeps the accumulators of a
tiled matmul in vector registers, which LLVM's own loop vectorizer (running after its
register promotion) does not achieve.

Bodies this emitter cannot handle (inner loops, conditionals, divisions of the loop
variable ...) raise :class:`NotVectorizable`, and the caller emits an ordinary loop.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir

from ...arith import Analyzer
from ...ir.node import Node
from ...tir import expr as _e
from ...tir import stmt as _s
from ...tir.analysis import uses_var
from ...tir.buffer import Buffer
from ...tir.functor import hook_of, post_order_visit, substitute, walked_fields
from ...tir.semantics import BOOL_ONLY, BY_NODE, Semantics, emit_cast, node_operands, row_of
from ...tir.vector_unit import MAX_SHUFFLED_STRIDE
from .fastmath import call_intrinsic, integral_exponent, power_by_multiplying
from .llvm_types import llvm_type, mem_type

__all__ = ["NotVectorizable", "emit_vector_loop", "lane_chunks", "MAX_LANES"]

#: longest vectorized loop emitted as one vector (a few machine registers per value)
MAX_LANES = 64


class NotVectorizable(Exception):
    """The loop body uses something the vector emitter does not handle."""


def _stride(index: _e.PrimExpr, var: _e.Var) -> int | None:
    """How much ``index`` grows when ``var`` grows by one (None if not a constant)."""
    slope = _linear_slope(index, var)
    if slope is not _UNKNOWN:
        return slope

    diff = Analyzer().simplify(substitute(index, {var: var + 1}) - index)
    return diff.value if isinstance(diff, _e.IntImm) else None


_UNKNOWN = object()


def _linear_slope(e: _e.PrimExpr, var: _e.Var) -> Any:
    """The constant slope of ``e`` in ``var`` read off sums and products with constants
    (``i * 64 + j`` -> 1 for ``j``), None when it is provably not a constant, or ``_UNKNOWN``
    when the expression has other forms (the simplifier decides those)."""
    if e is var:
        return 1
    if isinstance(e, (_e.IntImm, _e.Var)):
        return 0
    if isinstance(e, (_e.Add, _e.Sub)):
        a, b = _linear_slope(e.a, var), _linear_slope(e.b, var)
        if a is _UNKNOWN or b is _UNKNOWN or a is None or b is None:
            return _UNKNOWN
        return a + b if isinstance(e, _e.Add) else a - b
    if isinstance(e, _e.Mul):
        for x, y in ((e.a, e.b), (e.b, e.a)):
            if isinstance(y, _e.IntImm):
                slope = _linear_slope(x, var)
                return slope * y.value if isinstance(slope, int) else _UNKNOWN
        return _UNKNOWN if uses_var(e, var) else 0
    return _UNKNOWN if uses_var(e, var) else 0


def _dependents(root: Any, var: _e.Var) -> set[int]:
    """The ids of the nodes under ``root`` whose value depends on ``var``: one walk, so that
    asking it of every sub-expression costs nothing (``uses_var`` per node was quadratic)."""
    memo: dict[int, bool] = {}

    def depends(x: Any) -> bool:
        if isinstance(x, (tuple, list)):
            found = False
            for e in x:
                found = depends(e) or found  # no short cut: every node gets its answer
            return found
        if not isinstance(x, Node) or isinstance(x, Buffer):
            return False
        known = memo.get(id(x))
        if known is not None:
            return known
        found = x is var
        for name in walked_fields(type(x)):
            value = getattr(x, name)
            if isinstance(value, (str, int, float)) or value is None:  # a dtype, a name, a number
                continue
            if isinstance(value, dict):
                value = tuple(value.values())
            found = depends(value) or found
        memo[id(x)] = found
        return found

    depends(root)
    return {k for k, v in memo.items() if v}


#: the all-zero shuffle mask of each lane count (a broadcast's; llvmlite builds a vector
#: constant lane by lane, and a kernel broadcasts thousands of times)
_LANE_ZEROS: dict[int, ir.Constant] = {}


def _lane_zeros(lanes: int) -> ir.Constant:
    mask = _LANE_ZEROS.get(lanes)
    if mask is None:
        mask = _LANE_ZEROS[lanes] = ir.Constant(ir.VectorType(ir.IntType(32), lanes), [0] * lanes)
    return mask


#: shuffle masks by their lanes (llvmlite builds a vector constant lane by lane)
_MASKS: dict[tuple[int, ...], ir.Constant] = {}


def _mask(lanes: Any) -> ir.Constant:
    key = tuple(lanes)
    mask = _MASKS.get(key)
    if mask is None:
        mask = _MASKS[key] = ir.Constant(ir.VectorType(ir.IntType(32), len(key)), list(key))
    return mask


#: the all-undef vector of each vector type (what a broadcast inserts into and a shuffle takes as
#: its unused operand): a new one per use formatted all its lanes (``<float undef, ...>``) every
#: time the builder looked for an equal instruction, ~40 us for 32 lanes, thousands per model
_UNDEF_VECTORS: dict[str, ir.Constant] = {}


def _undef(vt: ir.Type) -> ir.Constant:
    key = str(vt)  # (types cache their text)
    undef = _UNDEF_VECTORS.get(key)
    if undef is None:
        undef = _UNDEF_VECTORS[key] = ir.Constant(vt, ir.Undefined)
    return undef


class _VectorEmitter:
    def __init__(self, cg: Any, var: _e.Var, begin: ir.Value, lanes: int, dependents: set[int]):
        self.cg, self.var, self.begin, self.lanes = cg, var, begin, lanes
        self.dependents = dependents

    @property
    def b(self) -> ir.IRBuilder:
        return self.cg.b

    # -- helpers ------------------------------------------------------------------------
    def vec_type(self, dtype: str) -> ir.VectorType:
        return ir.VectorType(llvm_type(dtype), self.lanes)

    def broadcast(self, value: ir.Value, dtype: str) -> ir.Value:
        vt = self.vec_type(dtype)
        one = self.b.insert_element(_undef(vt), value, ir.Constant(ir.IntType(32), 0))
        return self.b.shuffle_vector(one, _undef(vt), _lane_zeros(self.lanes))

    def scalar_at(self, e: _e.PrimExpr, lane: int) -> ir.Value:
        """``e`` with the loop variable at lane ``lane`` (scalar code)."""
        cg = self.cg
        saved = cg.st.vars.get(id(self.var))
        cg.st.vars[id(self.var)] = self.b.add(self.begin, ir.Constant(self.begin.type, lane))
        try:
            return cg.visit_expr(e)
        finally:
            cg.st.vars[id(self.var)] = saved

    def operands(self, e: Any) -> tuple[ir.Value, ir.Value, str]:
        a, b = self.expr(e.a), self.expr(e.b)
        dtype = e.a.dtype
        if e.b.dtype != dtype:
            raise NotVectorizable("mixed operand dtypes")
        return self.as_vec(a, dtype), self.as_vec(b, dtype), dtype

    def as_vec(self, value: ir.Value, dtype: str) -> ir.Value:
        return value if isinstance(value.type, ir.VectorType) else self.broadcast(value, dtype)

    # -- expressions ----------------------------------------------------------------------
    def expr(self, e: _e.PrimExpr) -> ir.Value:
        """A vector if ``e`` depends on the loop variable, else the scalar value."""
        if id(e) not in self.dependents:
            return self.cg.visit_expr(e)
        method = hook_of(self, type(e))  # visit_<node>_, as the scalar emitter
        if method is not None:
            return method(e)
        row = BY_NODE.get(type(e))
        if row is None:
            raise NotVectorizable(type(e).__name__)
        operands = node_operands(e)
        return self._emit_row(row, e, operands, e.dtype if row.node is _e.Select else operands[0].dtype)

    def visit_var_(self, e: _e.Var) -> ir.Value:
        base = self.broadcast(self.begin, e.dtype)
        steps = ir.Constant(self.vec_type(e.dtype), list(range(self.lanes)))
        return self.b.add(base, steps)

    def _emit_row(self, row: Semantics, e: Any, operands: tuple, dtype: str) -> ir.Value:
        """An operation of the semantics table on vectors (the scalar emitter runs the same row)."""
        if row.node is _e.Select or row.kinds == BOOL_ONLY:
            values = [self.as_vec(self.expr(x), x.dtype) for x in operands]
        else:
            values = [self.as_vec(self.expr(x), dtype) for x in operands]
        return row.llvm(self, dtype, *values)

    def visit_cast_(self, e: _e.Cast) -> ir.Value:
        value = self.as_vec(self.expr(e.value), e.value.dtype)
        return emit_cast(self.b, value, e.value.dtype, e.dtype, self.vec_type(e.dtype), self.cg._declare)

    def visit_call_(self, e: _e.Call) -> ir.Value:
        if _is_if_then_else(e):
            return self._if_then_else(e)
        n = integral_exponent(e)
        if n is not None:
            return power_by_multiplying(self.b, self.as_vec(self.expr(e.args[0]), e.dtype), n)
        return self._emit_row(row_of(e), e, node_operands(e), e.dtype)

    def _if_then_else(self, e: _e.Call) -> ir.Value:
        """``if_then_else`` on a condition the same in every lane (``_why_not`` refuses the
        others): one branch, each arm vectors, only the taken arm evaluated -- the other may
        read out of bounds (a padding row past the input's last)."""
        cond, then_, else_ = e.args
        return self.cg.branch_and_join(self.cg._bool(cond), lambda: self.as_vec(self.expr(then_), e.dtype),
                                       lambda: self.as_vec(self.expr(else_), e.dtype), label="vite")

    # what the rows of the semantics table use (see minitvm.tir.semantics.LLVMContext)
    def intrinsic(self, name: str, args: list[ir.Value]) -> ir.Value:
        return call_intrinsic(self.b, self.cg._declare, name, args)

    def fast_f32(self, op: str, x: ir.Value) -> ir.Value | None:
        return self.cg.fast_f32(op, x)

    def target_intrinsic(self, name: str, feature: str, args: list[ir.Value]) -> ir.Value | None:
        return self.cg.target_intrinsic(name, feature, args)

    def libm(self, name: str, args: list[ir.Value], dtype: str) -> ir.Value:
        raise NotVectorizable(f"{name} is a C library call")

    def fail_if(self, bad: ir.Value, message: str) -> None:
        raise NotVectorizable(message)

    def _pointer(self, buffer: Any, index: _e.PrimExpr) -> ir.Value:
        """Address of lane 0's element."""
        ptr = self.cg.st.buffers.get(id(buffer.data))
        if ptr is None:
            raise NotVectorizable("unknown buffer")
        first = self.scalar_at(index, 0)
        first = self.cg._cast(first, index.dtype, "int64") if index.dtype != "int64" else first
        return self.b.gep(ptr, [first], inbounds=True, source_etype=mem_type(buffer.dtype))

    def visit_buffer_load_(self, e: _e.BufferLoad) -> ir.Value:
        (index,) = e.indices
        dtype = e.buffer.dtype
        stride = _stride(index, self.var)
        if stride == 1:
            mem_vec = ir.VectorType(mem_type(dtype), self.lanes)
            value = self.b.load(self._pointer(e.buffer, index), typ=mem_vec, align=self.cg._align(dtype))
        elif stride is not None and 1 < stride <= MAX_SHUFFLED_STRIDE and dtype != "bool":
            # a small constant stride (a stride-2 pooling or convolution along the vector): one
            # contiguous load of exactly the span the lanes cover (no element past the last
            # lane's), then every stride-th element picked by a shuffle -- LLVM makes it a few
            # permutes, where one scalar load per lane cost ~10 cycles per vector
            value = self._strided_load(e.buffer, index, stride)
        else:  # a gather: one scalar load per lane
            value = _undef(ir.VectorType(mem_type(dtype), self.lanes))
            for lane in range(self.lanes):
                saved = self.cg.st.vars.get(id(self.var))
                self.cg.st.vars[id(self.var)] = self.b.add(self.begin, ir.Constant(self.begin.type, lane))
                try:
                    scalar = self.b.load(self.cg._address(e.buffer, e.indices), typ=mem_type(dtype),
                                         align=self.cg._align(dtype))
                finally:
                    self.cg.st.vars[id(self.var)] = saved
                value = self.b.insert_element(value, scalar, ir.Constant(ir.IntType(32), lane))
        if dtype == "bool":
            zeros = ir.Constant(value.type, [0] * self.lanes)
            value = self.b.icmp_unsigned("!=", value, zeros)
        return value

    def _strided_load(self, buffer: Any, index: _e.PrimExpr, stride: int) -> ir.Value:
        """Lanes 0, stride, 2 * stride, ... of the span from ``index``: loads of ``lanes``
        elements each, the last one ending at the span's last element (never past it), joined
        and picked by shuffles.  One load of the whole span (``<31 x float>`` for 16 lanes at
        stride 2) was legalized into a register and a chain of 4-, 2- and 1-element pieces."""
        lanes, dtype = self.lanes, buffer.dtype
        span = (lanes - 1) * stride + 1
        count = -(-span // lanes)
        starts = [k * lanes for k in range(count - 1)] + [span - lanes]
        vt, base = ir.VectorType(mem_type(dtype), lanes), self._pointer(buffer, index)
        pieces = [self.b.load(base if start == 0 else self.b.gep(base, [ir.Constant(ir.IntType(64), start)],
                                                                  inbounds=True, source_etype=mem_type(dtype)),
                              typ=vt, align=self.cg._align(dtype)) for start in starts]
        # element j of the span: in piece j // lanes, or (past the last whole piece) in the last
        position = [j if j < (count - 1) * lanes else (count - 1) * lanes + j - starts[-1]
                    for j in range(0, span, stride)]
        if count == 2:
            return self.b.shuffle_vector(pieces[0], pieces[1], _mask(position))
        while len(pieces) & (len(pieces) - 1):
            pieces.append(_undef(vt))
        while len(pieces) > 1:  # join pairwise: a shuffle takes two vectors of one type
            width = pieces[0].type.count
            pieces = [self.b.shuffle_vector(a, b, _mask(range(2 * width))) for a, b in zip(pieces[::2], pieces[1::2])]
        return self.b.shuffle_vector(pieces[0], _undef(pieces[0].type), _mask(position))

    # -- statements -----------------------------------------------------------------------
    def store(self, s: _s.BufferStore) -> None:
        (index,) = s.indices
        dtype = s.buffer.dtype
        if _stride(index, self.var) != 1:
            raise NotVectorizable("store not contiguous in the loop variable")
        if dtype == "bool":
            raise NotVectorizable("bool store")
        value = self.as_vec(self.expr(s.value), s.value.dtype)
        if s.value.dtype != dtype:
            raise NotVectorizable("store of another dtype")
        self.b.store(value, self._pointer(s.buffer, index), align=self.cg._align(dtype))

    def stmt(self, s: Any) -> None:
        if isinstance(s, _s.SeqStmt):
            for x in s.seq:
                self.stmt(x)
        elif isinstance(s, _s.BufferStore):
            self.store(s)
        else:
            raise NotVectorizable(type(s).__name__)


def _is_if_then_else(x: Any) -> bool:
    return isinstance(x, _e.Call) and x.op == "tir.if_then_else"


def _why_not(x: Any, var: _e.Var, dependents: set[int]) -> str | None:
    """Why the vector emitter cannot handle node ``x`` (None if it can)."""
    if isinstance(x, (_s.SeqStmt,)):
        return None
    if isinstance(x, _s.BufferStore):
        if _stride(x.indices[0], var) != 1:
            return "a store that is not contiguous in the loop variable"
        if x.buffer.dtype == "bool" or x.value.dtype != x.buffer.dtype:
            return "a store of bool or of another dtype"
        return None
    if isinstance(x, _s.Stmt):
        return type(x).__name__
    if not isinstance(x, _e.PrimExpr) or id(x) not in dependents:
        return None  # computed once, as a scalar
    if isinstance(x, (_e.Var, _e.BufferLoad)):
        return None
    if isinstance(x, _e.Cast):
        return None  # (emit_cast works on vectors: a bool lane is an i1, a comparison or a zext)
    if _is_if_then_else(x):
        if id(x.args[0]) in dependents:
            return "tir.if_then_else on a condition that differs between lanes"
        return None if x.args[1].dtype == x.args[2].dtype == x.dtype != "bool" else "tir.if_then_else of mixed dtypes"
    row = row_of(x)
    if row is None:
        return x.op if isinstance(x, _e.Call) else type(x).__name__
    if isinstance(x, (_e.BinaryOp, _e.CmpOp)) and x.a.dtype != x.b.dtype:
        return "mixed operand dtypes"
    operands = node_operands(x)
    dtype = x.dtype if isinstance(x, _e.Select) else operands[0].dtype
    if isinstance(x, _e.Call) and any(a.dtype != dtype for a in operands):
        return f"{row.name} of mixed dtypes"
    if integral_exponent(x) is not None:
        return None  # multiplied out (visit_call_)
    if not row.takes(dtype) or not row.vector(dtype):
        return f"{row.name} on {dtype}"
    return None


def _check(body: Any, var: _e.Var) -> set[int]:
    """Reject a body before emitting anything: emitted instructions cannot be taken back.
    Returns the ids of the nodes that depend on ``var`` (vectors; the rest stay scalars)."""
    reasons: list[str] = []
    dependents = _dependents(body, var)

    def visit(x: Any) -> None:
        why = _why_not(x, var, dependents)
        if why:
            reasons.append(why)

    post_order_visit(body, visit)
    if reasons:
        raise NotVectorizable(", ".join(sorted(set(reasons))))
    return dependents


def emit_vector_loop(cg: Any, s: _s.For) -> bool:
    """Emit ``s`` (a vectorized loop) as vector code; False if the caller should emit a loop."""
    if not (isinstance(s.extent, _e.IntImm) and 2 <= s.extent.value <= MAX_LANES):
        return False
    key = (id(s.body), id(s.loop_var))
    verdict = cg.vector_verdicts.get(key)
    if verdict is None:
        try:
            dependents = _check(s.body, s.loop_var)
        except NotVectorizable:
            dependents = None
        verdict = cg.vector_verdicts[key] = (dependents, s.body, s.loop_var)
    dependents = verdict[0]
    if dependents is None:
        return False
    begin = cg._loop_bound(s.min, s.loop_var.dtype)
    for offset, lanes in lane_chunks(s.extent.value, cg.vector_lanes):
        start = begin if offset == 0 else cg.b.add(begin, ir.Constant(begin.type, offset))
        _VectorEmitter(cg, s.loop_var, start, lanes, dependents).stmt(s.body)
    return True


def lane_chunks(lanes: int, register_lanes: int) -> list[tuple[int, int]]:
    """``(offset, lanes)`` pieces that emit a vectorized loop of ``lanes`` iterations: one piece
    when ``lanes`` is a power of two (LLVM splits it into whole registers), else whole registers
    of ``register_lanes`` and a tail of powers of two (50 on AVX-512: 16, 16, 16, 2).

    Why: LLVM widens a vector of another length to the next power of two and then cannot load
    or store it whole (the lanes past the end are not there to read): it loaded and stored
    ``<50 x float>`` one element at a time and spilled every accumulator -- a 64 x 16 x 50
    matmul tile (a 50-word vocabulary head, 8 x 8 tokens) ran at 28 us where 16-lane pieces take
    a few.  The iterations of a vectorized loop are independent, so running the pieces one after
    another computes the same values."""
    if lanes & (lanes - 1) == 0:
        return [(0, lanes)]
    whole = lanes // register_lanes * register_lanes
    chunks = [(offset, register_lanes) for offset in range(0, whole, register_lanes)]
    offset, rest = whole, lanes - whole
    while rest:
        piece = 1 << (rest.bit_length() - 1)
        chunks.append((offset, piece))
        offset, rest = offset + piece, rest - piece
    return chunks
