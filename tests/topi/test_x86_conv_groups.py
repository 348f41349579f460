"""topi.x86's packed convolutions in groups: each block of output channels within one group,
reading that group's input channels."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import te, tir, topi
from minitvm.tir.vector_unit import AVX2, AVX512
from minitvm.topi.x86 import (
    conv1d_ncw_packed,
    conv2d_nchw_packed,
    pack_conv1d_weight,
    pack_conv2d_weight,
    schedule_conv2d_nchw_packed,
)

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(19)


def _run(unit, x, w, packed, compute, **attrs):
    X = te.placeholder(x.shape, "float32", name="X")
    W = te.placeholder(packed.shape, "float32", name="W")
    with unit:
        out = topi.nn.relu(compute(X, W, **attrs))
        sch = tir.Schedule(minitvm.IRModule({"main": te.create_prim_func([X, W, out])}))
        assert schedule_conv2d_nchw_packed(sch)
        text = sch.mod["main"].script()
        lib = minitvm.build(sch.mod, target="llvm")
    got = minitvm.nd.empty([int(d) for d in out.shape], "float32")
    lib(minitvm.nd.array(x), minitvm.nd.array(packed), got)
    return got.numpy(), text


@pytest.mark.parametrize("batch, cin, cout, k, stride, padding, width, groups", [
    (8, 32, 32, 5, 1, 2, 19, 4),   # wav2vec2's position conv: 4 groups of 8 -> 8
    (1, 32, 32, 5, 1, 2, 19, 4),
    (2, 64, 32, 3, 2, 1, 33, 2),   # groups of 16 output channels: AVX2 two blocks of 8 in each
])
@pytest.mark.parametrize("unit", [AVX512, AVX2], ids=["avx512", "avx2"])
def test_grouped_conv1d_matches_torch(unit, batch, cin, cout, k, stride, padding, width, groups):
    x = RNG.standard_normal((batch, cin, width)).astype("float32")
    w = RNG.standard_normal((cout, cin // groups, k)).astype("float32")
    with unit:
        packed = pack_conv1d_weight(w, groups)
    assert (cout // groups) % packed.shape[-1] == 0  # a block within a group
    got, text = _run(unit, x, w, packed, conv1d_ncw_packed, strides=stride, padding=padding, groups=groups)
    assert "conv2d_nchw_packed_local" in text
    want = torch.relu(torch.nn.functional.conv1d(torch.from_numpy(x), torch.from_numpy(w), stride=stride,
                                                 padding=padding, groups=groups)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("cin, cout, groups, hw", [(16, 32, 2, 10), (64, 128, 2, 9)])  # (the second: flat pixels)
@pytest.mark.parametrize("unit", [AVX512, AVX2], ids=["avx512", "avx2"])
def test_grouped_conv2d_matches_torch(unit, cin, cout, groups, hw):
    x = RNG.standard_normal((2, cin, hw, hw)).astype("float32")
    w = RNG.standard_normal((cout, cin // groups, 3, 3)).astype("float32")
    with unit:
        packed = pack_conv2d_weight(w, groups=groups)
    got, _ = _run(unit, x, w, packed, conv2d_nchw_packed, padding=1, groups=groups)
    want = torch.relu(torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1,
                                                 groups=groups)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_a_block_does_not_straddle_groups():
    w = RNG.standard_normal((32, 8, 3, 3)).astype("float32")
    with AVX512:
        assert pack_conv2d_weight(w, groups=4).shape[-1] == 8  # 8 per group: blocks of 8, not 16
    with pytest.raises(ValueError, match="a group's"):
        pack_conv2d_weight(w, block=16, groups=4)
    X = te.placeholder((1, 16, 10, 10), "float32", name="X")
    with pytest.raises(ValueError, match="in 4 groups"):
        conv2d_nchw_packed(X, te.placeholder((4, 8, 3, 3, 8), "float32", name="W"), groups=4)
