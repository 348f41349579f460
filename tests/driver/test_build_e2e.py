"""End to end: TVMScript -> lowering -> LLVM (and the interpreter) -> numbers that match numpy/torch.

The kernels are the MLC course's first examples, written as a learner writes them.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm.script import ir as I
from minitvm.script import tir as T

RNG = np.random.default_rng(0)


def _targets():
    out = ["llvm"]
    try:
        import minitvm.target.interpreter  # noqa: F401
        out.append("python")
    except ImportError:
        pass
    return out


@I.ir_module
class MMRelu:
    @T.prim_func
    def mm_relu(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"),
                C: T.Buffer((128, 128), "float32")):
        T.func_attr({"global_symbol": "mm_relu", "tir.noalias": True})
        Y = T.alloc_buffer((128, 128), dtype="float32")
        for i, j, k in T.grid(128, 128, 128):
            with T.block("Y"):
                vi = T.axis.spatial(128, i)
                vj = T.axis.spatial(128, j)
                vk = T.axis.reduce(128, k)
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
        for i, j in T.grid(128, 128):
            with T.block("C"):
                vi = T.axis.spatial(128, i)
                vj = T.axis.spatial(128, j)
                C[vi, vj] = T.max(Y[vi, vj], T.float32(0))


@T.prim_func
def broadcast_add(A: T.Buffer((4, 4), "int64"), B: T.Buffer((4,), "int64"), C: T.Buffer((4, 4), "int64")):
    T.func_attr({"global_symbol": "broadcast_add", "tir.noalias": True})
    for i, j in T.grid(4, 4):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] + B[vj]


@T.prim_func
def conv2d(X: T.Buffer((1, 1, 8, 8), "int64"), K: T.Buffer((2, 1, 3, 3), "int64"),
           Y: T.Buffer((1, 2, 6, 6), "int64")):
    T.func_attr({"global_symbol": "conv2d", "tir.noalias": True})
    for b, k, i, j, q, di, dj in T.grid(1, 2, 6, 6, 1, 3, 3):
        with T.block("Y"):
            vb, vk, vi, vj, vq, vdi, vdj = T.axis.remap("SSSSRRR", [b, k, i, j, q, di, dj])
            with T.init():
                Y[vb, vk, vi, vj] = T.int64(0)
            Y[vb, vk, vi, vj] = Y[vb, vk, vi, vj] + X[vb, vq, vi + vdi, vj + vdj] * K[vk, vq, vdi, vdj]


@T.prim_func
def bmm_relu(A: T.Buffer((16, 128, 128), "float32"), B: T.Buffer((16, 128, 128), "float32"),
             C: T.Buffer((16, 128, 128), "float32")):
    T.func_attr({"global_symbol": "bmm_relu", "tir.noalias": True})
    Y = T.alloc_buffer((16, 128, 128), "float32")
    for n, i, j, k in T.grid(16, 128, 128, 128):
        with T.block("Y"):
            vn, vi, vj, vk = T.axis.remap("SSSR", [n, i, j, k])
            with T.init():
                Y[vn, vi, vj] = T.float32(0)
            Y[vn, vi, vj] = Y[vn, vi, vj] + A[vn, vi, vk] * B[vn, vk, vj]
    for n, i, j in T.grid(16, 128, 128):
        with T.block("C"):
            vn, vi, vj = T.axis.remap("SSS", [n, i, j])
            C[vn, vi, vj] = T.max(Y[vn, vi, vj], T.float32(0))


@pytest.mark.parametrize("target", _targets())
def test_mm_relu(target):
    lib = minitvm.build(MMRelu, target=target)
    a = RNG.standard_normal((128, 128)).astype("float32")
    b = RNG.standard_normal((128, 128)).astype("float32")
    c = minitvm.nd.empty((128, 128), "float32")
    lib["mm_relu"](minitvm.nd.array(a), minitvm.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("target", _targets())
def test_broadcast_add(target):
    lib = minitvm.build(broadcast_add, target=target)
    a = RNG.integers(-1000, 1000, (4, 4), dtype="int64")
    b = RNG.integers(-1000, 1000, (4,), dtype="int64")
    c = np.zeros((4, 4), "int64")
    lib["broadcast_add"](a, b, c)
    np.testing.assert_array_equal(c, a + b)


@pytest.mark.parametrize("target", _targets())
def test_conv2d_int64(target):
    lib = minitvm.build(conv2d, target=target)
    x = RNG.integers(-50, 50, (1, 1, 8, 8), dtype="int64")
    k = RNG.integers(-50, 50, (2, 1, 3, 3), dtype="int64")
    y = np.zeros((1, 2, 6, 6), "int64")
    lib["conv2d"](x, k, y)
    want = np.zeros_like(y)
    for co in range(2):
        for i in range(6):
            for j in range(6):
                want[0, co, i, j] = (x[0, 0, i:i + 3, j:j + 3] * k[co, 0]).sum()
    np.testing.assert_array_equal(y, want)


def test_bmm_relu_matches_torch():
    torch = pytest.importorskip("torch")
    lib = minitvm.build(bmm_relu, target="llvm")
    a = torch.randn(16, 128, 128, generator=torch.Generator().manual_seed(0))
    b = torch.randn(16, 128, 128, generator=torch.Generator().manual_seed(1))
    c = torch.empty(16, 128, 128)
    lib["bmm_relu"](a, b, c)  # torch tensors go in through DLPack, results land in c
    torch.testing.assert_close(c, torch.relu(torch.bmm(a, b)), rtol=1e-4, atol=1e-4)


def test_llvm_and_interpreter_agree_on_mm_relu():
    if "python" not in _targets():
        pytest.skip("interpreter not available")
    a = RNG.standard_normal((128, 128)).astype("float32")
    b = RNG.standard_normal((128, 128)).astype("float32")
    outs = []
    for target in ("llvm", "python"):
        c = np.zeros((128, 128), "float32")
        minitvm.build(MMRelu, target=target)["mm_relu"](a, b, c)
        outs.append(c)
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-4, atol=1e-4)
