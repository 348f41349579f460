"""tir.Schedule: transform a TensorIR function one primitive at a time.

A schedule works on its own copy of the module.  Every primitive checks its
preconditions, rebuilds the function, and appends itself to ``sch.trace`` — Python
that replays the same steps on another copy.  A failed primitive raises
:class:`ScheduleError` and leaves the schedule unchanged.

Each primitive is declared once, by ``@primitive("Split", inputs=(...))`` above its method
(see primitive.py): that line and the signature give its trace record, printing and replay.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from ...ir import replace
from ...ir.module import IRModule
from ..analysis import uses_var
from ..expr import IntImm, PrimExpr
from ..function import PrimFunc, written_era
from ..functor import substitute
from ..index_map import as_index_map
from ..stmt import Block, BlockRealize, For, ForKind
from ..stmt_functor import loop_with_var
from . import axis_separator as _axis_separator
from . import block_annotate as _block_annotate
from . import block_iters as _block_iters
from . import blockize as _blockize
from . import buffer_access as _buffer_access
from . import cache as _cache_mod
from . import cache_index as _cache_index
from . import compute as _compute
from . import compute_inline as _compute_inline
from . import data as _data
from . import decompose_padding as _decompose_padding
from . import epilogue as _epilogue
from . import layout as _layout
from . import loops as _loops
from . import merge as _merge
from . import pad_einsum as _pad_einsum
from . import partition as _partition
from . import random_engine as _random_engine
from . import read_write_at as _read_write_at
from . import reindex as _reindex
from . import rfactor as _rfactor
from . import rolling_buffer as _rolling_buffer
from .checks import child_blocks
from .error import ScheduleError
from .primitive import primitive
from .shared_analyses import simplify
from .state import ScheduleState, StmtSRef
from .trace import BlockRV, ExprRV, LoopRV, Trace, random_vars_in
from .tree import block_realizes, child_stmts, loops_above, replace_stmt, walk_stmts

__all__ = ["Schedule"]


class BufferArgumentError(ScheduleError, AssertionError):
    """A buffer argument names no buffer the block accesses (TVM asserts on it)."""


def _rendered_getattribute(self: Any, name: str) -> Any:
    # error_render_level="fast"/"none": a primitive's ScheduleError is shown shortened, as TVM
    attr = object.__getattribute__(self, name)
    if name.startswith("_") or not callable(attr):
        return attr

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return attr(*args, **kwargs)
        except ScheduleError as err:
            raise err.rendered(object.__getattribute__(self, "_render_level")) from None

    call.__name__ = name
    call.__doc__ = attr.__doc__
    return call


#: schedule class -> its subclass that renders ScheduleErrors at a shorter level
_RENDERING: dict[type, type] = {}


def _rendering(cls: type) -> type:
    """``cls`` with errors rendered as ``error_render_level`` asks (same name: it is the same
    schedule, only its errors print shorter)."""
    if cls in _RENDERING.values():
        return cls
    found = _RENDERING.get(cls)
    if found is None:
        found = _RENDERING[cls] = type(cls.__name__, (cls,), {"__getattribute__": _rendered_getattribute,
                                                              "__module__": cls.__module__,
                                                              "__qualname__": cls.__qualname__})
    return found


class Schedule:
    """``Schedule(mod_or_func, seed=None)``: a schedule over a copy of the module.

    ``debug_mask`` ("all", "none" or TVM's bit mask) turns on the state check after every
    primitive; ``error_render_level`` shortens ScheduleError messages; ``enable_check=False``
    (skip prerequisite checks) is refused: every primitive here checks its conditions.
    """

    def __init__(self, mod: IRModule | PrimFunc, seed: int | None = None, debug_mask: str | int | None = None,
                 error_render_level: Any = None, enable_check: bool = True):
        if isinstance(mod, PrimFunc):
            mod = IRModule({"main": mod})
        if not isinstance(mod, IRModule):
            raise TypeError(f"Schedule expects an IRModule or a PrimFunc, got {type(mod).__name__}")
        self._verify_state = _parse_debug_mask(debug_mask) != 0
        if not isinstance(enable_check, bool):
            raise TypeError(f"Schedule(enable_check=...) takes a bool, got {type(enable_check).__name__}")
        if not enable_check:
            raise NotImplementedError("Schedule(enable_check=False): minitvm cannot skip the prerequisite "
                                      "checks of its primitives; every primitive checks its conditions")
        level = "detail" if error_render_level is None else error_render_level
        if level not in ("detail", "fast", "none"):
            raise ValueError(f"Schedule(error_render_level={error_render_level!r}): use 'detail', 'fast' "
                             "or 'none'")
        self._render_level = level
        if level != "detail":  # (a class of its own: every attribute read of a schedule pays for the hook)
            self.__class__ = _rendering(type(self))
        self._mod = mod.copy()
        self._trace = Trace(era=written_era(mod))  # it prints in the era its functions were written in
        self._values: dict[ExprRV, int] = {}  # what each sampled random variable evaluates to
        self._seed = seed
        self._rng = random.Random(seed)
        self._removed: set[int] = set()  # random variables given to remove_rv
        self._calls: list = []  # the primitives being applied, outermost first (primitive.py)
        # the entry function, as TVM finds it: the only PrimFunc, or the one named main
        prim_names = [gv.name_hint for gv, f in mod.items() if isinstance(f, PrimFunc)]
        self._func_name = prim_names[0] if len(prim_names) == 1 else "main" if "main" in prim_names else None

    # -- state --------------------------------------------------------------------
    @property
    def mod(self) -> IRModule:
        return self._mod

    @property
    def trace(self) -> Trace:
        return self._trace

    @property
    def func_working_on(self) -> Any:
        """The GlobalVar of the function lookups without ``func_name`` use (None when unknown)."""
        return None if self._func_name is None else self._mod.get_global_var(self._func_name)

    def copy(self) -> "Schedule":
        other = type(self).__new__(type(self))  # a subclass (with primitives of its own) stays one
        other._mod, other._trace, other._seed = self._mod, self._trace.copy(), self._seed
        other._values = dict(self._values)
        other._removed = set(self._removed)
        other._calls = []
        other._rng = random.Random()
        other._rng.setstate(self._rng.getstate())
        other._func_name = self._func_name
        other._render_level, other._verify_state = self._render_level, self._verify_state
        other._lcg_state = getattr(self, "_lcg_state", None)
        return other

    def seed(self, seed: int) -> None:
        self._rng = random.Random(seed)
        self._lcg_state = _random_engine.normalize_seed(seed)

    def fork_seed(self) -> int:
        """A new seed drawn from this schedule's random state (for a forked schedule)."""
        return self._rng.randrange(1, 2**31 - 1)

    def work_on(self, func_name: str) -> None:
        """Make ``func_name`` the function that lookups without ``func_name`` use."""
        if not isinstance(func_name, str):
            func_name = func_name.name_hint
        self._func(func_name)
        self._func_name = func_name

    def show(self, *args: Any, **kwargs: Any) -> None:
        """Print the module as TVMScript, then the trace that made it (as TVM's ``sch.show()``).

        Arguments go to the module's ``show``; the trace takes its ``style`` and ``black_format``."""
        self._mod.show(*args, **kwargs)
        options = dict(zip(("style", "black_format"), args))
        options.update({k: v for k, v in kwargs.items() if k in ("style", "black_format")})
        self.trace.show(**options)

    def _repr_html_(self) -> str:
        return self._mod._repr_html_()

    def _func(self, name: str | None = None) -> PrimFunc:
        name = name or self._func_name
        if name is None:
            have = ", ".join(self._mod.keys()) or "(none)"
            raise ValueError("the schedule does not know which function to be working on: the module has "
                             f"several ({have}); call sch.work_on(name) or pass func_name=")
        if name not in self._mod:
            have = ", ".join(self._mod.keys()) or "(none)"
            raise ScheduleError(f"the module has no function {name!r}; it has: {have}")
        func = self._mod[name]
        if not isinstance(func, PrimFunc):
            raise ScheduleError(f"function {name!r} is not a TIR PrimFunc")
        return func

    def _commit(self, func_name: str, body: Any) -> None:
        self._commit_function(func_name, self._func(func_name).with_body(body))

    def _commit_function(self, func_name: str, func: PrimFunc) -> None:
        """The one place a primitive's result enters the schedule (checked under debug_mask)."""
        if self._verify_state:
            _verify_block_names(self._func(func_name).body, func.body)
        self._mod = self._mod.with_function(func_name, func)

    def _record_as(self, **values: Any) -> None:
        """Record the primitive being applied with these values for its arguments: what it
        resolved them to (a buffer's index for its name, the decision it sampled)."""
        self._calls[-1].values.update(values)

    def _then(self, step: Any) -> None:
        """Run ``step`` right after the primitive being applied is recorded (as its own step)."""
        self._calls[-1].then.append(step)

    # -- resolving references -------------------------------------------------------
    def _check_alive(self, rv: Any) -> None:
        if id(rv) in self._removed:
            raise IndexError(f"random variable {rv!r} was removed from the schedule (remove_rv)")

    def _block(self, rv: BlockRV | str) -> tuple[BlockRealize, tuple]:
        if isinstance(rv, str):
            rv = self.get_block(rv)
        if not isinstance(rv, BlockRV):
            raise TypeError(f"expected a block (from sch.get_block), got {rv!r}")
        self._check_alive(rv)
        found = [(r, p) for r, p in block_realizes(self._func(rv.func_name).body)
                 if r.block.name_hint == rv.name]
        if not found:
            raise ScheduleError(f"block {rv.name!r} no longer exists in {rv.func_name!r}")
        return found[0]

    def _loop(self, rv: LoopRV) -> tuple[For, tuple]:
        if not isinstance(rv, LoopRV):
            raise TypeError(f"expected a loop (from sch.get_loops or a primitive), got {rv!r}")
        self._check_alive(rv)
        found = loop_with_var(self._func(rv.func_name).body, rv.loop_var)
        if found is not None:
            return found
        raise ScheduleError(f"loop {rv.loop_var.name} no longer exists: an earlier primitive "
                            "(split, fuse, compute_at ...) replaced it; use the loops it returned")

    def get(self, rand_var_or_sref: BlockRV | LoopRV | ExprRV) -> Block | For | int:
        """What a random variable points to now: a Block, a For, or a sampled integer."""
        rv = rand_var_or_sref
        if isinstance(rv, ExprRV):
            self._check_alive(rv)
            if rv not in self._values:
                raise ScheduleError(f"random variable {rv.name} was not sampled by this schedule")
            return self._values[rv]
        if isinstance(rv, BlockRV):
            return self._block(rv)[0].block
        if isinstance(rv, (Block, For)):
            return rv
        return self._loop(rv)[0]

    def get_sref(self, rand_var_or_stmt: BlockRV | LoopRV | Block | For) -> StmtSRef | None:
        """The statement reference (``.stmt``, ``.parent``) of a block or loop, as TVM's; see state.py."""
        return self.state.get_sref(self.get(rand_var_or_stmt))

    @property
    def state(self) -> ScheduleState:
        """The module with TVM's statement references made on demand (``sch.state.get_sref(block)``)."""
        return ScheduleState(self)

    def remove_rv(self, rand_var: BlockRV | LoopRV | ExprRV) -> None:
        """Forget a random variable: using it afterwards raises IndexError."""
        self._removed.add(id(rand_var))
        if isinstance(rand_var, ExprRV):
            self._values.pop(rand_var, None)

    def _int_value(self, x: Any, what: str) -> int | None:
        """A factor as an int: sampled variables read their value, expressions over them fold."""
        if x is None:
            return None
        if isinstance(x, ExprRV):
            return int(self.get(x))
        if isinstance(x, PrimExpr):
            folded = simplify(substitute(x, {v: self.get(v) for v in random_vars_in(x)}))
            if not isinstance(folded, IntImm):
                raise ScheduleError(f"{what} {x} is not a constant")
            return folded.value
        return int(x)

    def _path_of(self, loop: For) -> tuple:
        found = loop_with_var(self._func().body, loop.loop_var)
        if found is not None and found[0] is loop:
            return found[1]
        for s, path in walk_stmts(self._func().body):
            if s is loop:
                return path
        return ()

    # -- lookup ---------------------------------------------------------------------
    @primitive("GetBlock", pure=True)
    def get_block(self, name: str, func_name: str | None = None) -> BlockRV:
        """The block called ``name``, as a BlockRV: a reference that later primitives take.

        Preconditions: exactly one block of ``func_name`` (by default the function the schedule works
        on, see ``work_on``) is called ``name``.  Every primitive that takes a block also takes its
        name and looks it up with this, so ``sch.get_loops("B")`` is ``sch.get_loops(sch.get_block("B"))``
        (and both record the lookup in the trace).

        Parameters
        ----------
        name : str
            The block's name, as in ``T.block("B")``.
        func_name : str, optional
            The function to look in.

        Returns
        -------
        block : BlockRV
            The block.  It keeps pointing at the block while other primitives rebuild the function.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
                for i in range(64):
                    with T.block("B"):
                        vi = T.axis.spatial(64, i)
                        B[vi] = A[vi] * T.float32(2)

        Look it up and read it back:

        .. code-block:: python

            sch = tir.Schedule(before)
            block = sch.get_block("B")
            assert sch.get(block).name_hint == "B"
        """
        func_name = func_name or self._func_name
        body = self._func(func_name).body
        matches = [r for r, _ in block_realizes(body) if r.block.name_hint == name]
        if not matches:
            names = sorted({r.block.name_hint for r, _ in block_realizes(body)} - {"root"})
            raise ScheduleError(f"Cannot find a block with the name: {name} (no block named {name!r} in "
                                f"function {func_name!r}; blocks: {names})",
                                fast="Cannot find a block with the specified name")
        if len(matches) > 1:
            raise ScheduleError(f"{len(matches)} blocks are named {name!r} in {func_name!r}")
        self._record_as(func_name=func_name)
        return BlockRV(name, func_name)

    get_sblock = get_block

    @primitive("GetLoops", inputs=("block",), pure=True)
    def get_loops(self, block: BlockRV | str) -> list[LoopRV]:
        """The loops around ``block``, outermost first, up to the block that encloses it.

        Preconditions: ``block`` still exists (a primitive such as compute_inline removes blocks).

        Parameters
        ----------
        block : BlockRV or str
            The block, or its name.

        Returns
        -------
        loops : list[LoopRV]
            One reference per loop; a block directly under the root gives the loops of its nest.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)

        Get the two loops of block B:

        .. code-block:: python

            sch = tir.Schedule(before)
            i, j = sch.get_loops("B")
            assert [sch.get(loop).extent.value for loop in (i, j)] == [16, 32]
        """
        _, path = self._block(block)
        return [LoopRV(lp.loop_var, block.func_name) for lp in loops_above(path)]

    @primitive("GetChildBlocks", inputs=("*block_or_loop",), pure=True)
    def get_child_blocks(self, block_or_loop: BlockRV | LoopRV) -> list[BlockRV]:
        """The blocks directly inside a block or a loop: not those nested in another block under it.

        Preconditions: ``block_or_loop`` exists.

        Parameters
        ----------
        block_or_loop : BlockRV or LoopRV
            Where to look.

        Returns
        -------
        blocks : list[BlockRV]
            The child blocks, in program order.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), C: T.Buffer((16, 32), "float32")):
                B = T.alloc_buffer((16, 32), "float32")
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)
                for i, j in T.grid(16, 32):
                    with T.block("C"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        C[vi, vj] = B[vi, vj] + T.float32(1)

        The root block's children:

        .. code-block:: python

            sch = tir.Schedule(before)
            b, c = sch.get_child_blocks(sch.get_block("root"))
            assert [sch.get(x).name_hint for x in (b, c)] == ["B", "C"]
        """
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

    @primitive("GetProducers", inputs=("block",), pure=True)
    def get_producers(self, block: BlockRV | str) -> list[BlockRV]:
        """The blocks in ``block``'s scope that write a buffer ``block`` reads.

        Preconditions: ``block`` exists.

        Parameters
        ----------
        block : BlockRV or str
            The block.

        Returns
        -------
        producers : list[BlockRV]
            Those blocks, in program order.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), C: T.Buffer((16, 32), "float32")):
                B = T.alloc_buffer((16, 32), "float32")
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)
                for i, j in T.grid(16, 32):
                    with T.block("C"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        C[vi, vj] = B[vi, vj] + T.float32(1)

        Find the other block of the pair:

        .. code-block:: python

            sch = tir.Schedule(before)
            (B,) = sch.get_producers("C")
            assert sch.get(B).name_hint == "B"
        """
        me = self._block(block)[0].block
        reads = {id(r.buffer) for r in me.reads}
        out = [BlockRV(r.block.name_hint, block.func_name) for r in self._siblings(block)
               if r.block is not me and any(id(w.buffer) in reads for w in r.block.writes)]
        return out

    @primitive("GetConsumers", inputs=("block",), pure=True)
    def get_consumers(self, block: BlockRV | str) -> list[BlockRV]:
        """The blocks in ``block``'s scope that read a buffer ``block`` writes.

        Preconditions: ``block`` exists.

        Parameters
        ----------
        block : BlockRV or str
            The block.

        Returns
        -------
        consumers : list[BlockRV]
            Those blocks, in program order.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), C: T.Buffer((16, 32), "float32")):
                B = T.alloc_buffer((16, 32), "float32")
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)
                for i, j in T.grid(16, 32):
                    with T.block("C"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        C[vi, vj] = B[vi, vj] + T.float32(1)

        Find the other block of the pair:

        .. code-block:: python

            sch = tir.Schedule(before)
            (C,) = sch.get_consumers("B")
            assert sch.get(C).name_hint == "C"
        """
        me = self._block(block)[0].block
        writes = {id(w.buffer) for w in me.writes}
        out = [BlockRV(r.block.name_hint, block.func_name) for r in self._siblings(block)
               if r.block is not me and any(id(x.buffer) in writes for x in r.block.reads)]
        return out

    @primitive("GetOutputBlocks", inputs=("scope_block",), pure=True)
    def get_output_blocks(self, scope_block: BlockRV | str) -> list[BlockRV]:
        """The blocks inside ``scope_block`` that write a buffer of the function's signature.

        Preconditions: ``scope_block`` exists.  These are the blocks compute_at and compute_inline may not
        move or remove: their results leave the function.

        Parameters
        ----------
        scope_block : BlockRV or str
            The scope (usually ``"root"``).

        Returns
        -------
        blocks : list[BlockRV]
            The output blocks, outer first.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), C: T.Buffer((16, 32), "float32")):
                B = T.alloc_buffer((16, 32), "float32")
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)
                for i, j in T.grid(16, 32):
                    with T.block("C"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        C[vi, vj] = B[vi, vj] + T.float32(1)

        Only C writes a parameter:

        .. code-block:: python

            sch = tir.Schedule(before)
            (c,) = sch.get_output_blocks("root")
            assert sch.get(c).name_hint == "C"
        """
        scope = self._block(scope_block)[0].block
        outputs = self._output_buffers(self._func(scope_block.func_name))
        found: list[BlockRV] = []

        for realize, _ in block_realizes(scope.body):  # nested blocks too, outer first
            if any(id(w.buffer) in outputs for w in realize.block.writes):
                found.append(BlockRV(realize.block.name_hint, scope_block.func_name))
        return found

    # -- loop transformations ---------------------------------------------------------
    @primitive("Split", inputs=("loop", "+factors"))
    def split(self, loop: LoopRV, factors: list[Any], preserve_unit_iters: bool = True,
              disable_predication: bool = False) -> list[LoopRV]:
        """Split ``loop`` into nested loops, one per factor, outermost first.

        At most one factor may be ``None``: it is inferred as the extent divided by the others'
        product, rounded up.  A factor may be a random variable from ``sample_perfect_tile``.  When the
        factors do not divide the extent, the new loops cover a little more, and the blocks under them
        get a predicate so the extra iterations do nothing.

        Preconditions: ``loop`` starts at 0, has no annotation and is not bound to a thread; every
        factor is positive; the extent is a constant unless one factor is ``None``.

        Parameters
        ----------
        loop : LoopRV
            The loop to split.
        factors : list of int, ExprRV or None
            The extents of the new loops, outermost first.
        preserve_unit_iters : bool
            Keep a loop of extent 1 as an iterator in the block bindings (else its value, 0).
        disable_predication : bool
            Add no predicate for a non-dividing split (the caller knows the extra points are harmless).

        Returns
        -------
        split_loops : list[LoopRV]
            The new loops, outermost first.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
                for i in range(64):
                    with T.block("B"):
                        vi = T.axis.spatial(64, i)
                        B[vi] = A[vi] * T.float32(2)

        Split the loop into 4 x 16:

        .. code-block:: python

            sch = tir.Schedule(before)
            (i,) = sch.get_loops("B")
            sch.split(i, factors=[None, 16])

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
                for i_0, i_1 in T.grid(4, 16):
                    with T.block("B"):
                        vi = T.axis.spatial(64, i_0 * 16 + i_1)
                        B[vi] = A[vi] * T.float32(2)
        """
        node, _ = self._loop(loop)
        recorded = list(factors)
        ints = [self._int_value(f, f"split factor of loop {node.loop_var.name}") for f in recorded]
        body, new_vars = _loops.split(self._func(loop.func_name).body, node, ints, preserve_unit_iters,
                                      disable_predication)
        self._commit(loop.func_name, body)
        return [LoopRV(v, loop.func_name) for v in new_vars]

    @primitive("Fuse", inputs=("*loops",))
    def fuse(self, *loops: LoopRV, preserve_unit_iters: bool = True) -> LoopRV:
        """Fuse consecutive nested loops into one whose extent is the product of theirs.

        The block bindings recover each old loop variable from the fused one with ``//`` and ``%``.

        Preconditions: at least two loops, given outermost first; each is the only statement in the
        body of the one before; all start at 0, have constant extents, no annotation and no thread
        binding.

        Parameters
        ----------
        *loops : LoopRV
            The loops to fuse, outermost first.
        preserve_unit_iters : bool
            Keep a loop of extent 1 as an iterator in the block bindings.

        Returns
        -------
        fused_loop : LoopRV
            The new loop.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)

        Fuse the two loops:

        .. code-block:: python

            sch = tir.Schedule(before)
            i, j = sch.get_loops("B")
            sch.fuse(i, j)

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                for i_j_fused in range(512):
                    with T.block("B"):
                        vi = T.axis.spatial(16, i_j_fused // 32)
                        vj = T.axis.spatial(32, i_j_fused % 32)
                        B[vi, vj] = A[vi, vj] * T.float32(2)
        """
        nodes = [self._loop(lp)[0] for lp in loops]
        func_name = loops[0].func_name
        body, var = _loops.fuse(self._func(func_name).body, nodes, preserve_unit_iters)
        self._commit(func_name, body)
        return LoopRV(var, func_name)

    @primitive("Reorder", inputs=("*ordered_loops",))
    def reorder(self, *ordered_loops: LoopRV) -> None:
        """Put loops of one nest into the given order, outermost first.

        The loops keep their variables, so the blocks under them are unchanged; only the order in
        which the points of the iteration space run changes.

        Preconditions: the loops are distinct and on one line of nesting (the loops between the
        outermost and the innermost given, inclusive, each have a single child); no extent depends on
        another loop's variable; the blocks under them have affine bindings and no predicate other
        than a split's padding guard.

        Parameters
        ----------
        *ordered_loops : LoopRV
            The loops in their new order, outermost first.

        Returns
        -------
        None

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)

        Make j the outer loop:

        .. code-block:: python

            sch = tir.Schedule(before)
            i, j = sch.get_loops("B")
            sch.reorder(j, i)

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                for j, i in T.grid(32, 16):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)
        """
        nodes = [self._loop(lp)[0] for lp in ordered_loops]
        func_name = ordered_loops[0].func_name
        body = _loops.reorder(self._func(func_name).body, nodes, self._path_of)
        self._commit(func_name, body)

    def _set_kind(self, loop: LoopRV, kind: str, thread_axis: str | None = None) -> None:
        node, path = self._loop(loop)
        body = _loops.set_loop_kind(self._func(loop.func_name).body, node, kind, path, thread_axis)
        self._commit(loop.func_name, body)

    @primitive("Parallel", inputs=("loop",))
    def parallel(self, loop: LoopRV) -> None:
        """Run the iterations of ``loop`` in parallel, on the CPU's cores.

        Preconditions: every block iterator ``loop`` feeds is data parallel (spatial): no two
        iterations write the same element.  The blocks under it have affine bindings and read what
        they need from blocks that are complete outside it.  The loop is not inside a vectorized loop.

        Parameters
        ----------
        loop : LoopRV
            The loop.

        Returns
        -------
        None

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)

        Parallelize the outer loop:

        .. code-block:: python

            sch = tir.Schedule(before)
            i, j = sch.get_loops("B")
            sch.parallel(i)

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                for i in T.parallel(16):
                    for j in range(32):
                        with T.block("B"):
                            vi, vj = T.axis.remap("SS", [i, j])
                            B[vi, vj] = A[vi, vj] * T.float32(2)
        """
        self._set_kind(loop, ForKind.PARALLEL)

    @primitive("Vectorize", inputs=("loop",))
    def vectorize(self, loop: LoopRV) -> None:
        """Run the iterations of ``loop`` together, as SIMD vector instructions.

        Preconditions: every block iterator ``loop`` feeds is data parallel (spatial): no two
        iterations write the same element.  The blocks under it have affine bindings and read what
        they need from blocks that are complete outside it.

        Parameters
        ----------
        loop : LoopRV
            The loop.

        Returns
        -------
        None

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)

        Vectorize the inner loop:

        .. code-block:: python

            sch = tir.Schedule(before)
            i, j = sch.get_loops("B")
            sch.vectorize(j)

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                for i in range(16):
                    for j in T.vectorized(32):
                        with T.block("B"):
                            vi, vj = T.axis.remap("SS", [i, j])
                            B[vi, vj] = A[vi, vj] * T.float32(2)
        """
        self._set_kind(loop, ForKind.VECTORIZED)

    @primitive("Unroll", inputs=("loop",))
    def unroll(self, loop: LoopRV) -> None:
        """Unroll ``loop``: its body is repeated once per iteration, with no loop left.

        Preconditions: none beyond ``loop`` existing; the extent should be small and constant.

        Parameters
        ----------
        loop : LoopRV
            The loop.

        Returns
        -------
        None

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)

        Unroll the inner loop:

        .. code-block:: python

            sch = tir.Schedule(before)
            i, j = sch.get_loops("B")
            sch.unroll(j)

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                for i in range(16):
                    for j in T.unroll(32):
                        with T.block("B"):
                            vi, vj = T.axis.remap("SS", [i, j])
                            B[vi, vj] = A[vi, vj] * T.float32(2)
        """
        self._set_kind(loop, ForKind.UNROLLED)

    @primitive("Bind", inputs=("loop",))
    def bind(self, loop: LoopRV, thread_axis: str) -> None:
        """Bind ``loop`` to a GPU thread axis: its iterations become the threads (or thread blocks) of a launch.

        ``thread_axis`` is ``"blockIdx.x/y/z"``, ``"threadIdx.x/y/z"`` or ``"vthread.x/y/z"``.  Such a
        function builds for ``"cuda"`` (CUDA C source) or ``"cuda-emulated"`` (run on this CPU with
        CUDA's semantics); a CPU target refuses it.

        Preconditions: the block iterators ``loop`` feeds are data parallel, except that a reduction
        may be spread over ``threadIdx`` (a cross-thread reduction); the blocks under it have affine
        bindings.

        Parameters
        ----------
        loop : LoopRV
            The loop.
        thread_axis : str
            The thread axis.

        Returns
        -------
        None

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)

        One thread block per row, one thread per element:

        .. code-block:: python

            sch = tir.Schedule(before)
            i, j = sch.get_loops("B")
            sch.bind(i, "blockIdx.x")
            sch.bind(j, "threadIdx.x")

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                for i in T.thread_binding(16, thread="blockIdx.x"):
                    for j in T.thread_binding(32, thread="threadIdx.x"):
                        with T.block("B"):
                            vi, vj = T.axis.remap("SS", [i, j])
                            B[vi, vj] = A[vi, vj] * T.float32(2)
        """
        self._set_kind(loop, ForKind.THREAD_BINDING, thread_axis)

    @primitive("Annotate", inputs=("block_or_loop", "ann_val"))
    def annotate(self, block_or_loop: BlockRV | LoopRV | str, ann_key: str, ann_val: Any) -> None:
        """Add ``ann_key: ann_val`` to a loop's annotations or a block's ``T.block_attr``.

        Preconditions: ``block_or_loop`` exists.  A key that is already there keeps its value, as in TVM; a
        sampled value (from ``sample_categorical``) is stored as the number it is.  Lowering passes read
        annotations such as ``pragma_auto_unroll_max_step``.

        Parameters
        ----------
        block_or_loop : BlockRV, LoopRV or str
            What to annotate.
        ann_key : str
            The key.
        ann_val : int, float, str, list or ExprRV
            The value.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)

        Annotate the outer loop and the block:

        .. code-block:: python

            sch = tir.Schedule(before)
            i, j = sch.get_loops("B")
            sch.annotate(i, "pragma_auto_unroll_max_step", 16)
            sch.annotate("B", "note", "doubled")

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                for i in T.serial(16, annotations={"pragma_auto_unroll_max_step": 16}):
                    for j in range(32):
                        with T.block("B"):
                            vi, vj = T.axis.remap("SS", [i, j])
                            T.block_attr({"note": "doubled"})
                            B[vi, vj] = A[vi, vj] * T.float32(2)
        """
        stored = ann_val
        if isinstance(ann_val, PrimExpr) and not isinstance(ann_val, IntImm):
            stored = self._int_value(ann_val, f"annotation {ann_key}")  # ints print and parse as ints
        self._annotate(block_or_loop, lambda anns: anns if ann_key in anns else {**anns, ann_key: stored})

    @primitive("Unannotate", inputs=("block_or_loop",))
    def unannotate(self, block_or_loop: BlockRV | LoopRV | str, ann_key: str) -> None:
        """Remove ``ann_key`` from a loop's or block's annotations.

        Preconditions: the annotation is there.

        Parameters
        ----------
        block_or_loop : BlockRV, LoopRV or str
            What to change.
        ann_key : str
            The key to remove.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)

        Annotate the block, then take it back:

        .. code-block:: python

            sch = tir.Schedule(before)
            sch.annotate("B", "note", "doubled")
            sch.unannotate("B", "note")

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)
        """
        self._annotate(block_or_loop, lambda anns: {k: v for k, v in anns.items() if k != ann_key}, ann_key)

    def _annotate(self, rv: BlockRV | LoopRV, update: Any, must_have: str | None = None) -> None:
        node = self.get(rv)
        if must_have is not None and must_have not in node.annotations:
            what = f"block {node.name_hint}" if isinstance(node, Block) else f"loop {node.loop_var.name}"
            raise ScheduleError(f"cannot unannotate {what}: it has no annotation {must_have!r} "
                                f"(it has {sorted(node.annotations)})")
        body = replace_stmt(self._func(rv.func_name).body, node,
                            replace(node, annotations=update(node.annotations)))
        self._commit(rv.func_name, body)

    # -- compute location -------------------------------------------------------------
    @primitive("ComputeAt", inputs=("block", "loop"))
    def compute_at(self, block: BlockRV | str, loop: LoopRV, preserve_unit_loops: bool = False,
                   index: int = -1) -> None:
        """Move producer ``block`` under ``loop`` of its consumers, computing there only what they use.

        The block gets a new loop nest under ``loop`` that covers just the region its consumers read
        in one iteration of ``loop`` — the tile — so the result is used while it is still in cache.

        Preconditions: ``block`` is complete (or a reduction), is not an output block of the function,
        and has no predicate but a split's guard; ``loop`` is not an ancestor of ``block`` and is in the
        same block scope; all of ``block``'s consumers are under ``loop``.

        Parameters
        ----------
        block : BlockRV or str
            The producer to move.
        loop : LoopRV
            The consumers' loop to move it under.
        preserve_unit_loops : bool
            Keep the new loops of extent 1.
        index : int
            Where among ``loop``'s children the block goes: -1 the latest possible place.

        Returns
        -------
        None

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), C: T.Buffer((16, 32), "float32")):
                B = T.alloc_buffer((16, 32), "float32")
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)
                for i, j in T.grid(16, 32):
                    with T.block("C"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        C[vi, vj] = B[vi, vj] + T.float32(1)

        Compute each row of B where C's row loop needs it:

        .. code-block:: python

            sch = tir.Schedule(before)
            i, j = sch.get_loops("C")
            sch.compute_at(sch.get_block("B"), i)

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((16, 32), "float32"), C: T.Buffer((16, 32), "float32")):
                B = T.alloc_buffer((16, 32))
                for i in range(16):
                    for ax0 in range(32):
                        with T.block("B"):
                            vi, vj = T.axis.remap("SS", [i, ax0])
                            B[vi, vj] = A[vi, vj] * T.float32(2)
                    for j in range(32):
                        with T.block("C"):
                            vi, vj = T.axis.remap("SS", [i, j])
                            C[vi, vj] = B[vi, vj] + T.float32(1)
        """
        self._compute_location("compute_at", block, loop, preserve_unit_loops, index)

    @primitive("ReverseComputeAt", inputs=("block", "loop"))
    def reverse_compute_at(self, block: BlockRV | str, loop: LoopRV, preserve_unit_loops: bool = False,
                           index: int = -1) -> None:
        """Move consumer ``block`` under ``loop`` of its producers, right after what it needs.

        The mirror of ``compute_at``: the consumer follows its producers into their loop and
        consumes each tile as soon as it is made (e.g. the copy out of a ``cache_write``).

        Preconditions: ``block`` is complete and has no predicate but a split's guard; ``loop`` is not
        an ancestor of ``block`` and is in the same block scope; all of ``block``'s producers are under
        ``loop``.

        Parameters
        ----------
        block : BlockRV or str
            The consumer to move.
        loop : LoopRV
            The producers' loop to move it under.
        preserve_unit_loops : bool
            Keep the new loops of extent 1.
        index : int
            Where among ``loop``'s children the block goes: -1 the latest possible place.

        Returns
        -------
        None

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), C: T.Buffer((16, 32), "float32")):
                B = T.alloc_buffer((16, 32), "float32")
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)
                for i, j in T.grid(16, 32):
                    with T.block("C"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        C[vi, vj] = B[vi, vj] + T.float32(1)

        Consume each row of B as soon as it is made:

        .. code-block:: python

            sch = tir.Schedule(before)
            i, j = sch.get_loops("B")
            sch.reverse_compute_at(sch.get_block("C"), i)

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((16, 32), "float32"), C: T.Buffer((16, 32), "float32")):
                B = T.alloc_buffer((16, 32))
                for i in range(16):
                    for j in range(32):
                        with T.block("B"):
                            vi, vj = T.axis.remap("SS", [i, j])
                            B[vi, vj] = A[vi, vj] * T.float32(2)
                    for ax0 in range(32):
                        with T.block("C"):
                            vi, vj = T.axis.remap("SS", [i, ax0])
                            C[vi, vj] = B[vi, vj] + T.float32(1)
        """
        self._compute_location("reverse_compute_at", block, loop, preserve_unit_loops, index)

    def _compute_location(self, kind: str, block: BlockRV, loop: LoopRV, preserve: bool, index: int) -> None:
        mark = getattr(loop, "mark", None)
        if mark in ("root", "inline"):
            # a location sampled by sample_compute_location may be the root (stay) or "inline", as in TVM
            if mark == "inline":  # called from a primitive, so recorded as the compute_at it was asked as
                self.compute_inline(block) if kind == "compute_at" else self.reverse_compute_inline(block)
            return
        realize, _ = self._block(block)
        target, _ = self._loop(loop)
        func = self._func(block.func_name)
        body = _compute.compute_at(func.body, realize, target, reverse=kind == "reverse_compute_at",
                                   preserve_unit_loops=preserve, output_buffers=self._output_buffers(func),
                                   index=index)
        self._commit(block.func_name, body)

    @primitive("ComputeInline", inputs=("block",))
    def compute_inline(self, block: BlockRV | str) -> None:
        """Inline producer ``block`` into its consumers: they compute its value where they read it.

        The block and its buffer disappear; each load of the buffer becomes the block's expression.

        Preconditions: ``block`` is complete (no reduction, no ``T.init``, the only writer of its
        buffer) and is a single store ``B[f(v...)] = g(v...)`` whose indices ``f`` are a bijective
        affine map of its iterators; its buffer is not a parameter of the function; it is not the only
        statement of its scope.

        Parameters
        ----------
        block : BlockRV or str
            The producer to inline.

        Returns
        -------
        None

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), C: T.Buffer((16, 32), "float32")):
                B = T.alloc_buffer((16, 32), "float32")
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)
                for i, j in T.grid(16, 32):
                    with T.block("C"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        C[vi, vj] = B[vi, vj] + T.float32(1)

        Inline B into C:

        .. code-block:: python

            sch = tir.Schedule(before)
            sch.compute_inline(sch.get_block("B"))

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((16, 32), "float32"), C: T.Buffer((16, 32), "float32")):
                for i, j in T.grid(16, 32):
                    with T.block("C"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        C[vi, vj] = A[vi, vj] * T.float32(2) + T.float32(1)
        """
        realize, _ = self._block(block)
        func = self._func(block.func_name)
        body = _compute_inline.compute_inline(func.body, realize, self._output_buffers(func))
        self._commit(block.func_name, body)

    @primitive("ReverseComputeInline", inputs=("block",))
    def reverse_compute_inline(self, block: BlockRV | str) -> None:
        """Inline consumer ``block`` into its producer: the producer stores the consumer's result directly.

        The consumer disappears; the producer keeps its own name and loops and writes the consumer's
        output (useful for an elementwise epilogue after a reduction's ``decompose_reduction`` or a
        cache, where ``compute_inline`` cannot apply).

        Preconditions: ``block`` is complete, has no predicate, and is a single store that reads
        exactly one buffer made by another block, at one affine index; that producer is a single
        store of the buffer, covers the consumer's domain, and its buffer is not a parameter.

        Parameters
        ----------
        block : BlockRV or str
            The consumer to inline.

        Returns
        -------
        None

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), C: T.Buffer((16, 32), "float32")):
                B = T.alloc_buffer((16, 32), "float32")
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)
                for i, j in T.grid(16, 32):
                    with T.block("C"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        C[vi, vj] = B[vi, vj] + T.float32(1)

        Inline C into B:

        .. code-block:: python

            sch = tir.Schedule(before)
            sch.reverse_compute_inline(sch.get_block("C"))

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((16, 32), "float32"), C: T.Buffer((16, 32), "float32")):
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        C[vi, vj] = A[vi, vj] * T.float32(2) + T.float32(1)
        """
        realize, _ = self._block(block)
        func = self._func(block.func_name)
        body = _compute_inline.reverse_compute_inline(func.body, realize, self._output_buffers(func))
        self._commit(block.func_name, body)

    @staticmethod
    def _output_buffers(func: PrimFunc) -> set[int]:
        return {id(b) for b in func.buffer_map.values()}

    @primitive("DecomposeReduction", inputs=("block", "loop"))
    def decompose_reduction(self, block: BlockRV | str, loop: LoopRV) -> BlockRV:
        """Take a reduction's ``T.init`` out into a block of its own, placed just before ``loop``.

        The init block ``<name>_init`` runs once per output element, above the reduction loops; the
        reduction becomes ``<name>_update`` (``block`` follows it), a plain update that can be
        vectorized or tensorized.

        Preconditions: ``block`` has a ``T.init``; ``loop`` is an ancestor of ``block``; no reduction
        loop is outside ``loop`` and every loop from ``loop`` down binds some iterator of the block.

        Parameters
        ----------
        block : BlockRV or str
            The reduction block.
        loop : LoopRV
            The loop above which the init block goes.

        Returns
        -------
        init_block : BlockRV
            The new init block.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 64), "float32"), B: T.Buffer((16,), "float32")):
                for i, k in T.grid(16, 64):
                    with T.block("B"):
                        vi, vk = T.axis.remap("SR", [i, k])
                        with T.init():
                            B[vi] = T.float32(0)
                        B[vi] = B[vi] + A[vi, vk]

        Initialize each row before its reduction loop:

        .. code-block:: python

            sch = tir.Schedule(before)
            i, k = sch.get_loops("B")
            sch.decompose_reduction(sch.get_block("B"), k)

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((16, 64), "float32"), B: T.Buffer((16,), "float32")):
                for i in range(16):
                    with T.block("B_init"):
                        vi = T.axis.spatial(16, i)
                        B[vi] = T.float32(0)
                    for k in range(64):
                        with T.block("B_update"):
                            vi, vk = T.axis.remap("SR", [i, k])
                            B[vi] = B[vi] + A[vi, vk]
        """
        realize, _ = self._block(block)
        target, _ = self._loop(loop)
        body, init_name = _compute.decompose_reduction(self._func(block.func_name).body, realize, target)
        self._commit(block.func_name, body)
        block.name = f"{realize.block.name_hint}_update"  # the reference follows the renamed update block
        return BlockRV(init_name, block.func_name)

    @primitive("RFactor", inputs=("loop",))
    def rfactor(self, loop: LoopRV, factor_axis: int) -> BlockRV:
        """Factor the reduction over ``loop`` out: one partial result per iteration of ``loop``, then a final reduction.

        A new block ``<name>_rf`` reduces into a buffer ``<buffer>_rf`` with an extra axis (at
        ``factor_axis``) indexed by ``loop``; the original block then reduces that axis.  The partial
        reductions are independent, so ``loop`` can then be parallelized or vectorized.

        Preconditions: the only block under ``loop`` is a reduction with ``T.init`` and a single store
        whose update is ``Y = Y + x``, ``T.max(Y, x)`` or ``T.min(Y, x)``; ``loop`` feeds only its
        reduction iterators; ``0 <= factor_axis <= ndim`` of the reduced buffer.

        Parameters
        ----------
        loop : LoopRV
            A reduction loop.
        factor_axis : int
            Where the new axis goes in the ``_rf`` buffer.

        Returns
        -------
        rf_block : BlockRV
            The block computing the partial results.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 64), "float32"), B: T.Buffer((16,), "float32")):
                for i, k in T.grid(16, 64):
                    with T.block("B"):
                        vi, vk = T.axis.remap("SR", [i, k])
                        with T.init():
                            B[vi] = T.float32(0)
                        B[vi] = B[vi] + A[vi, vk]

        Four partial sums per row:

        .. code-block:: python

            sch = tir.Schedule(before)
            i, k = sch.get_loops("B")
            ko, ki = sch.split(k, factors=[None, 4])
            sch.rfactor(ki, factor_axis=1)

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((16, 64), "float32"), B: T.Buffer((16,), "float32")):
                B_rf = T.alloc_buffer((16, 4))
                for i, k_0, k_1 in T.grid(16, 16, 4):
                    with T.block("B_rf"):
                        vk_1, vi, vk_0 = T.axis.remap("SSR", [k_1, i, k_0])
                        with T.init():
                            B_rf[vi, vk_1] = T.float32(0)
                        B_rf[vi, vk_1] = B_rf[vi, vk_1] + A[vi, vk_0 * 4 + vk_1]
                for i, k_1 in T.grid(16, 4):
                    with T.block("B"):
                        vk_1, vi = T.axis.remap("RS", [k_1, i])
                        with T.init():
                            B[vi] = T.float32(0)
                        B[vi] = B[vi] + B_rf[vi, vk_1]
        """
        node, _ = self._loop(loop)
        func = self._func(loop.func_name)
        body, name = _rfactor.rfactor(func.body, _rfactor.single_child_block(node), node, factor_axis)
        self._commit(loop.func_name, body)
        return BlockRV(name, loop.func_name)

    @primitive("Blockize", inputs=("target",))
    def blockize(self, target: LoopRV | list[BlockRV | str], preserve_unit_iters: bool = True) -> BlockRV:
        """Wrap the loops from ``target`` down to its block in a new outer block ``<name>_o``.

        The outer block's iterators are the outer parts of the inner block's; the inner block keeps the
        rest.  The result is a unit of work (a tile) that ``tensorize`` can replace with an intrinsic.
        Given a list of sibling blocks, the loops under their common ancestor are wrapped instead.

        Preconditions: the loops under ``target`` hold a single block (or exactly the blocks listed),
        whose bindings split into an outer and an inner part (affine, divisible at ``target``).

        Parameters
        ----------
        target : LoopRV or list of BlockRV or str
            The loop to blockize from, or the blocks to wrap.
        preserve_unit_iters : bool
            Keep iterators of extent 1 in the outer block.

        Returns
        -------
        outer_block : BlockRV
            The new block.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)

        Make each row one block:

        .. code-block:: python

            sch = tir.Schedule(before)
            i, j = sch.get_loops("B")
            sch.blockize(j)

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                for i in range(16):
                    with T.block("B_o"):
                        vi_o = T.axis.spatial(16, i)
                        vj_o = T.axis.spatial(1, 0)
                        for j in range(32):
                            with T.block("B"):
                                vj_i = T.axis.spatial(32, j)
                                B[vi_o, vj_i] = A[vi_o, vj_i] * T.float32(2)
        """
        if isinstance(target, list):
            if not target:
                raise ScheduleError("cannot blockize an empty list of blocks")
            func_name = target[0].func_name
            realizes = [self._block(b)[0] for b in target]
            body, name = _blockize.blockize_blocks(self._func(func_name).body, realizes, preserve_unit_iters)
        else:
            func_name = target.func_name
            node, _ = self._loop(target)
            body, name = _blockize.blockize(self._func(func_name).body, node, preserve_unit_iters)
        self._commit(func_name, body)
        return BlockRV(name, func_name)

    @primitive("Tensorize", inputs=("block_or_loop",))
    def tensorize(self, block_or_loop: BlockRV | LoopRV | str, tensor_intrin: str,
                  preserve_unit_iters: bool = True) -> None:
        """Replace a block (or the loops under a loop, blockized first) with a registered tensor intrinsic.

        A ``TensorIntrin`` pairs a description (what one call computes) with an implementation
        (a vectorized loop, a hardware instruction ...); the block, matching the description, is
        replaced by the implementation, its buffers viewed through ``T.match_buffer``.

        Preconditions: ``tensor_intrin`` is registered (``tir.TensorIntrin.register``); the block (the
        single block under the loop) matches the description's loops, iterators and body.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
                for i in range(64):
                    with T.block("B"):
                        vi = T.axis.spatial(64, i)
                        B[vi] = A[vi] * T.float32(2)

        An intrinsic that doubles 4 elements, its implementation a vectorized loop:

        .. code-block:: python

            @T.prim_func
            def double4_desc(a: T.Buffer((4,), "float32"), b: T.Buffer((4,), "float32")):
                for i in range(4):
                    with T.block("B"):
                        vi = T.axis.spatial(4, i)
                        b[vi] = a[vi] * T.float32(2)

        .. code-block:: python

            @T.prim_func
            def double4_impl(a: T.Buffer((4,), "float32"), b: T.Buffer((4,), "float32")):
                for i in T.vectorized(4):
                    with T.block("B"):
                        vi = T.axis.spatial(4, i)
                        b[vi] = a[vi] * T.float32(2)

        Register it, and use it on each tile of 4:

        .. code-block:: python

            tir.TensorIntrin.register("double4", double4_desc, double4_impl, override=True)
            sch = tir.Schedule(before)
            (i,) = sch.get_loops("B")
            i_0, i_1 = sch.split(i, factors=[None, 4])
            sch.tensorize(i_1, "double4")

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
                for i_0 in range(16):
                    with T.block("B_o"):
                        vi_o = T.axis.spatial(16, i_0)
                        a = T.match_buffer(A[vi_o * 4:vi_o * 4 + 4], (4,), "float32")
                        b = T.match_buffer(B[vi_o * 4:vi_o * 4 + 4], (4,), "float32")
                        for i in T.vectorized(4):
                            with T.block("B"):
                                vi = T.axis.spatial(4, i)
                                b[vi] = a[vi] * T.float32(2)
        """
        intrin = _blockize.TensorIntrin.get(tensor_intrin)
        func_name = block_or_loop.func_name
        if isinstance(block_or_loop, LoopRV):
            node, _ = self._loop(block_or_loop)
            body, name = _blockize.blockize(self._func(func_name).body, node, preserve_unit_iters)
        else:
            body, name = self._func(func_name).body, block_or_loop.name
        realize = next(r for r, _ in block_realizes(body) if r.block.name_hint == name)
        self._commit(func_name, _blockize.tensorize(body, realize, intrin))

    # -- data movement ------------------------------------------------------------------
    def _normalize_buffer_arg(self, block: BlockRV, buffer: Any,
                              required: str | None = None) -> tuple[str, int, Any]:
        """``("read" | "write", index, Buffer)`` for a buffer given as an index, a
        ``("read", i)`` / ``("write", i)`` pair, a name or the Buffer itself."""
        blk = self._block(block)[0].block
        accesses = [("read", i, r.buffer) for i, r in enumerate(blk.reads)] + \
                   [("write", i, w.buffer) for i, w in enumerate(blk.writes)]
        if isinstance(buffer, bool) or not isinstance(buffer, (int, str, tuple, list)) and \
                not hasattr(buffer, "shape"):
            raise TypeError(f"a buffer is given by index, (\"read\"|\"write\", index), name or Buffer; "
                            f"got {buffer!r}")
        if isinstance(buffer, int):
            buffer = (required, buffer)
        if isinstance(buffer, (tuple, list)):
            kind, index = buffer
            if kind not in ("read", "write"):
                raise BufferArgumentError(f"buffer kind must be 'read' or 'write', got {kind!r}")
            regions = blk.reads if kind == "read" else blk.writes
            if not 0 <= index < len(regions):
                plural = "buffer" if len(regions) == 1 else "buffers"
                raise BufferArgumentError(f"block {blk.name_hint} {kind}s {len(regions)} {plural}; "
                                    f"buffer index {index} is out of range")
            found = (kind, index, regions[index].buffer)
        else:
            matches = [a for a in accesses if (a[2].name == buffer if isinstance(buffer, str) else a[2] is buffer)]
            if required is not None:
                matches = [a for a in matches if a[0] == required] or matches
            name = buffer if isinstance(buffer, str) else buffer.name
            if not matches:
                raise BufferArgumentError(f"block {blk.name_hint} does not access a buffer named {name!r}")
            if len({id(m[2]) for m in matches}) > 1:
                raise BufferArgumentError(f"block {blk.name_hint} accesses several buffers named {name!r}")
            found = matches[0]
        if required is not None and found[0] != required:
            raise BufferArgumentError(f"buffer {found[2].name} is a {found[0]} buffer of block {blk.name_hint}, "
                                f"not a {required} buffer")
        return found

    @primitive("CacheRead", inputs=("block", "consumer_blocks"), omit_empty=("consumer_blocks",))
    def cache_read(self, block: BlockRV | str, read_buffer_index: int | str | Any, storage_scope: str,
                   consumer_blocks: list[BlockRV | str] | None = None) -> BlockRV:
        """Copy a buffer ``block`` reads into a new buffer in ``storage_scope``, and read it from there.

        A new block ``<buffer>_<scope>`` (e.g. ``A_local``) copies the whole buffer, placed after the
        block that writes it (or first in the scope, for a parameter); ``compute_at`` then moves the
        copy to where it pays, e.g. a tile of shared memory per thread block.

        Preconditions: ``block`` reads the buffer; ``consumer_blocks``, when given, are the readers that
        switch to the copy (by default every reader in the scope).

        Parameters
        ----------
        block : BlockRV or str
            A block that reads the buffer.
        read_buffer_index : int, str or Buffer
            Which buffer: its index among ``block``'s reads, its name, or the Buffer.
        storage_scope : str
            ``"global"``, ``"shared"``, ``"local"`` ...
        consumer_blocks : list of BlockRV or str, optional
            The readers to redirect.

        Returns
        -------
        cached_block : BlockRV
            The block that makes the copy.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)

        Copy A into a local buffer first:

        .. code-block:: python

            sch = tir.Schedule(before)
            sch.cache_read("B", 0, "local")

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                A_local = T.alloc_buffer((16, 32), scope="local")
                for ax0, ax1 in T.grid(16, 32):
                    with T.block("A_local"):
                        v0, v1 = T.axis.remap("SS", [ax0, ax1])
                        A_local[v0, v1] = A[v0, v1]
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A_local[vi, vj] * T.float32(2)
        """
        return self._cache("cache_read", block, read_buffer_index, storage_scope, consumer_blocks)

    @primitive("CacheWrite", inputs=("block", "consumer_blocks"), omit_empty=("consumer_blocks",))
    def cache_write(self, block: BlockRV | str, write_buffer_index: int | str | Any, storage_scope: str,
                    consumer_blocks: list[BlockRV | str] | None = None) -> BlockRV:
        """Let ``block`` write into a new buffer in ``storage_scope``, copied to the original afterwards.

        A new block ``<buffer>_<scope>`` (e.g. ``B_local``) does the copy, placed right after ``block``;
        ``reverse_compute_at`` then moves it next to the computation, so each tile is accumulated in
        fast memory and written out once.

        Preconditions: ``block`` writes the buffer, and is the only block that does.

        Parameters
        ----------
        block : BlockRV or str
            The block that writes the buffer.
        write_buffer_index : int, str or Buffer
            Which buffer: its index among ``block``'s writes, its name, or the Buffer.
        storage_scope : str
            ``"global"``, ``"shared"``, ``"local"`` ...
        consumer_blocks : list of BlockRV or str, optional
            Readers that should read the new buffer directly.

        Returns
        -------
        cached_block : BlockRV
            The block that copies the result out.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)

        Compute into a local buffer, then copy out:

        .. code-block:: python

            sch = tir.Schedule(before)
            sch.cache_write("B", 0, "local")

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                B_local = T.alloc_buffer((16, 32), scope="local")
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B_local[vi, vj] = A[vi, vj] * T.float32(2)
                for ax0, ax1 in T.grid(16, 32):
                    with T.block("B_local"):
                        v0, v1 = T.axis.remap("SS", [ax0, ax1])
                        B[v0, v1] = B_local[v0, v1]
        """
        return self._cache("cache_write", block, write_buffer_index, storage_scope, consumer_blocks)

    def _cache(self, kind: str, block: BlockRV, index: Any, scope: str, consumers: list[BlockRV]) -> BlockRV:
        read = kind == "cache_read"
        _, index, _ = self._normalize_buffer_arg(block, index, "read" if read else "write")
        self._record_as(**{"read_buffer_index" if read else "write_buffer_index": index})
        realize, _ = self._block(block)
        consumer_realizes = [self._block(c)[0] for c in consumers]
        cache = _cache_mod.cache_read if read else _cache_mod.cache_write
        body, name = cache(self._func(block.func_name).body, realize, index, scope, consumer_realizes)
        self._commit(block.func_name, body)
        return BlockRV(name, block.func_name)

    @primitive("ReadAt", inputs=("loop", "block"))
    def read_at(self, loop: LoopRV, block: BlockRV | str, read_buffer_index: int, storage_scope: str) -> BlockRV:
        """Copy the tile of a buffer ``block`` reads that the iterations under ``loop`` need, at ``loop``.

        A new block ``<buffer>_<scope>`` (annotated ``auto_copy``) goes into ``loop``'s body right
        before the first statement reading the buffer; from there on, the body reads the copy, a new
        buffer of the same shape in ``storage_scope``.  The tile is what the blocks under ``loop`` read,
        over the loops between them and ``loop`` and over the thread loops above it that share the new
        scope (all ``threadIdx`` / ``vthread`` loops for ``"shared"``).  Unlike ``cache_read``, no
        ``compute_at`` is needed afterwards.

        Preconditions: ``block`` is under ``loop`` and reads the buffer; nothing under ``loop`` writes
        the buffer after its first read there.

        Parameters
        ----------
        loop : LoopRV
            The loop whose body gets the copy.
        block : BlockRV or str
            A block under ``loop`` that reads the buffer.
        read_buffer_index : int
            Which buffer: its index among ``block``'s reads.
        storage_scope : str
            ``"shared"``, ``"local"`` ...

        Returns
        -------
        copy_block : BlockRV
            The block that makes the copy.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64,), "float32")):
                for i0, i1, k in T.grid(8, 8, 64):
                    with T.block("B"):
                        vi = T.axis.spatial(64, i0 * 8 + i1)
                        vk = T.axis.reduce(64, k)
                        with T.init():
                            B[vi] = T.float32(0)
                        B[vi] = B[vi] + A[vi, vk]

        Copy each 8-row tile of A into shared memory once per ``i0``:

        .. code-block:: python

            sch = tir.Schedule(before)
            i0, i1, k = sch.get_loops("B")
            sch.read_at(i0, "B", 0, "shared")

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64,), "float32")):
                A_shared = T.alloc_buffer((64, 64), scope="shared")
                for i0 in range(8):
                    with T.block("A_shared"):
                        v0 = T.axis.spatial(8, i0)
                        T.reads(A[v0 * 8:v0 * 8 + 8, 0:64])
                        T.writes(A_shared[v0 * 8:v0 * 8 + 8, 0:64])
                        T.block_attr({"auto_copy": True})
                        for ax0, ax1 in T.grid(8, 64):
                            A_shared[v0 * 8 + ax0, ax1] = A[v0 * 8 + ax0, ax1]
                    for i1, k in T.grid(8, 64):
                        with T.block("B"):
                            vi = T.axis.spatial(64, i0 * 8 + i1)
                            vk = T.axis.reduce(64, k)
                            with T.init():
                                B[vi] = T.float32(0)
                            B[vi] = B[vi] + A_shared[vi, vk]
        """
        return self._read_write_at(loop, block, read_buffer_index, storage_scope, True)

    @primitive("WriteAt", inputs=("loop", "block"))
    def write_at(self, loop: LoopRV, block: BlockRV | str, write_buffer_index: int, storage_scope: str) -> BlockRV:
        """Let the iterations under ``loop`` write a tile of a buffer into a copy, written back at ``loop``.

        The mirror of :meth:`read_at`: ``loop``'s body up to its last statement writing the buffer
        writes a new buffer of the same shape in ``storage_scope`` instead, and a new block
        ``<buffer>_<scope>`` (annotated ``auto_copy``) right after that statement copies the tile
        those iterations wrote back into the buffer.

        Preconditions: ``block`` is under ``loop`` and writes the buffer; nothing under ``loop`` reads
        the buffer after its last write there.

        Parameters
        ----------
        loop : LoopRV
            The loop whose body gets the copy back.
        block : BlockRV or str
            A block under ``loop`` that writes the buffer.
        write_buffer_index : int
            Which buffer: its index among ``block``'s writes.
        storage_scope : str
            ``"shared"``, ``"local"`` ...

        Returns
        -------
        copy_block : BlockRV
            The block that copies the tile back.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
                for i0, i1 in T.grid(8, 8):
                    with T.block("B"):
                        vi = T.axis.spatial(64, i0 * 8 + i1)
                        B[vi] = A[vi] + T.float32(1)

        Write each 8-element tile of B locally, then out once per ``i0``:

        .. code-block:: python

            sch = tir.Schedule(before)
            i0, i1 = sch.get_loops("B")
            sch.write_at(i0, "B", 0, "local")

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
                B_local = T.alloc_buffer((64,), scope="local")
                for i0 in range(8):
                    for i1 in range(8):
                        with T.block("B"):
                            vi = T.axis.spatial(64, i0 * 8 + i1)
                            B_local[vi] = A[vi] + T.float32(1)
                    with T.block("B_local"):
                        v0 = T.axis.spatial(8, i0)
                        T.reads(B_local[v0 * 8:v0 * 8 + 8])
                        T.writes(B[v0 * 8:v0 * 8 + 8])
                        T.block_attr({"auto_copy": True})
                        for ax0 in range(8):
                            B[v0 * 8 + ax0] = B_local[v0 * 8 + ax0]
        """
        return self._read_write_at(loop, block, write_buffer_index, storage_scope, False)

    def _read_write_at(self, loop: LoopRV, block: BlockRV, index: int, scope: str, is_read: bool) -> BlockRV:
        lp, path = self._loop(loop)
        realize, _ = self._block(block)
        body, name = _read_write_at.read_write_at(self._func(block.func_name).body, lp, path, realize,
                                                  int(index), scope, is_read)
        self._commit(block.func_name, body)
        return BlockRV(name, block.func_name)

    @primitive("TransformLayout", inputs=("block",))
    def transform_layout(self, block: BlockRV | str, buffer: Any, index_map: Any, pad_value: Any = None,
                         *, assume_injective_transform: bool = False) -> None:
        """Store a buffer in a new layout: element ``x`` moves to ``index_map(x)``.

        Every access to the buffer is rewritten; a buffer that is a function parameter changes the
        function's signature (the caller then passes data in the new layout).  ``buffer`` is
        ``("read", i)`` / ``("write", i)`` (the i-th buffer ``block`` reads / writes), a name or a
        Buffer.  An ``IndexMap.AXIS_SEPARATOR`` in the result also splits the axes into physical
        groups (a ``set_axis_separator`` step).

        Preconditions: ``block`` accesses the buffer; ``index_map`` is a function of one variable per
        axis; a layout that needs padding (its range bigger than the buffer) is given ``pad_value``,
        or ``assume_injective_transform`` says the padding is never read.

        Parameters
        ----------
        block : BlockRV or str
            A block that accesses the buffer.
        buffer : tuple, str or Buffer
            Which buffer.
        index_map : function or IndexMap
            The new layout, e.g. ``lambda i, j: (j, i)``.
        pad_value : optional
            The value of padding elements (a number, an expression, or a function of the new
            indices).  As in TVM, a writer that stores the buffer row-major and nothing else runs
            over the new layout and stores ``T.if_then_else(<padding>, pad_value, value)``; otherwise
            a block ``buffer_<name>_padding`` after the last writer fills the padding.  A buffer no
            block writes is refused (TVM records a ``T.assume`` there).
        assume_injective_transform : bool
            Do not check that the map is injective.

        Returns
        -------
        None

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)

        Store B transposed:

        .. code-block:: python

            sch = tir.Schedule(before)
            sch.transform_layout("B", ("write", 0), lambda i, j: (j, i))

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((16, 32), "float32"), B: T.Buffer((32, 16), "float32")):
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vj, vi] = A[vi, vj] * T.float32(2)
        """
        kind, index, target = self._normalize_buffer_arg(block, buffer)
        # a function becomes an IndexMap over the block's index type; IndexMap.AXIS_SEPARATOR
        # entries become a set_axis_separator step after the layout change, as in TVM
        index_map, separators = as_index_map(index_map, target.ndim, self._block_index_dtype(block),
                                             allow_separators=True)
        func = self._func(block.func_name)
        if not index_map.is_identity():  # the identity (axis separators alone) changes nothing
            new_func = _data.transform_layout(func, target, index_map, pad_value, assume_injective_transform)
            self._commit_function(block.func_name, new_func)
        self._record_as(buffer=(kind, index), index_map=index_map)
        if separators:  # TVM records them as a step of their own, after the layout change
            self._then(lambda: self.set_axis_separator(block, (kind, index), separators))

    # -- sampling -------------------------------------------------------------------------
    def _sampled(self, value: int, dtype: str = "int32") -> ExprRV:
        rv = ExprRV("v", dtype)
        object.__setattr__(rv, "_value", int(value))
        self._values[rv] = int(value)
        return rv

    @primitive("SamplePerfectTile", inputs=("loop",), pure=True)
    def sample_perfect_tile(self, loop: LoopRV, n: int, max_innermost_factor: int = 16,
                            decision: list[int] | None = None) -> list[ExprRV]:
        """Sample ``n`` factors whose product is ``loop``'s extent: a random tiling for ``split``.

        Every way of writing the extent as an ordered product of ``n`` factors with the innermost at
        most ``max_innermost_factor`` is equally likely.  The factors are random variables:
        ``sch.get(v)`` reads one, ``sch.split(loop, factors=vs)`` uses them.  The trace keeps the
        sampled factors as the instruction's decision, so replaying it (``Trace.apply_to_schedule``,
        a tuning database) splits the same way, and a mutator can change just that decision.  A loop of
        symbolic extent gets ``[None, 1, ..., 1]``.

        Preconditions: ``n >= 1``; a given ``decision`` is ``n`` factors of the extent.

        Parameters
        ----------
        loop : LoopRV
            The loop to tile.
        n : int
            How many factors.
        max_innermost_factor : int
            The largest innermost factor.
        decision : list of int, optional
            The factors to take instead of sampling.

        Returns
        -------
        factors : list[ExprRV]
            The sampled factors, outermost first.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
                for i in range(64):
                    with T.block("B"):
                        vi = T.axis.spatial(64, i)
                        B[vi] = A[vi] * T.float32(2)

        Tile the loop in two at random; the trace records the choice:

        .. code-block:: python

            sch = tir.Schedule(before, seed=0)
            (i,) = sch.get_loops("B")
            factors = sch.sample_perfect_tile(i, n=2, max_innermost_factor=16)
            sch.split(i, factors=factors)
            assert sch.get(factors[0]) * sch.get(factors[1]) == 64
            assert "decision=" in str(sch.trace)
        """
        node, _ = self._loop(loop)
        if not isinstance(node.extent, IntImm):
            # a loop of symbolic extent is tiled trivially, as in TVM: [None, 1, ..., 1], where
            # None (decision -1) lets split infer the outer factor
            self._record_as(decision=[IntImm("int64", -1)] + [IntImm("int64", 1)] * (n - 1))
            return [None] + [self._sampled(1, node.loop_var.dtype) for _ in range(n - 1)]
        extent = _loops._const_extent(node)
        if decision is None:
            decision = _sample_tile(self._rng, extent, n, max_innermost_factor)
        else:
            decision = [int(f) for f in decision]
            product = 1
            for f in decision:
                product *= f
            if len(decision) != n or product != extent:
                raise ScheduleError(f"tile decision {decision} for loop {node.loop_var.name} is not {n} "
                                    f"factors of its extent {extent}")
        # decisions are stored as TVM stores them: integer constants (``.value`` reads one)
        self._record_as(decision=[IntImm("int64", f) for f in decision])
        return [self._sampled(f, node.loop_var.dtype) for f in decision]

    @primitive("SampleCategorical", pure=True)
    def sample_categorical(self, candidates: list[int], probs: list[float],
                           decision: int | None = None) -> ExprRV:
        """Pick one of ``candidates`` at random, with the given probabilities.

        The result is a random variable (``sch.get(v)`` reads it) that other primitives take, e.g. as
        an annotation value (``"pragma_auto_unroll_max_step"``).  The trace keeps the chosen index as
        the decision, so a replay picks the same value.

        Preconditions: as many probabilities as candidates, at least one; a given ``decision`` is an
        index into ``candidates``.

        Parameters
        ----------
        candidates : list of int
            The values to choose from.
        probs : list of float
            Their probabilities (weights).
        decision : int, optional
            The index to take instead of sampling.

        Returns
        -------
        result : ExprRV
            The chosen candidate.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
                for i in range(64):
                    with T.block("B"):
                        vi = T.axis.spatial(64, i)
                        B[vi] = A[vi] * T.float32(2)

        Choose an unroll depth:

        .. code-block:: python

            sch = tir.Schedule(before, seed=0)
            (i,) = sch.get_loops("B")
            depth = sch.sample_categorical([0, 16, 64], probs=[0.25, 0.5, 0.25])
            sch.annotate(i, "pragma_auto_unroll_max_step", depth)
            assert sch.get(depth) in (0, 16, 64)
        """
        candidates = [int(c) for c in candidates]
        probs = [float(p) for p in probs]
        if len(candidates) != len(probs) or not candidates:
            raise ScheduleError("sample_categorical needs as many probabilities as candidates")
        if decision is None:
            decision = self._rng.choices(range(len(candidates)), weights=probs)[0]
        decision = int(decision)
        if not 0 <= decision < len(candidates):
            raise ScheduleError(f"sample_categorical decision {decision} is not an index into {candidates}")
        self._record_as(candidates=candidates, probs=probs, decision=IntImm("int64", decision))
        return self._sampled(candidates[decision])

    @primitive("EnterPostproc", postproc=True)
    def enter_postproc(self) -> None:
        """Mark where postprocessing starts: the steps after it (meta_schedule's postprocessors) are dropped by
        ``trace.simplified(remove_postproc=True)`` and ``as_json(remove_postproc=True)``.

        Preconditions: none; it changes nothing in the function.

        Parameters
        ----------
        (none)

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
                for i in range(64):
                    with T.block("B"):
                        vi = T.axis.spatial(64, i)
                        B[vi] = A[vi] * T.float32(2)

        Mark the point, then postprocess:

        .. code-block:: python

            sch = tir.Schedule(before)
            (i,) = sch.get_loops("B")
            sch.enter_postproc()
            sch.parallel(i)
            assert len(sch.trace.simplified(remove_postproc=True)) == 0
        """

    # -- buffer annotations, block layout, unit loops (block_annotate.py, layout.py) -----------

    @primitive("SetScope", inputs=("block",))
    def set_scope(self, block: BlockRV | str, buffer_index: int | str | Any, storage_scope: str) -> None:
        """Store the ``buffer_index``-th buffer ``block`` writes in ``storage_scope`` (``"shared"``,
        ``"local"`` ...) instead of global memory.

        Preconditions: the buffer is allocated in the function (``T.alloc_buffer``), not a parameter.

        Parameters
        ----------
        block : BlockRV or str
            The block writing the buffer.
        buffer_index : int, str or Buffer
            Which buffer: an index among the block's writes, a name or the Buffer.
        storage_scope : str
            The new scope.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), C: T.Buffer((16, 32), "float32")):
                B = T.alloc_buffer((16, 32), "float32")
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)
                for i, j in T.grid(16, 32):
                    with T.block("C"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        C[vi, vj] = B[vi, vj] + T.float32(1)

        Keep B in shared memory:

        .. code-block:: python

            sch = tir.Schedule(before)
            sch.set_scope("B", 0, "shared")

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((16, 32), "float32"), C: T.Buffer((16, 32), "float32")):
                B = T.alloc_buffer((16, 32), scope="shared")
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)
                for i, j in T.grid(16, 32):
                    with T.block("C"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        C[vi, vj] = B[vi, vj] + T.float32(1)
        """
        realize, _ = self._block(block)
        body, index = _block_annotate.set_scope(self._func(block.func_name).body, realize.block,
                                                buffer_index, storage_scope)
        self._commit(block.func_name, body)
        self._record_as(buffer_index=index)

    @primitive("StorageAlign", inputs=("block",))
    def storage_align(self, block: BlockRV | str, buffer_index: int, axis: int, factor: int,
                      offset: int) -> None:
        """Pad the stride of ``axis`` of a buffer ``block`` writes to ``k * factor + offset`` elements (e.g. to
        avoid shared-memory bank conflicts).

        Preconditions: the buffer is allocated in the function, not a parameter; ``0 <= axis < ndim``;
        ``factor > 0``.  It is recorded as a ``buffer_dim_align`` block annotation, applied when the
        function is lowered.

        Parameters
        ----------
        block : BlockRV or str
            The block writing the buffer.
        buffer_index : int
            The index of the buffer among the block's writes.
        axis : int
            The axis whose stride to pad.
        factor, offset : int
            The stride becomes a multiple of ``factor`` plus ``offset``.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), C: T.Buffer((16, 32), "float32")):
                B = T.alloc_buffer((16, 32), "float32")
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)
                for i, j in T.grid(16, 32):
                    with T.block("C"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        C[vi, vj] = B[vi, vj] + T.float32(1)

        Rows of B 33 elements apart:

        .. code-block:: python

            sch = tir.Schedule(before)
            sch.storage_align("B", 0, axis=0, factor=32, offset=1)

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((16, 32), "float32"), C: T.Buffer((16, 32), "float32")):
                B = T.alloc_buffer((16, 32))
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        T.block_attr({"buffer_dim_align": [[0, 0, 32, 1]]})
                        B[vi, vj] = A[vi, vj] * T.float32(2)
                for i, j in T.grid(16, 32):
                    with T.block("C"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        C[vi, vj] = B[vi, vj] + T.float32(1)
        """
        realize, _ = self._block(block)
        root = self._func(block.func_name).body
        new = _block_annotate.storage_align(root, realize.block, buffer_index, axis, factor, offset)
        self._commit(block.func_name, replace_stmt(root, realize.block, new))

    @primitive("AddUnitLoop", inputs=("block_or_loop",))
    def add_unit_loop(self, block_or_loop: BlockRV | LoopRV | str) -> LoopRV:
        """Add a loop of extent 1 right above ``block_or_loop``, e.g. to give a block a loop to bind or
        compute_at under.

        Preconditions: ``block_or_loop`` is not the root block.

        Parameters
        ----------
        block_or_loop : BlockRV, LoopRV or str
            What the new loop goes above.

        Returns
        -------
        loop : LoopRV
            The new loop.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
                for i in range(64):
                    with T.block("B"):
                        vi = T.axis.spatial(64, i)
                        B[vi] = A[vi] * T.float32(2)

        Add a unit loop above block B:

        .. code-block:: python

            sch = tir.Schedule(before)
            sch.add_unit_loop("B")

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
                for i, u in T.grid(64, 1):
                    with T.block("B"):
                        vi = T.axis.spatial(64, i)
                        B[vi] = A[vi] * T.float32(2)
        """
        rv = block_or_loop
        if isinstance(rv, BlockRV):
            node, path = self._block(rv)
            if not any(isinstance(s, Block) for s in path):
                raise ScheduleError(f"add_unit_loop: block {rv.name!r} is the root block; "
                                    "no loop can be added above it")
        else:
            node, _ = self._loop(rv)
        body, var = _layout.add_unit_loop(self._func(rv.func_name).body, node)
        self._commit(rv.func_name, body)
        return LoopRV(var, rv.func_name)

    @primitive("TransformBlockLayout", inputs=("block",))
    def transform_block_layout(self, block: BlockRV | str, index_map: Any) -> None:
        """Remap ``block``'s iteration space through ``index_map``; the loops above it are rebuilt.

        Preconditions: ``block`` is the only block under its loops, its bindings are the loop variables
        (affine, one loop per iterator), and ``index_map`` is bijective on its domain.

        Parameters
        ----------
        block : BlockRV or str
            The block.
        index_map : function or IndexMap
            From the block's iterators to the new ones.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)

        Iterate the 16 x 32 block as one flat axis:

        .. code-block:: python

            sch = tir.Schedule(before)
            sch.transform_block_layout("B", lambda i, j: (i * 32 + j,))

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                for ax0 in range(512):
                    with T.block("B"):
                        v0 = T.axis.spatial(512, ax0)
                        B[v0 // 32, v0 % 32] = A[v0 // 32, v0 % 32] * T.float32(2)
        """
        realize, path = self._block(block)
        func = self._func(block.func_name)
        body = _layout.transform_block_layout(func.body, realize, path, index_map)
        self._commit(block.func_name, body)

    # -- reindexing (reindex.py) -------------------------------------------------------------
    @primitive("ReIndex", inputs=("block",))
    def reindex(self, block: BlockRV | str, buffer: tuple[str, int] | str | Any) -> BlockRV:
        """Let ``block`` access a new buffer indexed by its own iterators, copied from (or to) the original.

        Preconditions: ``block`` accesses the buffer (given as ``("read", i)``, ``("write", i)``, a name or
        a Buffer) and its iterators are not all unused in the indices.  Useful before ``transform_layout``
        or ``tensorize``: the new buffer's layout follows the block's iteration space.

        Parameters
        ----------
        block : BlockRV or str
            The block.
        buffer : tuple, str or Buffer
            Which buffer.

        Returns
        -------
        reindex_block : BlockRV
            The block that makes the copy.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)

        Write B through a reindexed buffer:

        .. code-block:: python

            sch = tir.Schedule(before)
            sch.reindex("B", ("write", 0))

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                B_reindex = T.alloc_buffer((16, 32))
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B_reindex[vi, vj] = A[vi, vj] * T.float32(2)
                for ax0, ax1 in T.grid(16, 32):
                    with T.block("B_reindex"):
                        vi, vj = T.axis.remap("SS", [ax0, ax1])
                        B[vi, vj] = B_reindex[vi, vj]
        """
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
        self._record_as(buffer=(kind, index))
        return BlockRV(name, block.func_name)

    @primitive("ReindexCacheRead", inputs=("block",))
    def reindex_cache_read(self, block: BlockRV | str, read_buffer_index: int, storage_scope: str,
                           index_map: Any) -> BlockRV:
        """Copy a buffer ``block`` reads into a ``storage_scope`` buffer laid out as ``index_map(block
        iterators)``; the block reads the copy.

        Preconditions: ``block`` reads the buffer at one point per iteration (its indices are affine in the
        block's iterators); ``index_map`` takes one variable per block iterator.  Like ``cache_read``
        followed by ``transform_layout``, in one step.

        Parameters
        ----------
        block : BlockRV or str
            The block.
        read_buffer_index : int
            The index of the buffer among the block's reads.
        storage_scope : str
            The scope of the new buffer.
        index_map : function or IndexMap
            Its layout, from the block's iterators.

        Returns
        -------
        cached_block : BlockRV
            The block that makes the copy.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)

        A transposed copy of A in shared memory:

        .. code-block:: python

            sch = tir.Schedule(before)
            sch.reindex_cache_read("B", 0, "shared", lambda i, j: (j, i))

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                A_shared = T.alloc_buffer((32, 16), scope="shared")
                for i, j in T.grid(16, 32):
                    with T.block("A_shared"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        A_shared[vj, vi] = A[vi, vj]
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A_shared[vj, vi] * T.float32(2)
        """
        return self._reindex_cache(block, read_buffer_index, storage_scope, index_map, read=True)

    @primitive("ReindexCacheWrite", inputs=("block",))
    def reindex_cache_write(self, block: BlockRV | str, write_buffer_index: int, storage_scope: str,
                            index_map: Any) -> BlockRV:
        """Let ``block`` write a ``storage_scope`` buffer laid out as ``index_map(block iterators)``, copied to
        the original afterwards.

        Preconditions: ``block`` is the only writer of the buffer and writes one point per iteration;
        ``index_map`` takes one variable per block iterator.  Like ``cache_write`` followed by
        ``transform_layout``, in one step.

        Parameters
        ----------
        block : BlockRV or str
            The block.
        write_buffer_index : int
            The index of the buffer among the block's writes.
        storage_scope : str
            The scope of the new buffer.
        index_map : function or IndexMap
            Its layout, from the block's iterators.

        Returns
        -------
        cached_block : BlockRV
            The block that makes the copy.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)

        A transposed buffer for B in shared memory:

        .. code-block:: python

            sch = tir.Schedule(before)
            sch.reindex_cache_write("B", 0, "shared", lambda i, j: (j, i))

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                B_shared = T.alloc_buffer((32, 16), scope="shared")
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B_shared[vj, vi] = A[vi, vj] * T.float32(2)
                for i, j in T.grid(16, 32):
                    with T.block("B_shared"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = B_shared[vj, vi]
        """
        return self._reindex_cache(block, write_buffer_index, storage_scope, index_map, read=False)

    def _reindex_cache(self, block: BlockRV, index: int, scope: str, index_map: Any, read: bool) -> BlockRV:
        realize, path = self._block(block)
        body, name = _reindex.reindex_cache(self._func(block.func_name).body, realize, path, index, scope,
                                            index_map, read)
        self._commit(block.func_name, body)
        return BlockRV(name, block.func_name)

    @primitive("PadEinsum", inputs=("block",))
    def pad_einsum(self, block: BlockRV | str, padding: list[int]) -> None:
        """Round ``block``'s iteration domain up to multiples of ``padding``, with zero-padded copies of the
        buffers it would otherwise overrun (so a tile size that does not divide the shape fits).

        Preconditions: ``block`` is an einsum-like block (a single store whose indices are its iterators);
        one padding factor per iterator.

        Parameters
        ----------
        block : BlockRV or str
            The block.
        padding : list of int
            The multiple for each iterator.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((14,), "float32"), B: T.Buffer((14,), "float32")):
                for i in range(14):
                    with T.block("B"):
                        vi = T.axis.spatial(14, i)
                        B[vi] = A[vi] * T.float32(2)

        Pad 14 up to 16:

        .. code-block:: python

            sch = tir.Schedule(before)
            sch.pad_einsum("B", [16])

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((14,), "float32"), B: T.Buffer((14,), "float32")):
                A_pad = T.alloc_buffer((16,))
                B_pad = T.alloc_buffer((16,))
                for i0 in range(16):
                    with T.block("A_pad"):
                        v0 = T.axis.spatial(16, i0)
                        A_pad[v0] = T.if_then_else(v0 < 14, A[v0], T.float32(0))
                for i in range(16):
                    with T.block("B"):
                        vi = T.axis.spatial(16, i)
                        B_pad[vi] = A_pad[vi] * T.float32(2)
                for i0 in range(14):
                    with T.block("B_pad"):
                        v0 = T.axis.spatial(14, i0)
                        B[v0] = B_pad[v0]
        """
        realize, path = self._block(block)
        body = _pad_einsum.pad_einsum(self._func(block.func_name).body, realize, path, padding)
        self._commit(block.func_name, body)
        self._record_as(padding=[int(p) for p in padding])

    # == schedmore: buffer axis separators, ... ================================================

    def _block_index_dtype(self, block: BlockRV) -> str:
        """The index type a function index map gets: the block's first iterator's (TVM's rule)."""
        blk = self._block(block)[0].block
        return blk.iter_vars[0].var.dtype if blk.iter_vars else "int32"

    @primitive("SetAxisSeparator", inputs=("block",))
    def set_axis_separator(self, block: BlockRV | str, buffer: tuple[str, int] | str | Any,
                           axis_separators: list[int] | None) -> None:
        """Group a buffer's axes into physical dimensions at ``axis_separators`` (e.g. a 2-d texture).

        Preconditions: ``block`` accesses the buffer (given as ``("read", i)``, ``("write", i)``, a name or
        a Buffer); the separators are increasing axis positions.

        Parameters
        ----------
        block : BlockRV or str
            A block accessing the buffer.
        buffer : tuple, str or Buffer
            Which buffer.
        axis_separators : list of int
            Where each new physical dimension starts.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), C: T.Buffer((16, 32), "float32")):
                B = T.alloc_buffer((16, 32), "float32")
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)
                for i, j in T.grid(16, 32):
                    with T.block("C"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        C[vi, vj] = B[vi, vj] + T.float32(1)

        Keep B's two axes apart:

        .. code-block:: python

            sch = tir.Schedule(before)
            sch.set_axis_separator("B", ("write", 0), [1])

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((16, 32), "float32"), C: T.Buffer((16, 32), "float32")):
                B = T.alloc_buffer((16, 32), axis_separators=[1])
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)
                for i, j in T.grid(16, 32):
                    with T.block("C"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        C[vi, vj] = B[vi, vj] + T.float32(1)
        """
        kind, index, target = self._normalize_buffer_arg(block, buffer)
        seps = [int(getattr(a, "value", a)) for a in (axis_separators or [])]
        func = self._func(block.func_name)
        self._commit_function(block.func_name, _axis_separator.set_axis_separator(func, target, seps))
        self._record_as(buffer=(kind, index), axis_separators=seps)

    @primitive("FuseReductionEpilogue", inputs=("reduction_block", "epilogue_block"))
    def fuse_reduction_epilogue(self, reduction_block: BlockRV | str, epilogue_block: BlockRV | str) -> None:
        """Fold an elementwise epilogue (a bias, bias + ReLU, clipping) into the reduction it reads: the
        reduction then writes the epilogue's output directly.

        Preconditions: ``reduction_block`` is a reduction with ``T.init`` whose only reader is
        ``epilogue_block``, a single elementwise store of a form it recognizes (see
        ``schedule/epilogue.py``).

        Parameters
        ----------
        reduction_block : BlockRV or str
            The reduction.
        epilogue_block : BlockRV or str
            The elementwise block after it.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 64), "float32"), W: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
                B = T.alloc_buffer((16,), "float32")
                for i, k in T.grid(16, 64):
                    with T.block("B"):
                        vi, vk = T.axis.remap("SR", [i, k])
                        with T.init():
                            B[vi] = T.float32(0)
                        B[vi] = B[vi] + A[vi, vk]
                for i in range(16):
                    with T.block("C"):
                        vi = T.axis.spatial(16, i)
                        C[vi] = B[vi] + W[vi]

        Start each row's sum at its bias:

        .. code-block:: python

            sch = tir.Schedule(before)
            sch.fuse_reduction_epilogue("B", "C")

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((16, 64), "float32"), W: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
                B = T.alloc_buffer((16,))
                for i, k in T.grid(16, 64):
                    with T.block("B"):
                        vi, vk = T.axis.remap("SR", [i, k])
                        with T.init():
                            C[vi] = W[vi]
                        C[vi] = C[vi] + A[vi, vk]
        """
        reduction, _ = self._block(reduction_block)
        epilogue, _ = self._block(epilogue_block)
        func = self._func(reduction_block.func_name)
        body = _epilogue.fuse_reduction_epilogue(func.body, reduction, epilogue, self._output_buffers(func))
        self._commit(reduction_block.func_name, body)

    @primitive("RollingBuffer", inputs=("block",))
    def rolling_buffer(self, block: BlockRV | str, write_buffer_index: int) -> None:
        """Shrink a buffer ``block`` writes to the window one iteration of the outer loop needs, addressed
        circularly; rows that overlap the previous window are computed once.

        Preconditions: the buffer is allocated in the function; ``block`` was placed under its consumer's
        loop (compute_at) and its region slides along one axis by a constant step per iteration.

        Parameters
        ----------
        block : BlockRV or str
            The producer.
        write_buffer_index : int
            The index of the buffer among its writes.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((10,), "float32"), C: T.Buffer((8,), "float32")):
                B = T.alloc_buffer((10,), "float32")
                for i in range(8):
                    for ax in range(3):
                        with T.block("B"):
                            vb = T.axis.spatial(10, i + ax)
                            B[vb] = A[vb] * T.float32(2)
                    for k in range(3):
                        with T.block("C"):
                            vi, vk = T.axis.remap("SR", [i, k])
                            with T.init():
                                C[vi] = T.float32(0)
                            C[vi] = C[vi] + B[vi + vk]

        Keep only a window of 3 elements of B:

        .. code-block:: python

            sch = tir.Schedule(before)
            sch.rolling_buffer("B", 0)

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((10,), "float32"), C: T.Buffer((8,), "float32")):
                B = T.alloc_buffer((3,))
                for i in range(8):
                    for ax in range(3):
                        with T.block("B"):
                            vb = T.axis.opaque(10, i + ax)
                            T.where(i < 1 or 2 <= ax)
                            B[vb % 3] = A[vb] * T.float32(2)
                    for k in range(3):
                        with T.block("C"):
                            vi = T.axis.opaque(8, i)
                            vk = T.axis.reduce(3, k)
                            with T.init():
                                C[vi] = T.float32(0)
                            C[vi] = C[vi] + B[(vi + vk) % 3]
        """
        realize, _ = self._block(block)
        func = self._func(block.func_name)
        body = _rolling_buffer.rolling_buffer(func.body, realize, int(write_buffer_index),
                                              self._output_buffers(func))
        self._commit(block.func_name, body)
        self._record_as(write_buffer_index=int(write_buffer_index))

    @primitive("ReorderBlockIterVar", inputs=("block",))
    def reorder_block_iter_var(self, block: BlockRV | str, new_order: list[int]) -> None:
        """Permute ``block``'s iterators (with their bindings) into ``new_order``; the loops stay.

        Preconditions: ``new_order`` is a permutation of ``range(len(iterators))``.

        Parameters
        ----------
        block : BlockRV or str
            The block.
        new_order : list of int
            Which old iterator comes at each position.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)

        Declare vj before vi:

        .. code-block:: python

            sch = tir.Schedule(before)
            sch.reorder_block_iter_var("B", [1, 0])

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16, 32), "float32")):
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vj, vi = T.axis.remap("SS", [j, i])
                        B[vi, vj] = A[vi, vj] * T.float32(2)
        """
        realize, _ = self._block(block)
        order = [int(getattr(k, "value", k)) for k in new_order]
        body = _block_iters.reorder_block_iter_var(self._func(block.func_name).body, realize, order)
        self._commit(block.func_name, body)
        self._record_as(new_order=order)

    @primitive("UnsafeSetDType", inputs=("block",))
    def unsafe_set_dtype(self, block: BlockRV | str, buffer_index: int, dtype: str) -> None:
        """Store the ``buffer_index``-th buffer ``block`` writes as ``dtype``, casting at every store and load.

        Preconditions: the buffer is allocated in the function.  Unchecked, as in TVM: precision or range
        may be lost.

        Parameters
        ----------
        block : BlockRV or str
            The block writing the buffer.
        buffer_index : int
            Its index among the block's writes.
        dtype : str
            The new element type.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), C: T.Buffer((16, 32), "float32")):
                B = T.alloc_buffer((16, 32), "float32")
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)
                for i, j in T.grid(16, 32):
                    with T.block("C"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        C[vi, vj] = B[vi, vj] + T.float32(1)

        Keep B in half precision:

        .. code-block:: python

            sch = tir.Schedule(before)
            sch.unsafe_set_dtype("B", 0, "float16")

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((16, 32), "float32"), C: T.Buffer((16, 32), "float32")):
                B = T.alloc_buffer((16, 32), "float16")
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = T.Cast("float16", A[vi, vj] * T.float32(2))
                for i, j in T.grid(16, 32):
                    with T.block("C"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        C[vi, vj] = T.Cast("float32", B[vi, vj]) + T.float32(1)
        """
        realize, _ = self._block(block)
        index = int(buffer_index)
        body = _block_annotate.unsafe_set_dtype(self._func(block.func_name).body, realize.block, index, dtype)
        self._commit(block.func_name, body)
        self._record_as(buffer_index=index)

    @primitive("LoopPartition", inputs=("loop", "+factors"))
    def loop_partition(self, loop: LoopRV, factors: list[Any], preserve_unit_iters: bool = True) -> list[LoopRV]:
        """Cut ``loop``'s range into consecutive pieces of the given lengths (one may be None; the
        rest of the range is a last piece), each a copy of the body in its own block (see
        partition.py).  ``preserve_unit_iters`` is recorded and, as in TVM, changes nothing."""
        node, _ = self._loop(loop)
        recorded = list(factors)
        ints = [self._int_value(f, f"partition factor of loop {node.loop_var.name}") for f in recorded]
        bits = max([int("".join(c for c in getattr(f, "dtype", "int32") if c.isdigit()) or 32)
                    for f in recorded if f is not None] or [32])
        body, new_vars = _partition.loop_partition(self._func(loop.func_name).body, node, ints, bits)
        self._commit(loop.func_name, body)
        return [LoopRV(v, loop.func_name) for v in new_vars]

    @primitive("Merge", inputs=("*loops",))
    def merge(self, *loops: LoopRV) -> LoopRV:
        """Merge sibling loop nests into one nest that runs each body in turn.

        Preconditions: at least two loops, at equal depth under a common ancestor, with equal extents and
        starts; the loops around them up to that ancestor are merged too.

        Parameters
        ----------
        *loops : LoopRV
            The innermost loops of the nests to merge.

        Returns
        -------
        merged_loop : LoopRV
            The inner loop of the merged nest.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
                for i in range(16):
                    with T.block("B"):
                        vi = T.axis.spatial(16, i)
                        B[vi] = A[vi] * T.float32(2)
                for i in range(16):
                    with T.block("C"):
                        vi = T.axis.spatial(16, i)
                        C[vi] = A[vi] + T.float32(1)

        Run both blocks in one loop:

        .. code-block:: python

            sch = tir.Schedule(before)
            (i,) = sch.get_loops("B")
            (j,) = sch.get_loops("C")
            sch.merge(i, j)

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
                for i_m in range(16):
                    with T.block("B"):
                        vi = T.axis.spatial(16, i_m)
                        B[vi] = A[vi] * T.float32(2)
                    with T.block("C"):
                        vi = T.axis.spatial(16, i_m)
                        C[vi] = A[vi] + T.float32(1)
        """
        if len(loops) == 1 and isinstance(loops[0], (list, tuple)):
            loops = tuple(loops[0])
        if len(loops) < 2:
            raise ValueError("'merge' requires at least 2 loop(s)")
        nodes = [self._loop(lp)[0] for lp in loops]
        func_name = loops[0].func_name
        body, var = _merge.merge(self._func(func_name).body, nodes)
        self._commit(func_name, body)
        self._record_as(loops=loops)
        return LoopRV(var, func_name)

    @primitive("AnnotateBufferAccess", inputs=("block",))
    def annotate_buffer_access(self, block: BlockRV | str, buffer_index: int, buf_type: str,
                               gen_new_ranges: Any) -> None:
        """Declare the region ``block`` reads (``buf_type="read"``) or writes of its ``buffer_index``-th
        buffer: ``gen_new_ranges(*block iterators)`` gives one ``(begin, end)`` or index per axis.

        Preconditions: ``buffer_index`` is in range for that kind of access.  The region is trusted, as in
        TVM, and marked explicit (``explicit_read_region`` / ``explicit_write_region``) so no later step
        infers it again.

        Parameters
        ----------
        block : BlockRV or str
            The block.
        buffer_index : int
            The index of the buffer among its reads or writes.
        buf_type : str
            ``"read"`` or ``"write"``.
        gen_new_ranges : function
            From the block's iterators to the region.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), C: T.Buffer((16, 32), "float32")):
                B = T.alloc_buffer((16, 32), "float32")
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)
                for i, j in T.grid(16, 32):
                    with T.block("C"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        C[vi, vj] = B[vi, vj] + T.float32(1)

        Say C reads a whole row of B:

        .. code-block:: python

            sch = tir.Schedule(before)
            sch.annotate_buffer_access("C", 0, "read", lambda vi, vj: ((vi, vi + 1), (0, 32)))

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((16, 32), "float32"), C: T.Buffer((16, 32), "float32")):
                B = T.alloc_buffer((16, 32))
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)
                for i, j in T.grid(16, 32):
                    with T.block("C"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        T.reads(B[vi, 0:32])
                        T.block_attr({"explicit_read_region": [T.int32(0)]})
                        C[vi, vj] = B[vi, vj] + T.float32(1)
        """
        realize, _ = self._block(block)
        ranges = _buffer_access.ranges_map(realize.block, gen_new_ranges)
        new = _buffer_access.annotate_buffer_access(realize.block, int(buffer_index), buf_type, ranges)
        root = self._func(block.func_name).body
        self._commit(block.func_name, replace_stmt(root, realize.block, new))
        self._record_as(buffer_index=int(buffer_index), gen_new_ranges=ranges)

    @primitive("SampleComputeLocation", inputs=("block",), pure=True)
    def sample_compute_location(self, block: BlockRV | str, decision: int | None = None) -> LoopRV:
        """Sample a place to compute ``block``: a loop of its consumers, the root, or inlined.

        The candidates are where ``compute_at`` would succeed (consumer loops, by position), -1 the
        root (the result, a LoopRV whose ``mark`` is ``"root"``, leaves the block where it is when given
        to ``compute_at``) and -2 inline (``mark`` ``"inline"``: ``compute_at`` then inlines it), each
        equally likely as in TVM.  The trace keeps the candidate's index as the decision; a replayed
        decision that is no longer a candidate falls back to the nearest one before it.

        Preconditions: ``block`` exists; a given ``decision`` is a candidate index (-2, -1 or a loop
        position).

        Parameters
        ----------
        block : BlockRV or str
            The block to place.
        decision : int, optional
            The candidate to take instead of sampling.

        Returns
        -------
        loop : LoopRV
            The sampled location, for ``compute_at``.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((16, 32), "float32"), C: T.Buffer((16, 32), "float32")):
                B = T.alloc_buffer((16, 32), "float32")
                for i, j in T.grid(16, 32):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi, vj] * T.float32(2)
                for i, j in T.grid(16, 32):
                    with T.block("C"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        C[vi, vj] = B[vi, vj] + T.float32(1)

        Place B at random, then move it there:

        .. code-block:: python

            sch = tir.Schedule(before, seed=0)
            block = sch.get_block("B")
            loop = sch.sample_compute_location(block)
            sch.compute_at(block, loop)
        """
        import bisect

        candidates = self._compute_location_candidates(block)
        indices = [k for k, _ in candidates]
        if decision is None:
            # TVM's generator and integer sampling, so a seed picks what it picks in TVM
            pick, self._lcg_state = _random_engine.sample_int(self._lcg_state_now(), 0, len(candidates))
        else:
            decision = int(getattr(decision, "value", decision))
            pos = bisect.bisect_left(indices, decision)
            pick = pos if pos < len(indices) and indices[pos] == decision else pos - 1
        if pick < 0:
            index, target = -1, None
        else:
            index, target = candidates[pick]
        if target is None:
            rv = LoopRV(None, block.func_name)
            rv.mark = "inline" if index == -2 else "root"
        else:
            rv = LoopRV(target.loop_var, block.func_name)
        self._record_as(decision=index)
        return rv

    def _lcg_state_now(self) -> int:
        """The state of TVM's generator for this schedule (made from the seed on first use)."""
        state = getattr(self, "_lcg_state", None)
        if state is None:
            state = _random_engine.normalize_seed(self._seed)
        return state

    def _compute_location_candidates(self, block: BlockRV) -> list[tuple[int, For | None]]:
        """TVM's CollectComputeLocation: (-2 inline,) -1 root, then the consumer loops (by
        position) where compute_at succeeds: no unit loops, no spatial loop after a reduction
        loop, no reduction loop after the last spatial one."""
        realize, path = self._block(block)
        func = self._func(block.func_name)
        outputs = self._output_buffers(func)
        out: list[tuple[int, For | None]] = []
        try:
            _compute_inline.compute_inline(func.body, realize, outputs)
            out.append((-2, None))
        except ScheduleError:
            pass
        out.append((-1, None))
        written = {id(w.buffer) for w in realize.block.writes}
        consumers = [(r, p) for r, p in block_realizes(func.body)
                     if r is not realize and r.block.name_hint != "root"
                     and any(id(x.buffer) in written for x in r.block.reads)
                     and next((s for s in reversed(p) if isinstance(s, Block)), None)
                     is next((s for s in reversed(path) if isinstance(s, Block)), None)]
        if not consumers:
            return out
        paths = [p for _, p in consumers]
        boundary = None
        for depth in range(min(len(p) for p in paths)):
            if all(p[depth] is paths[0][depth] for p in paths) and isinstance(paths[0][depth], (For, Block)):
                boundary = paths[0][depth]
            elif not all(p[depth] is paths[0][depth] for p in paths):
                break
        if not isinstance(boundary, For):
            return out
        loops = loops_above(paths[0])
        n_candidate = next(k for k, lp in enumerate(loops) if lp is boundary) + 1

        def iter_type(lp: For) -> str:
            """TVM's GetLoopIterType: what kind of block iterator the loop's variable feeds."""
            kinds = {iv.iter_type for r in child_blocks(lp) for iv, value in zip(r.block.iter_vars, r.iter_values)
                     if uses_var(value, lp.loop_var)}
            if kinds - {"spatial", "reduce"} or {"spatial", "reduce"} <= kinds:
                return "opaque"
            return "reduce" if "reduce" in kinds else "spatial"

        types = [iter_type(lp) for lp in loops[:n_candidate]]
        last_spatial = max((k for k, t in enumerate(types) if t == "spatial"), default=-1)
        visited_reduce = False
        for k, lp in enumerate(loops[:n_candidate]):
            if isinstance(lp.extent, IntImm) and lp.extent.value == 1:
                continue
            if types[k] == "spatial":
                if visited_reduce:
                    break
            else:
                visited_reduce = True
                if k > last_spatial:
                    break
            try:
                _compute.compute_at(func.body, realize, lp, reverse=False, preserve_unit_loops=True,
                                    output_buffers=outputs)
                out.append((k, lp))
            except ScheduleError:
                pass
        return out

    @primitive("DecomposePadding", inputs=("block", "loop"))
    def decompose_padding(self, block: BlockRV | str, loop: LoopRV) -> BlockRV:
        """Split a padding block into one that fills the pad value and one that copies the in-bound region.

        Preconditions: ``block`` is a single store of ``T.if_then_else(in bounds, value, pad value)``;
        ``loop`` is an ancestor of it.  The filling block goes before ``loop``; the copy loses its branch.

        Parameters
        ----------
        block : BlockRV or str
            The padding block.
        loop : LoopRV
            Where the filling block goes.

        Returns
        -------
        pad_block : BlockRV
            The block that fills the pad value.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((14,), "float32"), B: T.Buffer((16,), "float32")):
                for i in range(16):
                    with T.block("B"):
                        vi = T.axis.spatial(16, i)
                        B[vi] = T.if_then_else(1 <= vi and vi < 15, A[vi - 1], T.float32(0))

        Fill, then copy without a branch:

        .. code-block:: python

            sch = tir.Schedule(before)
            (i,) = sch.get_loops("B")
            sch.decompose_padding("B", i)

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((14,), "float32"), B: T.Buffer((16,), "float32")):
                for i in range(16):
                    with T.block("B_pad_const"):
                        vi = T.axis.spatial(16, i)
                        B[vi] = T.float32(0)
                for i in range(14):
                    with T.block("B"):
                        vi = T.axis.spatial(14, i)
                        B[vi + 1] = A[vi]
        """
        realize, _ = self._block(block)
        target, _ = self._loop(loop)
        body, name = _decompose_padding.decompose_padding(self._func(block.func_name).body, realize, target)
        self._commit(block.func_name, body)
        return BlockRV(name, block.func_name)

    def can_decompose_padding(self, block: BlockRV | str, loop: LoopRV) -> bool:
        """Whether ``decompose_padding(block, loop)`` would succeed (nothing changes, nothing recorded)."""
        realize, _ = self._block(block)
        target, _ = self._loop(loop)
        try:
            _decompose_padding.decompose_padding(self._func(loop.func_name).body, realize, target)
        except ScheduleError:
            return False
        return True

    @primitive("CacheIndex", inputs=("block",))
    def cache_index(self, block: BlockRV | str, storage_scope: str, cse_thresh: int = 0) -> list[BlockRV]:
        """Precompute ``block``'s index arithmetic into buffers ``index_var_k``, filled by blocks ``index_k``
        placed before it; the block then loads the indices.

        Preconditions: ``block`` exists and is under the root block; with ``cse_thresh`` > 0 only
        expressions that occur at least that often are cached.

        Parameters
        ----------
        block : BlockRV or str
            The block whose indices to cache.
        storage_scope : str
            The scope of the index buffers.
        cse_thresh : int
            The least number of occurrences worth caching (0: every index expression).

        Returns
        -------
        index_blocks : list[BlockRV]
            The blocks that fill the index buffers.

        Examples
        --------
        Before:

        .. code-block:: python

            @T.prim_func
            def before(A: T.Buffer((64,), "float32"), B: T.Buffer((16, 4), "float32")):
                for i, j in T.grid(16, 4):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vi, vj] = A[vi * 4 + vj]

        Cache the flat index of A:

        .. code-block:: python

            sch = tir.Schedule(before)
            sch.cache_index("B", "global")

        After:

        .. code-block:: python

            @T.prim_func
            def after(A: T.Buffer((64,), "float32"), B: T.Buffer((16, 4), "float32")):
                index_var_0 = T.alloc_buffer((16, 4), "int32", strides=(1,))
                for ax0, ax1 in T.grid(16, 4):
                    with T.block("index_0"):
                        v0, v1 = T.axis.remap("SS", [ax0, ax1])
                        T.reads()
                        index_var_0[v0, v1] = v0 * 4 + v1
                for i, j in T.grid(16, 4):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        T.reads(A[vi * 4 + vj])
                        B[vi, vj] = A[index_var_0[vi, vj]]
        """
        realize, _ = self._block(block)
        body, names = _cache_index.cache_index(self._func(block.func_name).body, realize, storage_scope,
                                               int(cse_thresh))
        self._commit(block.func_name, body)
        self._record_as(cse_thresh=int(cse_thresh))
        return [BlockRV(n, block.func_name) for n in names]


def _parse_debug_mask(debug_mask: Any) -> int:
    """TVM's debug_mask: "all" (-1), "none" (0) or a bit mask; None is minitvm's "none"."""
    if debug_mask is None or debug_mask == "none":
        return 0
    if debug_mask == "all":
        return -1
    if isinstance(debug_mask, str):
        raise ValueError(f"Schedule(debug_mask={debug_mask!r}): use 'all', 'none' or an integer bit mask")
    if not isinstance(debug_mask, int):
        raise TypeError(f"Schedule(debug_mask=...) takes 'all', 'none' or an integer, got {debug_mask!r}")
    if debug_mask < -1:
        raise ValueError(f"Schedule(debug_mask={debug_mask}): a negative mask other than -1 is not supported")
    return debug_mask


def _verify_block_names(before: Any, after: Any) -> None:
    """debug_mask's check after every primitive.  TVM verifies its statement-reference tree
    and cached block flags; minitvm keeps neither (it finds blocks by name in the IR itself),
    so the state to verify is that the primitive left no block name ambiguous that was not
    already (a function may come in with repeated names; no primitive may add one)."""
    had = Counter(r.block.name_hint for r, _ in block_realizes(before))
    for name, count in Counter(r.block.name_hint for r, _ in block_realizes(after)).items():
        if count > 1 and count > had[name]:
            raise ScheduleError(f"internal: the schedule state is inconsistent after a primitive: "
                                f"{count} blocks named {name}")


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
