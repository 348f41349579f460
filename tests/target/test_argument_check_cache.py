"""A kernel checks its arguments fully once per shape; later calls with the same shapes only
look at addresses -- and anything different still gets the full check and its error."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm.script import tir as T


@T.prim_func
def scale(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4, 8), "float32")):
    for i, j in T.grid(4, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)


def test_same_shapes_skip_the_check_different_ones_still_fail():
    f = minitvm.build(scale, target="llvm")["scale"]
    rng = np.random.default_rng(0)
    a = minitvm.nd.array(rng.standard_normal((4, 8)).astype("float32"))
    b = minitvm.nd.empty((4, 8), "float32")
    f(a, b)
    assert f._fn._checked is not None  # remembered: (4, 8) float32 twice
    a2 = minitvm.nd.array(rng.standard_normal((4, 8)).astype("float32"))
    f(a2, b)
    np.testing.assert_array_equal(b.numpy(), a2.numpy() * 2)
    with pytest.raises(ValueError, match=r"argument 'A'.*\(3, 8\)"):
        f(minitvm.nd.array(np.ones((3, 8), "float32")), b)
    with pytest.raises(TypeError, match="expects dtype float32, got float64"):
        f(minitvm.nd.array(np.ones((4, 8), "float64")), b)
    frozen = np.zeros((4, 8), "float32")
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        f(a, minitvm.nd.NDArray(frozen))
    out = np.zeros((4, 8), "float32")  # plain numpy arrays take the full path every time
    f(a.numpy(), out)
    np.testing.assert_array_equal(out, a.numpy() * 2)
