"""Native memory comes back: each build's LLVM objects (the optimization pipeline, the MCJIT
engine with its machine code) are freed once nothing uses them, so a tuning run that builds
thousands of kernels does not grow without bound; and a function or VM taken from a library
keeps its machine code alive after the user drops the library."""

from __future__ import annotations

import functools
import gc
import os
import weakref

import numpy as np

import minitvm
import minitvm.driver
from minitvm import relax, te
from minitvm.script import relax as R
from minitvm.target import tir_build
from minitvm.target.codegen import llvm_jit

_PAGE_KIB = os.sysconf("SC_PAGE_SIZE") / 1024
_N = 64


def _rss_kib() -> float:
    gc.collect()
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE_KIB


def _add_const(k: int):
    A = te.placeholder((_N,), "float32", name="A")
    B = te.compute((_N,), lambda i: A[i] + (k + 0.25), name="B")
    return te.create_prim_func([A, B])


def _build_and_run(k: int, a: np.ndarray) -> None:
    lib = minitvm.build(_add_const(k), target="llvm")
    b = np.zeros(_N, "float32")
    lib["main"](a, b)
    np.testing.assert_allclose(b, a + (k + 0.25), rtol=1e-6)


def test_distinct_builds_do_not_grow_native_memory(monkeypatch):
    # ~75 KiB per build leaked before (llvmlite never freed the O3 pipeline); ~2.5 KiB now.
    # Small caches, full after the warm-up: the measurement sees only what each build leaves.
    monkeypatch.setattr(tir_build._KERNEL_CACHE, "size", 4)
    small = functools.lru_cache(maxsize=4)(llvm_jit._optimized_text.__wrapped__)
    monkeypatch.setattr(llvm_jit, "_optimized_text", small)
    minitvm.driver.clear_kernel_cache()
    a = np.random.default_rng(0).standard_normal(_N).astype("float32")
    warm, measured, bound_kib = 15, 120, 10.0
    for k in range(warm):  # LLVM's set-up, the thread pool, the caches
        _build_and_run(k, a)
    before = _rss_kib()
    for k in range(warm, warm + measured):
        _build_and_run(k, a)
    per_build = (_rss_kib() - before) / measured
    minitvm.driver.clear_kernel_cache()
    assert per_build < bound_kib, f"RSS grew {per_build:.1f} KiB per build over {measured} distinct builds"


def test_a_function_outlives_its_dropped_library():
    minitvm.driver.clear_kernel_cache()
    lib = minitvm.build(_add_const(1000), target="llvm")
    f, engine = lib["main"], weakref.ref(lib._engine)
    del lib
    minitvm.driver.clear_kernel_cache()  # the cache held the library too
    for k in range(1001, 1004):  # new builds may reuse freed memory
        minitvm.build(_add_const(k), target="llvm")
    gc.collect()
    assert engine() is not None  # the function holds the machine code
    a, b = np.random.default_rng(1).standard_normal(_N).astype("float32"), np.zeros(_N, "float32")
    f(a, b)
    np.testing.assert_allclose(b, a + 1000.25, rtol=1e-6)
    del f
    gc.collect()
    assert engine() is None  # and nothing else does: the engine is freed with its last user


@R.function
def _dense(x: R.Tensor((4, 16), "float32"), w: R.Tensor((16, 8), "float32"), b: R.Tensor((8,), "float32")):
    with R.dataflow():
        h = R.add(R.matmul(x, w), b)
        y = R.nn.relu(h)
        R.output(y)
    return y


def test_a_vm_and_its_native_entry_outlive_the_dropped_executable():
    minitvm.driver.clear_kernel_cache()
    ex = relax.build(minitvm.IRModule({"main": _dense}), target="llvm")
    vm = relax.VirtualMachine(ex, minitvm.cpu())
    assert "main" in vm.native_entries  # the entry calls machine code by address
    engine = weakref.ref(ex.lib._engine)
    del ex
    minitvm.driver.clear_kernel_cache()
    for k in range(2000, 2003):
        minitvm.build(_add_const(k), target="llvm")
    gc.collect()
    rng = np.random.default_rng(2)
    x, w, b = (rng.standard_normal(s).astype("float32") for s in ((4, 16), (16, 8), (8,)))
    np.testing.assert_allclose(vm["main"](x, w, b).numpy(), np.maximum(x @ w + b, 0), rtol=1e-5, atol=1e-5)
    entry = vm.native_entries["main"]
    assert entry.calls == 1
    del vm
    gc.collect()
    assert engine() is not None  # the entry alone keeps the library's machine code
    got = entry.run([minitvm.nd.array(-x), minitvm.nd.array(w), minitvm.nd.array(b)])
    np.testing.assert_allclose(got.numpy(), np.maximum(-x @ w + b, 0), rtol=1e-5, atol=1e-5)
