"""Builders (TVM's ``ms.builder``): compile candidates in worker processes.

``LocalBuilder().build([BuilderInput(mod, target), ...])`` returns one :class:`BuilderResult` a
candidate: ``artifact_path`` (what the runner loads) or ``error_msg`` (it did not build, its
worker died, or it took longer than ``timeout_sec``).  Workers come from ``executor``: minitvm's
own process pool by default, or any ``concurrent.futures.Executor`` (e.g. a Dask
``Client(...).get_executor()``); artifacts are files in ``work_dir``, so a distributed executor
needs that directory on a shared file system.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from ..ir.module import IRModule
from ..target import Target
from . import _worker
from .executor import LocalPool, run_jobs

__all__ = ["BuilderInput", "BuilderResult", "Builder", "LocalBuilder", "create"]


class BuilderInput:
    """A module to build for a target (``params`` are Relax's and not taken here)."""

    def __init__(self, mod: IRModule, target: Target | str, params: dict | None = None) -> None:
        if params:
            raise NotImplementedError("BuilderInput(params=...): minitvm's builder builds TIR candidates only")
        self.mod, self.target = mod, target if isinstance(target, Target) else Target(target)


class BuilderResult:
    """``artifact_path`` of the built candidate, or ``error_msg`` saying why there is none."""

    def __init__(self, artifact_path: str | None, error_msg: str | None) -> None:
        self.artifact_path, self.error_msg = artifact_path, error_msg

    def __repr__(self) -> str:
        return f"BuilderResult({self.artifact_path!r}, error_msg={self.error_msg!r})"


class Builder:
    """Builds a list of inputs into a list of results."""

    def build(self, build_inputs: list[BuilderInput]) -> list[BuilderResult]:
        raise NotImplementedError


class LocalBuilder(Builder):
    """Builds candidates in parallel worker processes with a timeout."""

    def __init__(self, *, max_workers: int | None = None, timeout_sec: float = 30.0, f_build: Any = None,
                 f_export: Any = None, initializer: Any = None, executor: Any = None,
                 work_dir: str | None = None) -> None:
        for name, value in (("f_build", f_build), ("f_export", f_export), ("initializer", initializer)):
            if value is not None:
                raise NotImplementedError(f"LocalBuilder({name}=...): minitvm's builder compiles with minitvm.build "
                                          "and keeps the module's TVMScript as the artifact")
        self.timeout_sec = float(timeout_sec)
        self.executor = executor if executor is not None else LocalPool(max_workers)
        self.work_dir = work_dir
        self._count = 0

    def _artifact_dir(self) -> str:
        if self.work_dir is None:
            self.work_dir = tempfile.mkdtemp(prefix="minitvm_ms_")
        path = os.path.join(self.work_dir, "artifacts")
        os.makedirs(path, exist_ok=True)
        return path

    def build(self, build_inputs: list[BuilderInput]) -> list[BuilderResult]:
        folder = self._artifact_dir()
        jobs = []
        for inp in build_inputs:
            self._count += 1
            jobs.append((inp.mod.script(), str(inp.target), os.path.join(folder, f"candidate_{os.getpid()}_"
                                                                          f"{id(self)}_{self._count}.py")))
        return [BuilderResult(value, why) for value, why in
                run_jobs(self.executor, _worker.build_candidate, jobs, self.timeout_sec, parallel=True)]


def create(builder: Any = "local", **kwargs: Any) -> Builder:
    if isinstance(builder, Builder):
        return builder
    if builder == "local":
        return LocalBuilder(**kwargs)
    raise NotImplementedError(f"builder={builder!r}: minitvm has the 'local' builder (give it any Executor)")
