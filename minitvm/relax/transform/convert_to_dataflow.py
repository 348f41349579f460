"""ConvertToDataflow: runs of dataflow-safe bindings outside dataflow blocks become
dataflow blocks, as TVM's pass does.

::

    gv  = R.add(x, y)              with R.dataflow():
    gv1 = R.multiply(gv, y)   ->       lv = R.add(x, y)
    return gv1                         gv1 = R.multiply(lv, y)
                                       R.output(gv1)
                                   return gv1

Every binding may sit in a dataflow block except an ``If`` and a call with side effects
(an impure operator, ``R.call_packed``, a call of an impure function); those end a run.  A
run of at least ``min_size`` bindings becomes a DataflowBlock; an existing dataflow block
is kept whatever its size and absorbs the runs right before and after it.  Branches of an
``If`` and local functions are converted the same way.  CanonicalizeBindings runs
afterwards (as in TVM), so the variables used only inside their new block become
DataflowVars (and trivial bindings and constants are folded).

::

    mod = relax.transform.ConvertToDataflow(min_size=2)(mod)
"""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...transform import PassContext, module_pass
from ..analysis.purity import is_impure_call
from ..expr import (
    BindingBlock,
    Call,
    DataflowBlock,
    Function,
    If,
    SeqExpr,
)
from ..expr_functor import ExprMutator
from ._util import map_functions
from .canonicalize_bindings import canonicalize_bindings

__all__ = ["ConvertToDataflow"]


class _Extractor(ExprMutator):
    def __init__(self, mod: IRModule, min_size: int) -> None:
        super().__init__(mod)
        self.mod = mod
        self.min_size = min_size

    def _dataflow_safe(self, value: Any) -> bool:
        return not isinstance(value, If) and not (isinstance(value, Call) and is_impure_call(value, self.mod))

    def visit_seq_expr_(self, op: SeqExpr) -> Any:
        visited = [self.visit_binding_block(b) for b in op.blocks]
        self.builder_.begin_binding_block()
        try:
            body = self.visit_expr(op.body)
        finally:
            prologue = self.builder_.end_block()
        if prologue.bindings:
            visited.append(prologue)
        changed = body is not op.body or len(visited) != len(op.blocks) \
            or any(a is not b for a, b in zip(visited, op.blocks))

        blocks: list[BindingBlock] = []
        plain: list = []     # bindings kept out of dataflow blocks, before `run`
        run: list = []       # the current run of dataflow-safe bindings
        existing: list[DataflowBlock | None] = [None]  # the input dataflow block `run` started from

        def end_run() -> None:
            nonlocal plain, run, changed
            if not run:
                return
            if len(run) < self.min_size and existing[0] is None:
                plain += run  # too short for a block of its own
            else:
                blocks.append(BindingBlock(tuple(plain)))
                blocks.append(DataflowBlock(tuple(run)))
                plain = []
                changed = changed or existing[0] is None or len(existing[0].bindings) != len(run)
            run = []
            existing[0] = None

        for block in visited:
            if isinstance(block, DataflowBlock):
                run += block.bindings
                existing[0] = block
                continue
            for binding in block.bindings:
                if self._dataflow_safe(binding.value):
                    run.append(binding)
                else:
                    end_run()
                    plain.append(binding)
        end_run()
        blocks.append(BindingBlock(tuple(plain)))
        if not changed:
            return op
        return SeqExpr(tuple(b for b in blocks if b.bindings), body)


def _convert(func: Function, mod: IRModule, min_size: int) -> Function:
    return _Extractor(mod, min_size).visit_expr(func)


@module_pass(opt_level=0, name="ConvertToDataflow")
class ConvertToDataflow:
    """Wrap runs of at least ``min_size`` dataflow-safe bindings in dataflow blocks, then
    canonicalize the bindings: ``ConvertToDataflow(min_size=2)(mod)``."""

    def __init__(self, min_size: int = 2):
        if min_size < 1:
            raise ValueError(f"ConvertToDataflow: min_size must be at least 1, got {min_size}")
        self.min_size = min_size

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        converted = map_functions(mod, lambda f, m: _convert(f, m, self.min_size))
        return map_functions(converted, canonicalize_bindings)
