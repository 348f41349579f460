"""StaticPlanBlockMemory: tensors whose lifetimes do not overlap share one storage.

Works on the output of :func:`CallTIRRewrite`, as TVM's pass does, in three steps:

1. **Tokens.**  Every ``R.builtin.alloc_tensor`` gets a *storage token* (its size in bytes,
   dtype and memory scope).  Each expression knows the tokens it may hold (a tuple holds its
   fields' tokens; ``R.reshape`` / ``R.memory.view`` / ``R.memory.ensure_zero_offset`` hold
   their input's).  Each argument use in a call of a PrimFunc of the module or of an
   ``R.ExternFunc`` counts one reference.  A token is *discarded* (its tensor keeps its own
   memory) when its tensor is returned, is the body of a ``SeqExpr``, is used by an ``If``,
   is passed to any other call (a Relax function, an operator: it may be kept), or is used
   in another binding block than the one that allocated it.
2. **Planning**, in binding order per function: an allocation takes a free storage of the
   same scope and dtype -- the smallest one at least as large, else the largest smaller
   one (enlarged), looking only within a factor 16 of its size -- or a new storage.  A
   storage is free again once the calls using its tensor have all run.  A tensor nothing
   reads gets a storage of its own that is never freed.
3. **Rewrite**: the first allocation of each storage is preceded by
   ``storage = R.memory.alloc_storage(R.shape([bytes]), R.prim_value(0), R.str("global"),
   R.dtype(dtype))`` and each planned allocation becomes
   ``R.memory.alloc_tensor(storage, R.prim_value(0), shape, R.dtype(dtype))``.

Symbolic shapes: the function attribute ``{"tir_var_upper_bound": {"n": 1024}}`` (and
``"tir_var_lower_bound"``) bounds the symbolic variables of the function's signature, and an
allocation is planned at its upper-bound size.  Without a bound its size stays symbolic and it
only reuses a storage of provably the same size.  With ``{"relax.memory_plan_dynamic_func_output":
True}`` even a returned dynamic-shape tensor gets a storage of its upper-bound size (the
attribute is removed).  No ``R.memory.kill_*`` is inserted (TVM leaves that to a later pass).

``memory_plan(func)`` returns the plan without rewriting (a readable summary via ``str``).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from typing import Any, Union

from ...arith.analyzer import Analyzer
from ...arith.int_bound import ConstIntBound
from ...ir.dtype import bits
from ...ir.module import GlobalVar, IRModule
from ...ir.op import Op
from ...tir.expr import IntImm, Range
from ...tir.function import PrimFunc
from ...transform import PassContext, module_pass
from ..analysis.struct_info_analysis import tir_vars_in_struct_info
from ..expr import (
    Call,
    DataTypeImm,
    ExternFunc,
    Function,
    If,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..expr_functor import ExprMutator
from ..op.memory import ALLOC_STORAGE, ALLOC_TENSOR, MEMORY_ALLOC_TENSOR
from ..struct_info import TensorStructInfo

__all__ = ["StaticPlanBlockMemory", "memory_plan", "MemoryPlan"]

_INPLACE_MEMORY_OPS = ("relax.reshape", "relax.memory.view", "relax.memory.ensure_zero_offset")
_CALL_TIR_DYN = "relax.vm.call_tir_dyn"
_MATCH_RANGE = 16  # a storage is reused only for sizes within this factor of its own


class _Token:
    """Reusable memory: ``nbytes`` (an int, or a PrimExpr when symbolic), dtype and scope."""

    def __init__(self, nbytes: Any, dtype: str, scope: str) -> None:
        self.nbytes = nbytes
        self.dtype = dtype
        self.scope = scope
        self.ref_counter = 0
        self.storage_id = -1
        self.tensors: list[str] = []  # the allocations placed in it (for the summary)

    @property
    def const_bytes(self) -> int:
        return self.nbytes if isinstance(self.nbytes, int) else -1


# The tokens an expression holds: None, a _Token, or a tuple of those (nested like the value).
Tokens = Union[None, _Token, tuple]


def _leaves(tokens: Tokens) -> list[_Token]:
    if tokens is None:
        return []
    if isinstance(tokens, _Token):
        return [tokens]
    return [t for f in tokens for t in _leaves(f)]


def _op_name(call: Call) -> str | None:
    return call.op.name if isinstance(call.op, Op) else None


def _itemsize(dtype: str) -> int:
    return (bits(dtype) + 7) // 8


def _mul(a: Any, b: Any) -> Any:
    """``a * b`` with ones folded away (as TVM's ``PrimExpr *`` folds constants)."""
    if isinstance(a, IntImm) and a.value == 1:
        return b
    if isinstance(b, IntImm) and b.value == 1:
        return a
    return a * b


def _token_bytes(shape: list, dtype: str) -> Any:
    """Bytes of a tensor: an int, or ``coeff * (d0 * d1 ...)`` over its symbolic dimensions."""
    coeff, size = _itemsize(dtype), IntImm("int64", 1)
    for d in shape:
        if isinstance(d, IntImm):
            coeff *= d.value
        else:
            size = _mul(size, d)
    if isinstance(size, IntImm):
        return coeff * size.value
    return IntImm("int64", coeff) * size


def _attr_bounds(func: Function, key: str) -> dict[str, int]:
    raw = func.attrs.get(key) if func.attrs else None
    if raw is None:
        return {}
    if not hasattr(raw, "items"):
        raise TypeError(f"StaticPlanBlockMemory: the function attribute {key!r} must map variable names to "
                        f"integers, got {raw!r}")
    bounds = {}
    for name, value in raw.items():
        v = value.value if isinstance(value, IntImm) else value
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"StaticPlanBlockMemory: {key}[{str(name)!r}] must be an integer, got {value!r}")
        bounds[str(name)] = v
    return bounds


def _set_var_ranges(func: Function, ana: Analyzer) -> None:
    """Bound the signature's symbolic variables by the function's ``tir_var_*_bound`` attributes."""
    upper = _attr_bounds(func, "tir_var_upper_bound")
    lower = _attr_bounds(func, "tir_var_lower_bound")
    non_negative = {str(n) for n in (func.attrs.get("tir_non_negative_var") or ())} if func.attrs else set()
    sinfos = [p.struct_info for p in func.params]
    if func.ret_struct_info is not None:
        sinfos.append(func.ret_struct_info)
    seen: set[int] = set()
    for sinfo in sinfos:
        for var in tir_vars_in_struct_info(sinfo):
            if id(var) in seen:
                continue
            seen.add(id(var))
            if var.name in upper:
                lo = lower.get(var.name, 0)
                ana.bind(var, Range.from_min_extent(IntImm("int64", lo), IntImm("int64", upper[var.name] - lo + 1)))
            elif lower.get(var.name, -1) >= 0 or var.name in non_negative:
                ana.update(var, ConstIntBound(0, ConstIntBound.POS_INF), allow_override=True)


def _upper_bound_shape(shape: list, ana: Analyzer) -> list:
    """Each dimension's upper bound where one is known, else the dimension itself."""
    out = []
    for d in shape:
        hi = ana.const_int_bound(d).max_value
        out.append(d if hi >= ConstIntBound.POS_INF else IntImm("int64", hi))
    return out


def _static(shape: list) -> bool:
    return all(isinstance(d, IntImm) for d in shape)


def _alloc_scope(call: Call) -> str:
    return call.args[3].value if len(call.args) > 3 and isinstance(call.args[3], StringImm) else "global"


class _Walker:
    """Walks a function's bindings in order, tracking the tokens each expression holds
    (the part common to the token collection and the planning)."""

    def __init__(self, mod: IRModule) -> None:
        self.mod = mod
        self.tokens: dict[int, Tokens] = {}  # id(expr) -> tokens
        self.block_stack: list[Any] = []

    def get(self, expr: Any) -> Tokens:
        self.visit(expr)
        return self.tokens.get(id(expr))

    def visit(self, expr: Any) -> None:
        if isinstance(expr, Tuple):
            self.tokens[id(expr)] = tuple(self.get(f) for f in expr.fields)
        elif isinstance(expr, TupleGetItem):
            whole = self.get(expr.tuple_value)
            self.tokens[id(expr)] = whole[expr.index] if isinstance(whole, tuple) else None
        elif isinstance(expr, SeqExpr):
            self.visit_seq(expr)
        elif isinstance(expr, If):
            self.visit_if(expr)
        elif isinstance(expr, Call):
            self.visit_call(expr)
        elif isinstance(expr, Function):
            self.visit_function(expr)

    def visit_seq(self, seq: SeqExpr) -> None:
        for block in seq.blocks:
            self.block_stack.append(block)
            for b in block.bindings:
                self.visit_binding(b)
            self.block_stack.pop()
        self.visit(seq.body)

    def visit_binding(self, binding: Any) -> None:
        self.visit(binding.value)
        if isinstance(binding, VarBinding):
            self.tokens[id(binding.var)] = self.tokens.get(id(binding.value))

    def visit_if(self, op: If) -> None:
        for e in (op.cond, op.true_branch, op.false_branch):
            self.visit(e)

    def visit_call(self, call: Call) -> None:
        for a in call.args:
            self.visit(a)

    def visit_function(self, func: Function) -> None:
        self.visit(func.body)

    def is_planning_callee(self, call: Call) -> bool:
        """A PrimFunc of the module, an extern function or call_tir_dyn: it keeps no reference
        to its arguments, so they may be freed after it ran."""
        op = call.op
        if isinstance(op, GlobalVar):
            return op in self.mod.functions and isinstance(self.mod[op], PrimFunc)
        return isinstance(op, ExternFunc) or _op_name(call) == _CALL_TIR_DYN


class _Collect(_Walker):
    """Step 1: one token per builtin alloc_tensor; references counted; tokens that escape
    the planning discarded."""

    def __init__(self, mod: IRModule, ana: Analyzer) -> None:
        super().__init__(mod)
        self.ana = ana
        self.discarded: set[int] = set()
        self.token_block: dict[int, Any] = {}

    def alive(self, tokens: Tokens) -> Tokens:
        if tokens is None:
            return None
        if isinstance(tokens, _Token):
            return None if id(tokens) in self.discarded else tokens
        return tuple(self.alive(t) for t in tokens)

    def get(self, expr: Any) -> Tokens:
        return self.alive(super().get(expr))

    def discard(self, tokens: Tokens) -> None:
        for t in _leaves(tokens):
            self.discarded.add(id(t))

    def visit_function(self, func: Function) -> None:
        _set_var_ranges(func, self.ana)
        self.discard(self.get(func.body))

    def visit_seq(self, seq: SeqExpr) -> None:
        super().visit_seq(seq)
        self.discard(self.get(seq.body))

    def visit_if(self, op: If) -> None:
        for e in (op.cond, op.true_branch, op.false_branch):
            self.discard(self.get(e))

    def visit_call(self, call: Call) -> None:
        name = _op_name(call)
        if name == ALLOC_TENSOR:
            self.tokens[id(call)] = self.create_token(call)
            return
        if name in _INPLACE_MEMORY_OPS:
            self.tokens[id(call)] = self.get(call.args[0])
            return
        if self.is_planning_callee(call):
            for arg in call.args:
                for t in _leaves(self.get(arg)):
                    if self.token_block.get(id(t)) is not self.block_stack[-1]:
                        self.discarded.add(id(t))  # used in another block than its allocation's
                    else:
                        t.ref_counter += 1
        else:
            for arg in call.args:
                self.discard(self.get(arg))

    def create_token(self, call: Call) -> _Token | None:
        sinfo = call.struct_info
        if not (isinstance(sinfo, TensorStructInfo) and isinstance(sinfo.shape, ShapeExpr)
                and not sinfo.is_unknown_dtype):
            return None
        token = _Token(_token_bytes(_upper_bound_shape(list(sinfo.shape.values), self.ana), sinfo.dtype),
                       sinfo.dtype, _alloc_scope(call))
        self.token_block[id(token)] = self.block_stack[-1]
        return token


class _Pool:
    """The free storages of one function, per (scope, dtype), ordered by size."""

    def __init__(self, ana: Analyzer) -> None:
        self.ana = ana
        self.free: dict[tuple[str, str], list[tuple[int, int, _Token]]] = {}
        self.count = 0
        self.storages: list[_Token] = []

    def request(self, proto: _Token) -> _Token:
        reused = self._reuse(proto)
        if reused is not None:
            return reused
        proto.storage_id = len(self.storages)
        self.storages.append(proto)
        return proto

    def _reuse(self, proto: _Token) -> _Token | None:
        if proto.ref_counter == 0:
            return None  # nothing reads it: a storage of its own (a cleanup pass may drop it)
        pool = self.free.setdefault((proto.scope, proto.dtype), [])
        size = proto.const_bytes
        if size == -1:
            for k, (s, _, token) in enumerate(pool):
                if s == -1 and self.ana.can_prove_equal(proto.nbytes, token.nbytes):
                    del pool[k]
                    token.ref_counter = proto.ref_counter
                    return token
            return None
        keys = [s for s, _, _ in pool]
        begin = bisect.bisect_left(keys, size // _MATCH_RANGE)
        mid = bisect.bisect_left(keys, size)
        end = bisect.bisect_right(keys, size * _MATCH_RANGE)
        if mid != end:
            k = mid  # the smallest storage large enough
        elif mid != begin:
            k = mid - 1  # the largest smaller one, enlarged
            pool[k][2].nbytes = size
        else:
            return None
        token = pool.pop(k)[2]
        token.ref_counter = proto.ref_counter
        return token

    def release(self, token: _Token) -> None:
        self.count += 1
        bisect.insort(self.free.setdefault((token.scope, token.dtype), []),
                      (token.const_bytes, self.count, token), key=lambda e: (e[0], e[1]))


class _Plan(_Walker):
    """Step 2: each planned allocation takes a free storage or a new one."""

    def __init__(self, mod: IRModule, tokens: dict[int, Tokens], ana: Analyzer) -> None:
        super().__init__(mod)
        self.tokens = tokens
        self.pool = _Pool(ana)
        self.alloc_storage: dict[int, _Token] = {}  # id(alloc_tensor call) -> its storage

    def visit_binding(self, binding: Any) -> None:
        value = binding.value
        if isinstance(binding, VarBinding) and isinstance(value, Call):
            self.plan_call(binding, value)
            self.tokens[id(binding.var)] = self.tokens.get(id(value))
        else:
            super().visit_binding(binding)

    def plan_call(self, binding: VarBinding, call: Call) -> None:
        name = _op_name(call)
        if name == ALLOC_TENSOR:
            proto = self.tokens.get(id(call))
            if proto is None:
                return  # discarded: not planned
            storage = self.pool.request(proto)
            storage.tensors.append(binding.var.name_hint)
            self.alloc_storage[id(call)] = storage
            self.tokens[id(call)] = storage
            return
        if name in _INPLACE_MEMORY_OPS:
            self.tokens[id(call)] = self.get(call.args[0])
            return
        for arg in call.args:
            for t in _leaves(self.get(arg)):
                t.ref_counter -= 1
                if t.ref_counter == 0:
                    self.pool.release(t)


class _Rewrite(ExprMutator):
    """Step 3: alloc_storage before each storage's first tensor; planned allocations moved in."""

    def __init__(self, mod: IRModule, alloc_storage: dict[int, _Token], ana: Analyzer | None) -> None:
        super().__init__(mod)
        self.alloc_storage = alloc_storage
        self.ana = ana  # set when dynamic function outputs get upper-bound storages too
        self.storage_var: dict[int, Var] = {}

    def _emit_storage(self, nbytes: Any, device: Any, scope: str, dtype: str) -> Var:
        size = ShapeExpr([IntImm("int64", nbytes) if isinstance(nbytes, int) else nbytes])
        call = Call(Op.get(ALLOC_STORAGE), [size, device, StringImm(scope), DataTypeImm(dtype)])
        return self.builder_.emit(call, "storage")

    def visit_call_(self, op: Call) -> Any:
        token = self.alloc_storage.get(id(op))
        sinfo = op.struct_info
        if token is not None:
            if id(token) not in self.storage_var:
                self.storage_var[id(token)] = self._emit_storage(token.nbytes, op.args[2], token.scope, token.dtype)
            return Call(Op.get(MEMORY_ALLOC_TENSOR), [self.storage_var[id(token)], PrimValue(IntImm("int64", 0)),
                                                      sinfo.shape, DataTypeImm(sinfo.dtype), op.args[2]])
        if self.ana is not None and _op_name(op) == ALLOC_TENSOR and isinstance(sinfo, TensorStructInfo) \
                and isinstance(sinfo.shape, ShapeExpr) and not _static(list(sinfo.shape.values)):
            upper = _upper_bound_shape(list(sinfo.shape.values), self.ana)
            nbytes = math.prod(upper[1:], start=upper[0]) * _itemsize(sinfo.dtype)
            if isinstance(nbytes, IntImm):
                nbytes = nbytes.value
            storage = self._emit_storage(nbytes, op.args[2], _alloc_scope(op), sinfo.dtype)
            return Call(Op.get(MEMORY_ALLOC_TENSOR), [storage, PrimValue(IntImm("int64", 0)), sinfo.shape,
                                                      DataTypeImm(sinfo.dtype), op.args[2]])
        return super().visit_call_(op)


_PLAN_DYNAMIC_OUTPUT = "relax.memory_plan_dynamic_func_output"


@dataclass
class MemoryPlan:
    """Which storage each planned allocation uses, and which allocations keep their own memory."""

    function: str
    storages: list[_Token]
    alloc_storage: dict[int, _Token] = field(repr=False)
    not_planned: list[str]

    @property
    def num_allocations(self) -> int:
        return len(self.alloc_storage)

    @property
    def total_bytes(self) -> int | None:
        sizes = [s.nbytes for s in self.storages]
        return sum(sizes) if all(isinstance(s, int) for s in sizes) else None

    def __str__(self) -> str:
        total = self.total_bytes
        lines = [f"memory plan of {self.function}: {self.num_allocations} tensors in {len(self.storages)} storages"
                 + (f" ({total} bytes)" if total is not None else "")]
        for s in self.storages:
            lines.append(f"  storage{s.storage_id or ''} ({s.nbytes} bytes, {s.dtype}): {', '.join(s.tensors)}")
        if self.not_planned:
            lines.append(f"  not planned (own memory): {', '.join(self.not_planned)}")
        return "\n".join(lines)


def _plan(func: Function, mod: IRModule) -> tuple[_Plan, list[str]]:
    ana = Analyzer()
    collect = _Collect(mod, ana)
    collect.visit(func)
    tokens = {k: collect.alive(v) for k, v in collect.tokens.items()}
    plan = _Plan(mod, tokens, ana)
    plan.visit(func)
    not_planned = []

    def visit(node: Any) -> None:  # the allocations left with their own memory, in order
        if isinstance(node, VarBinding) and isinstance(node.value, Call) and _op_name(node.value) == ALLOC_TENSOR \
                and id(node.value) not in plan.alloc_storage:
            not_planned.append(node.var.name_hint)

    _visit_bindings(func.body, visit)
    return plan, not_planned


def _visit_bindings(expr: Any, fn: Any) -> None:
    if isinstance(expr, SeqExpr):
        for block in expr.blocks:
            for b in block.bindings:
                fn(b)
                _visit_bindings(b.value, fn)
    elif isinstance(expr, If):
        _visit_bindings(expr.true_branch, fn)
        _visit_bindings(expr.false_branch, fn)


def memory_plan(func: Function, mod: IRModule | None = None, name: str = "") -> MemoryPlan:
    """The storages ``StaticPlanBlockMemory`` would give ``func``'s allocations (see the module docstring)."""
    mod = mod or IRModule()
    plan, not_planned = _plan(func, mod)
    name = name or (func.attrs.get("global_symbol") if func.attrs else None) or "function"
    return MemoryPlan(name, plan.pool.storages, plan.alloc_storage, not_planned)


def _rewrite(func: Function, mod: IRModule) -> Function:
    plan, _ = _plan(func, mod)
    dynamic_output = bool(func.attrs.get(_PLAN_DYNAMIC_OUTPUT)) if func.attrs else False
    ana = None
    if dynamic_output:
        ana = Analyzer()
        _set_var_ranges(func, ana)
    if not plan.alloc_storage and not dynamic_output:
        return func
    new = _Rewrite(mod, plan.alloc_storage, ana).visit_expr(func)
    if dynamic_output:
        attrs = {k: v for k, v in func.attrs.items() if k != _PLAN_DYNAMIC_OUTPUT}
        new = Function(new.params, new.body, new.ret_struct_info, new.is_pure, attrs)
    return new


@module_pass(opt_level=0, name="StaticPlanBlockMemory")
class StaticPlanBlockMemory:
    """Share storage between tensors with disjoint lifetimes: ``StaticPlanBlockMemory()(mod)``."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return _rewrite_module(mod)


def _rewrite_module(mod: IRModule) -> IRModule:
    changed = {}
    for gv, func in mod.functions.items():
        if isinstance(func, Function):
            new = _rewrite(func, mod)
            if new is not func:
                changed[gv] = new
    if not changed:
        return mod
    return IRModule({gv: changed.get(gv, f) for gv, f in mod.functions.items()}, mod.attrs, mod.global_infos)

