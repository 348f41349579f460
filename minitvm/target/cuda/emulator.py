"""The GPU emulator: run a CUDA kernel on the CPU with CUDA's meaning, or refuse it.

A device kernel (from :mod:`~minitvm.tir.transform.split_host_device`) is per-thread code:
``threadIdx`` / ``blockIdx`` are free, shared memory is one array per block, local memory
one per thread, and ``T.tvm_storage_sync("shared")`` is a barrier all threads of a block
reach before any goes on.  The emulator turns it into an ordinary CPU function (then LLVM
compiles it) by *loop fission at the barriers*:

* the blocks become one ``parallel`` loop (blocks run in any order, on every core), each
  iteration allocating the block's shared arrays;
* the code between two barriers becomes a loop over all threads of the block: finishing
  that loop for every thread *is* the barrier;
* a loop or ``if`` around a barrier stays outside the thread loops (its bounds must be the
  same for every thread: a barrier under thread-dependent control flow is undefined in CUDA
  and refused);
* a thread's local array that lives across a barrier gets one copy per thread.

Before running anything the emulator refuses what CUDA would get wrong or not run:

* more threads per block than the device allows (1024), a block or grid dimension too large;
* more shared memory per block than the device has (48 KiB);
* a race: between two barriers, two threads of a block touch the same element of a shared
  (or global) buffer and at least one of them writes it.  The check enumerates, with numpy,
  every thread and every loop iteration of each barrier-free phase (indices and guards are
  evaluated, values are not), so it is exact for the block and loop values it checks.

It also reports what a GPU programmer looks at (:class:`KernelReport`): grid and block
dimensions, threads and shared memory per block, the bytes all threads load from and store
to global memory (no cache modelled), the floating-point operations, and a roofline
estimate of the time on a named device (:mod:`.device`): max(FLOPs / peak FLOP/s, bytes /
bandwidth).  An estimate, never a measurement.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...ir import dtype as _dt
from ...ir.node import replace
from ...tir import expr as E
from ...tir import stmt as S
from ...tir.analysis import vars_used
from ...tir.buffer import decl_buffer
from ...tir.expr import PrimExpr, Var, const
from ...tir.function import PrimFunc
from ...tir.functor import StmtExprMutator, post_order_visit, substitute
from ...tir.semantics import int_array_meaning, node_operands, row_of
from ...tir.thread_scope import storage_rank
from ...tir.transform.instrument_bound_checkers import ATTR as CHECKED_ATTR
from ...tir.transform.instrument_bound_checkers import CHECKS_ATTR
from ...tir.transform.split_host_device import is_thread_launch
from ...tir.transform.thread_sync import is_storage_sync
from .device import GPUSpec

__all__ = ["KernelReport", "EmulatedKernel", "GPUEmulatorError", "SharedMemoryRaceError",
           "LaunchConfigError", "emulate_kernel"]


class GPUEmulatorError(RuntimeError):
    """The emulator refuses a kernel (the message says which and why)."""


class SharedMemoryRaceError(GPUEmulatorError):
    """Two threads of a block touch one element between barriers, at least one writing it."""


class LaunchConfigError(GPUEmulatorError):
    """A launch the device cannot run: too many threads, too much shared memory."""


# -- the launch ------------------------------------------------------------------------------


@dataclass
class _Axis:
    tag: str
    extent: int
    var: Var


def _int(e: Any, what: str, kernel: str) -> int:
    if isinstance(e, E.IntImm):
        return int(e.value)
    raise NotImplementedError(f"kernel {kernel}: the emulator needs a constant {what}, got {e}")


def _peel_launch(kernel: str, body: S.Stmt) -> tuple[list[_Axis], list[_Axis], S.Stmt]:
    """The block axes, the thread axes and the per-thread body under the launch."""
    blocks: list[_Axis] = []
    threads: list[_Axis] = []
    wrappers: list[S.Stmt] = []
    s = body
    while True:
        if is_thread_launch(s):
            tag = s.node.thread_tag
            if tag.startswith("vthread") or tag == "cthread" or s.attr_key == "virtual_thread":
                raise NotImplementedError(f"kernel {kernel}: virtual threads ({tag}) are not emulated; bind the "
                                          "loop to threadIdx or leave it serial")
            axes = blocks if tag.startswith("blockIdx.") else threads
            known = next((a for a in axes if a.tag == tag), None)
            extent = _int(s.value, f"extent of {tag}", kernel)
            if known is None:
                axes.append(_Axis(tag, extent, s.node.var))
            elif known.extent != extent:
                raise LaunchConfigError(f"kernel {kernel}: {tag} is launched with extents {known.extent} and {extent}")
            elif s.node.var is not known.var:
                s = replace(s, body=substitute(s.body, {s.node.var: known.var}))
            s = s.body
        elif isinstance(s, (S.Allocate, S.LetStmt, S.AssertStmt)) and _has(s.body, is_thread_launch):
            wrappers.append(s)
            s = s.body
        else:
            break
    if _has(s, is_thread_launch):
        raise NotImplementedError(f"kernel {kernel}: a thread launch below the top of the kernel is not emulated")
    for w in reversed(wrappers):
        s = replace(w, body=s)
    return _sorted(blocks), _sorted(threads), s


def _sorted(axes: list[_Axis]) -> list[_Axis]:
    return sorted(axes, key=lambda a: a.tag[-1])  # x, y, z


def _has(s: Any, pred: Any) -> bool:
    found: list = []
    post_order_visit(s, lambda n: found.append(1) if pred(n) else None)
    return bool(found)


def _nbytes(buffer: Any, kernel: str = "") -> int:
    return math.prod(_int(d, f"size of {buffer.name}", kernel) for d in buffer.shape) * (_dt.bits(buffer.dtype) // 8)


def _dims(axes: list[_Axis]) -> tuple[int, int, int]:
    d = {a.tag[-1]: a.extent for a in axes}
    return d.get("x", 1), d.get("y", 1), d.get("z", 1)


# -- the report ------------------------------------------------------------------------------


@dataclass
class KernelReport:
    """What one kernel launch asks of the GPU, and a roofline estimate of its time."""

    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    local_bytes: int
    global_bytes: int
    flops: int
    device: GPUSpec
    race_check: str = "checked"
    notes: list[str] = field(default_factory=list)

    @property
    def threads_per_block(self) -> int:
        return math.prod(self.block)

    @property
    def num_blocks(self) -> int:
        return math.prod(self.grid)

    @property
    def estimated_seconds(self) -> float:
        return max(self.flops / self.device.peak_flops, self.global_bytes / self.device.bandwidth)

    @property
    def bound(self) -> str:
        return "memory" if self.global_bytes / self.device.bandwidth >= self.flops / self.device.peak_flops \
            else "compute"

    @property
    def arithmetic_intensity(self) -> float:
        return self.flops / max(self.global_bytes, 1)

    def rows(self) -> list[tuple[str, str]]:
        g, b = self.grid, self.block
        return [
            ("grid (blocks)", f"{g[0]} x {g[1]} x {g[2]} = {self.num_blocks}"),
            ("block (threads)", f"{b[0]} x {b[1]} x {b[2]} = {self.threads_per_block} threads per block"),
            ("shared memory per block", f"{self.shared_bytes} B"),
            ("local memory per thread", f"{self.local_bytes} B"),
            ("global memory moved", f"{self.global_bytes / 1e6:.3f} MB (all loads and stores, no cache modelled)"),
            ("floating-point operations", f"{self.flops / 1e6:.3f} MFLOP"),
            ("arithmetic intensity", f"{self.arithmetic_intensity:.2f} FLOP/B"),
            ("estimated time", f"{self.estimated_seconds * 1e6:.3g} us ({self.bound}-bound) on "
                               f"{self.device.describe()}: a roofline estimate, not a measurement"),
            ("race check", self.race_check),
        ]

    def __str__(self) -> str:
        width = max(len(k) for k, _ in self.rows())
        lines = [f"kernel {self.name}"] + [f"  {k:<{width}}  {v}" for k, v in self.rows()]
        return "\n".join(lines + [f"  note: {n}" for n in self.notes])

    __repr__ = __str__


# -- fission: per-thread code -> a CPU loop nest ---------------------------------------------


@dataclass
class _Phase:
    """Barrier-free code run by every thread of a block, and the uniform context around it."""

    body: S.Stmt
    context: list[tuple[Var, Any]]  # enclosing uniform loops (var, (min, extent)) or lets (var, value)


class _Fission:
    def __init__(self, kernel: str, threads: list[_Axis], nthreads: int):
        self.kernel = kernel
        self.threads = threads
        self.nthreads = nthreads
        self.thread_ids = {id(a.var) for a in threads}
        self.phases: list[_Phase] = []
        self.context: list[tuple[Var, Any]] = []
        self.expanded: dict[int, tuple[Any, Any, int]] = {}  # data id -> (old buffer, new buffer, size)
        self.shared: list[S.Allocate] = []

    # thread-uniform: no thread index in it
    def _uniform(self, e: Any) -> bool:
        return not (vars_used(e) & self.thread_ids)

    def hoist_shared(self, s: S.Stmt) -> S.Stmt:
        """Take every shared allocation out (the block allocates them once)."""
        fission = self

        class _Hoist(StmtExprMutator):
            def visit_allocate_(self, n: S.Allocate) -> S.Stmt:
                if storage_rank(n.buffer.scope) == 1:
                    fission.shared.append(n)
                    return self.visit(n.body)
                return self.visit_children(n)

        return _Hoist().visit(s)

    def emit(self, s: S.Stmt) -> S.Stmt | None:
        if is_storage_sync(s):
            return None
        if not _has(s, is_storage_sync):
            return self.region(s)
        if isinstance(s, S.SeqStmt):
            out: list[S.Stmt] = []
            run: list[S.Stmt] = []
            for c in list(s.seq) + [None]:
                if c is None or _has(c, is_storage_sync):
                    if run:
                        out.append(self.region(S.seq(*run)))
                        run = []
                    if c is not None:
                        e = self.emit(c)
                        if e is not None:
                            out.append(e)
                else:
                    run.append(c)
            return S.seq(*out) if out else None
        if isinstance(s, S.For):
            if not (self._uniform(s.min) and self._uniform(s.extent)):
                raise GPUEmulatorError(f"kernel {self.kernel}: loop {s.loop_var.name} holds a barrier "
                                       "(__syncthreads) but its bounds depend on threadIdx; threads would reach "
                                       "different numbers of barriers, which CUDA leaves undefined")
            self.context.append((s.loop_var, (s.min, s.extent)))
            body = self.emit(s.body)
            self.context.pop()
            return S.For(s.loop_var, s.min, s.extent, S.ForKind.SERIAL, body or S.Evaluate(const(0, "int32")))
        if isinstance(s, S.IfThenElse):
            if not self._uniform(s.condition):
                raise GPUEmulatorError(f"kernel {self.kernel}: a barrier (__syncthreads) under `if "
                                       f"{s.condition}`, which depends on threadIdx; only some threads would "
                                       "reach it, which CUDA leaves undefined")
            then = self.emit(s.then_case)
            other = self.emit(s.else_case) if s.else_case is not None else None
            return S.IfThenElse(s.condition, then or S.Evaluate(const(0, "int32")), other)
        if isinstance(s, S.LetStmt):
            if not self._uniform(s.value) or _has(s.value, lambda n: isinstance(n, E.BufferLoad)):
                raise NotImplementedError(f"kernel {self.kernel}: {s.var.name} = {s.value} is bound per thread "
                                          "(or from memory) and used across a barrier; the emulator keeps only "
                                          "thread-uniform values across barriers")
            self.context.append((s.var, s.value))
            body = self.emit(s.body)
            self.context.pop()
            return S.LetStmt(s.var, s.value, body or S.Evaluate(const(0, "int32")))
        if isinstance(s, S.AssertStmt):  # a bounds check of a uniform loop's bounds or let's value
            if not self._uniform(s.condition) or _has(s.condition, lambda n: isinstance(n, E.BufferLoad)):
                raise NotImplementedError(f"kernel {self.kernel}: the check `{s.condition}` depends on the thread "
                                          "(or on memory) and guards code holding a barrier; the emulator keeps "
                                          "only thread-uniform checks around barriers")
            body = self.emit(s.body)
            return S.AssertStmt(s.condition, s.message, body or S.Evaluate(const(0, "int32")))
        if isinstance(s, S.Allocate):  # a local array alive across a barrier: one per thread
            buf = s.buffer
            size = math.prod(_int(d, f"size of {buf.name}", self.kernel) for d in buf.shape)
            big = decl_buffer((self.nthreads * size,), buf.dtype, buf.name, scope="global")
            self.expanded[id(buf.data)] = (buf, big, size)
            body = self.emit(s.body)
            return S.Allocate(big, body or S.Evaluate(const(0, "int32")))
        if isinstance(s, S.AttrStmt):
            return self.emit(s.body)
        raise NotImplementedError(f"kernel {self.kernel}: a barrier inside {type(s).__name__} is not emulated")

    def region(self, s: S.Stmt) -> S.Stmt:
        """``s`` (no barrier inside) run by every thread of the block, one after another."""
        self.phases.append(_Phase(s, list(self.context)))
        fresh = {a.var: Var(a.var.name, a.var.dtype) for a in self.threads}
        body = substitute(s, fresh)
        if self.expanded:
            flat: PrimExpr = const(0, "int32")
            stride = 1
            for a in self.threads:  # x fastest
                flat = flat + fresh[a.var] * stride if stride > 1 else flat + fresh[a.var]
                stride *= a.extent
            body = _ExpandLocals(self.expanded, flat).visit(body)
        for a in reversed(self.threads):
            body = S.For(fresh[a.var], const(0, a.var.dtype), const(a.extent, a.var.dtype), S.ForKind.SERIAL, body)
        return body


class _ExpandLocals(StmtExprMutator):
    """Accesses of a per-thread array become accesses of thread ``tid``'s slice of its copy."""

    def __init__(self, expanded: dict, tid: PrimExpr):
        self.expanded, self.tid = expanded, tid

    def _index(self, buf: Any, indices: tuple) -> tuple[Any, tuple] | None:
        entry = self.expanded.get(id(buf.data))
        if entry is None:
            return None
        _, big, size = entry
        idx = indices[0]
        return big, (self.tid * const(size, idx.dtype) + idx,)

    def visit_buffer_load_(self, n: E.BufferLoad) -> PrimExpr:
        indices = self.visit(n.indices)
        hit = self._index(n.buffer, indices)
        return E.BufferLoad(*hit) if hit else (n if indices is n.indices else E.BufferLoad(n.buffer, indices))

    def visit_buffer_store_(self, n: S.BufferStore) -> S.Stmt:
        value, indices = self.visit(n.value), self.visit(n.indices)
        hit = self._index(n.buffer, indices)
        if hit:
            return S.BufferStore(hit[0], value, hit[1])
        return n if value is n.value and indices is n.indices else S.BufferStore(n.buffer, value, indices)


# -- numpy evaluation of integer expressions (indices and guards) ----------------------------


class _NotEnumerable(Exception):
    pass


def _np_eval(e: Any, env: dict[int, Any]) -> Any:
    if isinstance(e, E.IntImm):
        return np.int64(e.value) if e.dtype != "bool" else bool(e.value)
    if isinstance(e, Var):
        if id(e) not in env:
            raise _NotEnumerable(f"variable {e.name}")
        return env[id(e)]
    if isinstance(e, E.Cast):
        v = _np_eval(e.value, env)
        return v if not _dt.is_float(e.dtype) else _raise(f"a float cast ({e})")
    # every operation with a row of the semantics table means what the row says (a divisor of 0 is
    # IntegerDivisionByZero, as in the interpreter and compiled code), evaluated on whole arrays
    row = row_of(e)
    meaning = int_array_meaning(row) if row is not None else None
    if meaning is not None:
        return meaning(*(_np_eval(x, env) for x in node_operands(e)))
    if isinstance(e, E.Call) and e.op == "tir.if_then_else":
        c, t, f2 = e.args
        return np.where(_np_eval(c, env), _np_eval(t, env), _np_eval(f2, env))
    if isinstance(e, E.Call) and e.op == "tir.likely":
        return _np_eval(e.args[0], env)
    raise _NotEnumerable(f"{type(e).__name__} ({e})")


def _raise(what: str) -> Any:
    raise _NotEnumerable(what)


# -- the race check ----------------------------------------------------------------------------


@dataclass
class _Access:
    buffer: Any
    write: bool
    index: PrimExpr
    loops: list[tuple[Var, PrimExpr, PrimExpr]]
    guards: list[PrimExpr]
    stmt: S.Stmt


def _accesses(s: S.Stmt, watched: set[int]) -> list[_Access]:
    out: list[_Access] = []

    def loads(e: Any, loops: list, guards: list, stmt: S.Stmt) -> None:
        def visit(n: Any) -> None:
            if isinstance(n, E.BufferLoad) and id(n.buffer.data) in watched:
                out.append(_Access(n.buffer, False, n.indices[0], list(loops), list(guards), stmt))

        post_order_visit(e, visit)

    def walk(x: Any, loops: list, guards: list) -> None:
        if isinstance(x, S.SeqStmt):
            for c in x.seq:
                walk(c, loops, guards)
        elif isinstance(x, S.For):
            walk(x.body, loops + [(x.loop_var, x.min, x.extent)], guards)
        elif isinstance(x, S.IfThenElse):
            loads(x.condition, loops, guards, x)
            walk(x.then_case, loops, guards + [x.condition])
            if x.else_case is not None:
                walk(x.else_case, loops, guards + [E.Not(x.condition)])
        elif isinstance(x, S.LetStmt):
            loads(x.value, loops, guards, x)
            walk(substitute(x.body, {x.var: x.value}), loops, guards)
        elif isinstance(x, (S.Allocate, S.AttrStmt, S.AssertStmt)):  # (a check's condition repeats an index)
            walk(x.body, loops, guards)
        elif isinstance(x, S.BufferStore):
            loads((x.value, x.indices), loops, guards, x)
            if id(x.buffer.data) in watched:
                out.append(_Access(x.buffer, True, x.indices[0], list(loops), list(guards), x))
        elif isinstance(x, S.Evaluate):
            loads(x.value, loops, guards, x)

    walk(s, [], [])
    return out


#: most (thread x iteration) points one access may enumerate; most outer-value combinations
_MAX_POINTS = 1 << 22
_MAX_COMBOS = 8
#: (thread x iteration) points one phase may enumerate over all the combinations it checks
_BUDGET = 1 << 22


class _RaceChecker:
    def __init__(self, kernel: PrimFunc, name: str, blocks: list[_Axis], threads: list[_Axis]):
        self.kernel, self.name, self.blocks, self.threads = kernel, name, blocks, threads
        self.partial: list[str] = []
        self.text = kernel.script().splitlines()

    def line_of(self, stmt: S.Stmt) -> str:
        span = getattr(stmt, "span", None)  # where TVMScript wrote it, when it came from there
        where = f" (TVMScript line {span.line} of {span.source_name})" if span is not None else ""
        return self._kernel_line(stmt) + where

    def _kernel_line(self, stmt: S.Stmt) -> str:
        try:
            first = stmt.script().strip().splitlines()[-1].strip()
        except Exception:  # a statement the printer cannot show alone
            return "?"
        head = first.split(" = ")[0] if isinstance(stmt, S.BufferStore) else first
        for match in (lambda t: t == first, lambda t: t.startswith(head)):  # the statement, else its target
            for k, line in enumerate(self.text, 1):
                if match(line.strip()):
                    return f"line {k} of the kernel's TIR: `{line.strip()}`"
        return f"`{first}`"

    def thread_name(self, tid: int) -> str:
        parts = []
        for a in self.threads:
            parts.append(f"{a.tag}={tid % a.extent}")
            tid //= a.extent
        return "(" + ", ".join(parts) + ")" if len(parts) > 1 else parts[0]

    def check(self, phase: _Phase, watched: dict[int, Any]) -> None:
        accesses = _accesses(phase.body, set(watched))
        written = {id(a.buffer.data) for a in accesses if a.write}
        accesses = [a for a in accesses if id(a.buffer.data) in written]  # read-only buffers cannot race
        if not accesses:
            return
        outer_ranges: dict[int, tuple[Var, list[int]]] = {}
        for a in self.blocks:
            outer_ranges[id(a.var)] = (a.var, list(range(a.extent)))
        for var, what in phase.context:
            if isinstance(what, tuple):
                outer_ranges[id(var)] = (var, None)  # a loop: its values depend on the context, found below
        needed: set[int] = set()
        for acc in accesses:
            needed |= vars_used((acc.index, acc.guards, [(lo, ext) for _, lo, ext in acc.loops]))
        relevant = [vid for vid in outer_ranges if vid in needed]
        lets = [(v, val) for v, val in phase.context if not isinstance(val, tuple)]
        combos = self._combos(phase, relevant, accesses)
        for combo in combos:
            env = dict(combo)
            for v, val in lets:
                try:
                    env[id(v)] = _np_eval(val, env)
                except _NotEnumerable:
                    pass
            self._check_once(accesses, env, phase)

    def _combos(self, phase: _Phase, relevant: list[int], accesses: list[_Access]) -> list[list[tuple[int, int]]]:
        """Values of the block indices and enclosing loops the accesses depend on (all of them
        when few, else a spread including the first and the last)."""
        domains: list[tuple[int, list[int]]] = []
        for a in self.blocks:
            if id(a.var) in relevant:
                domains.append((id(a.var), list(range(a.extent))))
        for var, what in phase.context:
            if isinstance(what, tuple) and id(var) in relevant:
                lo, ext = what
                if isinstance(lo, E.IntImm) and isinstance(ext, E.IntImm):
                    domains.append((id(var), list(range(lo.value, lo.value + ext.value))))
                else:
                    raise NotImplementedError(f"kernel {self.name}: loop {var.name} around a barrier has "
                                              "non-constant bounds; the race check needs constants")
        total = math.prod(len(d) for _, d in domains) if domains else 1
        nthreads = math.prod(a.extent for a in self.threads) if self.threads else 1
        per_combo = nthreads * max((math.prod(e.value if isinstance(e, E.IntImm) else 1 for _, _, e in acc.loops)
                                    for acc in accesses), default=1)
        if total <= max(_MAX_COMBOS, _BUDGET // max(per_combo, 1)):
            return [list(zip([k for k, _ in domains], vals)) for vals in itertools.product(*[d for _, d in domains])]
        picks = []
        for j in range(_MAX_COMBOS):
            frac = j / (_MAX_COMBOS - 1)
            picks.append([(k, d[round(frac * (len(d) - 1))]) for k, d in domains])
        self.partial.append(f"{_MAX_COMBOS} of {total} block/loop values checked")
        return picks

    def _check_once(self, accesses: list[_Access], env: dict[int, Any], phase: _Phase) -> None:
        nthreads = math.prod(a.extent for a in self.threads)
        per_buffer: dict[int, list[tuple[np.ndarray, np.ndarray, bool, int]]] = {}
        for k, acc in enumerate(accesses):
            axes = [(a.var, 0, a.extent) for a in self.threads]
            loop_axes = []
            ok = True
            for var, lo, ext in acc.loops:
                try:
                    lo_v, ext_v = _np_eval(lo, env), _np_eval(ext, env)
                except _NotEnumerable:
                    ok = False
                    break
                if np.ndim(lo_v) or np.ndim(ext_v):
                    ok = False
                    break
                loop_axes.append((var, int(lo_v), int(ext_v)))
            points = nthreads * math.prod(max(e, 0) for _, _, e in loop_axes)
            if not ok or points > _MAX_POINTS:
                self.partial.append(f"an access of {acc.buffer.name} not checked ("
                                    f"{'bounds depend on other loops' if not ok else f'{points} points'})")
                continue
            all_axes = axes + loop_axes
            n = len(all_axes)
            local = dict(env)
            for d, (var, lo, ext) in enumerate(all_axes):
                shape = [1] * n
                shape[d] = max(ext, 0)
                local[id(var)] = (np.arange(lo, lo + ext, dtype=np.int64)).reshape(shape)
            full = tuple(max(e, 0) for _, _, e in all_axes)
            try:
                idx = np.broadcast_to(_np_eval(acc.index, local), full)
                mask = np.ones(full, dtype=bool)
                for g in acc.guards:
                    mask &= np.broadcast_to(np.asarray(_np_eval(g, local), dtype=bool), full)
            except _NotEnumerable as err:
                self.partial.append(f"an access of {acc.buffer.name} not checked (its index uses {err})")
                continue
            tid = np.zeros(full, dtype=np.int64)
            stride = 1
            for a in self.threads:
                tid = tid + local[id(a.var)] * stride
                stride *= a.extent
            per_buffer.setdefault(id(acc.buffer.data), []).append(
                (idx[mask].ravel(), np.broadcast_to(tid, full)[mask].ravel(), acc.write, k))
        for entries in per_buffer.values():
            if not any(w for _, _, w, _ in entries):
                continue
            idx = np.concatenate([e[0] for e in entries])
            tid = np.concatenate([e[1] for e in entries])
            write = np.concatenate([np.full(len(e[0]), e[2]) for e in entries])
            which = np.concatenate([np.full(len(e[0]), e[3]) for e in entries])
            if not len(idx):
                continue
            keys, inv = np.unique(idx, return_inverse=True)
            tmin = np.full(len(keys), np.iinfo(np.int64).max)
            tmax = np.full(len(keys), -1)
            np.minimum.at(tmin, inv, tid)
            np.maximum.at(tmax, inv, tid)
            written = np.bincount(inv, weights=write.astype(np.float64), minlength=len(keys)) > 0
            racy = np.nonzero(written & (tmin != tmax))[0]
            if len(racy):
                self._report(accesses, keys[racy[0]], idx, tid, write, which, env, len(racy))

    def _report(self, accesses: list[_Access], element: int, idx: np.ndarray, tid: np.ndarray,
                write: np.ndarray, which: np.ndarray, env: dict[int, Any], count: int) -> None:
        at = idx == element
        w = np.nonzero(at & write)[0][0]
        other = np.nonzero(at & (tid != tid[w]))[0]
        o = other[0]
        aw, ao = accesses[which[w]], accesses[which[o]]
        buf = aw.buffer
        kind = "writes" if write[o] else "reads"
        where = []
        for a in self.blocks:
            if id(a.var) in env and not np.ndim(env[id(a.var)]):
                where.append(f"{a.tag}={int(env[id(a.var)])}")
        block = f" (in block {', '.join(where)})" if where else ""
        scope = "shared-memory" if storage_rank(buf.scope) == 1 else f"{buf.scope}-memory"
        same = aw.stmt is ao.stmt
        msg = (f"{scope} race in kernel {self.name} on buffer {buf.name}, element {int(element)}{block}: "
               f"thread {self.thread_name(int(tid[w]))} writes it at {self.line_of(aw.stmt)} and thread "
               f"{self.thread_name(int(tid[o]))} {kind} it at "
               f"{'the same statement' if same else self.line_of(ao.stmt)}, with no barrier "
               f"(T.tvm_storage_sync / __syncthreads) between them; CUDA leaves the result undefined. "
               f"In this phase {count} element(s) of {buf.name} are raced on.")
        if write[o] and same:
            msg += (f" Every thread writes the same elements: bind the copy loop of {buf.name} to threadIdx "
                    "(cooperative fetching) so that each element is written by one thread.")
        raise SharedMemoryRaceError(msg)


# -- counting: bytes and FLOPs ---------------------------------------------------------------


def _count(kernel_body: S.Stmt, blocks: list[_Axis], threads: list[_Axis], locals_: set[int],
           shared: set[int]) -> tuple[int, int, list[str]]:
    """(global bytes loaded + stored, FLOPs) by every thread of every block."""
    notes: list[str] = []
    total_bytes = 0
    total_flops = 0
    launch = [(a.var, const(0, "int32"), const(a.extent, "int32")) for a in blocks + threads]

    def executions(loops: list, guards: list) -> int:
        if not guards:
            n = 1
            for _, _, ext in loops:
                if not isinstance(ext, E.IntImm):
                    raise _NotEnumerable(f"loop extent {ext}")
                n *= ext.value
            return n
        need = vars_used(guards)
        enum = [(v, lo, ext) for v, lo, ext in loops if id(v) in need]
        rest = math.prod(ext.value for v, lo, ext in loops if id(v) not in need and isinstance(ext, E.IntImm))
        shape = tuple(ext.value for _, _, ext in enum)
        if math.prod(shape) > _MAX_POINTS:
            notes.append("a guarded statement counted as if always run (too many points to enumerate)")
            return rest * math.prod(shape)
        env = {}
        for d, (v, lo, ext) in enumerate(enum):
            sh = [1] * len(enum)
            sh[d] = ext.value
            env[id(v)] = np.arange(lo.value, lo.value + ext.value, dtype=np.int64).reshape(sh)
        mask = np.ones(shape, dtype=bool)
        for g in guards:
            mask &= np.broadcast_to(np.asarray(_np_eval(g, env), dtype=bool), shape)
        return int(mask.sum()) * rest

    def cost(e: Any) -> tuple[int, int]:
        nbytes, flops = 0, 0

        def visit(n: Any) -> None:
            nonlocal nbytes, flops
            if isinstance(n, E.BufferLoad) and id(n.buffer.data) not in locals_ and id(n.buffer.data) not in shared:
                nbytes += _dt.bits(n.buffer.dtype) // 8
            elif isinstance(n, (E.Add, E.Sub, E.Mul, E.Div, E.Min, E.Max)) and _dt.is_float(n.dtype):
                flops += 1
            elif isinstance(n, E.Call) and _dt.is_float(n.dtype):
                flops += 1

        post_order_visit(e, visit)
        return nbytes, flops

    def walk(x: Any, loops: list, guards: list) -> None:
        nonlocal total_bytes, total_flops
        if isinstance(x, S.SeqStmt):
            for c in x.seq:
                walk(c, loops, guards)
        elif isinstance(x, S.For):
            walk(x.body, loops + [(x.loop_var, x.min, x.extent)], guards)
        elif isinstance(x, S.IfThenElse):
            walk(x.then_case, loops, guards + [x.condition])
            if x.else_case is not None:
                walk(x.else_case, loops, guards + [E.Not(x.condition)])
        elif isinstance(x, (S.Allocate, S.AttrStmt, S.LetStmt, S.AssertStmt)):  # (a GPU has no bounds checks)
            walk(x.body, loops, guards)
        elif isinstance(x, S.BufferStore):
            nbytes, flops = cost((x.value, x.indices))
            if id(x.buffer.data) not in locals_ and id(x.buffer.data) not in shared:
                nbytes += _dt.bits(x.buffer.dtype) // 8
            if nbytes or flops:
                try:
                    n = executions(loops, guards)
                except _NotEnumerable as err:
                    notes.append(f"a statement not counted ({err})")
                    return
                total_bytes += n * nbytes
                total_flops += n * flops

    walk(kernel_body, launch, [])
    return total_bytes, total_flops, notes


# -- the kernel --------------------------------------------------------------------------------


class EmulatedKernel:
    """A device kernel checked for the device and turned into a CPU function.

    ``cpu_func`` is the fissioned CPU PrimFunc (``print(k.cpu_func.script())`` shows how the
    barriers became loop boundaries); ``report`` the :class:`KernelReport`.
    """

    def __init__(self, name: str, kernel: PrimFunc, device: GPUSpec):
        self.name, self.kernel, self.device = name, kernel, device
        blocks, threads, body = _peel_launch(name, kernel.body)
        self.blocks, self.threads = blocks, threads
        self._check_launch(blocks, threads)
        nthreads = math.prod(a.extent for a in threads) if threads else 1
        fission = _Fission(name, threads, nthreads)
        body = fission.hoist_shared(body)
        shared_bytes = sum(_nbytes(a.buffer, name) for a in fission.shared)
        self._check_shared(fission.shared, shared_bytes)
        per_thread = fission.emit(body) or S.Evaluate(const(0, "int32"))
        locals_: set[int] = set()
        local_bytes = 0

        def find_locals(n: Any) -> None:
            nonlocal local_bytes
            if isinstance(n, S.Allocate) and storage_rank(n.buffer.scope) == 3:
                locals_.add(id(n.buffer.data))
                local_bytes += math.prod(_int(d, "local size", name) for d in n.buffer.shape) * \
                    (_dt.bits(n.buffer.dtype) // 8)

        post_order_visit(body, find_locals)
        shared_ids = {id(a.buffer.data) for a in fission.shared}
        # the race check: every phase, on shared and global buffers (local ones are private)
        checker = _RaceChecker(kernel, name, blocks, threads)
        watched: dict[int, Any] = {}

        def find_watched(n: Any) -> None:
            if isinstance(n, (E.BufferLoad, S.BufferStore)) and id(n.buffer.data) not in locals_:
                watched[id(n.buffer.data)] = n.buffer

        post_order_visit(body, find_watched)
        for phase in fission.phases:
            checker.check(phase, watched)
        nbytes, flops, notes = _count(body, blocks, threads, locals_, shared_ids)
        race = "no race between barriers (every thread, every iteration of each phase checked)"
        if checker.partial:
            race = "no race found; partly checked: " + "; ".join(dict.fromkeys(checker.partial))
        self.report = KernelReport(name, _dims(blocks), _dims(threads), shared_bytes, local_bytes, nbytes, flops,
                                   device, race, notes)
        self.cpu_func = self._cpu_function(per_thread, fission.shared)

    def _check_launch(self, blocks: list[_Axis], threads: list[_Axis]) -> None:
        d = self.device
        n = math.prod(a.extent for a in threads) if threads else 1
        launch = ", ".join(f"{a.tag}={a.extent}" for a in blocks + threads)
        if n > d.max_threads_per_block:
            raise LaunchConfigError(f"kernel {self.name} launches {n} threads per block ({launch}); "
                                    f"{d.name} allows at most {d.max_threads_per_block}: split the loop bound to "
                                    "threadIdx and bind the outer part to blockIdx")
        for axes, limits, what in ((threads, d.max_block_dims, "block"), (blocks, d.max_grid_dims, "grid")):
            for a in axes:
                limit = limits["xyz".index(a.tag[-1])]
                if a.extent > limit:
                    raise LaunchConfigError(f"kernel {self.name}: {a.tag} has extent {a.extent}; the {what} "
                                            f"dimension {a.tag[-1]} allows at most {limit} on {d.name}")
                if a.extent < 1:
                    raise LaunchConfigError(f"kernel {self.name}: {a.tag} has extent {a.extent}")

    def _check_shared(self, allocs: list[S.Allocate], nbytes: int) -> None:
        limit = self.device.max_shared_memory_per_block
        if nbytes > limit:
            parts = ", ".join(f"{a.buffer.name} {_nbytes(a.buffer)} B" for a in allocs)
            raise LaunchConfigError(f"kernel {self.name} needs {nbytes} B of shared memory per block ({parts}); "
                                    f"{self.device.name} has {limit} B ({limit // 1024} KiB) per block: use smaller "
                                    "tiles")

    def _cpu_function(self, per_thread: S.Stmt, shared: list[S.Allocate]) -> PrimFunc:
        body = per_thread
        for a in reversed(shared):  # one copy per block: allocated inside the (parallel) block loop
            body = S.Allocate(a.buffer, body)
        nblocks = math.prod(a.extent for a in self.blocks) if self.blocks else 1
        b = Var("block", "int32")
        stride = 1
        lets = []
        for a in self.blocks:  # x fastest
            value = b // stride % a.extent if stride > 1 else b % a.extent
            lets.append((a.var, value if a.var.dtype == "int32" else E.Cast(a.var.dtype, value)))
            stride *= a.extent
        for var, value in reversed(lets):
            body = S.LetStmt(var, value, body)
        kind = S.ForKind.PARALLEL if nblocks > 1 else S.ForKind.SERIAL
        body = S.For(b, const(0, "int32"), const(nblocks, "int32"), kind, body)
        # (with the bounds-check records, by which the CPU code generator names a failed check)
        kept = ("global_symbol", "tir.noalias", CHECKED_ATTR, CHECKS_ATTR)
        attrs = {k: v for k, v in self.kernel.attrs.items() if k in kept}
        attrs["tir.lowered"] = True
        return PrimFunc(self.kernel.params, self.kernel.buffer_map, body, None, attrs)


def emulate_kernel(name: str, kernel: PrimFunc, device: GPUSpec) -> EmulatedKernel:
    """Check ``kernel`` for ``device`` (launch limits, shared memory, races) and build its CPU form."""
    return EmulatedKernel(name, kernel, device)

