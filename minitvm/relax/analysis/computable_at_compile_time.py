"""Which variables of a function are computable at compile time (TVM's
``relax.analysis.computable_at_compile_time``).

The parameters after the ``num_input`` attribute are model weights, known before the first
call; a binding is known too when every Relax variable and every symbolic (TIR) variable its
value reads is known.  A known variable's struct info makes the symbolic variables it defines
known (``B: R.Tensor(["m"])`` makes ``m`` known), so ``R.ones([m])`` is known but
``R.ones([n])`` is not while ``n`` comes only from a run-time input.  Without ``num_input``
every parameter is a run-time input and nothing is known.
"""

from __future__ import annotations

from ..expr import Function, Var
from ..expr_functor import ExprVisitor
from .struct_info_analysis import definable_tir_vars_in_struct_info
from .symbolic_vars import free_symbolic_vars
from .vars import free_vars

__all__ = ["computable_at_compile_time"]


class _CompileTimeCollector(ExprVisitor):
    def __init__(self) -> None:
        self.known: set[int] = set()  # ids of known Relax and TIR variables
        self.computable: list[Var] = []

    def mark_known(self, var: Var) -> None:
        if id(var) not in self.known:
            self.known.add(id(var))
            self.computable.append(var)
        for tir_var in definable_tir_vars_in_struct_info(var.struct_info):
            self.known.add(id(tir_var))

    def visit_function_(self, op: Function) -> None:
        num_input = (op.attrs or {}).get("num_input")
        if num_input is not None:
            for param in op.params[int(num_input):]:
                self.mark_known(param)
        super().visit_function_(op)

    def visit_binding(self, binding) -> None:
        value = binding.value
        reads = [*free_vars(value), *free_symbolic_vars(value)]
        if all(id(v) in self.known for v in reads):
            self.mark_known(binding.var)
        super().visit_binding(binding)


def computable_at_compile_time(func: Function) -> list[Var]:
    """The parameters and bound variables of ``func`` whose values can be computed before
    run time, in order of definition."""
    if not isinstance(func, Function):
        raise TypeError(f"computable_at_compile_time: expected a relax.Function, got {type(func).__name__}")
    collector = _CompileTimeCollector()
    collector.visit_expr(func)
    return collector.computable
