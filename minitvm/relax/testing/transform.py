"""``tvm.relax.testing.transform``: passes TVM's tests use to check the IR survives a rewrite."""

from __future__ import annotations

from ...transform import module_pass
from ..expr import Function
from ..expr_functor import PyExprMutator

__all__ = ["ApplyEmptyCppMutator"]


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
