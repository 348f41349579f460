"""Which iterations a moved block must run: the region solving behind compute_at and
reverse_compute_at (TVM's CalculateBlockVarDomain).

Per linked buffer, the partners under the target loop *require* a region (their accesses
relaxed over the loops between them and the target loop); the moved block *provides* a
region per instance, in its own iteration variables.  Solving "provided covers required"
gives each variable a range (``dom``) and the values it may take at all (``bound``: its
domain and the buffer's extent).  Where the two differ, the new loops cover ``dom`` and a
predicate keeps them inside ``bound``.

Intervals are ``(lo, hi)``, inclusive, with None for an infinite end; ``NOTHING`` (None)
is the empty set.
"""

from __future__ import annotations

import weakref
from typing import Any

from ...arith import Analyzer
from ...ir.structural import structural_equal
from ..analysis import uses_var, vars_used
from ..buffer import Buffer
from ..expr import GE, LE, LT, Add, FloorDiv, FloorMod, IntImm, Max, Min, Mul, PrimExpr, Range, Sub, Var, const
from ..functor import substitute
from ..stmt import Block, BlockRealize, For, ForKind, Stmt
from ..thread_scope import can_relax_storage_under_thread, storage_rank
from .error import ScheduleError
from .shared_analyses import range_bounds
from .tree import blocks_under

NOTHING = None
Interval = tuple


def analyzer_for(loop: For, loop_path: tuple) -> Any:
    """An analyzer that knows ``loop`` and the loops above it in its block scope."""
    ana = Analyzer()
    for s in (*loop_path, loop):
        if isinstance(s, Block):
            ana = Analyzer()
        elif isinstance(s, For):
            unit = isinstance(s.extent, IntImm) and s.extent.value == 1
            # a unit loop's variable is its minimum (TVM's simplifier folds single-point ranges)
            ana.bind(s.loop_var, s.min if unit else Range(s.min, s.extent))
    return ana


def has_inf(iv: Interval) -> bool:
    """True when an end of the interval is infinite (None)."""
    return iv[0] is None or iv[1] is None


def _simp(ana: Any, e: PrimExpr | None) -> PrimExpr | None:
    return None if e is None else ana.simplify(e)


def _eq(ana: Any, a: PrimExpr | None, b: PrimExpr | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return structural_equal(a, b) or ana.can_prove_equal(a, b)


def union(a: Interval | None, b: Interval | None) -> Interval | None:
    if a is NOTHING:
        return b
    if b is NOTHING:
        return a
    lo = None if a[0] is None or b[0] is None else (a[0] if structural_equal(a[0], b[0]) else Min(a[0], b[0]))
    hi = None if a[1] is None or b[1] is None else (a[1] if structural_equal(a[1], b[1]) else Max(a[1], b[1]))
    return lo, hi


def intersect(a: Interval | None, b: Interval | None) -> Interval | None:
    if a is NOTHING or b is NOTHING:
        return NOTHING
    lo = b[0] if a[0] is None else a[0] if b[0] is None else Max(a[0], b[0])
    hi = b[1] if a[1] is None else a[1] if b[1] is None else Min(a[1], b[1])
    return lo, hi


class VarDomain:
    """The range a block variable must cover (``dom``) and may take (``bound``)."""

    def __init__(self, dom: Interval | None = NOTHING, bound: Interval | None = NOTHING):
        self.dom, self.bound = dom, bound

    def union(self, other: "VarDomain") -> None:
        self.dom, self.bound = union(self.dom, other.dom), union(self.bound, other.bound)

    def simplify(self, ana: Any) -> None:
        """Drop the bound where ``dom`` lies inside it (or fold it in where that gives
        constants), so predicates appear only where they guard something."""
        def simp(iv: Interval | None) -> Interval | None:
            return iv if iv is NOTHING else (_simp(ana, iv[0]), _simp(ana, iv[1]))

        if self.dom is NOTHING:
            if self.bound is not NOTHING and not has_inf(self.bound):
                self.dom, self.bound = simp(self.bound), NOTHING
            return
        self.dom, self.bound = simp(self.dom), simp(self.bound)
        inter = simp(intersect(self.dom, self.bound))
        if inter is NOTHING:
            return
        if _eq(ana, self.dom[0], inter[0]) and _eq(ana, self.dom[1], inter[1]):
            self.bound = NOTHING
        elif self.bound is not NOTHING and _eq(ana, self.bound[0], inter[0]) and _eq(ana, self.bound[1], inter[1]):
            self.dom, self.bound = self.bound, NOTHING
        elif isinstance(inter[0], IntImm) and isinstance(inter[1], IntImm):
            self.dom, self.bound = inter, NOTHING


def _solve_dim(provided: Interval, required: Interval, dim_max: PrimExpr, ana: Any,
               here: str) -> tuple[Var, VarDomain]:
    """The block variable behind one provided dimension, and the values it must take for the
    provided range to cover the required one."""
    p_min, p_max = _simp(ana, provided[0]), _simp(ana, provided[1])
    r_min, r_max = _simp(ana, required[0]), _simp(ana, required[1])
    zero = const(0, dim_max.dtype)
    if isinstance(p_min, Mul) and (isinstance(p_min.a, Var) or isinstance(p_min.b, Var)):
        var, e = (p_min.a, p_min.b) if isinstance(p_min.a, Var) else (p_min.b, p_min.a)
        hi = None if r_max is None else r_max // e
        return var, VarDomain((r_min // e, hi), (zero, dim_max // e))
    if _eq(ana, p_min, p_max):
        if isinstance(p_min, Var):
            return p_min, VarDomain((r_min, r_max), (zero, dim_max))
        if isinstance(p_min, FloorDiv) and ana.can_prove_greater_equal(p_min.b, 1):
            x, f = p_min.a, p_min.b
            hi = None if r_max is None else ana.simplify(r_max * f + f - 1)
            if isinstance(x, Var):
                return x, VarDomain((r_min * f, hi), (zero, ana.simplify(dim_max * f + f - 1)))
            return _solve_dim((x, x), (r_min * f, hi), dim_max, ana, here)
        if isinstance(p_min, FloorMod):
            x, f = p_min.a, p_min.b
            if isinstance(x, Var):
                return x, VarDomain()  # x % f says nothing about the range of x
            if ana.can_prove_greater_equal(x, 1) and ana.can_prove_greater_equal(f, 1) \
                    and ana.can_prove_greater_equal(r_min, 0):
                return _solve_dim((x, x), (r_min, None), dim_max, ana, here)
    raise ScheduleError(f"cannot {here}: the block accesses the buffer at {p_min}, which cannot be "
                        "solved for one of its iteration variables")


def _signed_var(e: PrimExpr, block_vars: list[Var]) -> tuple[Var, int, PrimExpr] | None:
    """``e`` as ``sign * v + rest``: one block variable ``v``, ``sign`` = +-1, ``rest`` free of
    block variables (a one-to-one map, so it can be inverted)."""
    found = [v for v in block_vars if uses_var(e, v)]
    if len(found) != 1:
        return None
    v = found[0]
    ana = Analyzer()
    rest = ana.simplify(substitute(e, {v: const(0, v.dtype)}))
    coeff = ana.simplify(substitute(e, {v: const(1, v.dtype)}) - rest)
    if not isinstance(coeff, IntImm) or coeff.value not in (1, -1):
        return None
    rebuilt = v + rest if coeff.value == 1 else rest - v
    if not ana.can_prove_equal(e - rebuilt, 0):
        return None
    return v, coeff.value, rest


def _solve_affine(buffer: Buffer, block_vars: list[Var], provided: list, required: list, ana: Any,
                  doms: dict[int, VarDomain]) -> bool:
    """Where each provided dimension is one point ``+-v + c`` of a distinct block variable,
    invert that map: the required range gives the variable's range directly."""
    solved, seen = [], set()
    for (lo, hi), (r_lo, r_hi), extent in zip(provided, required, buffer.shape):
        if not _eq(ana, lo, hi) or r_lo is None or r_hi is None:
            return False
        if not {id(v) for v in block_vars} & vars_used(lo):
            if not (_eq(ana, lo, r_lo) and _eq(ana, hi, r_hi)):
                return False
            continue
        form = _signed_var(lo, block_vars)
        if form is None or id(form[0]) in seen:
            return False
        seen.add(id(form[0]))
        solved.append((form, (r_lo, r_hi), extent))
    for (v, sign, rest), (r_lo, r_hi), extent in solved:
        def inv(x: PrimExpr, sign: int = sign, rest: PrimExpr = rest) -> PrimExpr:
            return x - rest if sign == 1 else rest - x

        a, b = inv(r_lo), inv(r_hi)
        top = Max(extent - 1, const(0, extent.dtype))
        c, d = inv(const(0, extent.dtype)), inv(top)
        doms[id(v)].union(VarDomain((ana.simplify(Min(a, b)), ana.simplify(Max(a, b))),
                                    (ana.simplify(Min(c, d)), ana.simplify(Max(c, d)))))
    return True


def loops_between(loop: For | None, path: tuple) -> dict[int, tuple[PrimExpr, PrimExpr]]:
    """The loops below ``loop`` on ``path`` (all of them when ``loop`` is None), as var id ->
    inclusive (min, max)."""
    inner, below = {}, loop is None
    for s in path:
        if s is loop:
            below = True
        elif below and isinstance(s, For):
            inner[id(s.loop_var)] = _loop_range(s)
    return inner


#: each loop's inclusive (min, max), while the loop lives (nodes hash by identity)
_LOOP_RANGES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _loop_range(loop: For) -> tuple[PrimExpr, PrimExpr]:
    """``loop``'s inclusive (min, max), built once per loop: asked for every loop of every block
    path each time a primitive checks its scope."""
    found = _LOOP_RANGES.get(loop)
    if found is None:
        found = _LOOP_RANGES[loop] = (loop.min, loop.min + loop.extent - 1)
    return found


def thread_loops_sharing(loop: For, path: tuple, scope: str) -> dict[int, tuple[PrimExpr, PrimExpr]]:
    """The thread-bound loops at or above ``loop`` on ``path`` whose threads all see one buffer
    of storage ``scope`` (TVM's LoopDomainOfSRefTreePath with an extra relax scope): a shared
    cache computed under ``threadIdx.x`` must hold what every thread of the block reads."""
    if storage_rank(scope) == 0:  # global: TVM relaxes no thread loop here
        return {}
    out = {}
    at = next((k for k, s in enumerate(path) if s is loop), None)
    for s in path[:at + 1] if at is not None else ():
        if isinstance(s, For) and s.kind == ForKind.THREAD_BINDING and s.thread_binding \
                and can_relax_storage_under_thread(scope, s.thread_binding):
            out[id(s.loop_var)] = (s.min, s.min + s.extent - 1)
    return out


def _relax_region(region: Any, bind: dict, inner: dict, ana: Any) -> list[Interval]:
    """Each dimension of ``region`` (after ``bind``) as an interval over the loops in ``inner``."""
    out = []
    for dim, r in enumerate(region.region):
        b = range_bounds(r, inner, bind)
        if b is None:
            out.append((const(0, r.min.dtype), ana.simplify(region.buffer.shape[dim] - 1)))
        else:
            out.append((ana.simplify(b[0]), ana.simplify(b[1])))
    return out


def block_var_domains(block: Block, own_kind: str, partners: list, partner_kind: str, loop: For,
                      linked: dict, ana: Any, here: str, relax_threads: bool = False) -> list[VarDomain]:
    """For each block variable, the range the new loops must cover and the bound on it
    (``relax_threads``, compute_at's: the partners' regions also relaxed over the thread loops
    sharing the buffer's storage scope)."""
    block_vars = [iv.var for iv in block.iter_vars]
    doms = {id(v): VarDomain() for v in block_vars}
    provided: dict[int, list] = {}
    for region in getattr(block, own_kind):
        if id(region.buffer) not in linked:
            continue
        dims = [(r.min, r.min + r.extent - 1) for r in region.region]
        old = provided.get(id(region.buffer))
        provided[id(region.buffer)] = dims if old is None else [union(a, b) for a, b in zip(old, dims)]
    for key, prov in provided.items():
        buffer = linked[key]
        required = None
        for r, path in partners:
            bind = {iv.var: v for iv, v in zip(r.block.iter_vars, r.iter_values)}
            inner = loops_between(loop, path)
            if relax_threads:
                inner.update(thread_loops_sharing(loop, path, buffer.scope))
            for region in getattr(r.block, partner_kind):
                if region.buffer is buffer:
                    dims = _relax_region(region, bind, inner, ana)
                    required = dims if required is None else [union(a, b) for a, b in zip(required, dims)]
        if required is None:
            continue
        required = [(_simp(ana, lo), _simp(ana, hi)) for lo, hi in required]
        prov = [(_simp(ana, lo), _simp(ana, hi)) for lo, hi in prov]
        if _solve_affine(buffer, block_vars, prov, required, ana, doms):
            continue
        for d, (p, q) in enumerate(zip(prov, required)):
            if _eq(ana, p[0], p[1]) and isinstance(p[0], IntImm):
                continue  # a constant index: nothing to solve
            shape = buffer.shape[d]
            dim_max = ana.simplify(Max(shape - 1, const(0, shape.dtype)))
            var, info = _solve_dim(p, q, dim_max, ana, here)
            if id(var) in doms:
                doms[id(var)].union(info)
    result = []
    for iv in block.iter_vars:
        info = doms[id(iv.var)]
        whole = (iv.dom.min, iv.dom.min + iv.dom.extent - 1)
        info.bound = whole if info.bound is NOTHING else intersect(info.bound, whole)
        info.simplify(ana)
        result.append(info)
    return result


def constant_on_one_side(cond: PrimExpr, ana: Any) -> PrimExpr:
    """``x + k >= c`` as ``c - k <= x`` and ``x + k < c`` as ``x < c - k``: the forms TVM's
    simplifier gives these guards (constants gathered on one side, ``>=`` turned around)."""
    if not isinstance(cond, (GE, LT)):
        return cond
    lhs, rhs = ana.simplify(cond.a), ana.simplify(cond.b)
    if not isinstance(rhs, IntImm):
        return ana.simplify(cond)
    k = 0
    if isinstance(lhs, Add) and isinstance(lhs.b, IntImm):
        lhs, k = lhs.a, lhs.b.value
    elif isinstance(lhs, Sub) and isinstance(lhs.b, IntImm):
        lhs, k = lhs.a, -lhs.b.value
    c = const(rhs.value - k, rhs.dtype)
    return LE(c, lhs) if isinstance(cond, GE) else LT(lhs, c)


def check_reads_inside(block: Block, own_kind: str, linked: dict, partners: list, partner_kind: str,
                       loop: For, var_doms: list, ana: Any, here: str) -> None:
    """A consumer moved under ``loop`` must read only what its producers write in the same
    iteration of ``loop``: a strided access (``B[v * 2]``) can make it read an element written
    in an earlier iteration, which a buffer allocated inside the loop no longer holds."""
    doms = {}
    for iv, info in zip(block.iter_vars, var_doms):
        if info.dom is NOTHING or has_inf(info.dom):
            doms[id(iv.var)] = (iv.dom.min, iv.dom.min + iv.dom.extent - 1)
        else:
            doms[id(iv.var)] = info.dom
    for buffer in linked.values():
        required = None
        for r, path in partners:
            bind = {iv.var: v for iv, v in zip(r.block.iter_vars, r.iter_values)}
            for region in getattr(r.block, partner_kind):
                if region.buffer is buffer:
                    dims = _relax_region(region, bind, loops_between(loop, path), ana)
                    required = dims if required is None else [union(a, b) for a, b in zip(required, dims)]
        if required is None:
            continue
        for region in getattr(block, own_kind):
            if region.buffer is not buffer:
                continue
            for (r_lo, r_hi), rng in zip(required, region.region):
                b = range_bounds(rng, doms)
                if b is None:
                    continue
                if not (ana.can_prove(b[0] >= r_lo) and ana.can_prove(b[1] <= r_hi)):
                    raise ScheduleError(f"cannot {here}: under the loop the block would read {buffer.name} "
                                        f"at [{ana.simplify(b[0])}, {ana.simplify(b[1])}], beyond what its "
                                        f"producers write in that iteration ([{r_lo}, {r_hi}])")


def insertion_point(items: list, producers: set[int], consumers: set[int], index: int, here: str) -> int:
    """Where under the loop the block may go: after every subtree holding one of its producers
    and no later than the first holding one of its consumers; ``index`` -1 is the latest such
    place, -2 the earliest, otherwise the position itself."""
    def holds(s: Stmt, ids: set[int]) -> bool:
        found = [s] if isinstance(s, BlockRealize) else blocks_under(s)
        return any(id(r.block) in ids for r in found)

    last_producer = max((i for i, s in enumerate(items) if holds(s, producers)), default=-1)
    first_consumer = min((i for i, s in enumerate(items) if holds(s, consumers)), default=len(items))
    if last_producer >= first_consumer:
        raise ScheduleError(f"cannot {here}: no place under the loop comes after all of the block's "
                            "producers and before all of its consumers")
    if index == -1:
        return first_consumer
    if index == -2:
        return last_producer + 1
    if last_producer + 1 <= index <= first_consumer:
        return index
    raise ScheduleError(f"cannot {here}: index {index} is not a valid position under the loop; valid "
                        f"are -1, -2 and {last_producer + 1}..{first_consumer}")
