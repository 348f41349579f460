"""End to end: TVMScript -> lowering -> LLVM (and the interpreter) -> numbers that match numpy/torch.

The kernels are the MLC course's first examples, written as a learner writes them
(minitvm.testing.programs).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import minitvm
from minitvm.testing import programs

RNG = np.random.default_rng(0)
TARGETS = ["llvm", "python"]


@pytest.mark.parametrize("target", TARGETS)
def test_mm_relu(target):
    lib = minitvm.build(programs.mm_relu, target=target)
    a = RNG.standard_normal((128, 128)).astype("float32")
    b = RNG.standard_normal((128, 128)).astype("float32")
    c = minitvm.nd.empty((128, 128), "float32")
    lib["mm_relu"](minitvm.nd.array(a), minitvm.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("target", TARGETS)
def test_broadcast_add(target):
    lib = minitvm.build(programs.broadcast_add, target=target)
    a = RNG.standard_normal((4, 8)).astype("float32")
    b = RNG.standard_normal((8,)).astype("float32")
    c = np.zeros((4, 8), "float32")
    lib["broadcast_add"](a, b, c)
    np.testing.assert_allclose(c, a + b, rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_conv2d_int64(target):
    lib = minitvm.build(programs.conv2d_int64, target=target)
    x = RNG.integers(-50, 50, (1, 1, 8, 8), dtype="int64")
    k = RNG.integers(-50, 50, (2, 1, 3, 3), dtype="int64")
    y = np.zeros((1, 2, 6, 6), "int64")
    lib["conv2d_int64"](x, k, y)
    want = np.zeros_like(y)
    for co in range(2):
        for i in range(6):
            for j in range(6):
                want[0, co, i, j] = (x[0, 0, i:i + 3, j:j + 3] * k[co, 0]).sum()
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("target", TARGETS)
def test_batch_matmul_relu(target):
    lib = minitvm.build(programs.batch_matmul_relu, target=target)
    a = RNG.standard_normal((2, 16, 32)).astype("float32")
    b = RNG.standard_normal((2, 32, 8)).astype("float32")
    d = np.zeros((2, 16, 8), "float32")
    lib["batch_matmul_relu"](a, b, d)
    np.testing.assert_allclose(d, np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)


def test_bmm_relu_matches_torch():
    lib = minitvm.build(programs.BmmRelu, target="llvm")
    a = torch.randn(16, 128, 128, generator=torch.Generator().manual_seed(0))
    b = torch.randn(16, 128, 128, generator=torch.Generator().manual_seed(1))
    c = torch.empty(16, 128, 128)
    lib["bmm_relu"](a, b, c)  # torch tensors go in through DLPack, results land in c
    torch.testing.assert_close(c, torch.relu(torch.bmm(a, b)), rtol=1e-4, atol=1e-4)


def test_llvm_and_interpreter_agree_on_mm_relu():
    a = RNG.standard_normal((128, 128)).astype("float32")
    b = RNG.standard_normal((128, 128)).astype("float32")
    outs = []
    for target in TARGETS:
        c = np.zeros((128, 128), "float32")
        minitvm.build(programs.mm_relu, target=target)["mm_relu"](a, b, c)
        outs.append(c)
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-4, atol=1e-4)
