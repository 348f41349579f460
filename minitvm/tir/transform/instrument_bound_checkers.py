"""InstrumentBoundCheckers: a runtime check before every buffer access not proven in range.

Runs on lowered TIR (flat, 1-D accesses), as TVM's pass of the same name.  For each
``BufferLoad``/``BufferStore`` the pass asks :class:`minitvm.arith.Analyzer`, which knows
the ranges of the loops, lets and ``if`` conditions around the access, whether
``0 <= index < extent`` always holds.  Only where it cannot prove that does it put an
``AssertStmt`` before the statement that makes the access::

    assert 0 <= i + 1 and i + 1 < 8, "buffer B: index out of bounds for extent 8 (at B[i + 1])"
    B[i + 1] = A[i]

and records each check as data, a :class:`minitvm.runtime.BoundsCheck` (buffer, index and
extent as text), in the function's ``tir.bounds_checks`` attribute; :func:`bounds_checks`
gives a code generator the record of an assert.  A code generator turns a failed check into
an error return (never a wild memory access) that remembers the record; the runtime raises
:meth:`BoundsCheck.error <minitvm.runtime.BoundsCheck.error>` with the function's name and
the index the program computed.  Affine indices in loop variables
are proven, so a correctly written kernel carries no check at all.

Accesses in one arm of ``tir.if_then_else(c, t, f)`` run only when that arm is taken: their
checks are ``not c or ...`` (resp. ``c or ...``), so padding code is not flagged.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Iterator

from ...arith import Analyzer
from ...ir import dtype as _dt
from ...ir.node import replace
from ...runtime.module import BoundsCheck
from .. import expr as _e
from .. import stmt as _s
from ..function import PrimFunc
from ..functor import StmtExprMutator, pre_order_visit, substitute
from .function_pass import prim_func_pass

__all__ = ["InstrumentBoundCheckers", "bounds_checks", "checked_index", "bounds_check_requested", "ATTR",
           "CHECKS_ATTR"]

#: function attribute set once a function is instrumented (so the pass runs once)
ATTR = "tir.bounds_checked"
#: function attribute listing the checks (``BoundsCheck.to_json`` of each)
CHECKS_ATTR = "tir.bounds_checks"


@dataclass(frozen=True)
class _Access:
    """One buffer access of an expression: which buffer, its flat index, when it is evaluated."""

    buffer: Any
    index: _e.PrimExpr
    guard: _e.PrimExpr | None  # evaluated only when this holds (None: always)


def _extent(buffer: Any) -> _e.PrimExpr:
    """The number of elements of a (flattened) buffer."""
    size: Any = 1
    for dim in buffer.shape:
        size = size * dim
    return _e.convert(size)


def _both(a: _e.PrimExpr | None, b: _e.PrimExpr) -> _e.PrimExpr:
    return b if a is None else _e.And(a, b)


class _Collector:
    """The accesses an expression makes, in evaluation order (inner loads before outer)."""

    def __init__(self) -> None:
        self.found: list[_Access] = []
        self.lets: dict[_e.Var, _e.PrimExpr] = {}  # Let variables, replaced by their values

    def visit(self, e: Any, guard: _e.PrimExpr | None) -> None:
        if isinstance(e, (tuple, list)):
            for x in e:
                self.visit(x, guard)
            return
        if not isinstance(e, _e.PrimExpr):
            return
        if isinstance(e, _e.BufferLoad):
            self.visit(e.indices, guard)
            self._add(e.buffer, e.indices, guard)
        elif isinstance(e, _e.Call) and e.op == "tir.if_then_else":
            cond, t, f = e.args
            self.visit(cond, guard)
            self.visit(t, _both(guard, self._bound(cond)))
            self.visit(f, _both(guard, _e.Not(self._bound(cond))))
        elif isinstance(e, _e.Let):
            self.visit(e.value, guard)
            self.lets[e.var] = self._bound(e.value)
            self.visit(e.body, guard)
        else:
            for name in e._field_names:
                self.visit(getattr(e, name), guard)

    def _bound(self, e: _e.PrimExpr) -> _e.PrimExpr:
        """``e`` with the Let variables around it replaced, so it can be checked before the statement."""
        return substitute(e, lambda v: self.lets.get(v)) if self.lets else e

    def _add(self, buffer: Any, indices: tuple, guard: _e.PrimExpr | None) -> None:
        if len(indices) != 1:
            raise ValueError(f"InstrumentBoundCheckers: buffer {buffer.name} is accessed with {len(indices)} "
                             "indices; run it on lowered (flattened) TIR")
        self.found.append(_Access(buffer, self._bound(indices[0]), guard))


def _reads_memory(e: _e.PrimExpr) -> bool:
    """True if ``e`` loads from a buffer."""
    found: list[Any] = []

    def visit(n: Any) -> bool:
        if isinstance(n, _e.BufferLoad):
            found.append(n)
        return not found  # stop walking once one is found

    pre_order_visit(e, visit)
    return bool(found)


def _facts(cond: _e.PrimExpr) -> list[tuple[str, _e.PrimExpr, _e.PrimExpr]]:
    """What an integer condition says, as ``("<", a, b)`` (a < b) and ``(">=", a, b)`` (a >= b) facts."""
    if isinstance(cond, _e.And):
        return _facts(cond.a) + _facts(cond.b)
    if not isinstance(cond, (_e.LT, _e.LE, _e.GT, _e.GE)) or not _dt.is_int(cond.a.dtype) or _reads_memory(cond):
        return []  # (memory may change between the test and the access: such a fact proves nothing)
    a, b = (cond.a, cond.b) if isinstance(cond, (_e.LT, _e.LE)) else (cond.b, cond.a)  # now a < b or a <= b
    one = _e.IntImm(a.dtype, 1)
    if isinstance(cond, (_e.LT, _e.GT)):
        return [("<", a, b), (">=", b, a + one)]
    return [("<", a, b + one), (">=", b, a)]


class _Instrumenter(StmtExprMutator):
    """Puts an AssertStmt before each statement whose accesses are not all provably in range."""

    def __init__(self) -> None:
        self.analyzer = Analyzer()
        self.records: dict[str, BoundsCheck] = {}  # assert message -> the check it makes
        # conditions known to hold here (enclosing ifs and loops), for indices that the
        # variables' ranges alone do not bound: ``if io * 4 + ii < 10: B[io * 4 + ii] = ...``
        self.facts: list[tuple[str, _e.PrimExpr, _e.PrimExpr]] = []

    # -- proofs and checks --------------------------------------------------------------------
    def _in_range(self, access: _Access) -> bool:
        """True when the analyzer proves ``0 <= index < extent`` wherever the access runs."""
        index, extent = access.index, _extent(access.buffer)
        if extent.dtype != index.dtype:
            extent = _e.Cast(index.dtype, extent)
        with self._assuming(access.guard):
            return self._at_least_zero(index) and self._below(index, extent)

    def _at_least_zero(self, index: _e.PrimExpr) -> bool:
        if self.analyzer.interval(index)[0] >= 0:
            return True
        # a >= b known: index >= 0 follows when index - a + b >= 0
        return any(self.analyzer.interval(self.analyzer.simplify(index - a + b))[0] >= 0
                   for kind, a, b in self.facts if kind == ">=" and a.dtype == index.dtype)

    def _below(self, index: _e.PrimExpr, extent: _e.PrimExpr) -> bool:
        if isinstance(extent, _e.IntImm) and self.analyzer.interval(index)[1] < extent.value:
            return True
        if self.analyzer.can_prove(_e.LT(index, extent)):
            return True
        # a < b known: index < extent follows when index - a + b <= extent
        return any(self.analyzer.can_prove(_e.LE(self.analyzer.simplify(index - a + b), extent))
                   for kind, a, b in self.facts if kind == "<" and a.dtype == index.dtype)

    @contextlib.contextmanager
    def _assuming(self, cond: _e.PrimExpr | None) -> Iterator[None]:
        """Within the ``with`` body, ``cond`` holds (None: nothing new is known)."""
        if cond is None:
            yield
            return
        known = len(self.facts)
        self.facts += _facts(cond)
        try:
            with self.analyzer.constraint_scope(cond):
                yield
        finally:
            del self.facts[known:]

    def _check(self, access: _Access) -> _e.PrimExpr:
        index, extent = access.index, _extent(access.buffer)
        if extent.dtype != index.dtype:
            extent = _e.Cast(index.dtype, extent)
        inside = _e.And(_e.LE(_e.IntImm(index.dtype, 0), index), _e.LT(index, extent))
        return inside if access.guard is None else _e.Or(_e.Not(access.guard), inside)

    def _message(self, access: _Access, span: Any) -> str:
        line = getattr(span, "line", None)  # where TVMScript wrote the statement, when it did
        record = BoundsCheck(access.buffer.name, str(access.index), str(_extent(access.buffer)), line)
        message = record.message()  # the whole record is in its text: same text, same record
        self.records[message] = record
        return message

    def _guard(self, stmt: _s.Stmt, *exprs: Any) -> _s.Stmt:
        """``stmt`` preceded by a check of every access ``exprs`` make that is not proven in range."""
        collector = _Collector()
        span = getattr(stmt, "span", None)
        for e in exprs:
            collector.visit(e, None)
        for access in reversed(collector.found):  # the first access ends up outermost
            if not _dt.is_int(access.index.dtype) or self._in_range(access):
                continue
            stmt = _s.AssertStmt(self._check(access), self._message(access, span), stmt)
        return stmt

    # -- statements ----------------------------------------------------------------------------
    def visit_buffer_store_(self, s: _s.BufferStore) -> _s.Stmt:
        store = _e.BufferLoad(s.buffer, s.indices)  # the store's own index, checked like a load's
        return self._guard(s, s.value, store)

    def visit_evaluate_(self, s: _s.Evaluate) -> _s.Stmt:
        return self._guard(s, s.value)

    def visit_for_(self, s: _s.For) -> _s.Stmt:
        inside = _e.And(_e.LE(s.min, s.loop_var), _e.LT(s.loop_var, s.min + s.extent))
        with self.analyzer.bound_scope(s.loop_var, _e.Range(s.min, s.extent)), self._assuming(inside):
            body = self.visit(s.body)
        out = s if body is s.body else replace(s, body=body)
        return self._guard(out, s.min, s.extent)

    def visit_attr_stmt_(self, s: _s.AttrStmt) -> _s.Stmt:
        if s.attr_key not in ("thread_extent", "virtual_thread") or not isinstance(s.node, _e.IterVar):
            return self.visit_children(s)
        # a GPU thread launch (an emulated kernel): its index runs over [0, extent) as a loop's
        with self.analyzer.bound_scope(s.node.var, _e.Range(_e.IntImm(s.value.dtype, 0), s.value)):
            body = self.visit(s.body)
        return s if body is s.body else replace(s, body=body)

    def visit_let_stmt_(self, s: _s.LetStmt) -> _s.Stmt:
        interval = self.analyzer.interval(s.value) if _dt.is_int(s.value.dtype) else None
        with self.analyzer.interval_scope(s.var, interval):
            body = self.visit(s.body)
        out = s if body is s.body else replace(s, body=body)
        return self._guard(out, s.value)

    def visit_if_then_else_(self, s: _s.IfThenElse) -> _s.Stmt:
        with self._assuming(s.condition):
            then_case = self.visit(s.then_case)
        else_case = None if s.else_case is None else self.visit(s.else_case)
        out = s
        if then_case is not s.then_case or else_case is not s.else_case:
            out = _s.IfThenElse(s.condition, then_case, else_case)
        return self._guard(out, s.condition)

    def visit_assert_stmt_(self, s: _s.AssertStmt) -> _s.Stmt:
        body = self.visit(s.body)
        out = s if body is s.body else replace(s, body=body)
        return self._guard(out, s.condition)


@prim_func_pass(opt_level=0, name="tir.InstrumentBoundCheckers")
class InstrumentBoundCheckers:
    """Check every buffer access of lowered PrimFuncs that cannot be proven in range."""

    def transform_function(self, func: PrimFunc, mod: Any, ctx: Any) -> PrimFunc:
        if func.attrs.get(ATTR):
            return func
        instrumenter = _Instrumenter()
        body = instrumenter.visit(func.body)
        out = func.with_body(body).with_attr(ATTR, True)
        if instrumenter.records:
            out = out.with_attr(CHECKS_ATTR, [r.to_json() for r in instrumenter.records.values()])
        return out


def bounds_check_requested(ctx: Any, default: bool = False) -> bool:
    """Whether a PassContext asks for bounds checks (``tir.bounds_check``, or TVM's spelling
    ``tir.instrument_bound_checkers``); ``default`` when it says nothing either way."""
    for key in ("tir.bounds_check", "tir.instrument_bound_checkers"):
        value = ctx.get_config(key)
        if value is not None:
            return bool(value)
    return default


def bounds_checks(func: PrimFunc) -> dict[str, BoundsCheck]:
    """The bounds checks of an instrumented function, by the message of their assert."""
    records = (BoundsCheck.from_json(d) for d in func.attrs.get(CHECKS_ATTR, ()))
    return {r.message(): r for r in records}


def checked_index(s: _s.AssertStmt) -> _e.PrimExpr | None:
    """The index a bounds-check assert (``[not guard or] 0 <= index and index < extent``) tests.

    Code generators store its value, which the runtime reports."""
    cond = s.condition
    if isinstance(cond, _e.Or) and isinstance(cond.a, _e.Not):
        cond = cond.b
    if isinstance(cond, _e.And) and isinstance(cond.a, _e.LE) and isinstance(cond.b, _e.LT):
        return cond.b.a
    return None
