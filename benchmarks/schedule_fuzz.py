"""Schedule fuzzing at nightly size: random schedule sequences on four kernels, each accepted
schedule's numbers checked against numpy.

    nice -n 10 .venv/bin/python benchmarks/schedule_fuzz.py [--count 5000] [--seed 0]

``--count`` sequences in all (default 5,000), dealt in turn to a matmul, a conv2d, the softmax
of ``minitvm.testing.programs`` and a two-stage matmul + ReLU.  A sequence is up to
``--max-steps`` random steps of ``minitvm.testing.fuzz`` (the primitives and argument picks
``tests/fuzz/test_tir_fuzz.py`` draws with hypothesis, drawn here from a seeded numpy generator
so a run is cheap and reproducible): a step the schedule refuses (``ScheduleError``) is
skipped, after checking it left the schedule as it was.  The result is built for LLVM with
bounds checks on and run on seeded random data, the output first filled with NaN so an element
left unwritten shows.

The table counts, per kernel: sequences tried; accepted (every step applied); refused (at least
one step raised ``ScheduleError``; the rest still ran and the result was checked); wrong numbers;
build errors (anything the build or the run raised, an out-of-bounds access the build proves or
the bounds checks catch included: the schedule accepted what cannot run); and crashes (a
primitive raising something other than ``ScheduleError``).  Each failure prints its kernel, its steps (to
replay with ``apply_schedule``) and its trace, ready to become a regression test.  The load
average at start and end says how busy the shared machine was.  Nothing here is a test; the
script stops after ``--count`` sequences (or ``--max-seconds``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python benchmarks/x.py` puts benchmarks/ first: import this checkout
    sys.path.insert(0, str(ROOT))

import minitvm  # noqa: E402
from minitvm import te, tir  # noqa: E402
from minitvm.driver.build_module import export_name  # noqa: E402
from minitvm.testing.fuzz import PRIMITIVES, Step, apply_schedule  # noqa: E402
from minitvm.testing.programs import softmax  # noqa: E402
from minitvm.transform import PassContext  # noqa: E402

OUTCOMES = ("accepted", "refused", "wrong", "build_error", "crash")


@dataclass
class Kernel:
    """A PrimFunc, seeded inputs and numpy's answer for them."""

    name: str
    func: Any
    inputs: list[np.ndarray]
    expected: np.ndarray


@dataclass
class Stats:
    """What happened to one kernel's sequences."""

    kernel: str
    tried: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    steps_applied: int = 0
    steps_refused: int = 0
    failures: list[str] = field(default_factory=list)


def _matmul(rng: np.random.Generator, n: int, k: int, m: int, relu: bool) -> Kernel:
    A = te.placeholder((n, k), "float32", name="A")
    B = te.placeholder((k, m), "float32", name="B")
    r = te.reduce_axis((0, k), "k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    out = te.compute((n, m), lambda i, j: tir.max(C[i, j], tir.const(0.0, "float32")), name="relu") if relu else C
    a, b = rng.standard_normal((n, k)).astype("float32"), rng.standard_normal((k, m)).astype("float32")
    want = a.astype("float64") @ b
    return Kernel("matmul+relu" if relu else "matmul", te.create_prim_func([A, B, out]), [a, b],
                  np.maximum(want, 0) if relu else want)


def _conv2d(rng: np.random.Generator) -> Kernel:
    """NCHW, 3 -> 4 channels, 3x3 kernel, 7x7 image, stride 1, no padding."""
    X = te.placeholder((1, 3, 7, 7), "float32", name="X")
    W = te.placeholder((4, 3, 3, 3), "float32", name="W")
    rc, ry, rx = te.reduce_axis((0, 3), "rc"), te.reduce_axis((0, 3), "ry"), te.reduce_axis((0, 3), "rx")
    Y = te.compute((1, 4, 5, 5), lambda b, f, y, x: te.sum(X[b, rc, y + ry, x + rx] * W[f, rc, ry, rx],
                                                           axis=[rc, ry, rx]), name="conv")
    x, w = rng.standard_normal((1, 3, 7, 7)).astype("float32"), rng.standard_normal((4, 3, 3, 3)).astype("float32")
    windows = np.lib.stride_tricks.sliding_window_view(x.astype("float64"), (3, 3), axis=(2, 3))  # b c y x ry rx
    return Kernel("conv2d", te.create_prim_func([X, W, Y]), [x, w], np.einsum("bcyxij,fcij->bfyx", windows, w))


def _softmax(rng: np.random.Generator) -> Kernel:
    a = rng.standard_normal((4, 16)).astype("float32")
    e = np.exp(a.astype("float64") - a.max(axis=1, keepdims=True))
    return Kernel("softmax", softmax, [a], e / e.sum(axis=1, keepdims=True))


def kernels(seed: int = 0) -> list[Kernel]:
    """The four kernels; extents that splits by 2..8 mostly do not divide."""
    rng = np.random.default_rng(seed)
    return [_matmul(rng, 12, 10, 14, relu=False), _conv2d(rng), _softmax(rng), _matmul(rng, 6, 9, 5, relu=True)]


def random_steps(rng: np.random.Generator, max_steps: int) -> list[Step]:
    """1 to ``max_steps`` steps: a primitive of ``PRIMITIVES`` and five argument picks each."""
    return [Step(PRIMITIVES[int(rng.integers(len(PRIMITIVES)))], tuple(int(p) for p in rng.integers(0, 64, 5)))
            for _ in range(int(rng.integers(1, max_steps + 1)))]


def run_sequence(kernel: Kernel, steps: list[Step]) -> tuple[str, int, int, str]:
    """Schedule ``kernel`` with ``steps``, build, run, compare: the outcome (one of OUTCOMES),
    the steps applied and refused, and what went wrong (empty when nothing did)."""
    sch = tir.Schedule(kernel.func)
    refused: list[str] = []
    try:
        applied = apply_schedule(sch, steps, refused)
    except Exception as err:  # a primitive failing other than with ScheduleError is a bug
        return "crash", 0, len(refused), _report(kernel, steps, sch, f"{type(err).__name__}: {err}")
    outcome = "refused" if refused else "accepted"
    try:
        got = _run(kernel, sch.mod)
    except Exception as err:
        return "build_error", len(applied), len(refused), _report(kernel, steps, sch, f"{type(err).__name__}: {err}")
    scale = max(1.0, float(np.max(np.abs(kernel.expected))))
    if got.shape != kernel.expected.shape or not np.allclose(got, kernel.expected, rtol=1e-4, atol=1e-4 * scale):
        err = np.nanmax(np.abs(got - kernel.expected)) if not np.isnan(got).all() else np.nan
        what = f"max |error| {err:.3g}, {int(np.isnan(got).sum())} elements never written"
        return "wrong", len(applied), len(refused), _report(kernel, steps, sch, what)
    return outcome, len(applied), len(refused), ""


def _run(kernel: Kernel, mod: Any) -> np.ndarray:
    """Build for LLVM with bounds checks, run on copies of the inputs; the inputs must stay."""
    with PassContext(config={"tir.bounds_check": True}):
        lib = minitvm.build(mod, target="llvm")
    gv = mod.get_global_vars()[0]
    args = [minitvm.nd.array(a.copy()) for a in kernel.inputs]
    out = minitvm.nd.array(np.full(kernel.expected.shape, np.nan, "float32"))
    lib[export_name(gv.name_hint, mod[gv])](*args, out)
    for a, before in zip(args, kernel.inputs):
        if not np.array_equal(a.numpy(), before):
            raise AssertionError("the kernel wrote one of its inputs")
    return out.numpy().astype("float64")


def _report(kernel: Kernel, steps: list[Step], sch: Any, what: str) -> str:
    lines = [f"[{kernel.name}] {what.strip()}", f"  steps: {steps!r}", "  trace:"]
    lines += [f"    {line}" for line in sch.trace.as_python()]
    return "\n".join(lines)


def fuzz(count: int, seed: int = 0, max_steps: int = 6, max_seconds: float = 0.0,
         log: Callable[[str], None] = print) -> list[Stats]:
    """``count`` sequences dealt in turn to the kernels; stops early after ``max_seconds`` (> 0)."""
    rng = np.random.default_rng(seed)
    ks = kernels(seed)
    stats = [Stats(k.name) for k in ks]
    start = time.monotonic()
    for n in range(count):
        if max_seconds > 0 and time.monotonic() - start > max_seconds:
            log(f"stopped after {time.monotonic() - start:.0f} s ({n} of {count} sequences): --max-seconds")
            break
        kernel, st = ks[n % len(ks)], stats[n % len(ks)]
        outcome, applied, refused, failure = run_sequence(kernel, random_steps(rng, max_steps))
        st.tried += 1
        st.counts[outcome] += 1
        st.steps_applied += applied
        st.steps_refused += refused
        if failure:
            st.failures.append(failure)
            log(failure)
    return stats


def table(stats: list[Stats]) -> str:
    head = ("kernel", "tried", "accepted", "refused", "wrong", "build err", "crash", "steps ok", "steps refused")
    rows = [(s.kernel, s.tried, s.counts["accepted"], s.counts["refused"], s.counts["wrong"],
             s.counts["build_error"], s.counts["crash"], s.steps_applied, s.steps_refused) for s in stats]
    rows.append(("total", *(sum(r[c] for r in rows) for c in range(1, len(head)))))
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    fmt = "  ".join(f"{{:<{widths[0]}}}" if c == 0 else f"{{:>{w}}}" for c, w in enumerate(widths))
    return "\n".join(fmt.format(*r) for r in [head, *rows])


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--count", type=int, default=5000, help="sequences in all, dealt to the 4 kernels (5000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the steps and the data (0)")
    p.add_argument("--max-steps", type=int, default=6, help="steps per sequence, at most (6)")
    p.add_argument("--max-seconds", type=float, default=0.0, help="stop early after this long (0: never)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> list[Stats]:
    args = parse_args(argv)
    load_start, started = os.getloadavg(), time.monotonic()
    stats = fuzz(args.count, args.seed, args.max_steps, args.max_seconds)
    print(f"\nschedule fuzz: --count {args.count} --seed {args.seed} --max-steps {args.max_steps}, "
          f"{time.monotonic() - started:.0f} s")
    print(table(stats))
    print("load average (1, 5, 15 min): start " + ", ".join(f"{x:.2f}" for x in load_start)
          + "; end " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    return stats


if __name__ == "__main__":
    stats = main()
    sys.exit(1 if any(s.counts["wrong"] or s.counts["build_error"] or s.counts["crash"] for s in stats) else 0)
