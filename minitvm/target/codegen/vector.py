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

from ...ir import dtype as _dt
from ...tir import expr as _e
from ...tir import stmt as _s
from ...tir.analysis import uses_var
from ...tir.functor import post_order_visit, substitute
from .fastmath import FAST_FLOAT32, call_intrinsic
from .llvm_types import llvm_type, mem_type

__all__ = ["NotVectorizable", "emit_vector_loop", "MAX_LANES"]

#: longest vectorized loop emitted as one vector (a few machine registers per value)
MAX_LANES = 64


class NotVectorizable(Exception):
    """The loop body uses something the vector emitter does not handle."""


def _stride(index: _e.PrimExpr, var: _e.Var) -> int | None:
    """How much ``index`` grows when ``var`` grows by one (None if not a constant)."""
    from ...arith import Analyzer

    diff = Analyzer().simplify(substitute(index, {var: var + 1}) - index)
    return diff.value if isinstance(diff, _e.IntImm) else None


class _VectorEmitter:
    def __init__(self, cg: Any, var: _e.Var, begin: ir.Value, lanes: int):
        self.cg, self.var, self.begin, self.lanes = cg, var, begin, lanes

    @property
    def b(self) -> ir.IRBuilder:
        return self.cg.b

    # -- helpers ------------------------------------------------------------------------
    def vec_type(self, dtype: str) -> ir.VectorType:
        return ir.VectorType(llvm_type(dtype), self.lanes)

    def broadcast(self, value: ir.Value, dtype: str) -> ir.Value:
        vt = self.vec_type(dtype)
        one = self.b.insert_element(ir.Constant(vt, ir.Undefined), value, ir.Constant(ir.IntType(32), 0))
        zeros = ir.Constant(ir.VectorType(ir.IntType(32), self.lanes), [0] * self.lanes)
        return self.b.shuffle_vector(one, ir.Constant(vt, ir.Undefined), zeros)

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
        if not uses_var(e, self.var):
            return self.cg.visit_expr(e)
        method = getattr(self, "v_" + type(e).__name__, None)
        if method is None:
            raise NotVectorizable(type(e).__name__)
        return method(e)

    def v_Var(self, e: _e.Var) -> ir.Value:
        base = self.broadcast(self.begin, e.dtype)
        steps = ir.Constant(self.vec_type(e.dtype), list(range(self.lanes)))
        return self.b.add(base, steps)

    def _arith(self, e: Any, float_op: str, int_op: str) -> ir.Value:
        a, b, t = self.operands(e)
        if _dt.is_float(t):
            return getattr(self.b, float_op)(a, b, flags=("contract",))
        return getattr(self.b, int_op)(a, b)

    def v_Add(self, e: Any) -> ir.Value:
        return self._arith(e, "fadd", "add")

    def v_Sub(self, e: Any) -> ir.Value:
        return self._arith(e, "fsub", "sub")

    def v_Mul(self, e: Any) -> ir.Value:
        return self._arith(e, "fmul", "mul")

    def v_Div(self, e: Any) -> ir.Value:
        if not _dt.is_float(e.dtype):
            raise NotVectorizable("integer division")
        a, b, _ = self.operands(e)
        return self.b.fdiv(a, b)

    def _minmax(self, e: Any, is_min: bool) -> ir.Value:
        a, b, t = self.operands(e)
        if _dt.is_float(t):
            return self.intrinsic("llvm.minimum" if is_min else "llvm.maximum", [a, b], t)
        signed = not (_dt.is_uint(t) or t == "bool")
        cmp = self.b.icmp_signed if signed else self.b.icmp_unsigned
        return self.b.select(cmp("<" if is_min else ">", a, b), a, b)

    def v_Min(self, e: Any) -> ir.Value:
        return self._minmax(e, True)

    def v_Max(self, e: Any) -> ir.Value:
        return self._minmax(e, False)

    def _compare(self, e: Any, op: str) -> ir.Value:
        a, b, t = self.operands(e)
        if _dt.is_float(t):
            return self.b.fcmp_unordered(op, a, b) if op == "!=" else self.b.fcmp_ordered(op, a, b)
        if _dt.is_uint(t) or t == "bool":
            return self.b.icmp_unsigned(op, a, b)
        return self.b.icmp_signed(op, a, b)

    def v_EQ(self, e: Any) -> ir.Value: return self._compare(e, "==")
    def v_NE(self, e: Any) -> ir.Value: return self._compare(e, "!=")
    def v_LT(self, e: Any) -> ir.Value: return self._compare(e, "<")
    def v_LE(self, e: Any) -> ir.Value: return self._compare(e, "<=")
    def v_GT(self, e: Any) -> ir.Value: return self._compare(e, ">")
    def v_GE(self, e: Any) -> ir.Value: return self._compare(e, ">=")

    def v_And(self, e: Any) -> ir.Value:
        return self.b.and_(self.as_vec(self.expr(e.a), "bool"), self.as_vec(self.expr(e.b), "bool"))

    def v_Or(self, e: Any) -> ir.Value:
        return self.b.or_(self.as_vec(self.expr(e.a), "bool"), self.as_vec(self.expr(e.b), "bool"))

    def v_Not(self, e: Any) -> ir.Value:
        ones = ir.Constant(self.vec_type("bool"), [1] * self.lanes)
        return self.b.xor(self.as_vec(self.expr(e.a), "bool"), ones)

    def v_Select(self, e: _e.Select) -> ir.Value:
        cond = self.as_vec(self.expr(e.condition), "bool")
        t = self.as_vec(self.expr(e.true_value), e.dtype)
        f = self.as_vec(self.expr(e.false_value), e.dtype)
        return self.b.select(cond, t, f)

    def v_Cast(self, e: _e.Cast) -> ir.Value:
        src, dst = e.value.dtype, e.dtype
        value = self.as_vec(self.expr(e.value), src)
        to = self.vec_type(dst)
        b = self.b
        if _dt.is_float(src) and _dt.is_float(dst):
            return b.fpext(value, to) if _dt.bits(src) < _dt.bits(dst) else b.fptrunc(value, to)
        if _dt.is_float(dst):
            return b.uitofp(value, to) if (src == "bool" or _dt.is_uint(src)) else b.sitofp(value, to)
        if dst == "bool" or src == "bool":
            raise NotVectorizable("bool cast")
        if _dt.is_float(src):
            return b.fptoui(value, to) if _dt.is_uint(dst) else b.fptosi(value, to)
        sbits, dbits = _dt.bits(src), _dt.bits(dst)
        if sbits == dbits:
            return value
        if sbits > dbits:
            return b.trunc(value, to)
        return b.zext(value, to) if _dt.is_uint(src) else b.sext(value, to)

    _UNARY = {"tir.exp": "llvm.exp", "tir.exp2": "llvm.exp2", "tir.log": "llvm.log",
              "tir.log2": "llvm.log2", "tir.sqrt": "llvm.sqrt", "tir.fabs": "llvm.fabs",
              "tir.floor": "llvm.floor", "tir.ceil": "llvm.ceil", "tir.round": "llvm.roundeven",
              "tir.nearbyint": "llvm.roundeven", "tir.trunc": "llvm.trunc"}

    def intrinsic(self, name: str, args: list[ir.Value], dtype: str) -> ir.Value:
        if dtype not in ("float32", "float64"):
            raise NotVectorizable(f"{name} on {dtype}")
        return call_intrinsic(self.b, self.cg._declare, name, args)

    def v_Call(self, e: _e.Call) -> ir.Value:
        op = e.op if isinstance(e.op, str) else str(e.op)
        if e.dtype == "float32" and op in FAST_FLOAT32 and e.args[0].dtype == e.dtype:
            return FAST_FLOAT32[op](self.b, self.as_vec(self.expr(e.args[0]), e.dtype), self.cg._declare)
        if op not in self._UNARY or e.args[0].dtype != e.dtype:
            raise NotVectorizable(op)
        return self.intrinsic(self._UNARY[op], [self.as_vec(self.expr(e.args[0]), e.dtype)], e.dtype)

    def _pointer(self, buffer: Any, index: _e.PrimExpr) -> ir.Value:
        """Address of lane 0's element."""
        ptr = self.cg.st.buffers.get(id(buffer.data))
        if ptr is None:
            raise NotVectorizable("unknown buffer")
        first = self.scalar_at(index, 0)
        first = self.cg._cast(first, index.dtype, "int64") if index.dtype != "int64" else first
        return self.b.gep(ptr, [first], inbounds=True, source_etype=mem_type(buffer.dtype))

    def v_BufferLoad(self, e: _e.BufferLoad) -> ir.Value:
        (index,) = e.indices
        dtype = e.buffer.dtype
        if _stride(index, self.var) == 1:
            mem_vec = ir.VectorType(mem_type(dtype), self.lanes)
            value = self.b.load(self._pointer(e.buffer, index), typ=mem_vec, align=self.cg._align(dtype))
        else:  # a gather: one scalar load per lane
            value = ir.Constant(ir.VectorType(mem_type(dtype), self.lanes), ir.Undefined)
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


_VECTOR_NODES = (_e.Var, _e.Add, _e.Sub, _e.Mul, _e.Div, _e.Min, _e.Max, _e.EQ, _e.NE, _e.LT, _e.LE,
                 _e.GT, _e.GE, _e.And, _e.Or, _e.Not, _e.Select, _e.Cast, _e.Call, _e.BufferLoad)


def _why_not(x: Any, var: _e.Var) -> str | None:
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
    if not isinstance(x, _e.PrimExpr) or not uses_var(x, var):
        return None  # computed once, as a scalar
    if not isinstance(x, _VECTOR_NODES):
        return type(x).__name__
    if isinstance(x, (_e.BinaryOp, _e.CmpOp)) and x.a.dtype != x.b.dtype:
        return "mixed operand dtypes"
    if isinstance(x, _e.Div) and not _dt.is_float(x.dtype):
        return "integer division"
    if isinstance(x, (_e.Min, _e.Max)) and _dt.is_float(x.dtype) and x.dtype not in ("float32", "float64"):
        return f"min/max on {x.dtype}"
    if isinstance(x, _e.Cast) and "bool" in (x.dtype, x.value.dtype):
        return "bool cast"
    if isinstance(x, _e.Call):
        op = x.op if isinstance(x.op, str) else str(x.op)
        if op not in _VectorEmitter._UNARY or x.args[0].dtype != x.dtype or x.dtype not in ("float32", "float64"):
            return op
    return None


def _check(body: Any, var: _e.Var) -> None:
    """Reject a body before emitting anything: emitted instructions cannot be taken back."""
    reasons: list[str] = []

    def visit(x: Any) -> None:
        why = _why_not(x, var)
        if why:
            reasons.append(why)

    post_order_visit(body, visit)
    if reasons:
        raise NotVectorizable(", ".join(sorted(set(reasons))))


def emit_vector_loop(cg: Any, s: _s.For) -> bool:
    """Emit ``s`` (a vectorized loop) as vector code; False if the caller should emit a loop."""
    if not (isinstance(s.extent, _e.IntImm) and 2 <= s.extent.value <= MAX_LANES):
        return False
    try:
        _check(s.body, s.loop_var)
    except NotVectorizable:
        return False
    begin = cg._loop_bound(s.min, s.loop_var.dtype)
    _VectorEmitter(cg, s.loop_var, begin, s.extent.value).stmt(s.body)
    return True
