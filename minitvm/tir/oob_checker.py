"""OOBChecker: out-of-bounds accesses that can be proven before the code runs.

As TVM's ``tir.analysis.OOBChecker``, every buffer load and store is checked against the
buffer's shape, with each loop variable ranging over its loop and each block variable over its
domain: an index whose range reaches past the last element, or below zero, is an error. The
check is conservative: an index it cannot bound (it reads a function parameter, a loaded value,
a ``let`` variable) is left to the run-time checks (``tir.bounds_check``).

minitvm also checks each block's bindings against the block's domain (a loop ``range(17)``
bound to ``T.axis.spatial(16, i)``): TVM's block verification refuses those too.  Both run at
the start of the lowering pipeline, so ``minitvm.build`` refuses such a program with a message
naming the buffer, the index, the range it reaches and the extent, instead of running it and
writing past the array: an :class:`~minitvm.error.OutOfBoundsError` (no schedule is involved,
so not a ``ScheduleError``).

First of all it stops a function with vector expressions (``T.Ramp``, ``T.Broadcast``,
``B[0:4] = A[0:4] + 1``), by name: TVMScript reads, prints and compares them as TVM does, but
minitvm's lowering, interpreter and codegen compute with scalars (vectors come from
``T.vectorized`` loops); there is no bound to prove about an access they cannot compile.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable

from ..arith import Analyzer
from ..error import OutOfBoundsError, TVMError
from ..ir import dtype as _dt
from ..ir.module import IRModule
from ..transform import module_pass
from .buffer import Buffer
from .expr import BufferLoad, Call, IntImm, PrimExpr, Range, Var, is_const_int
from .function import PrimFunc
from .functor import StmtExprVisitor, post_order_visit, pre_order_visit, substitute
from .stmt import BlockRealize, BufferStore, For, IfThenElse

__all__ = ["OOBChecker", "out_of_bounds_accesses", "OOBLocation"]


@dataclass(frozen=True)
class OOBLocation:
    """One provable out-of-bounds index (or block binding outside its domain)."""

    what: str  # "buffer B dimension 0" or "block B binding vi"
    index: str  # the index (or binding) expression, as TVMScript
    lo: int
    hi: int
    extent: int
    statement: str  # the statement holding it, as TVMScript
    span: Any = None  # ir.Span of the statement (or its block) when TVMScript wrote it

    def __str__(self) -> str:
        where = f" (TVMScript line {self.span.line} of {self.span.source_name})" if self.span else ""
        if self.what.startswith("block"):
            return (f"{self.what}: {self.index} reaches [{self.lo}, {self.hi}] but the block's domain "
                    f"is [0, {self.extent - 1}] (extent {self.extent}); the loops run past it{where}")
        return (f"Out of bounds memory access on {self.what}: index {self.index} reaches "
                f"[{self.lo}, {self.hi}] but the valid range is [0, {self.extent - 1}] "
                f"(extent {self.extent}); in `{self.statement}`{where}")


class _Checker(StmtExprVisitor):
    def __init__(self) -> None:
        self.analyzer = Analyzer()
        self.bound: set[int] = set()  # variables with a known range: loop and block variables
        # block variable -> its binding in loop variables: ``vi - ti * 8`` is checked as ``i``
        # (what it is per iteration), not over vi's whole domain minus ti's
        self.bindings: dict[int, PrimExpr] = {}
        self.errors: list[OOBLocation] = []
        self.statement: Any = None  # the store being checked (printed only for an error)
        self.span: Any = None  # of the statement (or block) being checked
        self.conditional = 0  # > 0 inside a branch of a condition

    # -- where variables get their ranges ---------------------------------------------------
    def visit_for_(self, n: For) -> None:
        self.visit((n.min, n.extent))
        if isinstance(n.extent, IntImm) and n.extent.value <= 0:
            return  # a loop that never runs makes no access (an empty tensor's kernel)
        with self.analyzer.bound_scope(n.loop_var, Range(n.min, n.extent)):
            self.bound.add(id(n.loop_var))
            self.visit(n.body)
            self.bound.discard(id(n.loop_var))

    # -- accesses under a condition are left to the run-time checks: the condition may be
    #    what keeps them in bounds (padding), and the analyzer learns only simple conditions
    def visit_if_then_else_(self, n: IfThenElse) -> None:
        self.visit(n.condition)
        self.conditional += 1
        self.visit((n.then_case, n.else_case))
        self.conditional -= 1

    def visit_call_(self, n: Call) -> None:
        if n.op not in ("tir.if_then_else", "tir.likely"):
            self.visit(n.args)
            return
        self.visit(n.args[0])
        self.conditional += 1
        self.visit(n.args[1:])
        self.conditional -= 1

    def visit_block_realize_(self, n: BlockRealize) -> None:
        block = n.block
        outer_span, self.span = self.span, n.span
        predicated = not is_const_int(n.predicate, 1)
        # each binding in loop variables; none under a predicate (from a split), which keeps
        # the bindings in range where the loops alone do not
        values = [] if predicated else [self._in_loop_vars(v) for v in n.iter_values]
        out_of_domain: set[int] = set()  # reported once, as a binding: their accesses use the domain
        for iv, value, shown in zip(block.iter_vars, values, n.iter_values):
            found = len(self.errors)
            self._check(value, iv.dom.min, iv.dom.extent, f"block {block.name_hint} binding {iv.var.name}",
                        lambda iv=iv, shown=shown: f"{iv.var.name} = {_text(shown)}")
            if len(self.errors) > found:
                out_of_domain.add(id(iv.var))
        with contextlib.ExitStack() as scopes:
            for iv in block.iter_vars:
                scopes.enter_context(self.analyzer.bound_scope(iv.var, iv.dom))
                self.bound.add(id(iv.var))
            for iv, value in zip(block.iter_vars, values):
                if id(iv.var) not in out_of_domain and self._all_bound(value):
                    self.bindings[id(iv.var)] = value
            self.conditional += predicated  # the predicate may be what keeps the accesses in bounds
            try:
                self.visit((block.init, block.body))
            finally:
                self.conditional -= predicated
                self.bound.difference_update(id(iv.var) for iv in block.iter_vars)
                for iv in block.iter_vars:
                    self.bindings.pop(id(iv.var), None)
                self.span = outer_span

    # -- the accesses ---------------------------------------------------------------------
    def visit_buffer_store_(self, n: BufferStore) -> None:
        self.statement = n
        self.span = n.span or self.span
        self._access(n.buffer, n.indices)
        self.visit((n.value, n.indices))

    def visit_buffer_load_(self, n: BufferLoad) -> None:
        self._access(n.buffer, n.indices)
        self.visit(n.indices)

    def _access(self, buffer: Buffer, indices: tuple) -> None:
        if len(indices) != len(buffer.shape) or self.conditional:  # flattened, or guarded by a condition
            return
        for dim, (index, extent) in enumerate(zip(indices, buffer.shape)):
            self._check(self._in_loop_vars(index), 0, extent, f"buffer {buffer.name} dimension {dim}",
                        lambda index=index: _text(index))

    def _in_loop_vars(self, expr: PrimExpr) -> PrimExpr:
        """``expr`` with block variables replaced by their bindings, simplified."""
        if not self.bindings or not isinstance(expr, PrimExpr):
            return expr
        replaced = substitute(expr, lambda v: self.bindings.get(id(v)))
        return replaced if replaced is expr else self.analyzer.simplify(replaced)

    def _check(self, index: PrimExpr, lo_bound: Any, extent: Any, what: str, shown: Callable[[], str]) -> None:
        """Record an error when ``index`` provably leaves [lo_bound, lo_bound + extent); ``shown``
        prints the access (called only then: printing every access cost more than checking it)."""
        if not (isinstance(extent, IntImm) and isinstance(lo_bound, (IntImm, int))):
            return
        if not isinstance(index, PrimExpr) or not index.dtype.startswith(("int", "uint")):
            return
        if not self._all_bound(index):
            return
        lo, hi = self.analyzer.interval(index)
        low = lo_bound.value if isinstance(lo_bound, IntImm) else lo_bound
        if lo < low or hi >= low + extent.value:
            text = shown()
            statement = (_text(self.statement) if self.statement is not None else "") or text
            self.errors.append(OOBLocation(what, text, lo - low, hi - low, extent.value, statement, self.span))

    def _all_bound(self, expr: PrimExpr) -> bool:
        """Whether ``expr`` reads only variables of known range (no argument, no loaded value)."""
        unknown: list[Any] = []
        post_order_visit(expr, lambda x: unknown.append(x) if isinstance(x, BufferLoad) or (
            isinstance(x, Var) and id(x) not in self.bound) else None)
        return not unknown


def _text(node: Any) -> str:
    try:
        return node.script().strip().splitlines()[-1].strip()
    except Exception:  # noqa: BLE001 - an error message must not fail on printing
        return repr(node)


def out_of_bounds_accesses(func: PrimFunc) -> list[OOBLocation]:
    """The provable out-of-bounds accesses (and out-of-domain block bindings) of ``func``."""
    checker = _Checker()
    checker.visit(func.body)
    return list(dict.fromkeys(checker.errors))  # a load met twice is reported once


def first_vector_expr(func: PrimFunc) -> PrimExpr | None:
    """The first expression of ``func``'s body whose dtype has more than one lane, if any."""
    found: list[PrimExpr] = []

    def visit(n: Any) -> bool:
        if found:
            return False
        if isinstance(n, PrimExpr) and _dt.lanes(n.dtype) > 1:
            found.append(n)
            return False
        return True

    pre_order_visit(func.body, visit)
    return found[0] if found else None


def _refuse_vectors(name: str, func: PrimFunc) -> None:
    vector = first_vector_expr(func)
    if vector is not None:
        raise TVMError(f"{name}: {vector.script()} is a vector expression ({vector.dtype}); minitvm compiles "
                       "scalar TIR only -- write the loop over the lanes and mark it T.vectorized "
                       "(sch.vectorize), which codegen turns into vector instructions")


def OOBChecker() -> Any:  # noqa: N802 - TVM's name
    """A pass that raises :class:`~minitvm.error.OutOfBoundsError` when a PrimFunc of the module
    provably reads or writes outside a buffer (TVM's ``tir.analysis.OOBChecker``)."""

    @module_pass(opt_level=0, name="tir.OOBChecker")
    def check(mod: IRModule, ctx: Any) -> IRModule:
        for gv, func in mod.items():
            if not isinstance(func, PrimFunc):
                continue
            _refuse_vectors(gv.name_hint, func)
            errors = out_of_bounds_accesses(func)
            if errors:
                lines = "\n".join(f"  {e}" for e in errors[:5])
                more = f"\n  ... and {len(errors) - 5} more" if len(errors) > 5 else ""
                err = OutOfBoundsError(f"{gv.name_hint}: out of bounds memory access, provable before running:\n"
                                       f"{lines}{more}")
                err.locations = tuple(errors)
                raise err
        return mod

    return check
