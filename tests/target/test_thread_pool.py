"""minitvm's thread pool for parallel loops: every iteration runs exactly once, whichever thread
takes it, also when several Python threads run parallel kernels at once (the pool is then
busy and the late caller runs its loop alone); a worker that finds itself on its caller's CPU
moves off it."""

from __future__ import annotations

import os
import threading
import time

import numpy as np

import minitvm
from minitvm.script import tir as T
from minitvm.target.codegen.thread_pool import CHUNKS_PER_THREAD, PARALLEL_RUN_SYMBOL, pool_threads


@T.prim_func
def _count(A: T.Buffer((4099,), "int32")):
    # every element incremented once: an iteration run twice (or never) shows in the result
    for i in T.parallel(4099):
        with T.block("b"):
            vi = T.axis.remap("S", [i])
            A[vi] = A[vi] + 1


def test_every_iteration_runs_exactly_once_many_times_over():
    lib = minitvm.build(_count)
    assert PARALLEL_RUN_SYMBOL in lib.get_source("ll")
    assert pool_threads() >= 1 and CHUNKS_PER_THREAD >= 1
    a = np.zeros(4099, "int32")
    for _ in range(300):
        lib(a)
    np.testing.assert_array_equal(a, np.full(4099, 300, "int32"))


def test_parallel_kernels_from_several_python_threads_at_once():
    lib = minitvm.build(_count)
    arrays = [np.zeros(4099, "int32") for _ in range(4)]
    errors: list[BaseException] = []

    def work(a: np.ndarray) -> None:
        try:
            for _ in range(200):
                lib(a)
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(a,)) for a in arrays]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for a in arrays:
        np.testing.assert_array_equal(a, np.full(4099, 200, "int32"))


def _pool_workers() -> list[int]:
    """Thread ids of this process's pool workers (the pool names them ``minitvm-pool``)."""
    tids = []
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/comm") as f:
            if f.read().strip() == "minitvm-pool":
                tids.append(int(tid))
    return tids


def test_a_worker_woken_on_its_callers_cpu_moves_off_it():
    # Linux may wake a worker on the CPU of the thread that woke it; the two then take turns on
    # one core and a parallel loop runs at one core's speed (the zoo's small models measured 1.4x
    # slower in such stretches).  Here both are made to share a CPU: the worker leaves it for the
    # process's other CPUs at the next parallel loop, and every iteration still runs once.
    lib = minitvm.build(_count)
    a = np.zeros(4099, "int32")
    lib(a)  # the pool is up
    allowed = os.sched_getaffinity(0)
    workers = _pool_workers()
    assert len(allowed) >= 2 and len(workers) == pool_threads() - 1 >= 1  # (this machine and CI: 2 CPUs)
    here = min(allowed)
    calls = 1
    try:
        os.sched_setaffinity(0, {here})
        for tid in workers:
            os.sched_setaffinity(tid, {here})
        for _ in range(200):  # the worker runs when this thread sleeps (they share one CPU)
            lib(a)
            calls += 1
            time.sleep(0.002)
            if all(os.sched_getaffinity(tid) == allowed - {here} for tid in workers):
                break
        assert all(os.sched_getaffinity(tid) == allowed - {here} for tid in workers)
    finally:
        os.sched_setaffinity(0, allowed)
    np.testing.assert_array_equal(a, np.full(4099, calls, "int32"))
