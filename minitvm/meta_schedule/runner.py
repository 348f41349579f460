"""Runners (TVM's ``ms.runner``): run built candidates in a worker process, check them, time them.

Each candidate first runs on seeded random data and its results are compared with the
unscheduled workload's (``reference_path``, written once per task by the tuner); only a
correct candidate is timed (``EvaluatorConfig``: ``number`` calls a measurement, ``repeat``
measurements, each at least ``min_repeat_ms``).  A wrong result, an exception, a dead worker (a
segmentation fault) or a run past ``timeout_sec`` gives ``RunnerResult(None, error_msg)`` and
the tuner goes on.  One candidate runs at a time, so measurements do not share the cores.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from . import _worker
from .executor import LocalPool, run_jobs

__all__ = ["EvaluatorConfig", "RunnerInput", "RunnerResult", "RunnerFuture", "Runner", "LocalRunner", "create"]


class EvaluatorConfig(NamedTuple):
    """How a candidate is timed (TVM's defaults)."""

    number: int = 3
    repeat: int = 1
    min_repeat_ms: int = 100
    enable_cpu_cache_flush: bool = False

    @staticmethod
    def _normalized(config: "EvaluatorConfig | None") -> "EvaluatorConfig":
        config = EvaluatorConfig() if config is None else config
        if config.enable_cpu_cache_flush:
            raise NotImplementedError("EvaluatorConfig(enable_cpu_cache_flush=True): minitvm does not flush "
                                      "the CPU cache between measurements")
        return config


class RunnerInput:
    """A built artifact to run; ``args_info`` is ``[(dtype, shape), ...]`` of its arguments;
    ``reference_path`` (minitvm's) the saved inputs and correct outputs to check against."""

    def __init__(self, artifact_path: str, device_type: str, args_info: list, reference_path: str | None = None,
                 target: str = "llvm") -> None:
        if device_type not in ("llvm", "cpu"):
            raise NotImplementedError(f"RunnerInput(device_type={device_type!r}): minitvm runs on the CPU")
        self.artifact_path, self.device_type, self.args_info = artifact_path, device_type, args_info
        self.reference_path, self.target = reference_path, target


class RunnerResult:
    """``run_secs`` (one time per repeat) or ``error_msg``."""

    def __init__(self, run_secs: list[float] | None, error_msg: str | None) -> None:
        self.run_secs, self.error_msg = run_secs, error_msg

    def __repr__(self) -> str:
        return f"RunnerResult({self.run_secs}, error_msg={self.error_msg!r})"


class RunnerFuture:
    """A result to fetch (minitvm's runs are finished when ``run`` returns)."""

    def __init__(self, result: RunnerResult) -> None:
        self._result = result

    def done(self) -> bool:
        return True

    def result(self) -> RunnerResult:
        return self._result


class Runner:
    def run(self, runner_inputs: list[RunnerInput]) -> list[RunnerFuture]:
        raise NotImplementedError

    #: whether ``run_interleaved`` takes ``sample_ms`` (the length of each timed sample)
    sets_sample_length = False

    def run_interleaved(self, runner_inputs: list[RunnerInput], rounds: int,
                        sample_ms: float | None = None) -> list[RunnerResult]:
        """minitvm's: time the candidates against each other, ``rounds`` times each, round by
        round, so that a change of the machine's speed hits them alike; a result has every
        round's times, or the first failure.  This version calls ``run`` once a round, whose
        timings are as long as the runner makes them: it cannot set a sample's length, so it
        refuses ``sample_ms``; :class:`LocalRunner` times the whole duel in one worker, a
        sample of ``sample_ms`` each."""
        if sample_ms is not None:
            raise NotImplementedError(f"{type(self).__name__}.run_interleaved(sample_ms={sample_ms}): this runner "
                                      "times each round with its own run(); leave sample_ms out, or use "
                                      "LocalRunner, whose samples last sample_ms")
        results: list[RunnerResult | None] = [None] * len(runner_inputs)
        for _ in range(rounds):
            for k, fut in enumerate(self.run(runner_inputs)):
                res, so_far = fut.result(), results[k]
                if so_far is None or not res.run_secs:
                    results[k] = res
                elif so_far.run_secs:
                    results[k] = RunnerResult(so_far.run_secs + res.run_secs, None)
        return results  # type: ignore[return-value]


class LocalRunner(Runner):
    """Runs candidates one at a time in a worker process (its own, or ``executor``'s)."""

    def __init__(self, timeout_sec: float = 30, evaluator_config: EvaluatorConfig | None = None,
                 cooldown_sec: float = 0.0, alloc_repeat: int = 1, f_alloc_argument: Any = None,
                 f_run_evaluator: Any = None, f_cleanup: Any = None, initializer: Any = None,
                 executor: Any = None) -> None:
        for name, value in (("f_alloc_argument", f_alloc_argument), ("f_run_evaluator", f_run_evaluator),
                            ("f_cleanup", f_cleanup), ("initializer", initializer)):
            if value is not None:
                raise NotImplementedError(f"LocalRunner({name}=...): minitvm's runner allocates seeded random "
                                          "arguments, checks the result and times with time_evaluator")
        if alloc_repeat != 1 or cooldown_sec:
            raise NotImplementedError("LocalRunner(alloc_repeat=, cooldown_sec=): minitvm allocates once and "
                                      "does not cool down between candidates")
        self.timeout_sec = float(timeout_sec)
        self.evaluator_config = EvaluatorConfig._normalized(evaluator_config)
        self.executor = executor if executor is not None else LocalPool(1)

    def run(self, runner_inputs: list[RunnerInput]) -> list[RunnerFuture]:
        cfg = self.evaluator_config
        jobs = [(inp.artifact_path, inp.target, inp.reference_path, cfg.number, cfg.repeat, cfg.min_repeat_ms)
                for inp in runner_inputs]
        out = []
        for value, why in run_jobs(self.executor, _worker.run_candidate, jobs, self.timeout_sec, parallel=False):
            if why is None:
                value, why = value
            out.append(RunnerFuture(RunnerResult(value, why)))
        return out

    sets_sample_length = True

    def run_interleaved(self, runner_inputs: list[RunnerInput], rounds: int,
                        sample_ms: float | None = None) -> list[RunnerResult]:
        """One job in one worker: every candidate is loaded and checked, then the rounds run
        back to back (``_worker.run_candidates_interleaved``); a duel that crashes or outlasts
        ``timeout_sec`` per candidate fails every candidate with the reason.  Each round's time of
        a candidate is the mean of as many calls as fill ``sample_ms`` (default: the evaluator
        config's ``min_repeat_ms``, at least 1 ms)."""
        if sample_ms is None:
            sample_ms = max(1.0, float(self.evaluator_config.min_repeat_ms))
        if not sample_ms > 0:
            raise ValueError(f"run_interleaved: sample_ms must be > 0, got {sample_ms}")
        if not runner_inputs:
            return []
        first = runner_inputs[0]
        if any((inp.target, inp.reference_path) != (first.target, first.reference_path) for inp in runner_inputs):
            raise ValueError("run_interleaved: the candidates of one duel share a target and a reference")
        job = ([inp.artifact_path for inp in runner_inputs], first.target, first.reference_path, rounds, sample_ms)
        [(value, why)] = run_jobs(self.executor, _worker.run_candidates_interleaved, [job],
                                  self.timeout_sec * len(runner_inputs), parallel=False)
        if why is not None:
            return [RunnerResult(None, why) for _ in runner_inputs]
        return [RunnerResult(secs, err) for secs, err in value]


def create(runner: Any = "local", **kwargs: Any) -> Runner:
    if isinstance(runner, Runner):
        return runner
    if runner == "local":
        return LocalRunner(**kwargs)
    raise NotImplementedError(f"runner={runner!r}: minitvm has the 'local' runner (give it any Executor)")
