"""Compiling and running again and again does not grow the process: JIT engines are freed with
their modules, and llvmlite's leaky optimizer runs once per distinct module."""

from __future__ import annotations

import gc
import os
import weakref

import numpy as np

import minitvm
from minitvm import te
from minitvm.script import tir as T
from minitvm.target.codegen import llvm_jit

RNG = np.random.default_rng(5)


@T.prim_func
def add_one(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] + T.float32(1)


def _rss() -> int:
    """Resident set size in bytes (second field of /proc/self/statm, in pages)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _cycle(a: np.ndarray, b: np.ndarray) -> None:
    lib = minitvm.build(add_one, target="llvm")
    lib["add_one"](a, b)


def test_a_thousand_compile_and_run_cycles_do_not_grow_memory():
    a, b = RNG.standard_normal(8).astype("float32"), np.zeros(8, "float32")
    for _ in range(50):  # warm up: caches, lazily loaded code, the allocator's pools
        _cycle(a, b)
    gc.collect()
    before = _rss()
    for _ in range(1000):
        _cycle(a, b)
    gc.collect()
    growth = _rss() - before
    np.testing.assert_allclose(b, a + 1)
    # a leak of one JIT engine per cycle was ~70 KB each: 70 MB over the loop
    assert growth < 20 * 2**20, f"RSS grew by {growth / 2**20:.1f} MiB over 1000 compile + run cycles"


def test_the_jit_engine_dies_with_its_module():
    lib = minitvm.build(add_one, target="llvm")
    fn = lib["add_one"]
    engine = weakref.ref(lib._engine)
    del lib
    gc.collect()
    assert engine() is not None  # a function still in use keeps its machine code
    a, b = RNG.standard_normal(8).astype("float32"), np.zeros(8, "float32")
    fn(a, b)
    np.testing.assert_allclose(b, a + 1)
    del fn
    gc.collect()
    assert engine() is not None  # the kernel cache remembers the library for the next build
    minitvm.driver.clear_kernel_cache()
    gc.collect()
    assert engine() is None


def _add_constant(k: float):
    A = te.placeholder((16,), "float32", name="A")
    B = te.compute((16,), lambda i: A[i] + k, name="B")
    return te.create_prim_func([A, B])


def test_optimized_ir_cache_is_bounded_and_gives_the_same_code():
    size = llvm_jit.OPTIMIZED_IR_CACHE_SIZE
    a = RNG.standard_normal(16).astype("float32")
    for k in range(size + 5):
        lib = minitvm.build(_add_constant(k + 0.5), target="llvm")
    assert llvm_jit._optimized_text.cache_info().currsize == size
    again = minitvm.build(_add_constant(size + 4.5), target="llvm")  # the most recent: a cache hit
    assert again.get_source("ll") == lib.get_source("ll")
    b = np.zeros(16, "float32")
    again(a, b)
    np.testing.assert_allclose(b, a + np.float32(size + 4.5), rtol=1e-6)
