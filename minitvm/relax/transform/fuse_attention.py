"""FuseAttention: ``FuseOps``, and then ``softmax(Q·Kᵀ)·V`` of short sequences as one kernel.

``FuseOps`` never puts two reductions in one group: a matmul may take elementwise work after
it, but the softmax (two row reductions) and the second matmul each start a group of their own.
For attention over a short sequence that leaves four or five kernels -- ``Q·Kᵀ`` (+ scale), the
mask, the softmax, the guard torch adds for fully masked rows, ``·V`` -- each over a few hundred
floats, so the time goes to calling kernels and allocating their outputs, not to arithmetic.

This pass groups as ``FuseOps`` does, then merges every group on the way from the first matmul
to the second: the *attention region*, all kernels reachable from a matmul ``M1`` that lead to
a matmul ``M2`` with a softmax among them, plus the injective kernels before it whose results
only it reads (the reshapes and transposes that split Q, K and V into heads).  ``FuseTIR``
then makes the region one PrimFunc in which the scores live in a scratch buffer of
``heads x seq x seq`` floats, never in a tensor of the graph (no materialized transposes or
score matrices between kernels).

It applies when the scores are small (``MAX_SCORES`` floats: short sequences), the region has no
third matmul and nothing outside the region reads a value inside it but ``M2``'s result; a
merge that would make the group non-convex (a path leaving it and coming back) is skipped.
Long sequences keep separate kernels: there the matmuls' own schedules matter more.

The region is a ``relax.dpl`` pattern (:func:`attention_pattern`): ``is_region`` from ``M1`` to
``M2`` over kernels that are neither matmuls nor opaque, with a softmax among them, taking in
the injective producers, and ``only_used_by(M2)``.  ``FuseOps``' graph says which kernel is
opaque or injective; merging whole ``FuseOps`` groups must leave the merged set convex, which
``relax.dpl.is_convex`` checks.

::

    mod = relax.transform.FuseAttention()(relax.transform.AnnotateTIROpPattern()(mod))  # then FuseTIR
"""

from __future__ import annotations

import math
from typing import Any, Callable

from ...ir.module import IRModule
from ...transform import PassContext, module_pass
from ..dpl import DFPattern, PatternContext, RegionPattern, get_var2val, is_convex, is_gv, is_op, is_region, wildcard
from ..expr import DataflowBlock, struct_info_of
from ..expr_functor import ExprVisitor
from ..op.registry import OpPattern
from ..struct_info import TensorStructInfo
from .fuse_ops import MAX_FUSED_OPS, _Graph, _Node, _Partitioner, fuse_groups, fusion_graph

__all__ = ["FuseAttention", "MAX_SCORES", "attention_pattern"]

#: fuse when the score matrix (all heads) has at most this many elements.  The fused kernel runs
#: serially with every intermediate materialized (about 6 ns per score), the separate kernels get
#: the tiled matmul and row schedules (about 1.2 ns per score) plus a few calls of 2-4 us: fusing
#: pays below a few thousand scores.  At 64K, GPT-2-mini's and BERT-mini's 4 x 128 x 128 were
#: fused, and their attention took 380 us a layer against about 80 us as separate kernels
MAX_SCORES = 4 * 1024
#: at most this many kernels from the first matmul to the second, both included
MAX_REGION = 48


def _kernel(kind: str) -> DFPattern:
    """R.call_tir of a PrimFunc whose name says what it computes ("matmul", "softmax")."""
    return is_op("relax.call_tir")(is_gv(kind), wildcard(), varg_default_wildcard=True)


def _small_scores(call: Any) -> bool:
    sinfo = struct_info_of(call)
    if not isinstance(sinfo, TensorStructInfo) or sinfo.shape_values is None:
        return False
    dims = [getattr(d, "value", None) for d in sinfo.shape_values]
    return None not in dims and math.prod(dims) <= MAX_SCORES


def attention_pattern(fusible: Callable[[Any], bool], layout: Callable[[Any], bool]
                      ) -> tuple[PatternContext, RegionPattern, DFPattern]:
    """The attention region (module docstring) as a context, its region and ``M2``.
    ``fusible(call)``: the kernel is not opaque; ``layout(call)``: an injective kernel that
    may join (a reshape or transpose of the heads)."""
    with PatternContext() as ctx:
        m1 = _kernel("matmul").such_that(fusible).such_that(_small_scores)
        m2 = _kernel("matmul")
        region = is_region(m1, m2, path=~_kernel("matmul") & wildcard().such_that(fusible),
                           contains=_kernel("softmax"), inputs=wildcard().such_that(layout), max_len=MAX_REGION - 2)
        region.only_used_by(m2)  # nothing but M2 reads M1 or what lies between: one kernel computes them
    return ctx, region, m2


class _DataflowBlocks(ExprVisitor):
    """Every dataflow block below an expression (branches and closures too, as FuseOps' graph)."""

    def __init__(self) -> None:
        self.found: list[DataflowBlock] = []

    def visit_dataflow_block_(self, block: DataflowBlock) -> None:
        self.found.append(block)
        super().visit_dataflow_block_(block)


def _kernel_tests(targets: list, graph: _Graph, groups: list) -> tuple[Callable[[Any], bool], Callable[[Any], bool]]:
    """``fusible`` and ``layout`` for :func:`attention_pattern`, read from FuseOps' graph."""
    node_of_value = {}  # a binding's value -> its node
    for _, f in targets:
        node_of_value.update({id(val): graph.node_of[id(var)] for var, val in get_var2val(f).items()})

    def fusible(call: Any) -> bool:
        node = node_of_value.get(id(call))
        return node is not None and node.pattern != OpPattern.OPAQUE

    def layout(call: Any) -> bool:  # a kernel FuseOps grouped with a matmul keeps that matmul's schedule
        node = node_of_value.get(id(call))
        return node is not None and max(node.pattern, groups[node.index].root().pattern) <= OpPattern.INJECTIVE

    return fusible, layout


def _merge(groups: list, nodes: list[_Node]) -> None:
    """The groups of ``nodes`` made one, under the group of the last."""
    target = groups[nodes[-1].index].root()
    for n in nodes:
        root = groups[n.index].root()
        if root is not target:
            target.num_nodes += root.num_nodes
            root.parent = target


@module_pass(opt_level=0, name="FuseAttention")
class FuseAttention:
    """``FuseAttention()``: ``FuseOps``' groups, with each short attention region (matmul ...
    softmax ... matmul) merged into one group (see the module docstring)."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        max_depth = int(ctx.config.get("relax.FuseOps.max_depth", MAX_FUSED_OPS))
        targets, graph = fusion_graph(mod)
        if ctx.opt_level == 0:  # as FuseOps: nothing fuses at opt_level 0
            return mod
        groups = _Partitioner(graph, max_depth).partition(ctx.opt_level)
        pattern, region, m2 = attention_pattern(*_kernel_tests(targets, graph, groups))
        blocks = _DataflowBlocks()
        for _, f in targets:
            blocks.visit_expr(f)
        found = [(b, m) for b in blocks.found for m in pattern.iter_match_dfb(b)]  # all found before any merge
        for block, match in found:
            nodes = [graph.node_of[id(v)] for v in (*match[region], match[m2])]
            roots = {id(groups[n.index].root()) for n in nodes}
            members = [graph.order[k].ref for k, g in enumerate(groups) if id(g.root()) in roots]
            if is_convex(block, members):  # whole FuseOps groups join: what they bring must not close a cycle
                _merge(groups, nodes)
        return fuse_groups(mod, graph, groups, targets)
