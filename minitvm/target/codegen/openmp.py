"""Loading libgomp into the process (for code that calls OpenMP), and its wait-policy setting.

minitvm's own kernels no longer call OpenMP: ``parallel`` loops run on minitvm's thread pool
(``thread_pool.py``), which does not stall when another process busies a core.  libgomp is
still made visible to the JIT, as before, for ``T.call_extern`` code that uses it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from typing import Any

import llvmlite.binding as llvm

__all__ = ["load_openmp"]

# second, never-closed handles on libgomp (see load_openmp)
_KEEP_OPEN: list[Any] = []


def load_openmp() -> bool:
    """Make libgomp's symbols visible to JIT code; returns whether it could be loaded.

    libgomp reads its settings when it is loaded.  Unless the user chose a wait policy, we
    load it with ``OMP_WAIT_POLICY=PASSIVE``: idle workers then sleep instead of spinning.
    On a quiet machine a region costs ~8 us instead of ~1 us, but when another process
    busies a core (2 cores here), spinning workers made a region take up to 8 ms.
    Set ``OMP_WAIT_POLICY=active`` before the first build for benchmarks on an idle machine.
    """
    chosen = "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ
    if not chosen:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    try:
        for name in ("libgomp.so.1", ctypes.util.find_library("gomp")):
            if not name:
                continue
            try:
                llvm.load_library_permanently(name)
                # a second, never-closed handle: at exit LLVM's dlclose must not unmap libgomp
                # while its worker threads still run (seen as a segfault at interpreter exit)
                _KEEP_OPEN.append(ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL))
                return True
            except (RuntimeError, OSError):
                continue
        return False
    finally:
        if not chosen:
            del os.environ["OMP_WAIT_POLICY"]
