"""Memory per build: how much the process's resident memory grows per ``minitvm.build`` of a
distinct small kernel (issue 35's target: under 10 KiB per build over 600 builds, after warm-up).

    .venv/bin/python benchmarks/build_memory.py [--builds 600] [--warmup 50]

Each build is an elementwise add of a different constant (a new structural hash, so neither
the kernel cache nor the optimized-IR cache answers), called once and dropped.  RSS is read from
``/proc/self/statm`` after ``gc.collect()``, after the warm-up (LLVM's set-up, the thread pool,
the caches filled) and every 100 builds.  The caches stay at their real sizes: what remains
is what each build leaves behind.  Before issue 35's fix llvmlite's O3 pipeline was never freed
(~75 KiB per build); the last ~2 KiB is the PassInstrumentationCallbacks llvmlite 0.50
allocates per PassBuilder and never frees.
"""

from __future__ import annotations

import argparse
import gc
import os
import time

import numpy as np

import minitvm
import minitvm.driver
from minitvm import te

TARGET_KIB = 10.0
_PAGE_KIB = os.sysconf("SC_PAGE_SIZE") / 1024


def rss_kib() -> float:
    """Resident memory of this process in KiB, after a garbage collection."""
    gc.collect()
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE_KIB


def build_and_run(k: int, a: np.ndarray) -> None:
    A = te.placeholder(a.shape, "float32", name="A")
    B = te.compute(a.shape, lambda i: A[i] + (k + 0.25), name="B")
    lib = minitvm.build(te.create_prim_func([A, B]), target="llvm")
    b = np.zeros_like(a)
    lib["main"](a, b)
    np.testing.assert_allclose(b, a + (k + 0.25), rtol=1e-6)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--builds", type=int, default=600)
    parser.add_argument("--warmup", type=int, default=50)
    args = parser.parse_args()
    a = np.random.default_rng(0).standard_normal(64).astype("float32")
    for k in range(args.warmup):
        build_and_run(k, a)
    start, t0 = rss_kib(), time.perf_counter()
    marks = []
    for n, k in enumerate(range(args.warmup, args.warmup + args.builds), 1):
        build_and_run(k, a)
        if n % 100 == 0 or n == args.builds:
            marks.append(f"{n}: +{rss_kib() - start:.0f}")
    per_build = (rss_kib() - start) / args.builds
    status = "met" if per_build < TARGET_KIB else "NOT met"
    print(f"{args.builds} builds after {args.warmup} warm-up builds, {time.perf_counter() - t0:.1f} s")
    print(f"RSS growth (KiB) after n builds: {', '.join(marks)}")
    print(f"{per_build:.1f} KiB per build (target < {TARGET_KIB:.0f}: {status}); "
          f"kernel cache {minitvm.driver.kernel_cache_info()}")


if __name__ == "__main__":
    main()
