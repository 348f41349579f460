"""Running jobs in worker processes so that no candidate can take the tuner down.

:func:`run_jobs` runs ``fn(*args)`` for each job on a ``concurrent.futures.Executor`` and
returns ``(value, None)`` or ``(None, why)`` per job: an exception becomes its message, a
worker that dies (a segmentation fault) "worker process died", a job past ``timeout_sec``
"timeout".  With minitvm's own pool (:class:`LocalPool`, the default) a dead or hung worker is
killed and the pool started again; with an executor the user gave (a Dask ``Client``'s
``get_executor()``, Ray's), a hung job is reported and left to that engine -- minitvm writes
no process control or RPC of its own for it.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing.context
import multiprocessing.popen_spawn_posix
import multiprocessing.spawn
import os
import threading
import time
from typing import Any, Callable

from ._worker import ignore_interrupts, warm_up

__all__ = ["LocalPool", "run_jobs", "default_max_workers", "WORKERS_DID_NOT_START", "IDLE_LINGER_S"]

#: seconds a worker may take to start (a fresh interpreter importing minitvm)
STARTUP_TIMEOUT = 300.0


#: why the workers of a LocalPool died at start, and what to do about it
WORKERS_DID_NOT_START = (
    "the tuner's worker processes died while starting (each is a fresh Python interpreter that imports "
    "minitvm; it never runs your script). Their error is printed above this message.")

# the spawn-time settings multiprocessing hands a child so that it re-runs the parent's script
_USER_MAIN_KEYS = ("init_main_from_path", "init_main_from_name")
_LAUNCH_LOCK = threading.Lock()


class _WorkerPopen(multiprocessing.popen_spawn_posix.Popen):
    """Start a worker as ``spawn`` does, except that the child does not import the user's script.

    A spawned child normally runs the parent's ``__main__`` file again (as ``__mp_main__``) so that
    functions defined there can be unpickled; a script that tunes at its top level, without an
    ``if __name__ == "__main__":`` guard, then tunes again in every worker, which dies trying. The
    tuner's workers only run minitvm's own functions, so, like TVM's popen workers, they skip it.
    """

    def _launch(self, process_obj: Any) -> None:
        # the standard launcher asks spawn.get_preparation_data for the child's settings;
        # answer it without the user's __main__ for the length of this launch
        with _LAUNCH_LOCK:
            full = multiprocessing.spawn.get_preparation_data

            def without_user_main(name: str) -> dict:
                return {k: v for k, v in full(name).items() if k not in _USER_MAIN_KEYS}

            multiprocessing.spawn.get_preparation_data = without_user_main
            try:
                super()._launch(process_obj)
            finally:
                multiprocessing.spawn.get_preparation_data = full


class _WorkerProcess(multiprocessing.context.SpawnProcess):
    @staticmethod
    def _Popen(process_obj: Any) -> _WorkerPopen:
        return _WorkerPopen(process_obj)


class _WorkerContext(multiprocessing.context.SpawnContext):
    """``spawn`` (a fresh interpreter, nothing forked from the tuner) whose children skip the
    user's script."""

    Process = _WorkerProcess


def default_max_workers() -> int:
    return max(1, os.cpu_count() or 1)


#: seconds a finished tuning's worker processes stay up for the next tuning: back-to-back
#: tunings (a notebook's cells, a test file) then reuse warm workers instead of starting fresh
#: interpreters that import minitvm again (about 1 s of CPU each, three per tuning)
IDLE_LINGER_S = 30.0

# idle warm pools by worker count, each with the timer that ends it; one tuning takes a pool
# out (two tunings at once never share one: the second starts its own)
_IDLE: dict[int, list[tuple[cf.ProcessPoolExecutor, threading.Timer]]] = {}
_IDLE_LOCK = threading.Lock()


def _take_idle(workers: int) -> cf.ProcessPoolExecutor | None:
    with _IDLE_LOCK:
        parked = _IDLE.get(workers, [])
        while parked:
            pool, timer = parked.pop()
            timer.cancel()
            if not getattr(pool, "_broken", False):  # a worker died while it waited
                return pool
            pool.shutdown(wait=False, cancel_futures=True)
    return None


def _park(pool: cf.ProcessPoolExecutor, workers: int) -> None:
    def expire() -> None:
        with _IDLE_LOCK:
            entries = _IDLE.get(workers, [])
            if not any(p is pool for p, _ in entries):
                return  # taken meanwhile
            entries[:] = [(p, t) for p, t in entries if p is not pool]
        pool.shutdown(wait=True)

    timer = threading.Timer(IDLE_LINGER_S, expire)
    timer.daemon = True
    with _IDLE_LOCK:
        _IDLE.setdefault(workers, []).append((pool, timer))
    timer.start()


class LocalPool:
    """A process pool (fresh interpreters that import minitvm, never the user's script; no state
    forked from the tuner) that can be killed and restarted when a job crashes or hangs."""

    def __init__(self, max_workers: int | None = None) -> None:
        self.max_workers = max_workers or default_max_workers()
        self._pool: cf.ProcessPoolExecutor | None = None

    @property
    def executor(self) -> cf.ProcessPoolExecutor:
        if self._pool is None:
            self._pool = _take_idle(self.max_workers)
        if self._pool is None:
            self._pool = cf.ProcessPoolExecutor(self.max_workers, mp_context=_WorkerContext(),
                                                 initializer=ignore_interrupts)
            # start every worker and import the tuner there now, so a job's timeout measures the
            # job, not an interpreter starting on a busy machine
            try:
                for fut in [self._pool.submit(warm_up) for _ in range(self.max_workers)]:
                    fut.result(timeout=STARTUP_TIMEOUT)
            except cf.process.BrokenProcessPool as err:
                # wait until every worker has ended: a worker still printing why it died would
                # otherwise bury this message under its traceback
                self._stop(wait=True)
                raise RuntimeError(WORKERS_DID_NOT_START) from err
        return self._pool

    def restart(self) -> None:
        """Kill every worker (a hung one included) and start afresh on the next job."""
        self._stop(wait=False)

    def _stop(self, wait: bool) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        for proc in list((getattr(pool, "_processes", None) or {}).values()):  # no public way to kill a worker
            try:
                proc.kill()
            except Exception:  # noqa: BLE001 - already gone
                pass
        pool.shutdown(wait=wait, cancel_futures=True)

    def shutdown(self) -> None:
        """Done with the pool: its workers wait ``IDLE_LINGER_S`` for the next tuning, then end."""
        pool, self._pool = self._pool, None
        if pool is not None:
            _park(pool, self.max_workers)

    def __del__(self) -> None:
        try:
            self.restart()
        except Exception:  # noqa: BLE001 - interpreter shutting down
            pass


def _why(err: BaseException) -> str:
    if isinstance(err, cf.process.BrokenProcessPool):
        return "worker process died while running the candidate (e.g. a segmentation fault)"
    return f"{type(err).__name__}: {err}"


def run_jobs(executor: Any, fn: Callable, jobs: list[tuple], timeout_sec: float, parallel: bool = True
             ) -> list[tuple[Any, str | None]]:
    """``fn(*job)`` for each job on ``executor`` (a LocalPool or any Executor): ``(value, None)``
    or ``(None, why)``.  ``parallel=False`` runs one job at a time (measurements), which also
    tells exactly which job killed a worker."""
    if not jobs:
        return []
    if parallel and len(jobs) > 1:
        results = _run_batch(executor, fn, jobs, timeout_sec)
        # a dead worker breaks the whole pool: run those jobs again one by one to find the culprit
        redo = [k for k, (_, why) in enumerate(results) if why and why.startswith("worker process died")]
        if redo and isinstance(executor, LocalPool):
            for k, res in zip(redo, run_jobs(executor, fn, [jobs[k] for k in redo], timeout_sec, parallel=False)):
                results[k] = res
        return results
    return [_run_batch(executor, fn, [job], timeout_sec)[0] for job in jobs]


def _run_batch(executor: Any, fn: Callable, jobs: list[tuple], timeout_sec: float) -> list[tuple[Any, str | None]]:
    pool = executor.executor if isinstance(executor, LocalPool) else executor
    try:
        futures = [pool.submit(fn, *job) for job in jobs]
    except cf.process.BrokenProcessPool:
        if not isinstance(executor, LocalPool):
            raise
        executor.restart()
        pool = executor.executor
        futures = [pool.submit(fn, *job) for job in jobs]
    # each job gets timeout_sec from when it could start: the batch waits for all in turn
    deadline = time.monotonic() + timeout_sec * max(1, -(-len(jobs) // _workers(executor)))
    results: list[tuple[Any, str | None]] = []
    restart = False
    for fut in futures:
        try:
            results.append((fut.result(timeout=max(0.0, deadline - time.monotonic())), None))
        except cf.TimeoutError:
            fut.cancel()
            results.append((None, f"timeout: the candidate ran longer than {timeout_sec:g} s"))
            restart = True
        except Exception as err:  # noqa: BLE001 - reported per job
            results.append((None, _why(err)))
            restart = restart or isinstance(err, cf.process.BrokenProcessPool)
    if restart and isinstance(executor, LocalPool):
        executor.restart()
    return results


def _workers(executor: Any) -> int:
    if isinstance(executor, LocalPool):
        return executor.max_workers
    return int(getattr(executor, "_max_workers", 1) or 1)
