"""ThreadSync: insert ``T.tvm_storage_sync("shared")`` (CUDA's ``__syncthreads()``) where the
threads of a block hand data to each other through shared memory (TVM's ThreadSync pass,
the idea of its ThreadSyncPlanner, simplified).

Walking a kernel's statements in order, the pass keeps the shared-memory accesses made since
the last barrier.  Before a statement whose accesses *conflict* with those, it inserts a
barrier: two accesses of one shared buffer conflict when one is a write and their indices
differ (``A_shared[tx]`` written then ``A_shared[tx + 1]`` read: another thread wrote it).
The same index on both sides (``S[tx]`` then ``S[tx]``) is the thread's own element and needs
no barrier.  A loop whose body's last accesses conflict with its first ones (the next
iteration overwrites a tile the previous one still reads) gets a barrier at the start of its
body, as TVM does — the matmul with shared tiles has one there and one before the compute.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...ir.node import replace
from ...ir.structural import structural_equal
from ..analysis import vars_used
from ..expr import BufferLoad, Call, IterVar, StringImm, Var
from ..function import PrimFunc
from ..functor import post_order_visit
from ..stmt import Allocate, AttrStmt, BufferStore, Evaluate, For, ForKind, IfThenElse, LetStmt, SeqStmt, Stmt, seq
from ..thread_scope import storage_rank
from .function_pass import prim_func_pass

__all__ = ["ThreadSync", "thread_sync", "storage_sync", "is_storage_sync"]


def storage_sync(scope: str = "shared") -> Stmt:
    """The barrier statement ``T.tvm_storage_sync(scope)``."""
    return Evaluate(Call("int32", "tir.tvm_storage_sync", (StringImm(scope),)))


def is_storage_sync(s: Any) -> bool:
    return isinstance(s, Evaluate) and isinstance(s.value, Call) and s.value.op == "tir.tvm_storage_sync"


_DYN_POOL = Var("shared_dyn_pool", "handle")


@dataclass(frozen=True)
class _Access:
    buffer: Var  # the data variable of the buffer (or the dynamic shared pool)
    write: bool
    index: tuple
    threaded: bool  # the index depends on a thread index of the block


def _conflict(before: list[_Access], after: list[_Access]) -> bool:
    for a in before:
        for b in after:
            if a.buffer is not b.buffer or not (a.write or b.write):
                continue
            if a.threaded and b.threaded and structural_equal(a.index, b.index):
                continue  # each thread its own element
            return True
    return False


class _Planner:
    def __init__(self, scope: str, shared_vars: set[int], thread_vars: set[int]):
        self.scope, self.shared, self.threads = scope, shared_vars, thread_vars

    def accesses(self, e: Any) -> list[_Access]:
        found: list[_Access] = []

        def visit(n: Any) -> None:
            if isinstance(n, (BufferLoad, BufferStore)) and id(n.buffer.data) in self.shared:
                threaded = bool(vars_used(n.indices) & self.threads)
                # dynamic shared memory is one pool (TVM merges its allocations): one buffer for the sync
                key = _DYN_POOL if self.scope == "shared.dyn" else n.buffer.data
                found.append(_Access(key, isinstance(n, BufferStore), n.indices, threaded))

        post_order_visit(e, visit)
        return found

    def plan(self, s: Stmt) -> tuple[Stmt, list[_Access], list[_Access], bool]:
        """(the statement with barriers, accesses before its first barrier, after its last,
        whether it holds a barrier)."""
        if is_storage_sync(s):
            return s, [], [], True
        if isinstance(s, SeqStmt):
            out: list[Stmt] = []
            head: list[_Access] = []
            pending: list[_Access] = []
            synced = False
            for child in s.seq:
                c, h, t, has = self.plan(child)
                if _conflict(pending, h):
                    out.append(storage_sync(self.scope))
                    pending, synced = [], True
                if not synced:
                    head += h
                out.append(c)
                if has:
                    synced = True
                    pending = list(t)
                else:
                    pending += t
            return seq(*out), head, pending, synced
        if isinstance(s, For):
            body, h, t, has = self.plan(s.body)
            if s.kind in (ForKind.SERIAL, ForKind.UNROLLED) and _conflict(t, h):
                # iteration i + 1 starts on what iteration i still uses
                body = seq(storage_sync(self.scope), body)
                h, has = [], True
            return _with_body(s, body), h, t, has
        if isinstance(s, IfThenElse):
            cond = self.accesses(s.condition)
            then, h1, t1, s1 = self.plan(s.then_case)
            other, h2, t2, s2 = self.plan(s.else_case) if s.else_case is not None else (None, [], [], False)
            new = IfThenElse(s.condition, then, other)
            return new, cond + h1 + h2, t1 + t2 + ([] if s1 or s2 else cond), s1 or s2
        if isinstance(s, (Allocate, AttrStmt, LetStmt)):
            body, h, t, has = self.plan(s.body)
            extra = self.accesses(s.value) if isinstance(s, (AttrStmt, LetStmt)) else []
            return _with_body(s, body), extra + h, t, has
        acc = self.accesses(s)
        return s, acc, acc, False


def _with_body(s: Stmt, body: Stmt) -> Stmt:
    return s if body is s.body else replace(s, body=body)


def thread_sync(func: PrimFunc, scope: str = "shared") -> PrimFunc:
    """``func`` with barriers where its kernels' threads share ``scope`` memory through it."""
    if storage_rank(scope) != 1:
        raise NotImplementedError(f"ThreadSync({scope!r}): minitvm synchronizes shared memory only")
    shared: set[int] = set()
    threads: set[int] = set()

    def collect(n: Any) -> None:
        if isinstance(n, Allocate) and n.buffer.scope == scope:
            shared.add(id(n.buffer.data))
        elif isinstance(n, AttrStmt) and isinstance(n.node, IterVar) and n.node.thread_tag.startswith("threadIdx."):
            threads.add(id(n.node.var))

    post_order_visit(func.body, collect)
    if not shared:
        return func
    body, _, _, _ = _Planner(scope, shared, threads).plan(func.body)
    return func if body is func.body else func.with_body(body)


@prim_func_pass(opt_level=0, name="tir.ThreadSync")
class ThreadSync:
    """Insert ``T.tvm_storage_sync(storage_scope)`` where threads of a block share data through
    memory of that scope (``"shared"``), as TVM's ``tir.transform.ThreadSync``."""

    def __init__(self, storage_scope: str = "shared"):
        if storage_rank(storage_scope) != 1:
            raise NotImplementedError(f"ThreadSync({storage_scope!r}): minitvm synchronizes shared memory "
                                      "only (TVM also has 'warp' and 'global' syncs)")
        self.storage_scope = storage_scope

    def transform_function(self, func: PrimFunc, mod: Any, ctx: Any) -> PrimFunc:
        return thread_sync(func, self.storage_scope)

