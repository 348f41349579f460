"""LowerOpaqueBlock: remove blocks, keeping what they mean as plain statements.

For each ``BlockRealize``:

* the block's iteration variables are replaced by the values they are bound to
  (``vi = T.axis.spatial(128, i)`` makes every ``vi`` an ``i``);
* a predicate other than ``True`` becomes ``if predicate: ...``;
* each ``T.alloc_buffer`` becomes an ``Allocate`` around the block's statements;
* ``T.match_buffer`` views are resolved: an access ``M[i, j]`` of a view of
  ``A[r0:..., r1:...]`` becomes ``A[r0 + i, r1 + j]``;
* a remaining ``T.init()`` is lowered first, as :mod:`.lower_init_block` does;
* a loop bound to a GPU thread axis becomes the thread launch it stands for,
  ``T.launch_thread(tag, extent)`` (an ``AttrStmt`` "thread_extent" over an ``IterVar``).

TVM does this in two passes (``ConvertBlocksToOpaque`` then ``LowerOpaqueBlock``); one is
enough here, and both names run it.
"""

from __future__ import annotations

from typing import Any

from ..buffer import Buffer, BufferRegion
from ..expr import BufferLoad, IntImm, IterVar, PrimExpr, Range
from ..function import PrimFunc
from ..functor import StmtExprMutator, substitute
from ..stmt import Allocate, AttrStmt, Block, BlockRealize, BufferStore, For, ForKind, IfThenElse, Stmt
from .function_pass import prim_func_pass
from .lower_init_block import lower_init

__all__ = ["LowerOpaqueBlock", "ConvertBlocksToOpaque", "lower_blocks", "MatchedView"]


class MatchedView:
    """A ``match_buffer`` view: which buffer it looks into, from which corner."""

    def __init__(self, view: Buffer, source: BufferRegion):
        dropped = len(source.region) - view.ndim
        if dropped < 0:
            raise ValueError(f"match_buffer {view.name} has {view.ndim} dimensions but matches a "
                             f"{len(source.region)}-dimensional region of {source.buffer.name}")
        self.source = source.buffer
        self.corner = tuple(r.min for r in source.region)
        # a view may drop leading unit dimensions of the region (A[i, 0:16] as a 1-D view)
        self.dropped = dropped

    def source_indices(self, indices: tuple) -> tuple:
        leading = self.corner[:self.dropped]
        trailing = tuple(base + idx for base, idx in zip(self.corner[self.dropped:], indices))
        return leading + trailing


class _BlockLowerer(StmtExprMutator):
    def __init__(self) -> None:
        self.views: dict[int, tuple[Buffer, MatchedView]] = {}

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
            view = MatchedView(match.buffer, source)
            # a view of a view looks straight into the innermost real buffer
            outer = self.views.get(id(view.source))
            if outer is not None:
                view.corner = outer[1].source_indices(view.corner)
                view.source = outer[1].source
                view.dropped += outer[1].dropped
            self.views[id(match.buffer)] = (match.buffer, view)
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
        entry = self.views.get(id(buffer))
        if entry is None:
            return buffer, indices
        return entry[1].source, entry[1].source_indices(indices)

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
        return BufferStore(buffer, value, indices)


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
