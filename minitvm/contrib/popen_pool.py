"""``tvm.contrib.popen_pool``: TVM's pool of worker processes for running Python functions
apart from the caller.  minitvm's tuner has its own workers (``meta_schedule``'s builders and
runners); this general pool is not here, and its classes refuse by name."""

from __future__ import annotations

from typing import Any

__all__ = ["PopenWorker", "PopenPoolExecutor"]


class _Refused:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(
            f"minitvm.contrib.popen_pool.{type(self).__name__}: minitvm has no general worker-process pool; "
            "run the function in this process, or use concurrent.futures.ProcessPoolExecutor")


class PopenWorker(_Refused):
    """Refused: one worker process running functions sent to it."""


class PopenPoolExecutor(_Refused):
    """Refused: a pool of such workers."""
