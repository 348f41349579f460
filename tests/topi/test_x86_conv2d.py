"""topi.x86.conv2d_nchw_packed: the packed-weight convolution and its register-tiled schedule."""

from __future__ import annotations

import re

import numpy as np
import pytest

import minitvm
from minitvm import te, tir, topi
from minitvm.tir.vector_unit import AVX2, AVX512
from minitvm.topi.x86 import conv2d_nchw_packed, pack_conv2d_weight, schedule_conv2d_nchw_packed

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(7)


def test_pack_puts_a_block_of_output_channels_last():
    w = RNG.standard_normal((32, 3, 2, 2)).astype("float32")
    p = pack_conv2d_weight(w)
    assert p.shape == (2, 3, 2, 2, 16) and p.flags.c_contiguous
    assert p[1, 2, 0, 1, 5] == w[16 + 5, 2, 0, 1]
    assert pack_conv2d_weight(w[:24]).shape == (3, 3, 2, 2, 8)  # 24 channels: blocks of 8
    with pytest.raises(ValueError, match="not a multiple of the block 16"):
        pack_conv2d_weight(w[:24], block=16)


def _schedule(batch, cin, cout, k, stride, hw, relu):
    X = te.placeholder((batch, cin, hw, hw), "float32", name="X")
    W = te.placeholder((cout // (16 if cout % 16 == 0 else 8), cin, k, k, 16 if cout % 16 == 0 else 8), "float32",
                       name="W")
    Y = conv2d_nchw_packed(X, W, stride, k // 2)
    out = topi.nn.relu(Y) if relu else Y
    sch = tir.Schedule(minitvm.IRModule({"main": te.create_prim_func([X, W, out])}))
    assert schedule_conv2d_nchw_packed(sch)
    return sch


def _build(*args):
    sch = _schedule(*args)
    return sch, minitvm.build(sch.mod, target="llvm")


@pytest.mark.parametrize("batch, cin, cout, k, stride, hw, relu", [
    (1, 3, 16, 3, 2, 20, True),    # a stem: 3 channels, strided
    (2, 16, 16, 3, 1, 12, True),   # a basic-block conv, batch 2
    (1, 8, 32, 1, 2, 10, False),   # a strided 1x1 projection: a packed matmul, two channel blocks
    (1, 5, 24, 5, 1, 9, False),    # 24 channels: blocks of 8, odd sizes and window
])
def test_packed_conv_matches_torch(batch, cin, cout, k, stride, hw, relu):
    sch, lib = _build(batch, cin, cout, k, stride, hw, relu)
    x = RNG.standard_normal((batch, cin, hw, hw)).astype("float32")
    w = RNG.standard_normal((cout, cin, k, k)).astype("float32")
    want = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), stride=stride, padding=k // 2)
    want = (torch.relu(want) if relu else want).numpy()
    out = minitvm.nd.empty(want.shape, "float32")
    lib(minitvm.nd.array(x), minitvm.nd.array(pack_conv2d_weight(w)), out)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("unit, columns", [(AVX512, 16), (AVX2, 4)], ids=["avx512", "avx2"])
def test_schedule_is_a_register_tile_with_vector_channels(unit, columns):
    with unit:  # the tile is sized for the vector unit in scope (the host's when none is)
        text = _schedule(1, 16, 32, 3, 1, 16, True).mod["main"].script()
    assert re.search(r"oo_1 in T.vectorized\((T.int64\()?16", text)  # o1: one weight vector per step
    # x1: AVX-512, 16 columns of one zmm = 16 accumulators; AVX2, 4 columns of two ymm = 8
    assert re.search(rf"xx_1 in T.unroll\((T.int64\()?{columns}\b", text), text
    assert 'scope="local"' in text and "T.parallel" not in text  # 1.2M multiply-adds: one thread is faster
    assert "T.parallel" in _schedule(4, 16, 32, 3, 1, 16, True).mod["main"].script()  # 4.7M: two threads


def test_rule_declines_other_kernels():
    X = te.placeholder((1, 4, 8, 8), "float32", name="X")
    W = te.placeholder((8, 4, 3, 3), "float32", name="W")
    f = te.create_prim_func([X, W, topi.nn.conv2d_nchw(X, W, 1, 1)])
    assert schedule_conv2d_nchw_packed(tir.Schedule(minitvm.IRModule({"main": f}))) is False
