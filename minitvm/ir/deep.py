"""Deep walks: run a recursive IR walk where deep nesting cannot overflow.

minitvm's walks (functors, simplifier, printer, parser, structural equality, codegen, the
interpreter) recurse once per nesting level of an expression, and FuseOps turns an N-op elementwise
chain into one N-deep expression. Python's default recursion limit (1,000 frames) and the main
thread's C stack (8 MiB; in 3.11 a frame called through C -- a class call, a generator in
``tuple(...)`` -- uses C stack too) stop such a walk at a few hundred levels. Rather than rewriting
every walk (and every pass's ``visit_*`` override) iteratively, the entry points (build, compile,
lower, a pass call, print, parse, structural equality, the interpreter) run their work through
:func:`run_deep`: on a thread with a big stack and a raised recursion limit. The stack is virtual
memory; only the pages a walk touches are committed. Deep threads are kept and reused (up to
:data:`MAX_IDLE_THREADS` idle), and nested entry points run inline on one, so a build pays for a
hand-over, not a thread start. Walks that are pure and called often (structural equality and
hashing, printing, the Analyzer, ``te.compute``) use :func:`deep_on_overflow` instead: inline, and
on a deep thread only when they overflow. (A 20,000-deep TIR expression prints, parses back and
builds. This relies on CPython 3.11, where the recursion limit governs every frame: 3.12 and 3.13
add a fixed budget for frames entered through C -- a 2,000-deep walk exhausts 3.12's, a 10,000-deep
one 3.13's -- which only iterative walks avoid.)

State the caller set up in thread-locals (the current PassContext, Target, BlockBuilder ...) is
carried to the deep thread: modules register their ``threading.local`` objects with
:func:`share_thread_local`; ``contextvars`` are carried by copying the caller's context.
"""

from __future__ import annotations

import contextvars
import functools
import os
import queue
import sys
import threading
from typing import Any, Callable, TypeVar

__all__ = ["STACK_BYTES", "RECURSION_LIMIT", "deep", "deep_on_overflow", "on_deep_thread", "run_deep",
           "share_thread_local"]

#: Stack of a deep thread: virtual memory, committed only as far as a walk goes.
STACK_BYTES = 512 << 20
#: Recursion limit while a deep thread runs: ~2.6 KiB of C stack per frame at most, far more
#: than a Python frame uses; about 40,000 levels of a TIR expression (~5 frames a level).
RECURSION_LIMIT = 200_000

F = TypeVar("F", bound=Callable[..., Any])

_here = threading.local()  # .deep: on a deep thread; .guarded: inside a deep_on_overflow call
_shared: list[threading.local] = []
_limit_lock = threading.Lock()
_active = 0  # deep threads running: the recursion limit is raised while any does
_saved_limit = 0


def share_thread_local(local: threading.local) -> threading.local:
    """Carry ``local``'s attributes (the caller's values, the same objects) to deep threads."""
    _shared.append(local)
    return local


def on_deep_thread() -> bool:
    """Whether this thread is a deep thread (entry points then run inline)."""
    return getattr(_here, "deep", False)


def _raise_limit() -> None:
    global _active, _saved_limit
    with _limit_lock:
        if _active == 0:
            _saved_limit = sys.getrecursionlimit()
            # The limit is interpreter-wide in CPython; raise it, never lower a user's higher one.
            sys.setrecursionlimit(max(_saved_limit, RECURSION_LIMIT))
        _active += 1


def _restore_limit() -> None:
    global _active
    with _limit_lock:
        _active -= 1
        if _active == 0:
            sys.setrecursionlimit(_saved_limit)


#: Idle deep threads kept for the next call.  Reusing them saves a thread start per build and,
#: measured, keeps native memory flat: glibc gives each new thread's allocations an arena of its
#: own, and a fresh thread per build grew RSS by 9-18 KiB a build where a reused one grows 2-3.
MAX_IDLE_THREADS = 4

_idle: list["_DeepThread"] = []  # guarded by _pool_lock
_pool_lock = threading.Lock()


class _DeepThread:
    """A big-stack thread that runs one job at a time and, when done, waits as idle for the next
    (it puts itself back, so a caller interrupted while waiting leaves no thread behind)."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        with _limit_lock:  # stack_size is process-wide: set it only around this thread's start
            old = threading.stack_size(STACK_BYTES)
            try:
                threading.Thread(target=self._serve, name="minitvm-deep", daemon=True).start()
            finally:
                threading.stack_size(old)

    def _serve(self) -> None:
        _here.deep = True
        while True:
            job = self.jobs.get()
            if job is None:
                return
            job()
            del job  # an idle thread must not keep the last job's arguments and result alive
            with _pool_lock:
                if len(_idle) >= MAX_IDLE_THREADS:
                    return
                _idle.append(self)


def _take_thread() -> _DeepThread:
    with _pool_lock:
        if _idle:
            return _idle.pop()
    return _DeepThread()


def _forget_threads_after_fork() -> None:
    """A forked child has none of its parent's threads: never hand a job to one."""
    global _pool_lock
    _pool_lock = threading.Lock()
    _idle.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_threads_after_fork)


def run_deep(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` on a deep thread (inline when already on one); its result is
    returned and its exception raised here, with the thread-local and context state shared."""
    if on_deep_thread():
        return fn(*args, **kwargs)
    captured = [(local, dict(local.__dict__)) for local in _shared]
    context = contextvars.copy_context()
    box: dict[str, Any] = {}
    done = threading.Event()

    def job() -> None:
        for local, values in captured:  # exactly the caller's state, nothing left by an earlier job
            local.__dict__.clear()
            local.__dict__.update(values)
        try:
            box["result"] = context.run(fn, *args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller unchanged
            box["error"] = exc
        finally:
            for local, _ in captured:  # hold no caller's objects while idle
                local.__dict__.clear()
            done.set()

    _raise_limit()
    try:
        _take_thread().jobs.put(job)
        done.wait()
    finally:
        _restore_limit()
    if "error" in box:
        error = box.pop("error")
        try:
            raise error
        finally:
            del error  # no reference cycle through this frame
    return box["result"]


def deep(fn: F) -> F:
    """Decorator: every call of ``fn`` runs through :func:`run_deep`."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return run_deep(fn, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


def deep_on_overflow(fn: F) -> F:
    """Decorator for pure walks called often (structural equality and hashing): run inline, and
    only if the walk overflows run it once more on a deep thread (no thread start otherwise).
    Only for functions without side effects: the first attempt is thrown away."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if on_deep_thread() or getattr(_here, "guarded", False):
            return fn(*args, **kwargs)  # the outermost guarded call retries the whole walk
        _here.guarded = True
        try:
            return fn(*args, **kwargs)
        except RecursionError:
            pass  # leave the except block first: the retry must not chain onto this error
        finally:
            _here.guarded = False
        return run_deep(fn, *args, **kwargs)

    return wrapper  # type: ignore[return-value]
