"""``tvm.relax.testing.transform``: passes TVM's tests use to check the IR survives a rewrite."""

from __future__ import annotations

from typing import Any

from ...transform import module_pass
from ..analysis.dataflow_alias import dataflow_alias_analysis, dataflow_liveness_analysis
from ..expr import Function
from ..expr_functor import PyExprMutator

__all__ = ["ApplyEmptyCppMutator", "dataflow_liveness_analysis", "dataflow_alias_analysis",
           "dataflow_inplace_analysis", "dataflow_single_inplace_call"]

_NO_INPLACE = ("minitvm has the liveness and alias analyses of TVM's DataflowUseInplaceCalls "
               "(dataflow_liveness_analysis, dataflow_alias_analysis) but not the in-place rewrite itself")


def dataflow_inplace_analysis(block: Any, inputs: Any, mod: Any) -> Any:
    """TVM's in-place candidates of a block: not in minitvm (raises NotImplementedError)."""
    raise NotImplementedError(f"dataflow_inplace_analysis: {_NO_INPLACE}")


def dataflow_single_inplace_call(mod: Any, call: Any, inplace_indices: Any) -> Any:
    """TVM's rewrite of one call to its in-place form: not in minitvm (raises NotImplementedError)."""
    raise NotImplementedError(f"dataflow_single_inplace_call: {_NO_INPLACE}")


def ApplyEmptyCppMutator():  # noqa: N802 - TVM's name
    """A pass that runs a mutator which changes nothing over every Relax function (TVM's C++
    ``ExprMutator`` with no overrides): the module must come out structurally the same."""

    @module_pass(opt_level=0, name="ApplyEmptyCppMutator")
    def apply(mod, _ctx):
        out = mod
        for gv, func in mod.functions.items():
            if isinstance(func, Function):
                out = out.with_function(gv.name_hint, PyExprMutator(mod).visit_expr(func))
        return out

    return apply
