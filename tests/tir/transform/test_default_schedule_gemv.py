"""DefaultCPUSchedule's GEMV rule: batch-1 matrix-vector products over float and int8-decoded
weights, with and without an epilogue, against numpy on seeded random data (packed int4 has a
rule of its own: test_quantized_gemv.py)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import minitvm
import minitvm.tir.transform.default_schedule as ds
from minitvm import te
from minitvm.relax.transform.quantize_weights import _nt_matmul_int8_te
from minitvm.tir import Schedule
from minitvm.tir.transform.default_schedule import apply_default_schedule, schedule_gemv
from minitvm.tir.vector_unit import AVX512


@pytest.fixture(autouse=True)
def avx512():
    """16-lane vectors, so that the structures read the same on every machine."""
    with AVX512:
        yield


@pytest.fixture(params=[False, True], ids=["serial", "parallel"])
def parallel(request, monkeypatch):
    """Each kernel below is small (serial by default); at threshold 0 its columns run on threads."""
    if request.param:
        monkeypatch.setattr(ds, "GEMV_PARALLEL_WORK", 0)
    return request.param


def _run(func, inputs, out_shape):
    lib = minitvm.build(func.with_attr("global_symbol", "main"), target="llvm")
    args = [minitvm.nd.array(a) for a in (*inputs, np.zeros(out_shape, "float32"))]
    lib["main"](*args)
    return args[-1].numpy()


def _scheduled(func, parallel):
    sched = apply_default_schedule(func)
    text = sched.script()
    assert sched.attrs.get("tir.is_scheduled") and 'scope="local"' in text, text
    assert re.search(r"_rf = T\.(sblock_)?alloc_buffer", text), text  # either era's spelling
    assert "T.vectorized(16)" in text and ("T.parallel" in text) == parallel, text
    return sched


def _float_gemv(n, k, rows=(1,), epilogue=True):
    x = te.placeholder((*rows, k), "float32", name="x")
    w = te.placeholder((n, k), "float32", name="w")
    b = te.placeholder((n,), "float32", name="b")
    r = te.reduce_axis((0, k), "k")
    y = te.compute((*rows, n), lambda *i: te.sum(x[(*i[:-1], r)] * w[i[-1], r], axis=r), name="NT_matmul")
    if not epilogue:
        return te.create_prim_func([x, w, y])
    out = te.compute(y.shape, lambda *i: te.max(y[i] + b[i[-1]], 0.0), name="relu")
    return te.create_prim_func([x, w, b, out])


@pytest.mark.parametrize("rows", [(1,), (1, 1)], ids=["2-d", "3-d"])
def test_float_gemv_with_bias_relu(rows, parallel):
    rng = np.random.default_rng(50)
    x = rng.standard_normal((*rows, 96)).astype("float32")
    w, b = rng.standard_normal((40, 96)).astype("float32"), rng.standard_normal(40).astype("float32")
    got = _run(_scheduled(_float_gemv(40, 96, rows), parallel), [x, w, b], (*rows, 40))
    np.testing.assert_allclose(got, np.maximum(x @ w.T + b, 0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("k, lanes, accumulators", [(256, 16, 4), (96, 16, 2), (48, 16, 1), (40, 8, 1)])
def test_float_gemv_reads_one_weight_row_at_a_time(k, lanes, accumulators, parallel):
    """Rows side by side defeat the prefetcher: the output column loop is the outermost, each
    row of w is read whole in ``accumulators`` vectors of ``lanes``, summed as a tree."""
    rng = np.random.default_rng(54)
    x, w = rng.standard_normal((1, k)).astype("float32"), rng.standard_normal((24, k)).astype("float32")
    b = rng.standard_normal(24).astype("float32")
    sched = apply_default_schedule(_float_gemv(24, k))
    text = sched.script()
    assert re.search(rf"NT_matmul_rf_rf = T\.(sblock_)?alloc_buffer\(\(1, 24, {accumulators}, {lanes}\)", text), text
    assert re.search(r"for i1 in T\.parallel\(24\)" if parallel else r"for i1 in range\(24\)", text), text
    assert f"T.vectorized({lanes})" in text and "i1_1" not in text, text  # the column loop is not split
    got = _run(sched, [x, w, b], (1, 24))
    np.testing.assert_allclose(got, np.maximum(x @ w.T + b, 0), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("rows", [1, 3])
def test_int8_decoded_gemv(rows, parallel):
    """A decoded weight serves a few rows at once: 3 rows x 2 columns of accumulators."""
    rng = np.random.default_rng(51)
    x = rng.standard_normal((rows, 128)).astype("float32")
    wq = rng.integers(-128, 128, size=(24, 128)).astype("int8")
    scale, zp = rng.uniform(0.01, 0.1, 24).astype("float32"), rng.integers(-5, 5, 24).astype("int8")
    args = [te.placeholder(a.shape, str(a.dtype)) for a in (x, wq, scale, zp)]
    func = te.create_prim_func([*args, _nt_matmul_int8_te(*args)])
    got = _run(_scheduled(func, parallel), [x, wq, scale, zp], (rows, 24))
    want = x @ ((wq.astype("float32") - zp[:, None]) * scale[:, None]).T
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_declines_rows_short_k_and_strided_reads():
    assert not schedule_gemv(Schedule(_float_gemv(16, 64, rows=(2,))))  # 2 rows: schedule_matmul_nt's
    assert not schedule_gemv(Schedule(_float_gemv(16, 30, epilogue=False)))  # no vector divides K
    x, w = te.placeholder((1, 64), name="x"), te.placeholder((64, 16), name="w")
    r = te.reduce_axis((0, 64), "k")
    strided = te.compute((1, 16), lambda i, j: te.sum(x[i, r] * w[r, j], axis=r), name="matmul")
    assert not schedule_gemv(Schedule(te.create_prim_func([x, w, strided])))  # w read down a column
    # a declined function still gets a correct schedule from the other rules
    rng = np.random.default_rng(53)
    xs, ws = rng.standard_normal((1, 30)).astype("float32"), rng.standard_normal((16, 30)).astype("float32")
    got = _run(apply_default_schedule(_float_gemv(16, 30, epilogue=False)), [xs, ws], (1, 16))
    np.testing.assert_allclose(got, xs @ ws.T, rtol=1e-5, atol=1e-5)
