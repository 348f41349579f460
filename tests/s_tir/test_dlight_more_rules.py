"""dlight's LowBatchGEMV, Transpose and RMSNorm GPU rules (TVM's dlight tutorial lists them): each
takes its kind of kernel, declines the others, and the scheduled kernel computes numpy's numbers on
the emulated GPU."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import te
from minitvm.s_tir import dlight as dl
from minitvm.target import Target
from minitvm.tir.stmt_functor import block_realizes
from tests.s_tir.test_dlight import _layer_norm, _rms_norm, _run_gpu, _softmax, _unbound_blocks

GPU = Target("cuda-emulated")


def _low_batch_matmul(batch: int = 3):
    # a linear layer (weight stored [out, in]) on a few rows: decode of `batch` sequences
    x, w = te.placeholder((batch, 64), name="x"), te.placeholder((48, 64), name="w")
    k = te.reduce_axis((0, 64), name="k")
    y = te.compute((batch, 48), lambda b, n: te.sum(x[b, k] * w[n, k], axis=k), name="y")
    return te.create_prim_func([x, w, y]), [(batch, 64), (48, 64)], (batch, 48), lambda a, b: a @ b.T


def _transpose():
    a = te.placeholder((40, 24), name="A")
    b = te.compute((24, 40), lambda i, j: a[j, i], name="T")
    return te.create_prim_func([a, b]), [(40, 24)], (24, 40), lambda x: x.T


CASES = {"low_batch_gemv": (_low_batch_matmul, dl.gpu.LowBatchGEMV), "transpose": (_transpose, dl.gpu.Transpose),
         "rms_norm": (_rms_norm, dl.gpu.RMSNorm)}


@pytest.mark.parametrize("case", sorted(CASES))
def test_rule_schedules_its_kernel_and_the_numbers_match(case):
    build, rule = CASES[case]
    func, in_shapes, out_shape, ref = build()
    sch = rule().apply(func, GPU, False)
    assert sch is not None and _unbound_blocks(sch.mod["main"]) == []
    inputs, got = _run_gpu(sch.mod["main"], in_shapes, out_shape)
    np.testing.assert_allclose(got, ref(*inputs), rtol=1e-4, atol=1e-5)


def test_rules_decline_other_kinds_and_cpu_targets():
    assert dl.gpu.RMSNorm().apply(_layer_norm()[0], GPU, False) is None  # two reductions
    assert dl.gpu.RMSNorm().apply(_softmax()[0], GPU, False) is None
    assert dl.gpu.Transpose().apply(_rms_norm()[0], GPU, False) is None
    assert dl.gpu.LowBatchGEMV().apply(_transpose()[0], GPU, False) is None
    # a batch over the bucket is a GEMM, not a low-batch GEMV; batch 1 is GEMV's
    assert dl.gpu.LowBatchGEMV(bucket=4).apply(_low_batch_matmul(8)[0], GPU, False) is None
    for build, rule in CASES.values():
        assert rule().apply(build()[0], Target("llvm"), False) is None


def test_transpose_reads_tiles_through_shared_memory():
    sch = dl.gpu.Transpose().apply(_transpose()[0], GPU, False)
    scopes = [b.scope for realize, _ in block_realizes(sch.mod["main"].body)
              for b in realize.block.alloc_buffers]
    assert scopes == ["shared"]
    assert minitvm.build(sch.mod["main"], target="cuda-emulated") is not None
