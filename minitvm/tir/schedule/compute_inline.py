"""compute_inline and reverse_compute_inline.

``compute_inline(B)``: every load of B's output is replaced by the expression B stores, and
B disappears.  ``reverse_compute_inline(C)``: the store of C's single producer is replaced by
C's store, with C's iteration variables expressed through the producer's store indices, and
C disappears.

Both need to invert an index map: B stores ``B[f(v)]`` (to read ``B[x]`` back we need
``v = f⁻¹(x)``), C reads ``B[g(u)]`` (the producer writes ``B[x]`` for ``x`` we need
``u = g⁻¹(x)``).  The maps schedules produce are *affine iterator maps*: sums of fused
iterators cut by ``//`` and ``%`` (``(i * 32 + j) // 128``, ``(i * 32 + j) % 128``).
:class:`_IterMap` recognises those and inverts them, in the spirit of TVM's
``DetectIterMap`` + ``InverseAffineIterMap`` (a smaller subset: one level of fusion).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...arith import Analyzer
from ...ir import replace
from ...ir.structural import structural_equal
from ..analysis import get_block_read_write_region, uses_var
from ..buffer import Buffer
from ..expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BufferLoad,
    FloorDiv,
    FloorMod,
    IntImm,
    Mul,
    PrimExpr,
    Range,
    Sub,
    Var,
    const,
    is_const_int,
)
from ..functor import StmtExprMutator, post_order_visit, substitute
from ..op import add, floordiv, floormod, logical_and, mul, sub
from ..stmt import Block, BlockRealize, BufferStore, IfThenElse, Stmt
from .error import ScheduleError
from .stage_pipeline import check_stage_pipeline
from .tree import replace_stmt, walk_stmts

__all__ = ["compute_inline", "reverse_compute_inline"]


# -- affine iterator maps -----------------------------------------------------------------------


class _NotAffine(Exception):
    """The index is not an affine map of the iterators this module can invert."""


@dataclass(frozen=True)
class _Mark:
    """A fused iterator ``sum(var * scale)`` over the product of the vars' extents.

    ``parts`` are (var, scale, extent), innermost (scale 1) first.
    """

    parts: tuple
    extent: int

    @property
    def key(self) -> tuple:
        return tuple((id(v), s, e) for v, s, e in self.parts)


@dataclass(frozen=True)
class _Split:
    """``(mark // lower) % extent``, times ``scale`` in the index sum."""

    mark: _Mark
    lower: int
    extent: int
    scale: int


class _IterMap:
    """Affine maps of block iterators with constant domains starting at 0.

    ``doms``: var id -> (var, extent: an int, or a PrimExpr when symbolic); ``fixed``: var id
    -> the value of a unit iterator.
    """

    def __init__(self, doms: dict[int, tuple[Var, int]], fixed: dict[int, PrimExpr]):
        self.doms, self.fixed = doms, fixed

    def parse(self, e: PrimExpr) -> tuple[list[_Split], int]:
        """``e`` as splits plus a constant; raises _NotAffine."""
        if isinstance(e, IntImm):
            return [], e.value
        if isinstance(e, Var):
            if id(e) not in self.doms:
                value = self.fixed.get(id(e))
                if not isinstance(value, IntImm):
                    raise _NotAffine(e)
                return [], value.value
            var, extent = self.doms[id(e)]
            mark = _Mark(((var, 1, extent),), extent)
            return [_Split(mark, 1, extent, 1)], 0
        if isinstance(e, (Add, Sub)):
            a, ca = self.parse(e.a)
            b, cb = self.parse(e.b)
            if isinstance(e, Sub):
                b, cb = [replace(s, scale=-s.scale) for s in b], -cb
            return a + b, ca + cb
        if isinstance(e, Mul):
            for x, c in ((e.a, e.b), (e.b, e.a)):
                if isinstance(c, IntImm):
                    splits, base = self.parse(x)
                    return [replace(s, scale=s.scale * c.value) for s in splits], base * c.value
            raise _NotAffine(e)
        if isinstance(e, (FloorDiv, FloorMod)) and isinstance(e.b, IntImm) and e.b.value > 0:
            splits, base = self.parse(e.a)
            if not splits:
                value = base // e.b.value if isinstance(e, FloorDiv) else base % e.b.value
                return [], value
            whole = self._fuse(splits, base)
            if not isinstance(whole.extent, int):
                raise _NotAffine("// or % of an iterator with a symbolic extent")
            c = e.b.value
            if isinstance(e, FloorDiv):
                if whole.extent <= c:
                    return [], 0
                return [_Split(whole.mark, whole.lower * c, -(-whole.extent // c), 1)], 0
            if whole.extent <= c:
                return [whole], 0
            return [_Split(whole.mark, whole.lower, c, 1)], 0
        raise _NotAffine(e)

    @staticmethod
    def _fuse(splits: list[_Split], base: int) -> _Split:
        """One split standing for ``sum(splits)``: a split of its own, or a new fused mark of
        whole iterators whose scales chain (``i * 32 + j`` with ``j < 32``)."""
        if base != 0:
            raise _NotAffine("an offset inside // or %")
        if len(splits) == 1 and splits[0].scale == 1:
            return splits[0]
        ordered = sorted(splits, key=lambda s: s.scale)
        expect = 1
        parts = []
        for s in ordered:
            whole_var = len(s.mark.parts) == 1 and s.lower == 1 and s.extent is s.mark.extent
            if s.scale != expect or not whole_var or not isinstance(s.extent, int):
                raise _NotAffine("a sum that is not a fusion of whole iterators")
            parts.append((s.mark.parts[0][0], s.scale, s.extent))
            expect *= s.extent
        mark = _Mark(tuple(parts), expect)
        return _Split(mark, 1, expect, 1)

    def inverse(self, dims: list[tuple[list[_Split], int]], outputs: list[PrimExpr]) -> dict[int, PrimExpr]:
        """Each iterator (var id) as an expression of ``outputs`` (the values of the indices)."""
        pieces: dict[tuple, tuple[_Mark, list]] = {}
        for (splits, base), out in zip(dims, outputs):
            if not splits:
                continue
            value = out if base == 0 else sub(out, const(base, out.dtype))
            ordered = sorted(splits, key=lambda s: s.scale)
            expect: int | None = 1
            for k, s in enumerate(ordered):
                if expect is None or s.scale != expect:
                    raise _NotAffine("an index that skips values")
                expect = expect * s.extent if isinstance(s.extent, int) else None
                part = value if s.scale == 1 else floordiv(value, s.scale)
                if k != len(ordered) - 1:
                    part = floormod(part, s.extent)
                pieces.setdefault(s.mark.key, (s.mark, []))[1].append((s.lower, s.extent, part))
        result: dict[int, PrimExpr] = {}
        for mark, parts in pieces.values():
            parts.sort(key=lambda p: p[0])
            expect = 1
            fused: PrimExpr | None = None
            for lower, extent, part in parts:
                if expect is None or lower != expect:
                    raise _NotAffine("an iterator read only in part")
                fused = part if fused is None else add(fused, mul(part, lower))
                expect = expect * extent if isinstance(extent, int) else None
            whole = (len(parts) == 1 and parts[0][1] is mark.extent) if expect is None \
                else isinstance(mark.extent, int) and expect >= mark.extent
            if not whole:
                raise _NotAffine("an iterator read only in part")
            for j, (var, scale, extent) in enumerate(mark.parts):
                if id(var) in result:
                    raise _NotAffine(f"{var.name} is used twice")
                x = fused if scale == 1 else floordiv(fused, scale)
                result[id(var)] = x if j == len(mark.parts) - 1 else floormod(x, extent)
        return result


def _iter_map(block: Block) -> _IterMap:
    doms: dict[int, tuple[Var, Any]] = {}
    fixed: dict[int, PrimExpr] = {}
    for iv in block.iter_vars:
        if isinstance(iv.dom.extent, IntImm) and iv.dom.extent.value == 1 and isinstance(iv.dom.min, IntImm):
            fixed[id(iv.var)] = iv.dom.min  # its value unless an index it appears in says otherwise
        if is_const_int(iv.dom.min, 0):  # a symbolic extent stays an expression
            extent = iv.dom.extent
            doms[id(iv.var)] = (iv.var, extent.value if isinstance(extent, IntImm) else extent)
    return _IterMap(doms, fixed)


# -- shared pieces ------------------------------------------------------------------------------


def _scope_of(root: Stmt, realize: BlockRealize) -> tuple[Block, tuple]:
    """The block whose body holds ``realize`` (its scope root) and ``realize``'s ancestors."""
    for s, path in walk_stmts(root):
        if s is realize:
            scope = next((p for p in reversed(path) if isinstance(p, Block)), None)
            if scope is None:
                raise ScheduleError(f"block {realize.block.name_hint} has no enclosing block")
            return scope, path
    raise ScheduleError("internal: block not found in the function")


def _leaf_blocks(scope: Block) -> list[BlockRealize]:
    """Blocks under ``scope`` with no blocks inside them (TVM's producers and consumers)."""
    return [r for r, _ in walk_stmts(scope.body) if isinstance(r, BlockRealize)
            and not any(isinstance(x, BlockRealize) for x, _ in walk_stmts(r.block.body))]


def _remove_leaf(scope: Block, realize: BlockRealize, path: tuple) -> Stmt:
    """``scope.body`` without ``realize`` and the loops that held only it."""
    victim: Stmt = realize
    for s in reversed(path):
        if s is scope:
            break
        if getattr(s, "body", None) is victim and not isinstance(s, (Block, BlockRealize)):
            victim = s
        else:
            break
    if victim is scope.body:
        raise ScheduleError(f"cannot inline block {realize.block.name_hint}: it is the only statement "
                            f"of block {scope.name_hint}, which would be left empty")
    return replace_stmt(scope.body, victim, None)


def _check_complete(realize: BlockRealize, scope: Block, what: str, role: str = "") -> None:
    """TVM's complete block: only data-parallel iterators, the only writer of what it writes,
    and reading none of it."""
    block = realize.block
    who = f"{role}{block.name_hint}"
    if any(iv.iter_type != "spatial" for iv in block.iter_vars):
        raise ScheduleError(f"cannot {what}: block {who} is not complete: it has reduction iterators")
    written = {id(w.buffer) for w in block.writes}
    for other, _ in walk_stmts(scope.body):
        if isinstance(other, BlockRealize) and other is not realize and \
                any(id(w.buffer) in written for w in other.block.writes):
            raise ScheduleError(f"cannot {what}: block {who} is not complete: block "
                                f"{other.block.name_hint} also writes {block.writes[0].buffer.name}")
    both = [r.buffer.name for r in block.reads if id(r.buffer) in written]
    if both:
        raise ScheduleError(f"cannot {what}: block {who} is not complete: it reads {both[0]}, which it writes")


def _check_plain_accesses(scope: Block, removed: Block, buffer: Buffer, what: str) -> None:
    """Inlining rewrites loads and stores of ``buffer``; a block that views it through
    ``T.match_buffer`` or touches its data pointer (an opaque access) cannot be rewritten."""
    for other, _ in walk_stmts(scope.body):
        if not isinstance(other, Block) or other is removed:
            continue
        if any(mb.source.buffer is buffer for mb in other.match_buffers):
            raise ScheduleError(f"cannot {what}: block {other.name_hint} views {buffer.name} through "
                                "T.match_buffer, which inlining cannot rewrite")
    opaque = [b.name_hint for b, _ in walk_stmts(scope.body) if isinstance(b, Block) and b is not removed
              and not any(isinstance(x, BlockRealize) for x, _ in walk_stmts(b.body))
              and uses_var((b.init, b.body), buffer.data)]
    if opaque:
        raise ScheduleError(f"cannot {what}: block {opaque[0]} accesses {buffer.name} opaquely (through its "
                            "data pointer), not by loads and stores")


def _function_buffers(root: Stmt) -> list[Buffer]:
    """Buffers whose data pointers blocks may use (for re-deriving their reads/writes)."""
    found: dict[int, Buffer] = {}
    for s, _ in walk_stmts(root):
        if isinstance(s, Block):
            for b in (*s.alloc_buffers, *(r.buffer for r in (*s.reads, *s.writes))):
                found.setdefault(id(b), b)
    return list(found.values())


class _Rewrite(StmtExprMutator):
    """Applies ``load``/``store`` rewrites to one buffer across a scope, re-deriving the
    signature of every block (below the scope) that accessed it."""

    def __init__(self, buffer: Buffer, known: list[Buffer]):
        self.buffer, self.known = buffer, known

    def rewrite_load(self, n: BufferLoad) -> PrimExpr:
        return n

    def rewrite_store(self, n: BufferStore) -> Stmt:
        return n

    def visit_buffer_load_(self, n: BufferLoad) -> PrimExpr:
        n = self.visit_children(n)
        return self.rewrite_load(n) if n.buffer is self.buffer else n

    def visit_buffer_store_(self, n: BufferStore) -> Stmt:
        n = self.visit_children(n)
        return self.rewrite_store(n) if n.buffer is self.buffer else n

    def visit_block_(self, n: Block) -> Block:
        new = self.visit_children(n)
        if any(r.buffer is self.buffer for r in (*n.reads, *n.writes)):
            reads, writes = get_block_read_write_region(new, self.known)
            new = replace(new, reads=tuple(reads), writes=tuple(writes))
        return new


def _without_alloc(scope: Block, body: Stmt, buffer: Buffer) -> Block:
    return replace(scope, body=body, alloc_buffers=tuple(b for b in scope.alloc_buffers if b is not buffer))


# -- compute_inline -----------------------------------------------------------------------------


def compute_inline(root: Stmt, realize: BlockRealize, param_buffers: set[int]) -> Stmt:
    """Replace every read of the block's output by the expression the block stores."""
    block = realize.block
    what = f"compute_inline block {block.name_hint}"
    if block.init is not None:
        raise ScheduleError(f"cannot {what}: it has an init statement (it is a reduction)")
    if len(block.writes) != 1:
        raise ScheduleError(f"cannot {what}: it must write a single buffer region, but writes "
                            f"{len(block.writes)}")
    buffer = block.writes[0].buffer
    scope, path = _scope_of(root, realize)
    if id(buffer) in param_buffers:
        raise ScheduleError(f"cannot {what}: its output {buffer.name} is a parameter of the function, "
                            "which must still be written")
    _check_complete(realize, scope, what)
    check_stage_pipeline(scope, (), what)
    store = block.body
    if not isinstance(store, BufferStore) or store.buffer is not buffer:
        raise ScheduleError(f"cannot {what}: its body must be a single store B[f(i, j, ...)] = g(i, j, ...) "
                            "with f a bijective affine map of its iterators")
    params, value = _stored_value(block, store, what)
    _check_plain_accesses(scope, block, buffer, what)

    class Inline(_Rewrite):
        def rewrite_load(self, n: BufferLoad) -> PrimExpr:
            # substituted indices are folded (0 * 16 + i -> i), as the same text is when parsed
            return _SimplifyIndices().visit(substitute(value, dict(zip(params, n.indices))))

    body = _remove_leaf(scope, realize, path)
    body = Inline(buffer, _function_buffers(root)).visit(body)
    return replace_stmt(root, scope, _without_alloc(scope, body, buffer))


def _stored_value(block: Block, store: BufferStore, what: str) -> tuple[list[Var], PrimExpr]:
    """Placeholder variables (one per stored index) and the stored value written in them."""
    ivs = block.iter_vars
    trivial = len(ivs) == len(store.indices) and all(
        idx is iv.var or (isinstance(idx, IntImm) and idx.value == 0 and is_const_int(iv.dom.min, 0)
                          and is_const_int(iv.dom.extent, 1))
        for idx, iv in zip(store.indices, ivs))
    if trivial:
        return [iv.var for iv in ivs], store.value
    iters = _iter_map(block)
    try:
        dims = [iters.parse(i) for i in store.indices]
        holes = [Var(f"ph_{k}", i.dtype) for k, i in enumerate(store.indices)]
        inverse = iters.inverse(dims, holes)
        missing = [iv.var.name for iv in ivs if id(iv.var) not in inverse and id(iv.var) not in iters.fixed]
        if missing:
            raise _NotAffine(f"{missing[0]} does not index the output")
        _check_one_to_one(dims)
    except _NotAffine:
        raise ScheduleError(f"cannot {what}: it stores to {store.buffer.name}{list(store.indices)}; the "
                            "indices must be a bijective affine map of its iterators") from None
    vmap = {iv.var: inverse.get(id(iv.var), iters.fixed.get(id(iv.var))) for iv in ivs}
    return holes, substitute(store.value, vmap)


def _check_one_to_one(dims: list[tuple[list[_Split], int]]) -> None:
    """Every split of a fused iterator is stored once (no index repeats another)."""
    seen: set[tuple] = set()
    for splits, _ in dims:
        for s in splits:
            key = (s.mark.key, s.lower)
            if key in seen:
                raise _NotAffine("an iterator stored twice")
            seen.add(key)


class _SimplifyIndices(StmtExprMutator):
    def __init__(self) -> None:
        self.ana = Analyzer()

    def visit_buffer_load_(self, n: BufferLoad) -> PrimExpr:
        indices = tuple(self.ana.simplify(i) for i in self.visit(n.indices))
        return BufferLoad(n.buffer, indices)


# -- reverse_compute_inline ---------------------------------------------------------------------


def reverse_compute_inline(root: Stmt, realize: BlockRealize, param_buffers: set[int] = frozenset()) -> Stmt:
    """Fold a consumer into its single producer: the producer stores what the consumer would."""
    block = realize.block
    what = f"reverse_compute_inline block {block.name_hint}"
    if block.init is not None:
        raise ScheduleError(f"cannot {what}: it has an init statement (it is a reduction)")
    scope, path = _scope_of(root, realize)
    buffer = _single_read(scope, block, what)
    _check_complete(realize, scope, what)
    check_stage_pipeline(scope, (), what)
    producers = [r for r in _leaf_blocks(scope) if r is not realize
                 and any(w.buffer is buffer for w in r.block.writes)]
    if len(producers) != 1:
        raise ScheduleError(f"cannot {what}: it must have a single producer of {buffer.name}, found "
                            f"{len(producers)}")
    producer = producers[0]
    _check_complete(producer, scope, what, role="producer ")
    if id(buffer) in param_buffers:
        raise ScheduleError(f"cannot {what}: its producer {producer.block.name_hint} writes {buffer.name}, "
                            "a parameter of the function, which must still be written")
    store = block.body
    if not is_const_int(realize.predicate, 1):
        raise ScheduleError(f"cannot {what}: it has a predicate ({realize.predicate})")
    if not isinstance(store, BufferStore):
        raise ScheduleError(f"cannot {what}: its body must be a single store")
    loads = [x for x in _loads_in(store) if x.buffer is buffer]
    if not loads:
        raise ScheduleError(f"cannot {what}: its store does not read {buffer.name}")
    if any(not structural_equal(ld.indices, loads[0].indices) for ld in loads):
        raise ScheduleError(f"cannot {what}: it reads {buffer.name} at different indices")
    pbody = producer.block.body
    pstore = pbody.then_case if isinstance(pbody, IfThenElse) and pbody.else_case is None else pbody
    if not isinstance(pstore, BufferStore) or pstore.buffer is not buffer:
        raise ScheduleError(f"cannot {what}: its producer {producer.block.name_hint} must be a single store "
                            f"of {buffer.name}")
    iters = _iter_map(block)
    try:
        dims = [iters.parse(i) for i in loads[0].indices]
        found = iters.inverse(dims, list(pstore.indices))
    except _NotAffine:
        raise ScheduleError(f"cannot {what}: it reads {buffer.name}{list(loads[0].indices)}; the indices "
                            "must be an affine map of its iterators") from None
    sub_map: dict[int, PrimExpr] = dict(iters.fixed)
    sub_map.update(found)
    _check_covered(block, producer.block, sub_map, what)
    _check_plain_accesses(scope, block, buffer, what)
    by_var = {iv.var: sub_map[id(iv.var)] for iv in block.iter_vars}

    def resolve(e: Any) -> Any:
        return substitute(e, by_var)

    class Reverse(_Rewrite):
        def rewrite_store(self, n: BufferStore) -> Stmt:
            # a producer reading its own output (an update) reads the consumer's output instead
            own = BufferLoad(store.buffer, tuple(resolve(i) for i in store.indices))
            rhs = _ReplaceLoads(buffer, own).visit(n.value)
            value = _ReplaceLoads(buffer, rhs).visit(resolve(store.value))
            return BufferStore(store.buffer, value, tuple(resolve(i) for i in store.indices))

        def visit_block_realize_(self, n: BlockRealize) -> BlockRealize:
            new = self.visit_children(n)
            if n is producer:
                new = _producer_predicate(new, block, by_var)
            return new

    body = _remove_leaf(scope, realize, path)
    body = Reverse(buffer, _function_buffers(root)).visit(body)
    return replace_stmt(root, scope, _without_alloc(scope, body, buffer))


def _single_read(scope: Block, block: Block, what: str) -> Buffer:
    """The one buffer the consumer reads that some block of the scope writes."""
    written = {id(w.buffer) for r, _ in walk_stmts(scope.body) if isinstance(r, BlockRealize)
               for w in r.block.writes}
    produced: list[Buffer] = []
    for r in block.reads:
        if id(r.buffer) in written and all(b is not r.buffer for b in produced):
            produced.append(r.buffer)
    if len(produced) != 1:
        raise ScheduleError(f"cannot {what}: it must read a single buffer that another block produces, "
                            f"but reads {len(produced)} ({', '.join(b.name for b in produced) or 'none'})")
    return produced[0]


def _loads_in(store: BufferStore) -> list[BufferLoad]:
    found: list[BufferLoad] = []
    post_order_visit((store.indices, store.value), lambda x: found.append(x) if isinstance(x, BufferLoad) else None)
    return found


class _ReplaceLoads(StmtExprMutator):
    def __init__(self, buffer: Buffer, value: PrimExpr):
        self.buffer, self.value = buffer, value

    def visit_buffer_load_(self, n: BufferLoad) -> PrimExpr:
        n = self.visit_children(n)
        return self.value if n.buffer is self.buffer else n


def _analyzer_over(block: Block) -> Any:
    ana = Analyzer()
    for iv in block.iter_vars:
        ana.bind(iv.var, Range(iv.dom.min, iv.dom.extent))
    return ana


def _check_covered(consumer: Block, producer: Block, sub_map: dict[int, PrimExpr], what: str) -> None:
    """The producer must run over every point of the consumer's domain (the consumer's store
    moves into it); it may run over more (the store is then guarded by a predicate)."""
    ana = _analyzer_over(producer)
    for iv in consumer.iter_vars:
        expr = sub_map.get(id(iv.var))
        if expr is None:
            raise ScheduleError(f"cannot {what}: its iterator {iv.var.name} does not index what it reads")
        bound = ana.const_int_bound(expr)
        lo, ext = iv.dom.min, iv.dom.extent
        if not (isinstance(lo, IntImm) and isinstance(ext, IntImm)):
            continue
        if bound.min_value > lo.value or bound.max_value < lo.value + ext.value - 1:
            raise ScheduleError(f"cannot {what}: its producer {producer.name_hint} does not cover its domain "
                                f"({iv.var.name} in [{lo.value}, {lo.value + ext.value - 1}], the producer "
                                f"gives [{bound.min_value}, {bound.max_value}])")


def _producer_predicate(realize: BlockRealize, consumer: Block, by_var: dict) -> BlockRealize:
    """Guard the producer where it runs beyond the consumer's domain (an overcomputing producer)."""
    block = realize.block
    ana = _analyzer_over(block)
    atoms: list[PrimExpr] = []
    doms = {id(iv.var): iv.dom for iv in block.iter_vars}
    for iv in consumer.iter_vars:
        x = substitute(iv.var, by_var)
        if isinstance(x, Var) and id(x) in doms and structural_equal(doms[id(x)], iv.dom):
            continue  # the same domain (symbolic extents too)
        for atom in (x >= iv.dom.min, x < iv.dom.min + iv.dom.extent):
            if isinstance(atom, IntImm):
                if atom.value:
                    continue
            elif ana.can_prove(atom):
                continue
            atoms.append(ana.simplify(atom))
    if not atoms:
        return realize
    body = block.body
    if isinstance(body, IfThenElse) and body.else_case is None:
        cond = ana.simplify(body.condition)
        if not (len(atoms) == 1 and structural_equal(atoms[0], cond)):
            atoms.append(cond)
            block = replace(block, body=body.then_case)
    binding = {iv.var: v for iv, v in zip(block.iter_vars, realize.iter_values)}
    predicate: PrimExpr | None = None
    for atom in atoms:
        atom = _ordered(ana.simplify(substitute(atom, binding)))
        predicate = atom if predicate is None else logical_and(predicate, atom)
    return replace(realize, block=block, predicate=predicate)


def _ordered(e: PrimExpr) -> PrimExpr:
    """A comparison of a linear sum with its terms by decreasing coefficient (``i0 * 16 + i1``),
    the order TVM's canonical simplifier gives."""
    if isinstance(e, And):
        return logical_and(_ordered(e.a), _ordered(e.b))
    if isinstance(e, (LT, LE, GT, GE, EQ, NE)):
        return type(e)(_linear_sorted(e.a), _linear_sorted(e.b))
    return e


def _linear_sorted(e: PrimExpr) -> PrimExpr:
    terms: list[tuple[int, PrimExpr]] = []

    def collect(x: PrimExpr) -> bool:
        if isinstance(x, Add):
            return collect(x.a) and collect(x.b)
        if isinstance(x, Mul) and isinstance(x.b, IntImm) and isinstance(x.a, Var):
            terms.append((x.b.value, x))
            return True
        if isinstance(x, Var):
            terms.append((1, x))
            return True
        return False

    if not isinstance(e, Add) or not collect(e):
        return e
    ordered = sorted(terms, key=lambda t: -t[0])
    out = ordered[0][1]
    for _, t in ordered[1:]:
        out = Add(out, t)
    return out
