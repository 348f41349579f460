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

The matmul and softmax kernels are recognised with ``relax.dpl`` patterns; the region is a
search of ``FuseOps``' graph, not a pattern: it spans any number of kernels and must stay convex.

::

    mod = relax.transform.FuseAttention()(relax.transform.AnnotateTIROpPattern()(mod))  # then FuseTIR
"""

from __future__ import annotations

import math
from typing import Any

from ...ir.module import IRModule
from ...transform import PassContext, module_pass
from ..dpl import get_var2val, is_gv, is_op, wildcard
from ..expr import Function
from ..op.registry import OpPattern
from ..struct_info import TensorStructInfo
from .fuse_ops import MAX_FUSED_OPS, _Graph, _Node, _Partitioner, fuse_groups, fusion_graph

__all__ = ["FuseAttention", "MAX_SCORES"]

#: fuse when the score matrix (all heads) has at most this many elements
MAX_SCORES = 64 * 1024
#: at most this many kernels between the two matmuls
MAX_REGION = 48

#: the kernels a region is found by: R.call_tir of a PrimFunc whose name says what it computes
_KERNELS = {kind: is_op("relax.call_tir")(is_gv(kind), wildcard(), varg_default_wildcard=True)
            for kind in ("matmul", "softmax")}


def _kernel_kinds(targets: list[Function]) -> dict[int, str]:
    """id(binding var) -> "matmul", "softmax" or "": which kernel the binding calls."""
    var2val: dict[Any, Any] = {}
    for f in targets:
        var2val.update(get_var2val(f))
    return {id(var): next((kind for kind, p in _KERNELS.items() if p.match(value)), "")
            for var, value in var2val.items()}


def _reachable(start: _Node) -> set[int]:
    seen, stack = set(), [start]
    while stack:
        n = stack.pop()
        for user, _ in n.outputs:
            if user.index not in seen:
                seen.add(user.index)
                stack.append(user)
    return seen


def _small_scores(node: _Node) -> bool:
    sinfo = getattr(node.ref, "struct_info", None)
    if not isinstance(sinfo, TensorStructInfo) or sinfo.shape_values is None:
        return False
    dims = [getattr(d, "value", None) for d in sinfo.shape_values]
    return None not in dims and math.prod(dims) <= MAX_SCORES


def attention_regions(graph: _Graph, kinds: dict[int, str], groups: list | None = None) -> list[list[_Node]]:
    """Each attention region (``M1`` ... ``M2``, see the module docstring) as graph nodes."""
    order = graph.order
    kind = {n.index: kinds.get(id(n.ref), "") for n in order}
    is_matmul = {i for i, k in kind.items() if k == "matmul"}
    regions = []
    for m1 in order:
        if m1.index not in is_matmul or not _small_scores(m1):
            continue
        after = _reachable(m1)
        # the first matmul downstream with a softmax between
        for m2_index in sorted(after & is_matmul):
            m2 = order[m2_index]
            between = {i for i in after if i != m2_index and m2_index in _reachable(order[i])}
            if any(kind[i] == "softmax" for i in between):
                break
        else:
            continue
        region = between | {m1.index, m2.index}
        if len(region) > MAX_REGION or (region & is_matmul) != {m1.index, m2.index}:
            continue
        if any(order[i].extern_ref or order[i].pattern == OpPattern.OPAQUE for i in region - {m2.index}):
            continue  # a value leaves the block, or an opaque binding inside
        if any(u.index not in region for i in region - {m2.index} for u, _ in order[i].outputs):
            continue  # a value inside is read outside
        regions.append([order[i] for i in sorted(_with_layout_producers(order, region, groups))])
    return regions


def _with_layout_producers(order: list[_Node], region: set[int], groups: list | None) -> set[int]:
    """``region`` plus the injective kernels (reshape, transpose, split: the heads taken apart)
    whose every use is inside it, repeatedly: the fused kernel then reads Q, K and V where
    they are, and the per-head copies are never written.  A kernel FuseOps grouped with a
    matmul (the QKV projection's bias add) stays out: that matmul keeps its own schedule."""
    region = set(region)

    def injective_group(n: _Node) -> bool:
        return groups is None or groups[n.index].root().pattern <= OpPattern.INJECTIVE

    changed = True
    while changed:
        changed = False
        for n in order:
            if n.index in region or n.extern_ref or n.pattern > OpPattern.INJECTIVE or not n.outputs \
                    or not injective_group(n):
                continue
            if all(u.index in region for u, _ in n.outputs):
                region.add(n.index)
                changed = True
    return region


def _convex(graph: _Graph, groups: list, members: set[int]) -> bool:
    """No path leaves ``members`` and comes back into them."""
    order = graph.order
    outside = [u for i in members for u, _ in order[i].outputs if u.index not in members]
    seen: set[int] = set()
    stack = list(outside)
    while stack:
        n = stack.pop()
        if n.index in seen:
            continue
        seen.add(n.index)
        if n.index in members:
            return False
        stack.extend(u for u, _ in n.outputs)
    return True


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
        kinds = _kernel_kinds([f for _, f in targets])
        for region in attention_regions(graph, kinds, groups):
            roots = {id(groups[n.index].root()) for n in region}
            members = {k for k, g in enumerate(groups) if id(g.root()) in roots}
            if not _convex(graph, groups, members):
                continue
            target = groups[region[-1].index].root()
            for n in region:
                root = groups[n.index].root()
                if root is not target:
                    target.num_nodes += root.num_nodes
                    root.parent = target
        return fuse_groups(mod, graph, groups, targets)
