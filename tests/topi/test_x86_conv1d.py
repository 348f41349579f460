"""topi.x86.conv1d_ncw_packed: a 1-d convolution as the packed 2-d kernel over one row."""

from __future__ import annotations

import re

import numpy as np
import pytest

import minitvm
from minitvm import te, tir, topi
from minitvm.tir.vector_unit import AVX2, AVX512
from minitvm.topi.x86 import conv1d_ncw_packed, pack_conv1d_weight, schedule_conv2d_nchw_packed

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(13)


def _schedule(batch, cin, cout, k, stride, padding, dilation, width, gelu):
    w = RNG.standard_normal((cout, cin, k)).astype("float32")
    packed = pack_conv1d_weight(w)
    X = te.placeholder((batch, cin, width), "float32", name="X")
    W = te.placeholder(packed.shape, "float32", name="W")
    Y = conv1d_ncw_packed(X, W, stride, padding, dilation)
    out = topi.nn.relu(Y) if gelu else Y
    sch = tir.Schedule(minitvm.IRModule({"main": te.create_prim_func([X, W, out])}))
    assert schedule_conv2d_nchw_packed(sch)
    return sch, w, packed


@pytest.mark.parametrize("batch, cin, cout, k, stride, padding, dilation, width, relu", [
    (8, 1, 16, 10, 5, 0, 1, 400, False),  # wav2vec2's first layer: 79 columns (a prime), one channel
    (8, 16, 16, 3, 2, 0, 1, 79, True),    # 39 columns: tiles of 13
    (1, 16, 16, 3, 2, 0, 1, 39, True),    # 19 columns: rounded up to whole tiles, batch 1
    (8, 8, 32, 5, 1, 2, 1, 19, False),    # padded, stride 1, odd width
    (1, 16, 16, 3, 1, 2, 2, 33, True),    # dilated
    (2, 4, 64, 7, 2, 3, 1, 51, False),    # 64 channels: blocks of one vector all the same
    (8, 32, 64, 3, 1, 1, 1, 64, True),    # rows of whole pairs of vectors: the tile along the row
    (1, 8, 16, 4, 2, (1, 2), 1, 20, False),  # padding before and after apart
])
@pytest.mark.parametrize("unit", [AVX512, AVX2], ids=["avx512", "avx2"])
def test_packed_conv1d_matches_torch(unit, batch, cin, cout, k, stride, padding, dilation, width, relu):
    x = RNG.standard_normal((batch, cin, width)).astype("float32")
    with unit:
        sch, w, packed = _schedule(batch, cin, cout, k, stride, padding, dilation, width, relu)
        lib = minitvm.build(sch.mod, target="llvm")
    before, after = (padding, padding) if isinstance(padding, int) else padding
    xt = torch.nn.functional.pad(torch.from_numpy(x), (before, after))
    want = torch.nn.functional.conv1d(xt, torch.from_numpy(w), stride=stride, dilation=dilation)
    want = (torch.relu(want) if relu else want).numpy()
    out = minitvm.nd.empty(want.shape, "float32")
    lib(minitvm.nd.array(x), minitvm.nd.array(packed), out)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("unit, tile, pad", [
    (AVX512, r"xx_2 in T.vectorized\(16\)", "(1, 16, 1, 2, 33)"),  # 32 columns: the tile along the row
    (AVX2, r"xx_1 in T.unroll\(8\)", "(1, 16, 1, 49)"),  # 24: 3 tiles of 8 columns x a vector of channels
], ids=["avx512", "avx2"])
def test_a_prime_width_is_rounded_up_to_whole_register_tiles(unit, tile, pad):
    """19 output columns have no divisor to tile by: the kernel computes whole tiles of columns
    (AVX-512 two vectors, 32; AVX2 8, 24) over zeros added to the padding (stride 2: 2 x 31 + 3
    and 2 x 23 + 3 input columns) and writes back the 19; the input is read in place (no copy as
    a row)."""
    with unit:
        text = _schedule(1, 16, 16, 3, 2, 0, 1, 39, True)[0].mod["main"].script()
    assert "conv1d_as_row" not in text and "conv2d_nchw_packed_local" in text, text
    assert re.search(tile, text), text
    assert f"pad_temp = T.sblock_alloc_buffer({pad})" in text, text
    assert re.search(r"T.where\(.* < 19\)|T.vectorized\(19\)", text), text  # the write-back: 19 columns


def test_a_block_of_two_vectors_is_halved():
    """64 channels of 48 multiply-adds would tile flat pixels on AVX2 (16 channels); a row keeps
    one vector of them."""
    w = RNG.standard_normal((64, 16, 3)).astype("float32")
    with AVX2:
        assert pack_conv1d_weight(w).shape == (8, 16, 1, 3, 8)
    with AVX512:
        assert pack_conv1d_weight(w).shape == (4, 16, 1, 3, 16)


def test_rejects_a_weight_of_more_than_one_row():
    X = te.placeholder((1, 4, 10), "float32", name="X")
    W = te.placeholder((1, 4, 3, 3, 8), "float32", name="W")
    with pytest.raises(ValueError, match="one row"):
        conv1d_ncw_packed(X, W)


def test_rejects_a_block_of_two_vectors():
    """A weight packed for AVX-512 (blocks of 16) in an AVX2 unit, whose block of 16 tiles flat pixels."""
    X = te.placeholder((1, 4, 10), "float32", name="X")
    W = te.placeholder((1, 4, 1, 3, 16), "float32", name="W")
    with AVX2, pytest.raises(ValueError, match="two vectors"):
        conv1d_ncw_packed(X, W)
