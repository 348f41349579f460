"""TopologicalSort: reorder the bindings of each dataflow block by a walk of the data
dependencies (TVM's ``relax.transform.TopologicalSort``).

``order`` is ``"depth-first"`` or ``"breadth-first"``; ``direction`` ``"from-inputs"`` walks
from the function's parameters (and the bindings that read none) toward the outputs,
``"from-outputs"`` walks back from the returned value (and the bindings nothing reads) and
emits the reverse.  Ties are broken by the existing order, as TVM's pass does.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from ...ir.module import IRModule
from ...transform import PassContext, module_pass
from ..expr import DataflowBlock, DataflowVar, Function, SeqExpr, Var
from ..expr_functor import ExprVisitor
from ._util import map_functions

__all__ = ["TopologicalSort"]

_IN, _OUT = "<inputs>", "<outputs>"  # the two sentinel nodes of the dependency graph


class _Deps(ExprVisitor):
    """Edges between the variables of one function: ``down[x]`` the bindings reading ``x``,
    ``up[x]`` those ``x``'s binding reads (in the order met, repeats kept)."""

    def __init__(self) -> None:
        self.order: list[Any] = []
        self.down: dict[Any, list[Any]] = {}
        self.up: dict[Any, list[Any]] = {}
        self.known: set[int] = set()
        self.current: Any = _OUT

    def edge(self, src: Any, dst: Any) -> None:
        self.down.setdefault(src, []).append(dst)
        self.up.setdefault(dst, []).append(src)

    def visit_function_(self, op: Function) -> None:
        for p in op.params:
            self.known.add(id(p))
            self.edge(_IN, p)
        self.visit_expr(op.body)

    def visit_binding(self, binding: Any) -> None:
        saved, self.current = self.current, binding.var
        self.known.add(id(binding.var))
        self.order.append(binding.var)
        super().visit_binding(binding)
        self.current = saved

    def visit_var_(self, op: Var) -> None:
        if id(op) in self.known:
            self.edge(op, self.current)

    def visit_dataflow_var_(self, op: DataflowVar) -> None:
        self.visit_var_(op)

    @classmethod
    def collect(cls, func: Function) -> _Deps:
        deps = cls()
        deps.visit_expr(func)
        roots = [v for v in deps.order if v not in deps.up]
        leaves = [v for v in deps.order if v not in deps.down]
        for v in roots:
            deps.edge(_IN, v)
        for v in reversed(leaves):  # prepended, so the earliest unused binding comes first
            deps.up.setdefault(_OUT, []).insert(0, v)
            deps.down.setdefault(v, []).insert(0, _OUT)
        return deps


def _sort_block(block: DataflowBlock, forward: dict, backward: dict, depth_first: bool,
                from_outputs: bool) -> DataflowBlock:
    to_emit = {b.var: b for b in block.bindings}
    work = deque([_OUT if from_outputs else _IN])
    visited: set[Any] = set()
    new = []
    while work:
        node = work.pop() if depth_first else work.popleft()
        if node in to_emit:
            new.append(to_emit.pop(node))
        visited.add(node)
        for nxt in forward.get(node, ()):
            if nxt not in visited and all(p in visited for p in backward[nxt]):
                work.append(nxt)
    if to_emit:
        raise RuntimeError(f"TopologicalSort: bindings {[v.name_hint for v in to_emit]} were not reached "
                           "from the block's inputs and outputs")
    if from_outputs:
        new.reverse()
    return DataflowBlock(tuple(new))


def _sort_function(func: Function, depth_first: bool, from_outputs: bool) -> Function:
    deps = _Deps.collect(func)
    # TVM reverses every user list for a depth-first walk: a stack then pops users in order
    down = {k: v[::-1] for k, v in deps.down.items()} if depth_first else deps.down
    forward, backward = (deps.up, down) if from_outputs else (down, deps.up)

    body = func.body
    if isinstance(body, SeqExpr):
        blocks = tuple(_sort_block(b, forward, backward, depth_first, from_outputs)
                       if isinstance(b, DataflowBlock) else b for b in body.blocks)
        if any(a is not b for a, b in zip(blocks, body.blocks)):
            body = SeqExpr(blocks, body.body)
    if body is func.body:
        return func
    return Function(func.params, body, func.ret_struct_info, func.is_pure, func.attrs)


@module_pass(opt_level=0, name="TopologicalSort")
class TopologicalSort:
    """``TopologicalSort(order="depth-first", direction="from-inputs")``."""

    def __init__(self, order: str = "depth-first", direction: str = "from-inputs") -> None:
        if order not in ("depth-first", "breadth-first"):
            raise ValueError(f"TopologicalSort: order must be 'depth-first' or 'breadth-first', not {order!r}")
        if direction not in ("from-inputs", "from-outputs"):
            raise ValueError(f"TopologicalSort: direction must be 'from-inputs' or 'from-outputs', "
                             f"not {direction!r}")
        self.depth_first = order == "depth-first"
        self.from_outputs = direction == "from-outputs"

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, lambda f, m: _sort_function(f, self.depth_first, self.from_outputs))
