"""ConvertToDataflow: runs of pure bindings outside dataflow blocks become dataflow blocks.

::

    gv  = R.add(x, y)              with R.dataflow():
    gv1 = R.multiply(gv, y)   ->       lv = R.add(x, y)
    return gv1                         gv1 = R.multiply(lv, y)
                                       R.output(gv1)
                                   return gv1

A binding is pure when it binds a plain value, a tuple, a tuple item, a ``match_cast``, a
call of a pure operator (``FPurity``), or a call of a pure Relax function; ``If``,
nested functions and impure calls end a run.  Each run of at least ``min_size``
bindings becomes a DataflowBlock; the variables only it uses become DataflowVars (same
names), those used after it stay Vars (the block's outputs).  Existing dataflow blocks
are kept as they are.

::

    mod = relax.transform.ConvertToDataflow(min_size=2)(mod)
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ...ir.module import IRModule
from ...transform import PassContext, module_pass
from ..analysis.purity import is_impure_call
from ..expr import (
    BindingBlock,
    Call,
    DataflowBlock,
    DataflowVar,
    Function,
    MatchCast,
    SeqExpr,
    Tuple,
    TupleGetItem,
    Var,
    is_leaf,
)
from ..expr_functor import ExprMutator, ExprVisitor
from ._util import map_functions

__all__ = ["ConvertToDataflow"]


class _UseCounter(ExprVisitor):
    def __init__(self) -> None:
        self.count: Counter = Counter()

    def visit_var_(self, op: Var) -> None:
        self.count[op] += 1

    def visit_dataflow_var_(self, op: DataflowVar) -> None:
        self.count[op] += 1


def _uses(expr: Any) -> Counter:
    c = _UseCounter()
    c.visit_expr(expr)
    return c.count


def _is_pure(binding: Any, mod: IRModule) -> bool:
    value = binding.value
    if isinstance(binding, MatchCast):
        return is_leaf(value)
    if isinstance(value, Function):
        return False
    if is_leaf(value) or isinstance(value, (Tuple, TupleGetItem)):
        return True
    if isinstance(value, Call):
        return not is_impure_call(value, mod)
    return False


class _Converter(ExprMutator):
    def __init__(self, mod: IRModule, min_size: int, total_uses: Counter) -> None:
        super().__init__(mod)
        self.mod = mod
        self.min_size = min_size
        self.total_uses = total_uses
        self.locals: set[Var] = set()  # variables to become DataflowVars

    def visit_seq_expr_(self, op: SeqExpr) -> Any:
        blocks = []
        for block in op.blocks:
            if isinstance(block, DataflowBlock):
                blocks.append(self.visit_binding_block(block))
            else:
                blocks.extend(self._split(block))
        self.builder_.begin_binding_block()
        try:
            body = self.visit_expr(op.body)
        finally:
            prologue = self.builder_.end_block()
        if prologue.bindings:
            blocks.append(prologue)
        kept = [b for b in blocks if b.bindings]
        if len(kept) == len(op.blocks) and all(a is b for a, b in zip(kept, op.blocks)) and body is op.body:
            return op
        return SeqExpr(tuple(kept), body)

    def _split(self, block: BindingBlock) -> list[BindingBlock]:
        runs: list[tuple[bool, list]] = []
        for b in block.bindings:
            pure = _is_pure(b, self.mod)
            if runs and runs[-1][0] == pure:
                runs[-1][1].append(b)
            else:
                runs.append((pure, [b]))
        out: list[BindingBlock] = []
        pending: list = []  # impure bindings and short runs, kept in one binding block
        for pure, bindings in runs:
            if pure and len(bindings) >= self.min_size:
                if pending:
                    out.append(self._emit_block(pending, dataflow=False))
                    pending = []
                inside = Counter()
                for b in bindings:
                    inside.update(_uses(b.value))
                for b in bindings:
                    if self.total_uses[b.var] == inside[b.var]:
                        self.locals.add(b.var)
                out.append(self._emit_block(bindings, dataflow=True))
            else:
                pending.extend(bindings)
        if pending:
            out.append(self._emit_block(pending, dataflow=False))
        if len(out) == 1 and type(out[0]) is type(block) and len(out[0].bindings) == len(block.bindings) \
                and all(a is b for a, b in zip(out[0].bindings, block.bindings)):
            return [block]
        return out

    def _emit_block(self, bindings: list, dataflow: bool) -> BindingBlock:
        if dataflow:
            self.builder_.begin_dataflow_block()
        else:
            self.builder_.begin_binding_block()
        try:
            for b in bindings:
                self.visit_binding(b)
        finally:
            new = self.builder_.end_block()
        return new

    def visit_var_def_(self, var: Var) -> Var:
        if var in self.locals:
            new = DataflowVar(var.name, var.struct_info)
            self.set_var_remap(var, new)
            return new
        return var


def _rewrite(func: Function, mod: IRModule, min_size: int) -> Function:
    new = _Converter(mod, min_size, _uses(func)).visit_expr(func)
    return new


@module_pass(opt_level=0, name="ConvertToDataflow")
class ConvertToDataflow:
    """Wrap runs of at least ``min_size`` pure bindings in dataflow blocks:
    ``ConvertToDataflow(min_size=2)(mod)``."""

    def __init__(self, min_size: int = 2):
        if min_size < 1:
            raise ValueError(f"ConvertToDataflow: min_size must be at least 1, got {min_size}")
        self.min_size = min_size

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, lambda f, m: _rewrite(f, m, self.min_size))
