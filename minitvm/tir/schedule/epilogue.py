"""fuse_reduction_epilogue: fold an elementwise epilogue into the reduction it follows.

A reduction ``temp[i, j] += ...`` followed by an epilogue ``D[i, j] = f(temp[i, j])`` becomes
one reduction block writing ``D`` directly, for the three epilogues TVM recognises:

* bias ``temp + C`` (either order): ``D`` starts at ``C`` and accumulates — exactly the same;
* bias + ReLU ``max(temp + C, 0)`` (or ``max(temp, 0)``): ``D`` starts at ``max(C, 0)`` and
  every update is clamped at 0;
* clipping ``min(max(temp, lo), hi)`` and its commuted forms: ``D`` starts at the clipped zero
  and every update is clipped.

The non-linear two apply the epilogue *per iteration*, not once at the end, which changes
the result whenever an intermediate sum leaves the range — TVM documents this, and minitvm
does the same.  The epilogue block and its loops disappear; ``temp`` stays allocated (other
blocks may still read it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...ir import replace
from ...ir.structural import structural_equal
from ..buffer import Buffer, BufferRegion
from ..expr import Add, BufferLoad, FloatImm, IntImm, Max, Min, PrimExpr, const
from ..functor import post_order_visit, substitute
from ..stmt import Block, BlockRealize, BufferStore, Stmt
from .block_annotate import BufferReplacer
from .checks import complete_block_problem, loop_var_ids, reduction_block_problem
from .error import ScheduleError
from .shared_analyses import is_const_true
from .tree import ancestors, remove_block_with_empty_loops, replace_stmt

__all__ = ["fuse_reduction_epilogue"]


@dataclass
class _Pattern:
    kind: str                      # "bias", "bias_relu" or "clipping"
    addend: PrimExpr | None = None  # C[vi, vj] of a bias
    lower: PrimExpr | None = None
    upper: PrimExpr | None = None


def _is_load_of(e: PrimExpr, buffer: Any) -> bool:
    return isinstance(e, BufferLoad) and e.buffer is buffer


def _is_zero(e: PrimExpr) -> bool:
    return isinstance(e, (IntImm, FloatImm)) and e.value == 0


def _bias_of(e: PrimExpr, buffer: Any) -> PrimExpr | None:
    """``C`` when ``e`` is ``temp + C`` or ``C + temp`` (exactly one side reads temp)."""
    if isinstance(e, Add):
        a, b = _is_load_of(e.a, buffer), _is_load_of(e.b, buffer)
        if a != b:
            return e.b if a else e.a
    return None


def _match(value: PrimExpr, buffer: Any) -> _Pattern | None:
    """Which supported epilogue ``value`` is (TVM's order of tries), or None."""
    addend = _bias_of(value, buffer)
    if addend is not None:
        return _Pattern("bias", addend)

    def other_of(x: PrimExpr, y: PrimExpr) -> PrimExpr | None:
        return y if _is_load_of(x, buffer) else x if _is_load_of(y, buffer) else None

    # clipping: min(max(temp, lo), hi) / max(min(temp, hi), lo), operands in either order
    if isinstance(value, Min):
        inner, upper = (value.a, value.b) if isinstance(value.a, Max) else (value.b, value.a)
        if isinstance(inner, Max):
            lower = other_of(inner.a, inner.b)
            if lower is not None:
                return _Pattern("clipping", lower=lower, upper=upper)
    if isinstance(value, Max):
        inner, lower = (value.a, value.b) if isinstance(value.a, Min) else (value.b, value.a)
        if isinstance(inner, Min):
            upper = other_of(inner.a, inner.b)
            if upper is not None:
                return _Pattern("clipping", lower=lower, upper=upper)
    # ReLU with or without a bias: max(temp + C, 0), max(0, C + temp), max(temp, 0)
    if isinstance(value, Max):
        rest = value.b if _is_zero(value.a) else value.a if _is_zero(value.b) else None
        if rest is not None:
            addend = _bias_of(rest, buffer)
            if addend is not None:
                return _Pattern("bias_relu", addend)
            if _is_load_of(rest, buffer):
                return _Pattern("bias_relu", const(0, rest.dtype))
    return None


def _loads_of(node: Any, buffer: Any) -> list[BufferLoad]:
    found: list = []
    post_order_visit(node, lambda x: found.append(x) if _is_load_of(x, buffer) else None)
    return found


def fuse_reduction_epilogue(root: Stmt, reduction: BlockRealize, epilogue: BlockRealize,
                            param_buffers: set[int]) -> Stmt:
    """``root`` with ``epilogue`` folded into ``reduction`` (see the module docstring).  Steps:
    check both blocks, match the epilogue's pattern, line up the iterators, build the fused
    reduction, and remove the epilogue."""
    red, epi = reduction.block, epilogue.block
    what = f"cannot fuse epilogue block {epi.name_hint} into reduction block {red.name_hint}"
    epath = ancestors(root, epilogue)
    temp = _check_blocks(root, reduction, epilogue, epath, param_buffers, what)
    pattern, load = _match_epilogue(epilogue, temp, what)
    vmap = _line_up_iterators(red, epi, temp, load, what)
    fused = _fused_reduction(red, epi, temp, pattern, vmap)
    out = remove_block_with_empty_loops(root, epilogue, epath)
    return replace_stmt(out, red, fused)


def _check_blocks(root: Stmt, reduction: BlockRealize, epilogue: BlockRealize, epath: tuple,
                  param_buffers: set[int], what: str) -> Buffer:
    """Both in one scope; the reduction a reduction block writing one intermediate buffer
    (returned), not a parameter; the epilogue a complete block."""
    red, epi = reduction.block, epilogue.block
    rpath = ancestors(root, reduction)
    scope = next((s for s in reversed(rpath) if isinstance(s, Block)), None)
    escope = next((s for s in reversed(epath) if isinstance(s, Block)), None)
    if scope is None or scope is not escope:
        raise ScheduleError(f"{what}: the two blocks are not in the same scope block")
    if len(red.writes) != 1:
        raise ScheduleError(f"{what}: block {red.name_hint} must write exactly one buffer, it writes "
                            f"{len(red.writes)}")
    temp = red.writes[0].buffer
    why = reduction_block_problem(reduction, scope, loop_var_ids(rpath))
    if why is not None:
        raise ScheduleError(f"{what}: block {red.name_hint} is not a reduction block: {why}")
    why = complete_block_problem(epilogue, scope)
    if why is not None:
        raise ScheduleError(f"{what}: block {epi.name_hint} is not a complete block: {why}")
    if id(temp) in param_buffers:
        raise ScheduleError(f"{what}: block {red.name_hint} is an output block (it writes {temp.name}, a "
                            "parameter of the function)")
    return temp


def _match_epilogue(epilogue: BlockRealize, temp: Buffer, what: str) -> tuple[_Pattern, BufferLoad]:
    """The epilogue's pattern (see :func:`_match`) and its one load of ``temp``."""
    epi = epilogue.block
    store = epi.body
    body_error = (f"{what}: the epilogue must be a single store of temp + C, max(temp + C, 0) or "
                  f"min(max(temp, lower), upper) reading {temp.name} once, without a predicate")
    if not isinstance(store, BufferStore) or epi.init is not None:
        raise ScheduleError(body_error)
    if not is_const_true(epilogue.predicate):
        raise ScheduleError(body_error)
    loads = _loads_of(store.value, temp) + [x for i in store.indices for x in _loads_of(i, temp)]
    pattern = _match(store.value, temp) if loads else None
    if pattern is None or len(loads) != 1:
        raise ScheduleError(body_error)
    return pattern, loads[0]


def _line_up_iterators(red: Block, epi: Block, temp: Buffer, load: BufferLoad, what: str) -> dict:
    """The epilogue's spatial iterators stand for the reduction's, in order: as many, over
    the same ranges, reading ``temp`` where the reduction writes it.  Returns the mapping."""
    red_vars = [iv for iv in red.iter_vars if iv.iter_type == "spatial"]
    epi_vars = [iv for iv in epi.iter_vars if iv.iter_type == "spatial"]
    if len(red_vars) != len(epi_vars):
        raise ScheduleError(f"{what}: the blocks have {len(red_vars)} and {len(epi_vars)} spatial "
                            "iterators; they must have as many")
    for a, b in zip(red_vars, epi_vars):
        if not structural_equal(a.dom, b.dom, map_free_vars=True):
            raise ScheduleError(f"{what}: iterator {b.var.name} of {epi.name_hint} does not cover the same "
                                f"range as {a.var.name} of {red.name_hint}")
    vmap = {b.var: a.var for a, b in zip(red_vars, epi_vars)}
    temp_store = red.body
    if not (isinstance(temp_store, BufferStore) and temp_store.buffer is temp):
        raise ScheduleError(f"{what}: block {red.name_hint} must be a single store into {temp.name}")
    mapped = tuple(substitute(i, vmap) for i in load.indices)
    if not structural_equal(mapped, temp_store.indices):
        raise ScheduleError(f"{what}: {epi.name_hint} reads {temp.name} at other indices than "
                            f"{red.name_hint} writes it, so its iterators do not line up with the reduction's")
    return vmap


def _fused_reduction(red: Block, epi: Block, temp: Buffer, pattern: _Pattern, vmap: dict) -> Block:
    """The reduction accumulating into the epilogue's output: the init starts from the
    epilogue applied to 0, the update applies the non-linearity at every step."""
    store = epi.body
    out_buf = store.buffer
    out_idx = tuple(substitute(i, vmap) for i in store.indices)
    lower = upper = None
    if pattern.kind == "clipping":
        lower, upper = substitute(pattern.lower, vmap), substitute(pattern.upper, vmap)
        init_value: PrimExpr = Min(Max(const(0, out_buf.dtype), lower), upper)
    else:
        init_value = substitute(pattern.addend, vmap)
        if pattern.kind == "bias_relu":
            init_value = Max(init_value, const(0, init_value.dtype))
    redirected = BufferReplacer({id(temp): out_buf}).visit(red.body)
    value = redirected.value
    if pattern.kind == "bias_relu":
        value = Max(value, const(0, out_buf.dtype))
    elif pattern.kind == "clipping":
        value = Min(Max(value, lower), upper)
    # regions: the output replaces temp; the addend's region is read first (the init reads it)
    writes = tuple(BufferRegion(out_buf, substitute(w.region, vmap)) if w.buffer is temp else w
                   for w in red.writes)
    reads: list[BufferRegion] = []
    addend = pattern.addend
    if isinstance(addend, BufferLoad):
        region = next((r for r in epi.reads if r.buffer is addend.buffer), None)
        if region is not None:
            reads.append(BufferRegion(region.buffer, substitute(region.region, vmap)))
    seen = {id(r.buffer) for r in reads}
    for r in red.reads:
        if r.buffer is not temp and id(r.buffer) not in seen:
            reads.append(r)
            seen.add(id(r.buffer))
    return replace(red, init=BufferStore(out_buf, init_value, out_idx),
                   body=BufferStore(out_buf, value, redirected.indices), reads=tuple(reads), writes=writes)
