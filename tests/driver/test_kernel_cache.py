"""Compiled kernels are cached by the structural hash of their PrimFuncs: building the same
module again in a process reuses the machine code; a different module, target or PassContext
builds again."""

from __future__ import annotations

import numpy as np

import minitvm
import minitvm.driver  # (a submodule: `import minitvm` alone does not load it)
from minitvm import te
from minitvm.transform import PassContext, PassTimingInstrument


def _scale(k: float):
    A = te.placeholder((32,), "float32", name="A")
    B = te.compute((32,), lambda i: A[i] * k, name="B")
    return te.create_prim_func([A, B])


def test_the_same_module_built_twice_is_compiled_once():
    minitvm.driver.clear_kernel_cache()
    first = minitvm.build(_scale(2.0))
    again = minitvm.build(_scale(2.0))  # a new but structurally equal PrimFunc
    assert again is first
    info = minitvm.driver.kernel_cache_info()
    assert info["hits"] == 1 and info["misses"] == 1
    a, b = np.random.default_rng(0).standard_normal(32).astype("float32"), np.zeros(32, "float32")
    again(a, b)
    np.testing.assert_allclose(b, 2 * a, rtol=1e-6)


def test_a_different_function_or_context_builds_again():
    minitvm.driver.clear_kernel_cache()
    first = minitvm.build(_scale(2.0))
    assert minitvm.build(_scale(3.0)) is not first
    with PassContext(config={"tir.disable_vectorize": True}):
        assert minitvm.build(_scale(2.0)) is not first
    with PassContext(instruments=[PassTimingInstrument()]):  # watched builds always run the passes
        assert minitvm.build(_scale(2.0)) is not first


def test_the_cache_is_bounded():
    minitvm.driver.clear_kernel_cache()
    size = minitvm.driver.kernel_cache_info()["max_size"]
    for k in range(size + 3):
        minitvm.build(_scale(k + 0.5))
    assert minitvm.driver.kernel_cache_info()["size"] == size
