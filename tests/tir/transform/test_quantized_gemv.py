"""The quantized dequantize-GEMV kernels of ``relax.transform.QuantizeLinearWeights`` and their
default schedules: packed int4 (``schedule_int4_gemv``) and int8 with the scale applied after the
reduction (``schedule_gemv``), against numpy on seeded random weights, and their LLVM IR vectorized."""

from __future__ import annotations

import re

import numpy as np
import pytest

import minitvm
import minitvm.tir.transform.quantized_gemv as qg
from minitvm import te
from minitvm.relax.transform.quantize_weights import (
    _nt_matmul_int4_te,
    _nt_matmul_int8_te,
    pack_int4,
    quantize_int8,
    unpack_int4,
)
from minitvm.tir import IntImm, Schedule
from minitvm.tir.transform.default_schedule import apply_default_schedule
from minitvm.tir.transform.quantized_gemv import schedule_int4_gemv
from minitvm.tir.vector_unit import AVX512


@pytest.fixture(autouse=True)
def avx512():
    """16-lane vectors, so that the structures read the same on every machine."""
    with AVX512:
        yield


def _build(func):
    return minitvm.build(func.with_attr("global_symbol", "main"), target="llvm")


def _run(lib, inputs, out_shape):
    args = [minitvm.nd.array(a) for a in (*inputs, np.zeros(out_shape, "float32"))]
    lib["main"](*args)
    return args[-1].numpy()


def _int4_func(x, packed, scales, group_size, bias=False):
    args = [te.placeholder(a.shape, str(a.dtype)) for a in (x, packed, scales)]
    out = _nt_matmul_int4_te(*args, group_size)
    if not bias:
        return te.create_prim_func([*args, out])
    b = te.placeholder((out.shape[-1],), "float32", name="b")
    added = te.compute(out.shape, lambda *i: out[i] + b[i[-1]], name="T_add")
    relu = te.compute(out.shape, lambda *i: te.max(added[i], 0.0), name="relu")
    return te.create_prim_func([*args, b, relu])


@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
@pytest.mark.parametrize("n, k, group_size, rows, bias", [
    (128, 256, 32, (1, 1), False),  # tiles of 64 rows: four vectors; a group's 4 words unrolled
    (192, 128, 64, (1,), True),  # 8 words a group (a loop), then bias and relu after each tile
    (20, 96, 32, (3,), False),  # 20 rows: tiles of 4, a few side by side; three rows of x
])
def test_int4_gemv_matches_numpy(n, k, group_size, rows, bias, parallel, monkeypatch):
    if parallel:
        monkeypatch.setattr(qg, "INT4_GEMV_PARALLEL_WORK", 0)
    rng = np.random.default_rng(60)
    # magnitudes across 8 decades: the x scaled by 16**-i per nibble stays exact
    x = (rng.standard_normal((*rows, k)) * 10.0 ** rng.integers(-4, 4, (*rows, k))).astype("float32")
    packed, scales = pack_int4(rng.standard_normal((n, k)).astype("float32"), group_size)
    b = rng.standard_normal(n).astype("float32")
    func = apply_default_schedule(_int4_func(x, packed, scales, group_size, bias))
    text = func.script()
    assert func.attrs.get("tir.is_scheduled") and "_rf" not in text, text
    assert re.search(r'int4_group_dot = T\.(sblock_)?alloc_buffer\(.*scope="local"', text), text
    assert f"T.vectorized({min(16, packed.shape[2])})" in text and ("T.parallel" in text) == parallel, text
    want = x @ unpack_int4(packed, scales, group_size).astype("float64").T
    inputs = [x, packed, scales] + ([b] if bias else [])
    got = _run(_build(func), inputs, (*rows, n))
    if bias:
        want = np.maximum(want + b, 0)
    scale = np.abs(x).astype("float64") @ np.abs(unpack_int4(packed, scales, group_size)).T
    assert np.all(np.abs(got - want) <= 1e-5 * (scale + np.abs(want)) + 1e-30)


def test_int4_gemv_llvm_ir_is_vectorized():
    """A nibble of 16 rows at once: a 16 x i32 mask (or the top nibble's shift), a conversion
    and a multiply-add on 16 floats; one 16-word load per word of a group, none per nibble."""
    rng = np.random.default_rng(61)
    x = rng.standard_normal((1, 256)).astype("float32")
    packed, scales = pack_int4(rng.standard_normal((128, 256)).astype("float32"), 32)
    ir = _build(apply_default_schedule(_int4_func(x, packed, scales, 32))).get_source("ll")

    def splat(value):  # LLVM's newer ``splat (i32 v)`` or a constant vector
        return rf"(splat \(i32 {value}\)|<i32 {value}(, i32 {value})*>)"
    assert re.search(r"= and <16 x i32> %\S+, " + splat(240), ir), ir  # nibble 1 masked in place
    assert re.search(r"= lshr <16 x i32> %\S+, " + splat(28), ir), ir  # nibble 7 shifted down
    assert re.search(r"= [su]itofp (nneg )?<16 x i32> %\S+ to <16 x float>", ir), ir
    assert re.search(r"= fmul contract <16 x float>", ir) and re.search(r"= fadd contract <16 x float>", ir), ir
    assert len(re.findall(r"= load <16 x i32>", ir)) == 16  # 4 words x 4 vectors of a 64-row tile, once each


def test_int4_rule_declines_other_kernels():
    x, w = te.placeholder((1, 64), name="x"), te.placeholder((16, 64), name="w")
    r = te.reduce_axis((0, 64), "k")
    gemv = te.compute((1, 16), lambda i, j: te.sum(x[i, r] * w[j, r], axis=r), name="NT_matmul")
    assert not schedule_int4_gemv(Schedule(te.create_prim_func([x, w, gemv])))


@pytest.mark.parametrize("rows", [1, 3])
def test_int8_scale_after_the_reduction(rows):
    """Zero point 0 (the pass's int8): the loop converts and multiplies, the scale comes after."""
    rng = np.random.default_rng(62)
    x = rng.standard_normal((rows, 128)).astype("float32")
    wq, scale = quantize_int8(rng.standard_normal((48, 128)).astype("float32"))
    args = [te.placeholder(a.shape, str(a.dtype)) for a in (x, wq, scale)]
    func = apply_default_schedule(te.create_prim_func([*args, _nt_matmul_int8_te(*args, IntImm("int8", 0))]))
    text = func.script()
    assert re.search(r"_rf = T\.(sblock_)?alloc_buffer", text) and "T.vectorized(16)" in text, text
    rf_update = text[text.index('T.sblock("NT_matmul_q_rf_update")'):text.index('T.sblock("NT_matmul_q")')]
    assert "placeholder_2" not in rf_update  # the scale is read after the reduction only
    got = _run(_build(func), [x, wq, scale], (rows, 48))
    np.testing.assert_allclose(got, x @ (wq * scale[:, None]).T, rtol=1e-5, atol=1e-5)
