"""The tuner's worker processes outlive one tuning by a short while, so the next tuning (a
notebook's next cell, a test file's next test) does not start and import fresh interpreters;
a pool whose worker died while it waited is never handed out again; a worker leaves Ctrl-C to
the tuner."""

import os
import signal
import time

from minitvm.meta_schedule import executor
from minitvm.meta_schedule.executor import LocalPool


def _worker_pid(pool: LocalPool) -> int:
    return pool.executor.submit(os.getpid).result(timeout=60)


def _gone(pid: int, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.waitpid(pid, os.WNOHANG)  # reap it if it is our child and has ended
        except ChildProcessError:
            pass
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_the_next_pool_reuses_the_warm_workers_which_end_after_their_linger(monkeypatch):
    first = LocalPool(1)
    pid = _worker_pid(first)
    os.kill(pid, signal.SIGINT)  # a kernel shutting down interrupts its process group: not the worker's to act on
    assert _worker_pid(first) == pid
    first.shutdown()
    second = LocalPool(1)
    assert _worker_pid(second) == pid != os.getpid()
    monkeypatch.setattr(executor, "IDLE_LINGER_S", 0.2)
    second.shutdown()
    assert _gone(pid), f"the idle worker {pid} was still running 30 s after the pool's linger"
    assert not executor._IDLE.get(1)


def test_a_pool_whose_worker_died_while_idle_is_not_reused():
    first = LocalPool(1)
    pid = _worker_pid(first)
    parked = first._pool
    first.shutdown()
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while not getattr(parked, "_broken", False) and time.monotonic() < deadline:
        time.sleep(0.05)  # the executor's manager thread notices the death
    second = LocalPool(1)
    try:
        assert _worker_pid(second) != pid
    finally:
        second.restart()
