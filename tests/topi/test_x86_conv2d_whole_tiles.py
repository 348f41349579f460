"""topi.x86.conv2d_nchw_packed rounds a row up to whole register tiles, the added columns not
written back (``_tile_columns_added``)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import minitvm
from minitvm import te, tir, topi
from minitvm.tir.vector_unit import AVX2, AVX512
from minitvm.topi.x86 import conv2d_nchw_packed, pack_conv2d_weight, schedule_conv2d_nchw_packed

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(17)


def _build(batch, cin, cout, k, stride, hw):
    w = RNG.standard_normal((cout, cin, k, k)).astype("float32")
    packed = pack_conv2d_weight(w)
    X = te.placeholder((batch, cin, hw, hw), "float32", name="X")
    W = te.placeholder(packed.shape, "float32", name="W")
    out = topi.nn.relu(conv2d_nchw_packed(X, W, stride, 0))
    sch = tir.Schedule(minitvm.IRModule({"main": te.create_prim_func([X, W, out])}))
    assert schedule_conv2d_nchw_packed(sch)
    return sch.mod["main"].script(), minitvm.build(sch.mod, target="llvm"), w, packed


@pytest.mark.parametrize("batch, cin, cout, k, stride, hw, rows", [
    (8, 1, 32, 3, 1, 28, True),    # MNIST: 26 columns -> 32, rows of two vectors
    (1, 1, 32, 3, 1, 28, True),
    (2, 16, 16, 3, 1, 15, True),   # 13 -> 16 (AVX2), one tile of a row
    (2, 16, 16, 3, 2, 39, False),  # stride 2, 19 columns: AVX2 tiles of 8 columns (24)
    (1, 1, 16, 3, 1, 14, False),   # 12 columns: a third more would be added, none are
])
@pytest.mark.parametrize("unit", [AVX512, AVX2], ids=["avx512", "avx2"])
def test_rounded_rows_match_torch(unit, batch, cin, cout, k, stride, hw, rows):
    x = RNG.standard_normal((batch, cin, hw, hw)).astype("float32")
    with unit:
        text, lib, w, packed = _build(batch, cin, cout, k, stride, hw)
    if unit is AVX2 and rows:  # the tile along the row: accumulators read back in NCHW order, no transpose
        assert re.search(r"xx_2 in T.vectorized\((T.int64\()?8\)", text), text
        local = re.search(r"conv2d_nchw_packed_local = T.sblock_alloc_buffer\(\((.*)\), scope", text).group(1)
        assert int(local.split(",")[-1]) % 16 == 0 and "conv2d_nchw_packed_crop" not in text, text
    want = torch.relu(torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), stride=stride)).numpy()
    out = minitvm.nd.empty(want.shape, "float32")
    lib(minitvm.nd.array(x), minitvm.nd.array(packed), out)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4)


def test_only_short_additions_at_stride_one_make_rows():
    """Stride 2 would read the added columns through the deinterleaving padding copy (measured
    2x slower on wav2vec2's 39 columns): no rows there; a 1-channel, 10-tap window is too short
    a reduction to pay for tiles of a prime width."""
    from minitvm.topi.x86.conv2d import _tile_columns_added

    with AVX2:
        assert _tile_columns_added(26, 8, 1, 9) == 6
        assert _tile_columns_added(39, 8, 2, 48) == 0  # 13 columns a tile already
        assert _tile_columns_added(19, 8, 2, 48) == 5
        assert _tile_columns_added(79, 8, 5, 10) == 0
        assert _tile_columns_added(12, 8, 1, 9) == 0
