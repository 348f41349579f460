"""CombineParallelMatmul: matmuls that share their left operand become one matmul with the
right operands concatenated, its result split back (TVM's pass of the same name).

    y0 = matmul(x, w0); y1 = matmul(x, w1)
      ->  w = concat((w0, w1), axis=-1); y = matmul(x, w); parts = split(y, [n0], axis=-1)
          y0 = parts[0]; y1 = parts[1]

One larger matmul keeps the cores busier than several small ones (the q/k/v projections of
attention are the classic case).  When every branch adds a bias (``add(matmul, b)``) or
applies the same activation (relu, gelu, gelu_tanh, silu), those are combined too: the biases
concatenated, the activation applied once before the split.  Right operands are grouped by
rank and must agree in their batch dimensions; of the right operands whose last dimension is
symbolic, only one (placed last) joins a group, since the split points must be constants.
``check(lhs, rhs_list, bias_list, bindings)`` may refuse a group.  Branches whose operands
are bound after the first of them in the block are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ...arith import Analyzer
from ...ir.module import IRModule
from ...ir.op import Op
from ...tir.expr import IntImm
from ...transform import PassContext, module_pass
from ..analysis import get_var2val
from ..dpl.graph import _uses  # the pattern matcher's count of each variable's reads
from ..expr import Call, DataflowBlock, Expr, Function, TupleGetItem, Var, VarBinding, struct_info_of
from ..expr_functor import ExprMutator
from ..op import binary
from ..op.linear_algebra import matmul
from ..op.manipulate import concat, split
from ..op.nn import activation
from ._util import map_functions

__all__ = ["CombineParallelMatmul"]

_ACTIVATIONS = {"relax.nn.relu": activation.relu, "relax.nn.gelu": activation.gelu,
                "relax.nn.gelu_tanh": activation.gelu_tanh, "relax.nn.silu": activation.silu}


@dataclass
class _Branch:
    matmul: VarBinding
    bias: VarBinding | None = None  # add(matmul, b)
    act: VarBinding | None = None  # activation(add or matmul)

    @property
    def rhs(self) -> Expr:
        return self.matmul.value.args[1]

    @property
    def bias_value(self) -> Expr | None:
        return None if self.bias is None else self.bias.value.args[1]


def _is_call(value: Any, name: str) -> bool:
    return isinstance(value, Call) and isinstance(value.op, Op) and value.op.name == name


def _branches(block: DataflowBlock, uses: dict) -> dict[Var, list[_Branch]]:
    """The matmul branches of ``block`` by left operand, each with the bias add and the
    activation that alone use it."""
    users: dict[Var, VarBinding] = {}
    for b in block.bindings:
        if isinstance(b, VarBinding) and isinstance(b.value, Call):
            for a in b.value.args[:1]:
                if isinstance(a, Var) and uses.get(a) == 1:
                    users[a] = b
    groups: dict[Var, list[_Branch]] = {}
    for b in block.bindings:
        if not (isinstance(b, VarBinding) and _is_call(b.value, "relax.matmul") and isinstance(b.value.args[0], Var)):
            continue
        branch = _Branch(b)
        nxt = users.get(b.var)
        if nxt is not None and _is_call(nxt.value, "relax.add") and nxt.value.args[0] is b.var:
            branch.bias, nxt = nxt, users.get(nxt.var)
        if nxt is not None and any(_is_call(nxt.value, a) for a in _ACTIVATIONS):
            branch.act = nxt
        groups.setdefault(b.value.args[0], []).append(branch)
    return groups


def _uniform(branches: list[_Branch]) -> tuple[bool, str | None]:
    """Whether every branch adds a bias of one rank, and the one activation all apply."""
    bias = all(br.bias is not None for br in branches) and \
        len({struct_info_of(br.bias_value).ndim for br in branches}) == 1
    acts = {br.act.value.op.name if br.act is not None else None for br in branches}
    act = acts.pop() if len(acts) == 1 else None
    if act is not None and not bias and any(br.bias is not None for br in branches):
        act = None  # the activation reads the bias add, which is not combined
    return bias, act


def _groups(branches: list[_Branch]) -> list[list[_Branch]]:
    """Branches grouped by the rank of their right operands, batch dimensions agreeing,
    static widths first and at most one symbolic width (last)."""
    by_rank: dict[int, list[_Branch]] = {}
    for br in branches:
        sinfo = struct_info_of(br.rhs)
        if getattr(sinfo, "shape_values", None) is None:
            continue
        by_rank.setdefault(len(sinfo.shape_values), []).append(br)
    out, analyzer = [], Analyzer()
    for rank, group in by_rank.items():
        first = struct_info_of(group[0].rhs).shape_values
        if any(not analyzer.can_prove_equal(first[i], struct_info_of(br.rhs).shape_values[i])
               for br in group for i in range(rank - 2)):
            continue
        static = [br for br in group if isinstance(struct_info_of(br.rhs).shape_values[-1], IntImm)]
        dynamic = [br for br in group if br not in static]
        group = static + dynamic[:1]
        if len(group) > 1:
            out.append(group)
    return out


class _Combiner(ExprMutator):
    def __init__(self, mod: IRModule, func: Function, check: Callable) -> None:
        super().__init__(mod)
        self.check = check
        self.var2val = get_var2val(func)
        self.uses = _uses(func)
        self.chunks: dict[Var, Var] = {}  # the first output of a combined group -> its split

    def visit_dataflow_block_(self, block: DataflowBlock) -> Any:
        position = {b.var: i for i, b in enumerate(block.bindings)}
        plan: dict[Var, Any] = {}  # first replaced binding -> the combined value; others -> item
        dropped: set = set()
        for lhs, branches in _branches(block, self.uses).items():
            bias, act = _uniform(branches)
            for group in _groups(branches):
                self._plan(lhs, group, bias, act, position, plan, dropped)
        if not plan:
            return super().visit_dataflow_block_(block)
        self.builder_.begin_dataflow_block()
        try:
            for b in block.bindings:
                if b.var in dropped:
                    continue
                if b.var in plan:
                    self._emit_planned(b, plan[b.var])
                else:
                    self.visit_binding(b)
        finally:
            new = self.builder_.end_block()
        return new

    def _plan(self, lhs: Var, group: list[_Branch], bias: bool, act: str | None, position: dict,
              plan: dict, dropped: set) -> None:
        rhs = [br.rhs for br in group]
        biases = [br.bias_value for br in group] if bias else []
        if not self.check(lhs, rhs, biases, self.var2val):
            return
        # each branch's last combined step: an activation or bias not combined stays in place,
        # reading the split's piece
        outs = [((br.act if act is not None else None) or (br.bias if bias else None) or br.matmul)
                for br in group]
        first = min(position[o.var] for o in outs)
        operands = [lhs] + rhs + biases
        if any(isinstance(v, Var) and position.get(v, -1) >= first for v in operands):
            return  # an operand is computed after the first output: leave the group alone
        if any(o.var in plan for o in outs):
            return
        rdim = len(struct_info_of(rhs[0]).shape_values)
        combined = matmul(lhs, concat(rhs, rdim - 1), struct_info_of(group[0].matmul.var).dtype)
        if bias:
            combined = binary.add(combined, concat(biases, struct_info_of(biases[0]).ndim - 1))
        if act is not None:
            combined = _ACTIVATIONS[act](combined)
        sections, edge = [], 0
        for br in group[:-1]:
            edge += struct_info_of(br.rhs).shape_values[-1].value
            sections.append(edge)
        axis = max(struct_info_of(lhs).ndim, rdim) - 1
        chunks = split(combined, sections, axis)
        first_var = min(outs, key=lambda o: position[o.var]).var
        plan[first_var] = ("combined", chunks, [(o.var, i) for i, o in enumerate(outs)])
        for i, o in enumerate(outs):
            if o.var is not first_var:
                plan[o.var] = ("item", first_var, i)
            for part in (group[i].matmul, group[i].bias if bias else None):
                if part is not None and part is not o:
                    dropped.add(part.var)

    def _emit_planned(self, binding: VarBinding, entry: Any) -> None:
        if entry[0] == "combined":
            chunks = self.builder_.emit(entry[1])
            self.chunks[binding.var] = chunks
            index = next(i for v, i in entry[2] if v is binding.var)
        else:
            chunks, index = self.chunks[entry[1]], entry[2]
        self.builder_.emit_normalized(VarBinding(binding.var, self.builder_.normalize(TupleGetItem(chunks, index))))


@module_pass(opt_level=0, name="CombineParallelMatmul")
class CombineParallelMatmul:
    """``CombineParallelMatmul(check=None)``: see the module docstring; ``check(lhs, rhs,
    bias, bindings) -> bool`` may refuse a group of branches."""

    def __init__(self, check: Callable | None = None) -> None:
        self.check = check or (lambda *_: True)

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, lambda func, m: _Combiner(m, func, self.check).visit_expr(func))
