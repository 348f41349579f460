"""What runs inside a worker process: build a candidate, check it, time it.

Everything here is a top-level function of plain arguments (strings, numbers, paths), so any
``concurrent.futures.Executor`` can run it -- a local process pool or a Dask/Ray executor.  A
candidate's module travels as its TVMScript text and is parsed back in the worker.
"""

from __future__ import annotations

import math
import os
import pickle
import signal
import threading
import time
import traceback
from typing import Any

import numpy as np
from llvmlite import binding as llvm

from ..driver import build
from ..runtime import nd
from ..runtime.module import make_time_evaluator
from ..script import from_source
from ..target import Target
from ..target.codegen.llvm_jit import LLVM_LOCK, LLVMModule, init_llvm, jit_compile, target_machine_for
from ..target.codegen.thread_pool import ensure_thread_pool
from ..transform import PassContext

__all__ = ["ignore_interrupts", "build_candidate", "run_candidate", "run_candidates_interleaved", "reference_outputs",
           "random_arguments"]

# parsed + compiled modules of this worker, by artifact path: the runner often gets the
# module the same worker just built (the latest few only: a worker serves many tunings)
_BUILT: dict[str, Any] = {}
_BUILT_KEPT = 32


def _compile(script: str, target: str) -> Any:
    mod = from_source(script, data_only=True)  # printed by the tuner; parsed as data all the same
    # a candidate is generated code under test: no bounds checks, as TVM measures it
    with PassContext(config={"tir.bounds_check": False}):
        return build(mod, target=target)


def build_candidate(script: str, target: str, artifact_path: str) -> str:
    """Compile the candidate (raises if it does not build) and write its artifact -- the
    optimized LLVM IR with each function's signature, so the runner only makes machine code
    from it; returns the path."""
    lib = _compile(script, target)
    _BUILT[artifact_path] = lib
    while len(_BUILT) > _BUILT_KEPT:
        del _BUILT[next(iter(_BUILT))]
    funcs = {name: lib[name]._fn for name in lib.function_names()}
    artifact = {"ll": lib.get_source("ll"), "target": target,
                "signatures": {name: fn.signature for name, fn in funcs.items()},
                "failures": next(iter(funcs.values()))._failures if funcs else []}
    with open(artifact_path, "wb") as f:
        pickle.dump(artifact, f)
    return artifact_path


def _load(artifact_path: str, target: str) -> Any:
    """The built module: this worker's own if it built it, else machine code from the artifact."""
    lib = _BUILT.pop(artifact_path, None)
    if lib is not None:
        return lib

    with open(artifact_path, "rb") as f:
        art = pickle.load(f)
    tgt = Target(art["target"])
    init_llvm()
    # what parallel loops call: only code generation starts it otherwise, and a runner worker
    # that never built anything (a fresh one after a crash or timeout) would jump to null
    ensure_thread_pool()
    with LLVM_LOCK:
        tm = target_machine_for(tgt)
        engine, entry = jit_compile(llvm.parse_assembly(art["ll"]), tm, art["signatures"])
    return LLVMModule(art["ll"], art["ll"], engine, tm, tgt, entry, art["failures"])


def random_arguments(args_info: list, seed: int) -> list[np.ndarray]:
    """Seeded random data for each argument ``(dtype, shape)``: floats in [-1, 1), integers in
    [0, 8) (small, so an integer argument used as an index stays meaningful), booleans."""
    rng = np.random.default_rng(seed)
    out = []
    for dtype, shape in args_info:
        if dtype.startswith("float"):
            out.append(rng.uniform(-1, 1, size=shape).astype(dtype))
        elif dtype == "bool":
            out.append(rng.integers(0, 2, size=shape).astype(bool))
        else:
            out.append(rng.integers(0, 8, size=shape).astype(dtype))
    return out


def _call(lib: Any, arrays: list[np.ndarray]) -> tuple[Any, list]:
    fn = lib[lib.entry_name] if getattr(lib, "entry_name", None) else lib["main"]
    nds = [nd.array(a) for a in arrays]
    fn(*nds)
    return fn, nds


def reference_outputs(script: str, target: str, args_info: list, seed: int, path: str) -> str:
    """Run the unscheduled workload on seeded random data; save inputs and results to ``path``."""
    lib = _compile(script, target)
    arrays = random_arguments(args_info, seed)
    _, nds = _call(lib, [a.copy() for a in arrays])
    np.savez(path, *[a for a in arrays], *[x.numpy() for x in nds])
    return path


def _check(got: list[np.ndarray], want: list[np.ndarray]) -> str | None:
    """None when every argument matches the reference after the call, else what differs."""
    for k, (g, w) in enumerate(zip(got, want)):
        if g.dtype.kind == "f":
            scale = float(np.max(np.abs(w))) if w.size else 0.0
            if not np.allclose(g, w, rtol=1e-3, atol=1e-4 * max(scale, 1.0), equal_nan=True):
                err = float(np.max(np.abs(g.astype("float64") - w)))
                return f"argument {k}: wrong result (max abs error {err:.3g}, values up to {scale:.3g})"
        elif not np.array_equal(g, w):
            return f"argument {k}: wrong result ({int(np.sum(g != w))} of {g.size} elements differ)"
    return None


def _checked_call(artifact_path: str, target: str, reference_path: str | None) -> tuple[Any, list] | str:
    """The candidate's function and arguments after one call on the reference inputs, or why
    its results are wrong."""
    if reference_path is None:
        raise ValueError("a candidate is timed only after a check against the reference, and none was given")
    lib = _load(artifact_path, target)
    ref = np.load(reference_path)
    n = len(ref.files) // 2
    want = [ref[f"arr_{i + n}"] for i in range(n)]
    fn, nds = _call(lib, [ref[f"arr_{i}"].copy() for i in range(n)])
    why = _check([x.numpy() for x in nds], want)
    return why if why is not None else (fn, nds)


def _failure(err: Exception) -> str:
    return f"{type(err).__name__}: {err}\n{traceback.format_exc(limit=3)}"


def run_candidate(artifact_path: str, target: str, reference_path: str | None, number: int, repeat: int,
                  min_repeat_ms: float) -> tuple[list[float] | None, str | None]:
    """``(run_secs, None)``, or ``(None, why)`` when the result is wrong or the run raised."""
    try:
        checked = _checked_call(artifact_path, target, reference_path)
        if isinstance(checked, str):
            return None, checked
        fn, nds = checked
        timer = make_time_evaluator(fn, None, number=number, repeat=repeat, min_repeat_ms=min_repeat_ms)
        return list(timer(*nds).results), None
    except Exception as err:  # noqa: BLE001 - the candidate's failure, reported to the tuner
        return None, _failure(err)


def run_candidates_interleaved(artifact_paths: list[str], target: str, reference_path: str | None, rounds: int,
                               sample_ms: float) -> list[tuple[list[float] | None, str | None]]:
    """Check each candidate, then time them against each other: ``rounds`` rounds, in each one
    sample of every candidate in turn (the mean of as many calls as fill ``sample_ms``; the
    first candidate of a round rotates).  ``(run_secs, None)`` or ``(None, why)`` per candidate.

    On a shared machine a core's speed changes every few tenths of a second (a 10 us kernel:
    7.6 us for a while, then 12 us); samples taken close together see the same speed, so
    candidates timed in one round compare fairly, where timings a second apart do not."""
    results: list[tuple[list[float] | None, str | None]] = []
    timers: dict[int, tuple[Any, list]] = {}
    for k, path in enumerate(artifact_paths):
        try:
            checked = _checked_call(path, target, reference_path)
        except Exception as err:  # noqa: BLE001 - this candidate's failure; the others go on
            checked = _failure(err)
        if isinstance(checked, str):
            results.append((None, checked))
            continue
        fn, nds = checked
        # calls per sample, found once: the evaluator would otherwise grow its batch anew each time
        per_call = make_time_evaluator(fn, None, number=1, min_repeat_ms=sample_ms)(*nds).results[0]
        timers[k] = (make_time_evaluator(fn, None, number=max(1, math.ceil(sample_ms / 1e3 / per_call))), nds)
        results.append(([], None))
    order = list(timers)
    for r in range(rounds if order else 0):
        first = r % len(order)
        for k in order[first:] + order[:first]:
            timer, nds = timers[k]
            results[k][0].extend(timer(*nds).results)
    return results


def ignore_interrupts() -> None:
    """A worker's first step: Ctrl-C (or a notebook kernel shutting down, which interrupts its
    whole process group) is for the tuner, which stops its workers itself; a worker would only
    print a KeyboardInterrupt traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def warm_up(linger: float = 0.3) -> int:
    """Start this worker -- calling it imports this module, which loads the compiler -- and stay
    busy briefly, so each worker gets one; returns its pid.
    The worker also watches its parent: if the tuner dies, the worker ends instead of lingering."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    if not any(t.name == "minitvm-parent-watch" for t in threading.enumerate()):
        threading.Thread(target=watch, name="minitvm-parent-watch", daemon=True).start()
    time.sleep(linger)
    return os.getpid()


def worker_pid() -> int:
    """The worker's process id (tests check that work ran elsewhere)."""
    return os.getpid()
