"""LowerOpaqueBlock: remove blocks, keeping what they mean as plain statements.

For each ``BlockRealize``:

* the block's iteration variables are replaced by the values they are bound to
  (``vi = T.axis.spatial(128, i)`` makes every ``vi`` an ``i``);
* a predicate other than ``True`` becomes ``if predicate: ...``;
* each ``T.alloc_buffer`` becomes an ``Allocate`` around the block's statements;
* ``T.match_buffer`` views are resolved: an access ``M[i, j]`` of a view of
  ``A[r0:..., r1:...]`` becomes ``A[r0 + i, r1 + j]``;
* a buffer over a view's memory in another dtype (``M_i32 = T.Buffer((1,), "int32",
  data=M.data)``: a tensor intrinsic reading four bytes as one word, TVM's ``vload`` +
  ``T.reinterpret``) becomes a 1-D buffer of that dtype over the source buffer's memory, indexed
  from the view's first byte; the view must be contiguous in its source and start on a whole
  word, else a ValueError names both buffers;
* a remaining ``T.init()`` is lowered first, as :mod:`.lower_init_block` does;
* a loop bound to a GPU thread axis becomes the thread launch it stands for,
  ``T.launch_thread(tag, extent)`` (an ``AttrStmt`` "thread_extent" over an ``IterVar``).

TVM does this in two passes (``ConvertBlocksToOpaque`` then ``LowerOpaqueBlock``); one is
enough here, and both names run it.
"""

from __future__ import annotations

import functools
from typing import Any

from ...arith import Analyzer
from ...ir import dtype as _dt
from .. import op as _op
from ..buffer import Buffer, BufferRegion
from ..expr import BufferLoad, IntImm, IterVar, PrimExpr, Range
from ..function import PrimFunc
from ..functor import StmtExprMutator, substitute
from ..stmt import Allocate, AttrStmt, Block, BlockRealize, BufferStore, For, ForKind, IfThenElse, Stmt
from .flatten_buffer import flat_index
from .function_pass import prim_func_pass
from .lower_init_block import lower_init

__all__ = ["LowerOpaqueBlock", "ConvertBlocksToOpaque", "lower_blocks", "MatchedView", "MatchedViews"]


class MatchedView:
    """A ``match_buffer`` view: which buffer it looks into, from which corner."""

    def __init__(self, view: Buffer, source: BufferRegion):
        dropped = len(source.region) - view.ndim
        if dropped < 0:
            raise ValueError(f"match_buffer {view.name} has {view.ndim} dimensions but matches a "
                             f"{len(source.region)}-dimensional region of {source.buffer.name}")
        self.view = view
        self.source = source.buffer
        self.corner = tuple(r.min for r in source.region)
        _check_offset_factor(view, source)
        # a view may drop leading unit dimensions of the region (A[i, 0:16] as a 1-D view)
        self.dropped = dropped
        #: why the view's elements are not one run of the source's memory (None: they are)
        self.scattered = _scattered(source)

    def source_indices(self, indices: tuple) -> tuple:
        leading = self.corner[:self.dropped]
        trailing = tuple(base + idx for base, idx in zip(self.corner[self.dropped:], indices))
        return leading + trailing


def _check_offset_factor(view: Buffer, source: BufferRegion) -> None:
    """As TVM's LowerMatchBuffer: a view with an ``offset_factor`` starts at a provable multiple
    of it in its source's memory (a tensor intrinsic relies on that alignment)."""
    factor = view.offset_factor
    if factor <= 1:
        return
    start = flat_index(source.buffer, tuple(r.min for r in source.region))
    if not Analyzer().can_prove_equal(_op.floormod(start, factor), 0):
        raise ValueError(f"match_buffer {view.name}: the region {source} starts at element offset "
                         f"{Analyzer().simplify(start)} of {source.buffer.name}, which is not provably a "
                         f"multiple of the view's offset_factor {factor}")


def _scattered(region: BufferRegion) -> str | None:
    """None if ``region`` is one contiguous run of its (row-major) buffer's memory: unit extents,
    then at most one partial dimension, then whole dimensions; else why not."""
    buffer, ana = region.buffer, Analyzer()
    if buffer.strides:
        return f"{buffer.name} has explicit strides"
    whole = True  # the dimensions after this one are whole
    for r, extent in zip(reversed(region.region), reversed(buffer.shape)):
        if not whole and not ana.can_prove_equal(r.extent, 1):
            return f"the region {region} is not contiguous in {buffer.name}"
        whole = whole and ana.can_prove_equal(r.extent, extent)
    return None


def _bytes(buffer: Buffer) -> PrimExpr:
    return functools.reduce(_op.mul, buffer.shape, _op.const(_dt.bits(buffer.dtype) // 8, "int32"))


class _WordView:
    """``alias`` (a buffer over a match view's memory, in another dtype) as a 1-D buffer over the
    view's source memory plus the index of the view's first element in it."""

    def __init__(self, alias: Buffer, view: MatchedView):
        src = view.source
        where = f"buffer {alias.name} (a {alias.dtype} view of {view.view.name}, which matches {src.name})"
        if view.scattered:
            raise ValueError(f"{where}: {view.scattered}; a view in another dtype needs contiguous memory")
        if alias.strides:
            raise NotImplementedError(f"{where}: explicit strides on a view in another dtype")
        src_bytes, word_bytes = _dt.bits(src.dtype) // 8, _dt.bits(alias.dtype) // 8
        first_byte = _op.mul(flat_index(src, view.corner), src_bytes)
        ana = Analyzer()
        if not ana.can_prove_equal(_op.floormod(first_byte, word_bytes), 0):
            raise ValueError(f"{where}: the view starts at byte {ana.simplify(first_byte)} of {src.name}, "
                             f"which cannot be proven a multiple of {word_bytes} (the size of {alias.dtype})")
        if not ana.can_prove(_op.less_equal(_bytes(alias), _bytes(view.view))):
            raise ValueError(f"{where}: it is larger than {view.view.name} ({ana.simplify(_bytes(alias))} bytes "
                             f"> {ana.simplify(_bytes(view.view))})")
        words = ana.simplify(_op.floordiv(_bytes(src), word_bytes))
        self.buffer = Buffer(src.data, alias.dtype, (words,), (), 0, src.scope, alias.name)
        self.base = ana.simplify(_op.floordiv(first_byte, word_bytes))
        self.alias = alias

    def indices(self, indices: tuple) -> tuple:
        return (_op.add(self.base, flat_index(self.alias, indices)),)


class MatchedViews:
    """The match_buffer views in scope, and what an access through one of them reads: the
    block lowering and the reference interpreter resolve accesses with the same table."""

    def __init__(self) -> None:
        self.by_buffer: dict[int, MatchedView] = {}
        self.by_data: dict[int, MatchedView] = {}  # the data Var of a view -> the view
        self.words: dict[tuple[int, int], _WordView] = {}  # (alias, view) -> its word view

    def add(self, view: MatchedView) -> None:
        outer = self.by_buffer.get(id(view.source))
        if outer is not None:  # a view of a view looks straight into the innermost real buffer
            view.corner = outer.source_indices(view.corner)
            view.source = outer.source
            view.dropped += outer.dropped
            view.scattered = view.scattered or outer.scattered
        self.by_buffer[id(view.view)] = view
        self.by_data[id(view.view.data)] = view

    def resolve(self, buffer: Buffer, indices: tuple) -> tuple[Buffer, tuple]:
        """The real buffer and indices an access ``buffer[indices]`` reads or writes."""
        view = self.by_buffer.get(id(buffer))
        if view is not None:
            return view.source, view.source_indices(indices)
        view = self.by_data.get(id(buffer.data))
        if view is None:
            return buffer, indices
        # another buffer over a view's memory (A_i32 = T.Buffer((1,), "int32", data=A.data))
        key = (id(buffer), id(view))
        words = self.words.get(key)
        if words is None:
            words = self.words[key] = _WordView(buffer, view)
        return words.buffer, words.indices(indices)


class _BlockLowerer(StmtExprMutator):
    def __init__(self) -> None:
        self.views = MatchedViews()

    # -- blocks ---------------------------------------------------------------------------
    def visit_block_realize_(self, n: BlockRealize) -> Stmt:
        block = lower_init(n.block)
        values = self.visit(n.iter_values)
        bindings = {iv.var: value for iv, value in zip(block.iter_vars, values)}
        body = self._lower_block(block, bindings)
        predicate = self.visit(n.predicate)
        if not (isinstance(predicate, IntImm) and predicate.value):
            body = IfThenElse(predicate, body)
        return self._allocate(block, body)

    def visit_block_(self, n: Block) -> Stmt:
        # a block without a realize around it (only a root block can be like this)
        if n.iter_vars:
            raise ValueError(f"block {n.name_hint!r} has iteration variables but no BlockRealize "
                             "binding them")
        block = lower_init(n)
        return self._allocate(block, self._lower_block(block, {}))

    def _lower_block(self, block: Block, bindings: dict) -> Stmt:
        for match in block.match_buffers:
            source = substitute(match.source, bindings)
            source = BufferRegion(source.buffer, tuple(self.visit(source.region)))
            self.views.add(MatchedView(match.buffer, source))
        return self.visit(substitute(block.body, bindings))

    @staticmethod
    def _allocate(block: Block, body: Stmt) -> Stmt:
        for buffer in reversed(block.alloc_buffers):
            body = Allocate(buffer, body)
        return body

    def visit_for_(self, n: For) -> Stmt:
        loop = self.visit_children(n)
        if loop.kind != ForKind.THREAD_BINDING:
            return loop
        tag = loop.thread_binding
        iv = IterVar(Range(loop.min, loop.extent), loop.loop_var, IterVar.ThreadIndex, tag)
        key = "virtual_thread" if tag.startswith("vthread") else "thread_extent"
        return AttrStmt(iv, key, loop.extent, loop.body)

    # -- accesses through match_buffer views ------------------------------------------------
    def _resolve(self, buffer: Buffer, indices: tuple) -> tuple[Buffer, tuple]:
        return self.views.resolve(buffer, indices)

    def visit_buffer_load_(self, n: BufferLoad) -> PrimExpr:
        indices = self.visit(n.indices)
        buffer, indices = self._resolve(n.buffer, indices)
        if buffer is n.buffer and indices is n.indices:
            return n
        return BufferLoad(buffer, indices)

    def visit_buffer_store_(self, n: BufferStore) -> Stmt:
        value, indices = self.visit(n.value), self.visit(n.indices)
        buffer, indices = self._resolve(n.buffer, indices)
        if buffer is n.buffer and value is n.value and indices is n.indices:
            return n
        return BufferStore(buffer, value, indices, n.span)  # (the span names the line in errors)


def lower_blocks(body: Any) -> Any:
    """``body`` with every block replaced by plain statements."""
    return _BlockLowerer().visit(body)


@prim_func_pass(opt_level=0, name="tir.LowerOpaqueBlock")
class LowerOpaqueBlock:
    """Remove all blocks: bind iteration variables, turn predicates into ifs, allocations
    into ``Allocate``, and resolve ``match_buffer`` views."""

    def transform_function(self, func: PrimFunc, mod, ctx) -> PrimFunc:
        body = lower_blocks(func.body)
        return func if body is func.body else func.with_body(body)


#: TVM splits block lowering in two passes; here one pass does all of it.
ConvertBlocksToOpaque = LowerOpaqueBlock
