"""float32 exp / tanh / sigmoid / erf as vectorizable LLVM arithmetic: accurate to a couple of ulps,
right at the edges (overflow, underflow, NaN, +-inf), and free of C library calls."""

from __future__ import annotations

import math

import numpy as np
import pytest

import minitvm
from minitvm import te, tir, topi

EDGES = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e-30, 3e-4, 5e-4, 7.9, 8.0, 20.0, -20.0,
         88.7, 88.73, 89.0, -87.33, -87.34, -103.0, -103.97, -103.98, -200.0, -3.4e38]
FUNCS = {"exp": (topi.exp, np.exp), "tanh": (topi.tanh, np.tanh),
         "sigmoid": (topi.sigmoid, lambda v: 1 / (1 + np.exp(-v))),
         "erf": (topi.erf, lambda v: np.vectorize(math.erf, otypes=["float32"])(v.astype("float64")))}


def _kernel(name, n, vectorize):
    x = te.placeholder((n,), "float32", name="x")
    func = te.create_prim_func([x, FUNCS[name][0](x)]).with_attr("global_symbol", "main")
    sch = tir.Schedule(func)
    if vectorize:
        (i,) = sch.get_loops(sch.get_block("compute"))  # TOPI's element-wise block, named as TVM's
        sch.vectorize(sch.split(i, [None, 16])[1])
    return minitvm.build(sch.mod, target="llvm")


@pytest.mark.parametrize("name", list(FUNCS))
def test_matches_numpy_float32_and_vector_equals_scalar(name):
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.uniform(-100, 100, 4000), rng.standard_normal(4000) * 3, EDGES])
    values = np.resize(values, 8192).astype("float32")
    with np.errstate(over="ignore", invalid="ignore"):
        want = FUNCS[name][1](values)  # numpy in float32: overflow gives inf as float32 does
    results = []
    for vectorize in (False, True):
        lib = _kernel(name, values.size, vectorize)
        out = minitvm.nd.empty(values.shape, "float32")
        lib["main"](minitvm.nd.array(values), out)
        results.append(out.numpy())
        if vectorize:
            ir_text = lib.get_source("ll")
            assert "@expf" not in ir_text and "@tanhf" not in ir_text and "@erff" not in ir_text
            assert "<16 x float>" in ir_text
    scalar, vector = results
    np.testing.assert_array_equal(scalar, vector)
    assert np.array_equal(np.isnan(vector), np.isnan(want)) and np.array_equal(np.isinf(vector), np.isinf(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(vector[finite], want[finite], rtol=5e-7, atol=1e-37)
