"""minitvm's thread pool for parallel loops: every iteration runs exactly once, whichever thread
takes it, also when several Python threads run parallel kernels at once (the pool is then
busy and the late caller runs its loop alone)."""

from __future__ import annotations

import threading

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
