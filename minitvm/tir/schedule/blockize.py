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
from ..analysis import uses_var, vars_used
from ..buffer import Buffer, BufferRegion, decl_buffer
from ..expr import Add, IntImm, IterVar, Max, Min, Mul, PrimExpr, Range, Var, const, is_const_int
from ..function import PrimFunc
from ..functor import StmtExprMutator, pre_order_visit, substitute
from ..stmt import Block, BlockRealize, For, MatchBufferRegion, SeqStmt, Stmt, seq
from .data import BufferSwap
from .error import ScheduleError
from .loops import loop_bounds, simplify
from .shared_analyses import index_bounds, range_bounds
from .tree import blocks_under, replace_stmt, walk_stmts

__all__ = ["blockize", "blockize_blocks", "tensorize", "TensorIntrin"]


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
    b = index_bounds(inner_part, dom)
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
    # a sum of multiples of the factor (j0 * 32 + j1 * 16 over a 16-wide inner part)
    quotient = _divide_terms(_terms(outer), factor)
    if quotient is not None:
        return simplify(quotient, bounds), factor, inner_part
    return None


def _divide_terms(terms: list[PrimExpr], factor: int) -> PrimExpr | None:
    """``sum(terms) / factor`` when every term is ``x * c`` with ``factor`` dividing ``c``."""
    out = None
    for t in terms:
        if not (isinstance(t, Mul) and isinstance(t.b, IntImm) and t.b.value % factor == 0):
            return None
        c = t.b.value // factor
        part = t.a if c == 1 else t.a * c
        out = part if out is None else out + part
    return out



def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return a.value == b.value
    return structural_equal(a, b)


class _Division:
    """One block's iterators divided into an outer and an inner subspace (as TVM's
    subspace division): ``v = v_o * inner_extent + v_i``, where an iterator with a unit
    inner (or outer) part is not split but rebound whole."""

    def __init__(self) -> None:
        self.outer_ivs: list[IterVar] = []
        self.outer_values: list[PrimExpr] = []
        self.inner_ivs: list[IterVar] = []
        self.inner_values: list[PrimExpr] = []
        self.subst: dict[Var, PrimExpr] = {}


def _divide(realize: BlockRealize, inner_loops: list[For], all_loops: list[For], bounds: dict,
            preserve_unit_iters: bool, here: str, reuse: _Division | None = None) -> _Division:
    """Divide ``realize``'s bindings into the part over ``inner_loops`` and the rest
    (``reuse``: another block's division whose outer iterators this one must share)."""
    block = realize.block
    inner = {id(lp.loop_var): lp for lp in inner_loops}
    # without preserve_unit_iters a unit loop is no iterator at all: it binds as 0
    unit = {} if preserve_unit_iters else {lp.loop_var: const(0, lp.loop_var.dtype)
                                           for lp in all_loops if is_const_int(lp.extent, 1)}
    div = _Division()
    for iv, value in zip(block.iter_vars, realize.iter_values):
        value = simplify(substitute(value, unit), bounds) if unit else value
        dtype = iv.var.dtype
        used = vars_used(value)
        if not used & set(inner):  # outer only (or a constant): the inner part is a unit
            outer, outer_extent, inner_value, inner_extent = value, iv.dom.extent, None, const(1, dtype)
            if not used:
                outer_extent = const(1, dtype)
        elif not used - set(inner):  # inner only: the outer part is a unit
            outer, outer_extent, inner_value, inner_extent = const(0, dtype), const(1, dtype), value, iv.dom.extent
        else:
            split = _split_binding(value, inner, bounds)
            if split is None or not isinstance(iv.dom.extent, IntImm) or iv.dom.extent.value % split[1]:
                raise ScheduleError(f"{here}: the binding {iv.var.name} = {value} does not split into an "
                                    f"outer part times the inner loops' extent plus an inner part")
            outer, factor, inner_value = split
            outer_extent = const(iv.dom.extent.value // factor, dtype)
            inner_extent = const(factor, dtype)
        k = len(div.outer_ivs)
        if reuse is not None:
            if k >= len(reuse.outer_ivs) or not structural_equal(simplify(outer, bounds),
                                                                 simplify(reuse.outer_values[k], bounds)) \
                    or not _same_value(outer_extent, reuse.outer_ivs[k].dom.extent):
                raise ScheduleError(f"{here}: block {block.name_hint} does not iterate the outer loops as "
                                    "the first block does, so they cannot share one outer block")
            ov = reuse.outer_ivs[k].var
        else:
            ov = Var(f"{iv.var.name}_o", dtype)
        div.outer_ivs.append(IterVar(Range(const(0, dtype), outer_extent), ov, iv.iter_type))
        div.outer_values.append(outer)
        if is_const_int(inner_extent, 1):
            div.subst[iv.var] = const(0, dtype) if is_const_int(outer_extent, 1) and not preserve_unit_iters else ov
            continue
        iv_i = Var(f"{iv.var.name}_i", dtype)
        div.inner_ivs.append(IterVar(Range(const(0, dtype), inner_extent), iv_i, iv.iter_type))
        div.inner_values.append(inner_value)
        div.subst[iv.var] = iv_i if is_const_int(outer_extent, 1) else ov * inner_extent + iv_i
    return div


def _substitute_block(block: Block, div: _Division, bounds: dict) -> Block:
    """The block with its iterators rebound, every changed expression simplified."""
    known = dict(bounds)
    known.update({iv.var: iv.dom.extent for iv in div.inner_ivs})

    class _Rebind(StmtExprMutator):
        def visit(self, n: Any) -> Any:
            if isinstance(n, Var):
                return div.subst.get(n, n)
            out = super().visit(n)
            if out is not n and isinstance(out, PrimExpr):
                return simplify(out, known)
            return out

    return _Rebind().visit(block)


def _relax_regions(regions: tuple, doms: dict[int, tuple[PrimExpr, PrimExpr]], bounds: dict) -> tuple:
    """Each region widened over the variables of ``doms`` (the whole buffer where unknown)."""
    out = []
    for region in regions:
        ranges = []
        for dim, r in enumerate(region.region):
            b = range_bounds(r, doms)
            if b is None:
                ranges.append(Range(const(0, r.min.dtype), region.buffer.shape[dim]))
                continue
            ranges.append(Range(simplify(b[0], bounds), simplify(b[1] + 1 - b[0], bounds)))
        out.append(BufferRegion(region.buffer, tuple(ranges)))
    return tuple(out)


def _outer_init(init: Stmt, inner: BlockRealize, loops: list[For], name: str) -> Stmt:
    """The outer block's ``T.init``: the init statement in a block of its own, over the spatial
    iterators it uses and the inner loops those bind."""
    block = inner.block
    ivs, values, vmap = [], [], {}
    for iv, value in zip(block.iter_vars, inner.iter_values):
        if iv.iter_type == "spatial" and uses_var(init, iv.var):
            nv = Var(f"{iv.var.name}_init", iv.var.dtype)
            vmap[iv.var] = nv
            ivs.append(IterVar(iv.dom, nv, iv.iter_type))
            values.append(value)
    stmt: Stmt = BlockRealize(tuple(values), inner.predicate,
                              Block(name_hint=name, iter_vars=tuple(ivs), writes=block.writes, body=init))
    for lp in reversed(loops):
        if any(uses_var(v, lp.loop_var) for v in values):
            nv = Var(lp.loop_var.name, lp.loop_var.dtype)
            vmap[lp.loop_var] = nv
            stmt = replace(lp, loop_var=nv, body=stmt)
    return substitute(stmt, vmap)


def _inner_realize(block: Block, div: _Division, predicate: PrimExpr) -> BlockRealize:
    """The original block over the inner iterators; a reduction split over the outer block
    reads what it writes (the outer block's init zeroes it once)."""
    outer_reduce = block.init is not None and any(iv.iter_type == "reduce" for iv in div.outer_ivs)
    reads = tuple(block.writes) + tuple(block.reads) if outer_reduce else block.reads
    inner = replace(block, iter_vars=tuple(div.inner_ivs), init=None, reads=reads)
    return BlockRealize(tuple(div.inner_values), predicate, inner)


def blockize(root: Stmt, loop: For, preserve_unit_iters: bool = True) -> tuple[Stmt, str]:
    """Wrap the loops from ``loop`` down to its block in a new block ``<name>_o``."""
    here = f"cannot blockize loop {loop.loop_var.name}"
    chain: list[For] = [loop]
    while isinstance(chain[-1].body, For):
        chain.append(chain[-1].body)
    realize = chain[-1].body
    if not isinstance(realize, BlockRealize):
        raise ScheduleError(f"{here}: the loops under it must lead to exactly one block "
                            "(no other statements in between)")
    block = realize.block
    bounds = loop_bounds(root)
    path = ancestors(root, realize)
    all_loops = [s for s in path if isinstance(s, For)]
    inner = {id(lp.loop_var) for lp in chain}
    if vars_used(realize.predicate) - inner - {id(iv.var) for iv in block.iter_vars}:
        raise ScheduleError(f"{here}: the block's predicate uses loops outside {loop.loop_var.name}")
    div = _divide(realize, chain, all_loops, bounds, preserve_unit_iters, here)
    new_block = _substitute_block(block, div, bounds)
    inner_realize = _inner_realize(new_block, div, realize.predicate)
    body: Stmt = inner_realize
    for lp in reversed(chain):
        body = replace(lp, body=body)
    doms = {id(iv.var): (iv.dom.min, iv.dom.min + iv.dom.extent - 1) for iv in div.inner_ivs}
    name = f"{block.name_hint}_o"
    init = None if new_block.init is None else _outer_init(new_block.init, inner_realize, chain,
                                                           f"{block.name_hint}_init")
    outer_block = Block(name_hint=name, iter_vars=tuple(div.outer_ivs),
                        reads=_relax_regions(new_block.reads, doms, bounds),
                        writes=_relax_regions(new_block.writes, doms, bounds), init=init, body=body)
    outer_realize = BlockRealize(tuple(div.outer_values), const(True, "bool"), outer_block)
    return replace_stmt(root, loop, outer_realize), name


def blockize_blocks(root: Stmt, realizes: list[BlockRealize], preserve_unit_iters: bool = True) -> tuple[Stmt, str]:
    """Wrap consecutive sibling subtrees holding ``realizes`` in one new outer block: the
    loops below the blocks' lowest common loop (or block) become the inner loops."""
    names = ", ".join(r.block.name_hint for r in realizes)
    here = f"cannot blockize blocks {names}"
    paths = [ancestors(root, r) for r in realizes]
    common = 0
    while all(len(p) > common for p in paths) and all(p[common] is paths[0][common] for p in paths):
        common += 1
    lca = next((s for s in reversed(paths[0][:common]) if isinstance(s, (For, Block))), None)
    if lca is None:
        raise ScheduleError(f"{here}: they have no common loop or block")
    items = list(lca.body.seq) if isinstance(lca.body, SeqStmt) else [lca.body]
    holders = []
    for r in realizes:
        k = next((k for k, it in enumerate(items) if it is r or any(x is r for x in blocks_under(it))), None)
        if k is None:
            raise ScheduleError(f"{here}: block {r.block.name_hint} is nested inside another target")
        holders.append(k)
    first, last = min(holders), max(holders)
    if sorted(set(holders)) != list(range(first, last + 1)) or len(set(holders)) != len(holders):
        raise ScheduleError(f"{here}: the blocks must be consecutive siblings under their common "
                            "ancestor, each in its own subtree")
    bounds = loop_bounds(root)
    shared: _Division | None = None
    bodies, reads, writes = [], [], []
    for r, path in sorted(zip(realizes, paths), key=lambda rp: holders[realizes.index(rp[0])]):
        start = next(i for i, s in enumerate(path) if s is lca)
        inner_loops = [s for s in path[start + 1:] if isinstance(s, For)]
        all_loops = [s for s in path if isinstance(s, For)]
        div = _divide(r, inner_loops, all_loops, bounds, preserve_unit_iters, here, shared)
        shared = shared or div
        if r.block.init is not None and any(iv.iter_type == "reduce" for iv in div.outer_ivs):
            raise ScheduleError(f"{here}: block {r.block.name_hint} reduces over a loop outside the new "
                                "block, which blockizing several blocks does not allow")
        new_block = _substitute_block(r.block, div, bounds)
        doms = {id(iv.var): (iv.dom.min, iv.dom.min + iv.dom.extent - 1) for iv in div.inner_ivs}
        reads += _relax_regions(new_block.reads, doms, bounds)
        writes += _relax_regions(new_block.writes, doms, bounds)
        body: Stmt = _inner_realize(new_block, div, r.predicate)
        for lp in reversed(inner_loops):
            body = replace(lp, body=body)
        bodies.append(body)
    name = "outer_" + "".join(f"{r.block.name_hint}_" for r in realizes)
    outer = Block(name_hint=name, iter_vars=tuple(shared.outer_ivs), reads=_union_regions(reads, bounds),
                  writes=_union_regions(writes, bounds), body=seq(*bodies))
    outer_realize = BlockRealize(tuple(shared.outer_values), const(True, "bool"), outer)
    new_items = items[:first] + [outer_realize] + items[last + 1:]
    return replace_stmt(root, lca, replace(lca, body=seq(*new_items))), name


def _union_regions(regions: list, bounds: dict) -> tuple:
    """One hull region per buffer (first-use order)."""
    hulls: dict[int, tuple] = {}
    for region in regions:
        key = id(region.buffer)
        if key not in hulls:
            hulls[key] = (region.buffer, [(r.min, r.min + r.extent) for r in region.region])
            continue
        buf, dims = hulls[key]
        hulls[key] = (buf, [(simplify(Min(lo, r.min), bounds), simplify(Max(hi, r.min + r.extent), bounds))
                            for (lo, hi), r in zip(dims, region.region)])
    return tuple(BufferRegion(buf, tuple(Range(lo, simplify(hi - lo, bounds)) for lo, hi in dims))
                 for buf, dims in hulls.values())


def ancestors(root: Stmt, target: Stmt) -> tuple:
    return next(p for s, p in walk_stmts(root) if s is target)


# -- tensor intrinsics ------------------------------------------------------------------------


class TensorIntrin:
    """A named pair of PrimFuncs: ``desc`` says what is computed, ``impl`` how.

    Both take the same buffers (the regions the tensorized block touches), and have
    one root-level loop nest.  ``TensorIntrin.register("name", desc, impl)`` once;
    ``sch.tensorize(loop_or_block, "name")`` to use it.
    """

    _registry: dict[str, "TensorIntrin"] = {}

    def __init__(self, name: str, desc: PrimFunc, impl: PrimFunc, requires: tuple[str, ...] = ()):
        if len(desc.params) != len(impl.params):
            raise ValueError(f"tensor intrinsic {name}: desc and impl take different numbers of buffers")
        self.name, self.desc, self.impl = name, desc, impl
        #: minitvm's own attribute (TVM's TensorIntrin has none): the CPU features (LLVM's names,
        #: e.g. ``avx512f``) with which each step of ``impl`` is one instruction.  tensorize never
        #: reads it (as TVM's, it transforms the program whatever the CPU); without them LLVM
        #: does the same work with narrower instructions
        self.requires = tuple(requires)

    @classmethod
    def register(cls, name: str, desc: PrimFunc, impl: PrimFunc, override: bool = False,
                 requires: tuple[str, ...] = ()) -> None:
        """Register under ``name`` (returns None, as TVM's does: ``TensorIntrin.get(name)`` reads it)."""
        if name in cls._registry and not override:
            raise ValueError(f"tensor intrinsic {name!r} is already registered")
        cls._registry[name] = TensorIntrin(name, desc, impl, requires)

    @classmethod
    def get(cls, name: str, allow_missing: bool = False) -> "TensorIntrin | None":
        """The intrinsic registered as ``name``; a missing one is an error (a ValueError), or
        None with ``allow_missing=True`` (TVM's)."""
        if name not in cls._registry:
            if allow_missing:
                return None
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
        raise ScheduleError(f"{here}: the block uses {_buffers(len(ordered))}, "
                            f"the intrinsic {_buffers(len(desc_order))}")
    for buf in ordered:
        regions.append(by_buffer[id(buf)])
    views = [decl_buffer(p.shape, p.dtype, p.name) for p in desc_order]
    for region, param in zip(regions, desc_order):
        # as TVM's TensorizeComparator: a buffer matches only a buffer of the same storage scope
        # (the intrinsic's instruction reads its operands from that memory, e.g. registers)
        if (region.buffer.scope or "global") != (param.scope or "global"):
            raise ScheduleError(f"{here}: buffer {region.buffer.name} is in scope {region.buffer.scope!r}, "
                                f"the intrinsic's {param.name} in scope {param.scope!r} (stage it there "
                                "with cache_read / cache_write)")
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
    impl_root = intrin.impl.body.block if isinstance(intrin.impl.body, BlockRealize) else None
    scratch = impl_root.alloc_buffers if impl_root is not None and impl_root.name_hint == "root" else ()
    # the impl's own scratch buffers (a local accumulator) are allocated by the block it replaces
    new_block = replace(block, body=_body_of(intrin.impl), match_buffers=tuple(matches),
                        alloc_buffers=tuple(block.alloc_buffers) + tuple(scratch))
    return replace_stmt(root, block, new_block)


def _buffers(n: int) -> str:
    return f"{n} buffer" if n == 1 else f"{n} buffers"


def _first_use_order(stmt: Stmt, wanted: set[int]) -> list[Buffer]:
    order: list[Buffer] = []

    def visit(x: Any) -> None:
        buf = getattr(x, "buffer", None)
        if isinstance(buf, Buffer) and id(buf) in wanted and all(b is not buf for b in order):
            order.append(buf)

    pre_order_visit(stmt, lambda x: visit(x))
    return order


def _drop_iter_binding(stmt: Stmt) -> Stmt:
    """Inline block iterators by their bindings so only loop variables remain."""
    for s, _ in list(walk_stmts(stmt)):
        if isinstance(s, BlockRealize):
            vmap = {iv.var: v for iv, v in zip(s.block.iter_vars, s.iter_values)}
            inner = substitute(s.block.body, vmap)
            stmt = replace_stmt(stmt, s, inner)
    return stmt

