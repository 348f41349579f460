"""tir.Schedule: transform a TensorIR function one primitive at a time.

A schedule works on its own copy of the module.  Every primitive checks its
preconditions, rebuilds the function, and appends itself to ``sch.trace`` — Python
that replays the same steps on another copy.  A failed primitive raises
:class:`ScheduleError` and leaves the schedule unchanged.
"""

from __future__ import annotations

import random
from typing import Any

from ...ir.module import IRModule
from ..function import PrimFunc
from ..stmt import Block, BlockRealize, For, ForKind
from . import block_annotate as _block_annotate
from . import blockize as _blockize
from . import compute as _compute
from . import data as _data
from . import layout as _layout
from . import loops as _loops
from . import pad_einsum as _pad_einsum
from . import reindex as _reindex
from . import rfactor as _rfactor
from .error import ScheduleError
from .trace import BlockRV, ExprRV, Instruction, LoopRV, Trace
from .tree import block_realizes, child_stmts, loops_above, walk_stmts
from .tree import blocks_under as _blocks_under

__all__ = ["Schedule"]


class Schedule:
    """``Schedule(mod_or_func, seed=None)``: a schedule over a copy of the module."""

    def __init__(self, mod: IRModule | PrimFunc, seed: int | None = None, debug_mask: Any = None,
                 error_render_level: Any = None, enable_check: bool = True):
        if isinstance(mod, PrimFunc):
            mod = IRModule({"main": mod})
        if not isinstance(mod, IRModule):
            raise TypeError(f"Schedule expects an IRModule or a PrimFunc, got {type(mod).__name__}")
        self._mod = mod.copy()
        self._trace = Trace()
        self._seed = seed
        self._rng = random.Random(seed)
        prim_names = [gv.name_hint for gv, f in mod.items() if isinstance(f, PrimFunc)]
        self._func_name = ("main" if "main" in prim_names else prim_names[0]) if prim_names else None

    # -- state --------------------------------------------------------------------
    @property
    def mod(self) -> IRModule:
        return self._mod

    @property
    def trace(self) -> Trace:
        return self._trace

    @property
    def func_working_on(self) -> str | None:
        return self._func_name

    def copy(self) -> "Schedule":
        other = Schedule.__new__(Schedule)
        other._mod, other._trace, other._seed = self._mod, self._trace.copy(), self._seed
        other._rng = random.Random()
        other._rng.setstate(self._rng.getstate())
        other._func_name = self._func_name
        return other

    def seed(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def work_on(self, func_name: str) -> None:
        """Make ``func_name`` the function that lookups without ``func_name`` use."""
        self._func(func_name)
        self._func_name = func_name

    def show(self, *args: Any, **kwargs: Any) -> None:
        self._mod.show(*args, **kwargs)

    def _repr_html_(self) -> str:
        return self._mod._repr_html_()

    def _func(self, name: str | None = None) -> PrimFunc:
        name = name or self._func_name
        if name is None or name not in self._mod:
            have = ", ".join(self._mod.keys()) or "(none)"
            raise ScheduleError(f"the module has no function {name!r}; it has: {have}")
        func = self._mod[name]
        if not isinstance(func, PrimFunc):
            raise ScheduleError(f"function {name!r} is not a TIR PrimFunc")
        return func

    def _commit(self, func_name: str, body: Any) -> None:
        self._mod = self._mod.with_function(func_name, self._func(func_name).with_body(body))

    def _record(self, kind: str, inputs: dict, outputs: list) -> None:
        self._trace.append(Instruction(kind, inputs, outputs))

    # -- resolving references -------------------------------------------------------
    def _block(self, rv: BlockRV | str) -> tuple[BlockRealize, tuple]:
        if isinstance(rv, str):
            rv = self.get_block(rv)
        if not isinstance(rv, BlockRV):
            raise TypeError(f"expected a block (from sch.get_block), got {rv!r}")
        found = [(r, p) for r, p in block_realizes(self._func(rv.func_name).body)
                 if r.block.name_hint == rv.name]
        if not found:
            raise ScheduleError(f"block {rv.name!r} no longer exists in {rv.func_name!r}")
        return found[0]

    def _loop(self, rv: LoopRV) -> tuple[For, tuple]:
        if not isinstance(rv, LoopRV):
            raise TypeError(f"expected a loop (from sch.get_loops or a primitive), got {rv!r}")
        for s, path in walk_stmts(self._func(rv.func_name).body):
            if isinstance(s, For) and s.loop_var is rv.loop_var:
                return s, path
        raise ScheduleError(f"loop {rv.loop_var.name} no longer exists: an earlier primitive "
                            "(split, fuse, compute_at ...) replaced it; use the loops it returned")

    def get(self, rv: BlockRV | LoopRV) -> Block | For:
        """The Block or For node a reference points to now."""
        if isinstance(rv, BlockRV):
            return self._block(rv)[0].block
        return self._loop(rv)[0]

    def get_sref(self, rv: Any) -> Any:
        return self.get(rv)

    def _path_of(self, loop: For) -> tuple:
        for s, path in walk_stmts(self._func().body):
            if s is loop:
                return path
        return ()

    # -- lookup ---------------------------------------------------------------------
    def get_block(self, name: str, func_name: str | None = None) -> BlockRV:
        """The block called ``name`` (in ``func_name`` or the function worked on)."""
        func_name = func_name or self._func_name
        body = self._func(func_name).body
        matches = [r for r, _ in block_realizes(body) if r.block.name_hint == name]
        if not matches:
            names = sorted({r.block.name_hint for r, _ in block_realizes(body)} - {"root"})
            raise ScheduleError(f"no block named {name!r} in function {func_name!r}; blocks: {names}")
        if len(matches) > 1:
            raise ScheduleError(f"{len(matches)} blocks are named {name!r} in {func_name!r}")
        rv = BlockRV(name, func_name)
        self._record("get_block", {"name": name, "func_name": func_name}, [rv])
        return rv

    get_sblock = get_block

    def get_loops(self, block: BlockRV) -> list[LoopRV]:
        """The loops around ``block``, outermost first (up to the enclosing block)."""
        _, path = self._block(block)
        rvs = [LoopRV(lp.loop_var, block.func_name) for lp in loops_above(path)]
        self._record("get_loops", {"block": block}, rvs)
        return rvs

    def get_child_blocks(self, block_or_loop: BlockRV | LoopRV) -> list[BlockRV]:
        node = self.get(block_or_loop)
        func_name = block_or_loop.func_name
        found: list[BlockRV] = []

        def collect(s: Any) -> None:
            for c in child_stmts(s):
                if isinstance(c, BlockRealize):
                    found.append(BlockRV(c.block.name_hint, func_name))
                else:
                    collect(c)

        collect(node if isinstance(node, For) else node.body)
        self._record("get_child_blocks", {"block_or_loop": block_or_loop}, found)
        return found

    def _siblings(self, block: BlockRV) -> list[BlockRealize]:
        """Blocks in the same scope (the innermost enclosing block) as ``block``."""
        _, path = self._block(block)
        scope = next((s for s in reversed(path) if isinstance(s, Block)), None)
        if scope is None:
            return []
        out = []

        def collect(s: Any) -> None:
            for c in child_stmts(s):
                if isinstance(c, BlockRealize):
                    out.append(c)
                else:
                    collect(c)

        collect(scope.body)
        return out

    def get_producers(self, block: BlockRV) -> list[BlockRV]:
        """Blocks in the same scope that write a buffer ``block`` reads."""
        me = self._block(block)[0].block
        reads = {id(r.buffer) for r in me.reads}
        out = [BlockRV(r.block.name_hint, block.func_name) for r in self._siblings(block)
               if r.block is not me and any(id(w.buffer) in reads for w in r.block.writes)]
        self._record("get_producers", {"block": block}, out)
        return out

    def get_consumers(self, block: BlockRV) -> list[BlockRV]:
        """Blocks in the same scope that read a buffer ``block`` writes."""
        me = self._block(block)[0].block
        writes = {id(w.buffer) for w in me.writes}
        out = [BlockRV(r.block.name_hint, block.func_name) for r in self._siblings(block)
               if r.block is not me and any(id(x.buffer) in writes for x in r.block.reads)]
        self._record("get_consumers", {"block": block}, out)
        return out

    # -- loop transformations ---------------------------------------------------------
    def split(self, loop: LoopRV, factors: list[Any], preserve_unit_iters: bool = True,
              disable_predication: bool = False) -> list[LoopRV]:
        """Split ``loop`` into ``len(factors)`` nested loops; one factor may be None (inferred).

        A non-dividing split adds a predicate so the padding iterations do nothing.
        """
        node, _ = self._loop(loop)
        factors = [None if f is None else int(f) for f in factors]
        body, new_vars = _loops.split(self._func(loop.func_name).body, node, factors, preserve_unit_iters)
        self._commit(loop.func_name, body)
        rvs = [LoopRV(v, loop.func_name) for v in new_vars]
        self._record("split", {"loop": loop, "factors": factors,
                               "preserve_unit_iters": preserve_unit_iters}, rvs)
        return rvs

    def fuse(self, *loops: LoopRV, preserve_unit_iters: bool = True) -> LoopRV:
        """Fuse perfectly nested loops (outer to inner) into one."""
        nodes = [self._loop(lp)[0] for lp in loops]
        func_name = loops[0].func_name
        body, var = _loops.fuse(self._func(func_name).body, nodes)
        self._commit(func_name, body)
        rv = LoopRV(var, func_name)
        self._record("fuse", {"*loops": list(loops), "preserve_unit_iters": preserve_unit_iters}, [rv])
        return rv

    def reorder(self, *ordered_loops: LoopRV) -> None:
        """Reorder loops of one nest to the given order (outermost first)."""
        nodes = [self._loop(lp)[0] for lp in ordered_loops]
        func_name = ordered_loops[0].func_name
        body = _loops.reorder(self._func(func_name).body, nodes, self._path_of)
        self._commit(func_name, body)
        self._record("reorder", {"*ordered_loops": list(ordered_loops)}, [])

    def _set_kind(self, loop: LoopRV, kind: str, record: str) -> None:
        node, path = self._loop(loop)
        body = _loops.set_loop_kind(self._func(loop.func_name).body, node, kind, path)
        self._commit(loop.func_name, body)
        self._record(record, {"loop": loop}, [])

    def parallel(self, loop: LoopRV) -> None:
        """Run the iterations of ``loop`` on all cores."""
        self._set_kind(loop, ForKind.PARALLEL, "parallel")

    def vectorize(self, loop: LoopRV) -> None:
        """Compute the iterations of ``loop`` with SIMD vector instructions."""
        self._set_kind(loop, ForKind.VECTORIZED, "vectorize")

    def unroll(self, loop: LoopRV) -> None:
        """Unroll ``loop`` fully."""
        self._set_kind(loop, ForKind.UNROLLED, "unroll")

    def annotate(self, block_or_loop: BlockRV | LoopRV | str, ann_key: str, ann_val: Any) -> None:
        """Add ``ann_key: ann_val`` to a block's ``T.block_attr`` or a loop's annotations
        (as TVM, a key that is already there keeps its value)."""
        block_or_loop = self._block_rv(block_or_loop)
        self._annotate(block_or_loop, lambda anns: anns if ann_key in anns else {**anns, ann_key: ann_val})
        self._record("annotate", {"block_or_loop": block_or_loop, "ann_key": ann_key, "ann_val": ann_val}, [])

    def unannotate(self, block_or_loop: BlockRV | LoopRV | str, ann_key: str) -> None:
        """Remove ``ann_key`` from a block's or loop's annotations (it must be there)."""
        block_or_loop = self._block_rv(block_or_loop)
        self._annotate(block_or_loop, lambda anns: {k: v for k, v in anns.items() if k != ann_key}, ann_key)
        self._record("unannotate", {"block_or_loop": block_or_loop, "ann_key": ann_key}, [])

    def _annotate(self, rv: BlockRV | LoopRV, update: Any, must_have: str | None = None) -> None:
        from ...ir import replace
        from .tree import replace_stmt

        node = self.get(rv)
        if must_have is not None and must_have not in node.annotations:
            what = f"block {node.name_hint}" if isinstance(node, Block) else f"loop {node.loop_var.name}"
            raise ScheduleError(f"cannot unannotate {what}: it has no annotation {must_have!r} "
                                f"(it has {sorted(node.annotations)})")
        body = replace_stmt(self._func(rv.func_name).body, node,
                            replace(node, annotations=update(node.annotations)))
        self._commit(rv.func_name, body)

    # -- compute location -------------------------------------------------------------
    def compute_at(self, block: BlockRV, loop: LoopRV, preserve_unit_loops: bool = False,
                   index: int = -1) -> None:
        """Move producer ``block`` under ``loop`` of its consumers, computing only what they need there."""
        self._compute_location("compute_at", block, loop, preserve_unit_loops, index)

    def reverse_compute_at(self, block: BlockRV, loop: LoopRV, preserve_unit_loops: bool = False,
                           index: int = -1) -> None:
        """Move consumer ``block`` under ``loop`` of its producer, right after what it needs."""
        self._compute_location("reverse_compute_at", block, loop, preserve_unit_loops, index)

    def _compute_location(self, kind: str, block: BlockRV, loop: LoopRV, preserve: bool, index: int) -> None:
        realize, _ = self._block(block)
        target, _ = self._loop(loop)
        body = _compute.compute_at(self._func(block.func_name).body, realize, target,
                                   reverse=kind == "reverse_compute_at", preserve_unit_loops=preserve)
        self._commit(block.func_name, body)
        self._record(kind, {"block": block, "loop": loop, "preserve_unit_loops": preserve,
                            "index": index}, [])

    def compute_inline(self, block: BlockRV) -> None:
        """Inline an elementwise producer into every place that reads its output."""
        realize, _ = self._block(block)
        func = self._func(block.func_name)
        body = _compute.compute_inline(func.body, realize, self._output_buffers(func))
        self._commit(block.func_name, body)
        self._record("compute_inline", {"block": block}, [])

    def reverse_compute_inline(self, block: BlockRV) -> None:
        """Inline an elementwise consumer into its single producer."""
        realize, _ = self._block(block)
        func = self._func(block.func_name)
        body = _compute.reverse_compute_inline(func.body, realize)
        self._commit(block.func_name, body)
        self._record("reverse_compute_inline", {"block": block}, [])

    @staticmethod
    def _output_buffers(func: PrimFunc) -> set[int]:
        return {id(b) for b in func.buffer_map.values()}

    def decompose_reduction(self, block: BlockRV, loop: LoopRV) -> BlockRV:
        """Split a reduction's ``T.init`` into its own block placed before ``loop``."""
        realize, _ = self._block(block)
        target, _ = self._loop(loop)
        body, init_name = _compute.decompose_reduction(self._func(block.func_name).body, realize, target)
        self._commit(block.func_name, body)
        rv = BlockRV(init_name, block.func_name)
        self._record("decompose_reduction", {"block": block, "loop": loop}, [rv])
        block.name = f"{realize.block.name_hint}_update"  # the reference follows the renamed update block
        return rv

    def rfactor(self, loop: LoopRV, factor_axis: int) -> BlockRV:
        """Turn the reduction over ``loop`` into a partial result per ``loop`` iteration
        (a new block and buffer ``<name>_rf``) plus a final reduction; returns the rf block."""
        node, _ = self._loop(loop)
        func = self._func(loop.func_name)
        owners = [r for r in _blocks_under(node) if r.block.init is not None]
        if len(owners) != 1:
            raise ScheduleError(f"cannot rfactor at loop {node.loop_var.name}: it must hold exactly one "
                                f"reduction block, found {len(owners)}")
        body, name = _rfactor.rfactor(func.body, owners[0], node, factor_axis)
        self._commit(loop.func_name, body)
        rv = BlockRV(name, loop.func_name)
        self._record("rfactor", {"loop": loop, "factor_axis": factor_axis}, [rv])
        return rv

    def blockize(self, target: LoopRV, preserve_unit_iters: bool = True) -> BlockRV:
        """Wrap the loops from ``target`` down to its block into a new outer block ``<name>_o``."""
        node, _ = self._loop(target)
        body, name = _blockize.blockize(self._func(target.func_name).body, node)
        self._commit(target.func_name, body)
        rv = BlockRV(name, target.func_name)
        self._record("blockize", {"target": target}, [rv])
        return rv

    def tensorize(self, block_or_loop: BlockRV | LoopRV, tensor_intrin: str) -> None:
        """Replace a block (or the loops under a loop, blockized first) with a registered intrinsic."""
        intrin = _blockize.TensorIntrin.get(tensor_intrin)
        func_name = block_or_loop.func_name
        if isinstance(block_or_loop, LoopRV):
            node, _ = self._loop(block_or_loop)
            body, name = _blockize.blockize(self._func(func_name).body, node)
        else:
            body, name = self._func(func_name).body, block_or_loop.name
        realize = next(r for r, _ in block_realizes(body) if r.block.name_hint == name)
        self._commit(func_name, _blockize.tensorize(body, realize, intrin))
        self._record("tensorize", {"block_or_loop": block_or_loop, "tensor_intrin": tensor_intrin}, [])

    # -- data movement ------------------------------------------------------------------
    def cache_read(self, block: BlockRV, read_buffer_index: int | str, storage_scope: str,
                   consumer_blocks: Any = None) -> BlockRV:
        """Copy a buffer ``block`` reads into a new ``storage_scope`` buffer, read from there."""
        realize, _ = self._block(block)
        body, name = _data.cache_read(self._func(block.func_name).body, realize, read_buffer_index,
                                      storage_scope)
        return self._cache_done("cache_read", block, body, name, read_buffer_index, storage_scope)

    def cache_write(self, block: BlockRV, write_buffer_index: int | str, storage_scope: str,
                    consumer_blocks: Any = None) -> BlockRV:
        """Let ``block`` write into a new ``storage_scope`` buffer, copied out afterwards."""
        realize, _ = self._block(block)
        body, name = _data.cache_write(self._func(block.func_name).body, realize, write_buffer_index,
                                       storage_scope)
        return self._cache_done("cache_write", block, body, name, write_buffer_index, storage_scope)

    def _cache_done(self, kind: str, block: BlockRV, body: Any, name: str, index: Any, scope: str) -> BlockRV:
        self._commit(block.func_name, body)
        rv = BlockRV(name, block.func_name)
        key = "read_buffer_index" if kind == "cache_read" else "write_buffer_index"
        self._record(kind, {"block": block, key: index, "storage_scope": scope}, [rv])
        return rv

    def transform_layout(self, block: BlockRV, buffer: Any, index_map: Any, pad_value: Any = None) -> None:
        """Store a buffer in a new layout; ``buffer`` is ("read", i), ("write", i) or a name.

        A buffer that is a function parameter changes the function's signature.
        """
        realize, _ = self._block(block)
        blk = realize.block
        if isinstance(buffer, tuple):
            kind, index = buffer
            regions = blk.reads if kind == "read" else blk.writes
            target = _data._pick(regions, index, "reads" if kind == "read" else "writes", blk)
        else:
            target = _data._pick(blk.reads + blk.writes, buffer, "accesses", blk)
        func = self._func(block.func_name)
        self._mod = self._mod.with_function(block.func_name, _data.transform_layout(func, target, index_map))
        self._record("transform_layout", {"block": block, "buffer": buffer, "index_map": index_map}, [])

    # -- sampling -------------------------------------------------------------------------
    def sample_perfect_tile(self, loop: LoopRV, n: int, max_innermost_factor: int = 16,
                            decision: list[int] | None = None) -> list[ExprRV]:
        """Random factors of ``loop``'s extent into ``n`` parts (innermost <= max_innermost_factor)."""
        node, _ = self._loop(loop)
        extent = _loops._const_extent(node)
        if decision is None:
            decision = _sample_tile(self._rng, extent, n, max_innermost_factor)
        else:
            product = 1
            for f in decision:
                product *= f
            if len(decision) != n or product != extent:
                raise ScheduleError(f"tile decision {decision} is not {n} factors of {extent}")
        outs = [ExprRV(f) for f in decision]
        self._record("sample_perfect_tile", {"loop": loop, "n": n,
                                             "max_innermost_factor": max_innermost_factor}, outs)
        return outs

    def sample_categorical(self, candidates: list[int], probs: list[float],
                           decision: int | None = None) -> ExprRV:
        """Pick one of ``candidates`` with the given probabilities (recorded in the trace)."""
        if len(candidates) != len(probs) or not candidates:
            raise ScheduleError("sample_categorical needs as many probabilities as candidates")
        if decision is None:
            decision = self._rng.choices(range(len(candidates)), weights=probs)[0]
        out = ExprRV(candidates[decision])
        out.index = decision  # type: ignore[attr-defined]
        self._record("sample_categorical", {"candidates": list(candidates), "probs": list(probs)}, [out])
        return out

    # -- buffer annotations, block layout, unit loops (block_annotate.py, layout.py) -----------
    def _block_rv(self, block: BlockRV | str) -> BlockRV:
        """A block given by name becomes a BlockRV (recorded as ``get_block``, as in TVM)."""
        return self.get_block(block) if isinstance(block, str) else block

    def set_scope(self, block: BlockRV | str, buffer_index: int | str | Any, storage_scope: str) -> None:
        """Store the ``buffer_index``-th buffer ``block`` writes in ``storage_scope`` (it must be
        allocated by a block, not a parameter)."""
        block = self._block_rv(block)
        realize, _ = self._block(block)
        body, index = _block_annotate.set_scope(self._func(block.func_name).body, realize.block,
                                                buffer_index, storage_scope)
        self._commit(block.func_name, body)
        self._record("set_scope", {"block": block, "buffer_index": index, "storage_scope": storage_scope}, [])

    def storage_align(self, block: BlockRV | str, buffer_index: int, axis: int, factor: int,
                      offset: int) -> None:
        """Pad the stride of ``axis`` of a written, block-allocated buffer to
        ``k * factor + offset`` (recorded as a ``buffer_dim_align`` block annotation)."""
        from .tree import replace_stmt

        block = self._block_rv(block)
        realize, _ = self._block(block)
        root = self._func(block.func_name).body
        new = _block_annotate.storage_align(root, realize.block, buffer_index, axis, factor, offset)
        self._commit(block.func_name, replace_stmt(root, realize.block, new))
        self._record("storage_align", {"block": block, "buffer_index": buffer_index, "axis": axis,
                                       "factor": factor, "offset": offset}, [])

    def add_unit_loop(self, block_or_loop: BlockRV | LoopRV | str) -> LoopRV:
        """A new loop of extent 1 right above ``block_or_loop``; returns it."""
        rv = self._block_rv(block_or_loop)
        if isinstance(rv, BlockRV):
            node, path = self._block(rv)
            if not any(isinstance(s, Block) for s in path):
                raise ScheduleError(f"add_unit_loop: block {rv.name!r} is the root block; "
                                    "no loop can be added above it")
        else:
            node, _ = self._loop(rv)
        body, var = _layout.add_unit_loop(self._func(rv.func_name).body, node)
        self._commit(rv.func_name, body)
        out = LoopRV(var, rv.func_name)
        self._record("add_unit_loop", {"block_or_loop": rv}, [out])
        return out

    def transform_block_layout(self, block: BlockRV | str, index_map: Any) -> None:
        """Remap ``block``'s iteration space through ``index_map`` (the loops above it are rebuilt)."""
        block = self._block_rv(block)
        realize, path = self._block(block)
        func = self._func(block.func_name)
        body = _layout.transform_block_layout(func.body, realize, path, index_map)
        self._commit(block.func_name, body)
        self._record("transform_block_layout", {"block": block, "index_map": index_map}, [])

    # -- reindexing (reindex.py) -------------------------------------------------------------
    def reindex(self, block: BlockRV | str, buffer: tuple[str, int] | str | Any) -> BlockRV:
        """Copy a buffer ``block`` accesses into (out of) a new buffer indexed by the block's
        iterators; ``buffer`` is ("read", i), ("write", i), a name or a Buffer."""
        block = self._block_rv(block)
        realize, path = self._block(block)
        blk = realize.block
        if isinstance(buffer, (tuple, list)) and len(buffer) == 2 and isinstance(buffer[0], str):
            kind, index = buffer
            if kind not in ("read", "write"):
                raise ScheduleError(f"reindex: buffer kind must be 'read' or 'write', got {kind!r}")
        else:
            # a buffer both read and written (an accumulator) counts as written, as in TVM
            hits = [("write", k) for k, w in enumerate(blk.writes) if w.buffer is buffer or w.buffer.name == buffer]
            hits += [("read", k) for k, r in enumerate(blk.reads) if r.buffer is buffer or r.buffer.name == buffer]
            if not hits:
                name = getattr(buffer, "name", buffer)
                raise ScheduleError(f"reindex: block {blk.name_hint} does not access a buffer named {name!r}")
            kind, index = hits[0]
        body, name, index = _reindex.reindex(self._func(block.func_name).body, realize, path, kind, index)
        self._commit(block.func_name, body)
        rv = BlockRV(name, block.func_name)
        self._record("reindex", {"block": block, "buffer": (kind, index)}, [rv])
        return rv

    def reindex_cache_read(self, block: BlockRV | str, read_buffer_index: int, storage_scope: str,
                           index_map: Any) -> BlockRV:
        """A ``storage_scope`` copy of a buffer ``block`` reads at one point, laid out as
        ``index_map(block iterators)``; the block then reads the copy."""
        return self._reindex_cache(block, read_buffer_index, storage_scope, index_map, read=True)

    def reindex_cache_write(self, block: BlockRV | str, write_buffer_index: int, storage_scope: str,
                            index_map: Any) -> BlockRV:
        """``block`` writes a ``storage_scope`` buffer laid out as ``index_map(block iterators)``,
        copied to the original buffer afterwards."""
        return self._reindex_cache(block, write_buffer_index, storage_scope, index_map, read=False)

    def _reindex_cache(self, block: BlockRV | str, index: int, scope: str, index_map: Any, read: bool) -> BlockRV:
        block = self._block_rv(block)
        realize, path = self._block(block)
        body, name = _reindex.reindex_cache(self._func(block.func_name).body, realize, path, index, scope,
                                            index_map, read)
        self._commit(block.func_name, body)
        rv = BlockRV(name, block.func_name)
        kind = "reindex_cache_read" if read else "reindex_cache_write"
        key = "read_buffer_index" if read else "write_buffer_index"
        self._record(kind, {"block": block, key: index, "storage_scope": scope, "index_map": index_map}, [rv])
        return rv

    def pad_einsum(self, block: BlockRV | str, padding: list[int]) -> None:
        """Round ``block``'s iteration domain up to multiples of ``padding`` (one factor per
        iterator), with zero-padded copies of the buffers it would otherwise overrun."""
        block = self._block_rv(block)
        realize, path = self._block(block)
        body = _pad_einsum.pad_einsum(self._func(block.func_name).body, realize, path, padding)
        self._commit(block.func_name, body)
        self._record("pad_einsum", {"block": block, "padding": [int(p) for p in padding]}, [])


def _sample_tile(rng: random.Random, extent: int, n: int, max_innermost: int) -> list[int]:
    """Uniform over the ways to write ``extent`` as an ordered product of ``n`` factors."""
    divisors = [d for d in range(1, extent + 1) if extent % d == 0]
    inner = rng.choice([d for d in divisors if d <= max_innermost] or [1])
    rest = extent // inner
    factors = []
    for _ in range(n - 2):
        f = rng.choice([d for d in range(1, rest + 1) if rest % d == 0])
        factors.append(f)
        rest //= f
    return [rest] + factors + [inner] if n > 1 else [extent]
