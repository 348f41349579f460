"""blockize and tensorize: treat a loop nest as one unit of work, then replace that
unit with a hand-written kernel (a "tensor intrinsic").

blockize(loop) wraps the loops from ``loop`` down to a block in an outer block whose
iterators are the *outer part* of the inner block's bindings (``vi = i0 * 16 + i1``
with ``i0`` outside gives an outer iterator over ``i0``).  tensorize then checks that
the outer block computes what an intrinsic's *description* computes, and swaps in
the intrinsic's *implementation*, which sees the block's regions as ``match_buffer``
views.
"""

from __future__ import annotations

from typing import Any

from ...ir import replace
from ...ir.structural import structural_equal
from ..analysis import vars_used
from ..buffer import Buffer, BufferRegion, decl_buffer
from ..expr import Add, IntImm, IterVar, Mul, PrimExpr, Range, Var, const
from ..function import PrimFunc
from ..functor import substitute
from ..stmt import Block, BlockRealize, For, MatchBufferRegion, Stmt
from .compute import _refresh_regions, relax
from .data import BufferSwap
from .error import ScheduleError
from .loops import loop_bounds, simplify
from .tree import replace_stmt

__all__ = ["blockize", "tensorize", "TensorIntrin"]


def _terms(e: PrimExpr) -> list[PrimExpr]:
    return _terms(e.a) + _terms(e.b) if isinstance(e, Add) else [e]


def _split_binding(value: PrimExpr, inner: dict[int, For], bounds: dict) -> tuple[PrimExpr, int, PrimExpr] | None:
    """``value`` as ``outer * factor + inner_part`` with inner_part in [0, factor)."""
    outer_terms, inner_terms = [], []
    for t in _terms(value):
        (inner_terms if vars_used(t) & set(inner) else outer_terms).append(t)
    if not outer_terms:
        return None
    inner_part = inner_terms[0]
    for t in inner_terms[1:]:
        inner_part = inner_part + t
    dom = {k: (lp.min, lp.min + lp.extent - 1) for k, lp in inner.items()}
    b = relax(inner_part, dom)
    if b is None:
        return None
    lo, hi = simplify(b[0], bounds), simplify(b[1], bounds)
    if not (isinstance(lo, IntImm) and lo.value == 0 and isinstance(hi, IntImm)):
        return None
    factor = hi.value + 1
    outer = outer_terms[0]
    for t in outer_terms[1:]:
        outer = outer + t
    outer = simplify(outer, bounds)
    if factor == 1:
        return outer, 1, inner_part
    if isinstance(outer, Mul) and isinstance(outer.b, IntImm) and outer.b.value == factor:
        return outer.a, factor, inner_part
    return None


def blockize(root: Stmt, loop: For) -> tuple[Stmt, str]:
    here = f"cannot blockize loop {loop.loop_var.name}"
    chain: list[For] = [loop]
    while isinstance(chain[-1].body, For):
        chain.append(chain[-1].body)
    realize = chain[-1].body
    if not isinstance(realize, BlockRealize):
        raise ScheduleError(f"{here}: the loops under it must lead to exactly one block "
                            "(no other statements in between)")
    block = realize.block
    if block.init is not None:
        raise ScheduleError(f"{here}: block {block.name_hint} has a T.init; "
                            "run decompose_reduction first")
    inner = {id(lp.loop_var): lp for lp in chain}
    bounds = loop_bounds(root)
    outer_ivs: list[IterVar] = []
    outer_values: list[PrimExpr] = []
    inner_values: list[PrimExpr] = []
    for iv, value in zip(block.iter_vars, realize.iter_values):
        used = vars_used(value)
        if not used & set(inner):
            ov = Var(f"{iv.var.name}_o", iv.var.dtype)
            outer_ivs.append(IterVar(iv.dom, ov, iv.iter_type))
            outer_values.append(value)
            inner_values.append(ov)
            continue
        if not used - set(inner):
            inner_values.append(value)
            continue
        split = _split_binding(value, inner, bounds)
        if split is None or not isinstance(iv.dom.extent, IntImm) or iv.dom.extent.value % split[1]:
            raise ScheduleError(f"{here}: the binding {iv.var.name} = {value} does not split into an "
                                f"outer part times the inner loops' extent plus an inner part")
        outer, factor, inner_part = split
        ov = Var(f"{iv.var.name}_o", iv.var.dtype)
        outer_ivs.append(IterVar(Range(const(0, iv.var.dtype), const(iv.dom.extent.value // factor,
                                                                         iv.var.dtype)), ov, iv.iter_type))
        outer_values.append(outer)
        inner_values.append(ov * const(factor, iv.var.dtype) + inner_part)
    if vars_used(realize.predicate) - set(inner) - {id(iv.var) for iv in block.iter_vars}:
        raise ScheduleError(f"{here}: the block's predicate uses loops outside {loop.loop_var.name}")
    new_inner = BlockRealize(tuple(inner_values), realize.predicate, block)
    body: Stmt = new_inner
    for lp in reversed(chain):
        body = replace(lp, body=body)
    outer_block = _refresh_regions(Block(name_hint=f"{block.name_hint}_o", iter_vars=tuple(outer_ivs),
                                         body=body))
    outer_realize = BlockRealize(tuple(outer_values), const(True, "bool"), outer_block)
    return replace_stmt(root, loop, outer_realize), outer_block.name_hint


# -- tensor intrinsics ------------------------------------------------------------------------


class TensorIntrin:
    """A named pair of PrimFuncs: ``desc`` says what is computed, ``impl`` how.

    Both take the same buffers (the regions the tensorized block touches), and have
    one root-level loop nest.  ``TensorIntrin.register("name", desc, impl)`` once;
    ``sch.tensorize(loop_or_block, "name")`` to use it.
    """

    _registry: dict[str, "TensorIntrin"] = {}

    def __init__(self, name: str, desc: PrimFunc, impl: PrimFunc):
        if len(desc.params) != len(impl.params):
            raise ValueError(f"tensor intrinsic {name}: desc and impl take different numbers of buffers")
        self.name, self.desc, self.impl = name, desc, impl

    @classmethod
    def register(cls, name: str, desc: PrimFunc, impl: PrimFunc, override: bool = False) -> "TensorIntrin":
        if name in cls._registry and not override:
            raise ValueError(f"tensor intrinsic {name!r} is already registered")
        cls._registry[name] = intrin = TensorIntrin(name, desc, impl)
        return intrin

    @classmethod
    def get(cls, name: str) -> "TensorIntrin":
        if name not in cls._registry:
            raise ScheduleError(f"no tensor intrinsic named {name!r}; registered: {sorted(cls._registry)}")
        return cls._registry[name]


def _body_of(func: PrimFunc) -> Stmt:
    """The computation inside a function's implicit root block."""
    body = func.body
    if isinstance(body, BlockRealize) and body.block.name_hint == "root":
        body = body.block.body
    return body


def _relative(stmt: Stmt, regions: list[BufferRegion], views: list[Buffer]) -> Stmt:
    """Rewrite accesses of each region's buffer as accesses of a view starting at 0."""
    for region, view in zip(regions, views):
        mins = [r.min for r in region.region]
        keep = _kept_dims(region, view.ndim)

        def shift(idx: tuple, mins: list = mins, keep: list = keep) -> tuple:
            return tuple(simplify(idx[k] - mins[k]) for k in keep)

        stmt = BufferSwap(region.buffer, view, shift).visit(stmt)
    return stmt


def _kept_dims(region: BufferRegion, ndim: int) -> list[int]:
    """Which dimensions of ``region`` a view of rank ``ndim`` keeps: unit dimensions go first."""
    dims = list(range(len(region.region)))
    if ndim >= len(dims):
        return dims
    unit = [k for k, r in enumerate(region.region) if isinstance(r.extent, IntImm) and r.extent.value == 1]
    drop = unit[:len(dims) - ndim]
    return [k for k in dims if k not in drop]


def tensorize(root: Stmt, outer: BlockRealize, intrin: TensorIntrin) -> Stmt:
    block = outer.block
    here = f"cannot tensorize block {block.name_hint} with {intrin.name}"
    desc_body = _body_of(intrin.desc)
    params = [intrin.desc.buffer_map[p] for p in intrin.desc.params]
    # the block's regions, in the order the description's parameters use them
    regions: list[BufferRegion] = []
    seen = {id(r.buffer) for r in block.reads + block.writes}
    ordered = _first_use_order(block.body, seen)
    desc_order = _first_use_order(desc_body, {id(b) for b in params})
    by_buffer = {id(r.buffer): r for r in block.reads + block.writes}
    if len(ordered) != len(desc_order):
        raise ScheduleError(f"{here}: the block uses {len(ordered)} buffers, the intrinsic {len(desc_order)}")
    for buf in ordered:
        regions.append(by_buffer[id(buf)])
    views = [decl_buffer(p.shape, p.dtype, p.name) for p in desc_order]
    for region, view in zip(regions, views):
        extents = [r.extent for r in region.region if not (isinstance(r.extent, IntImm) and r.extent.value == 1)]
        want = [s for s in view.shape if not (isinstance(s, IntImm) and s.value == 1)]
        if region.buffer.dtype != view.dtype or not structural_equal(tuple(extents), tuple(want)):
            raise ScheduleError(f"{here}: region {region.buffer.name}{[str(e) for e in extents]} "
                                f"({region.buffer.dtype}) does not match intrinsic buffer "
                                f"{view.name}{[str(s) for s in view.shape]} ({view.dtype})")
    mine = _relative(_drop_iter_binding(block.body), regions, views)
    theirs = _relative(_drop_iter_binding(desc_body), [BufferRegion.full_region(b) for b in desc_order], views)
    if not structural_equal(mine, theirs, map_free_vars=True):
        raise ScheduleError(f"{here}: the block does not compute what the intrinsic's description does\n"
                            f"  block:      {mine}\n  description: {theirs}")
    impl_params = [intrin.impl.buffer_map[p] for p in intrin.impl.params]
    desc_index = {id(b): k for k, b in enumerate(params)}
    matches = []
    for buf, region in zip(desc_order, regions):
        impl_buf = impl_params[desc_index[id(buf)]]
        matches.append(MatchBufferRegion(impl_buf, region))
    new_block = replace(block, body=_body_of(intrin.impl), match_buffers=tuple(matches))
    return replace_stmt(root, block, new_block)


def _first_use_order(stmt: Stmt, wanted: set[int]) -> list[Buffer]:
    order: list[Buffer] = []

    def visit(x: Any) -> None:
        buf = getattr(x, "buffer", None)
        if isinstance(buf, Buffer) and id(buf) in wanted and all(b is not buf for b in order):
            order.append(buf)

    from ..functor import pre_order_visit

    pre_order_visit(stmt, lambda x: visit(x))
    return order


def _drop_iter_binding(stmt: Stmt) -> Stmt:
    """Inline block iterators by their bindings so only loop variables remain."""
    from .tree import walk_stmts

    for s, _ in list(walk_stmts(stmt)):
        if isinstance(s, BlockRealize):
            vmap = {iv.var: v for iv, v in zip(s.block.iter_vars, s.iter_values)}
            inner = substitute(s.block.body, vmap)
            stmt = replace_stmt(stmt, s, inner)
    return stmt

