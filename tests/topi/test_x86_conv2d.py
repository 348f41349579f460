"""topi.x86.conv2d_nchw_packed: the packed-weight convolution and its register-tiled schedule."""

from __future__ import annotations

import re

import numpy as np
import pytest

import minitvm
from minitvm import te, tir, topi
from minitvm.testing.pretend_cpu import AVX2_CPU, AVX512_CPU, pretend_cpu
from minitvm.tir.vector_unit import AVX2, AVX512
from minitvm.topi.x86 import conv2d as conv2d_module
from minitvm.topi.x86 import conv2d_nchw_packed, pack_conv2d_weight, schedule_conv2d_nchw_packed
from minitvm.topi.x86.conv2d import packed_block, pixel_tile

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(7)


@pytest.mark.parametrize("unit, block", [(AVX512, 32), (AVX2, 16)], ids=["avx512", "avx2"])
def test_pack_puts_a_block_of_output_channels_last(unit, block):
    """A block is two vectors of the unit in scope when they divide the channels (32 on AVX-512,
    16 on AVX2) and the reduction is long enough, else one, else 8."""
    w = RNG.standard_normal((64, 8, 2, 2)).astype("float32")
    with unit:
        p = pack_conv2d_weight(w)
        assert pack_conv2d_weight(w[:24]).shape == (3, 8, 2, 2, 8)  # 24 channels: blocks of 8
        assert packed_block(48) == packed_block(128, 64) // 2  # fewer than 64 channels: one vector
        # 12 multiply-adds per output: one vector (the flat tiles' write-back would outweigh them)
        assert pack_conv2d_weight(w[:, :3]).shape[-1] == block // 2
    assert p.shape == (64 // block, 8, 2, 2, block) and p.flags.c_contiguous
    assert p[1, 2, 0, 1, 5] == w[block + 5, 2, 0, 1]
    with pytest.raises(ValueError, match="not a multiple of the block 16"):
        pack_conv2d_weight(w[:24], block=16)


def _schedule(batch, cin, cout, k, stride, hw, relu, block=None):
    block = block or packed_block(cout, cin * k * k)  # the unit in scope's
    X = te.placeholder((batch, cin, hw, hw), "float32", name="X")
    W = te.placeholder((cout // block, cin, k, k, block), "float32", name="W")
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
    (2, 16, 16, 3, 1, 32, True),   # rows of two vectors (both units): the tile along the row
    (1, 3, 16, 3, 2, 64, True),    # a strided stem with 32 output columns: rows, deinterleaved input
    (1, 4, 8, 3, 2, 31, False),    # stride 2, odd padded width (33 columns: 17 even, 16 odd), 16 out
    (2, 16, 32, 1, 2, 32, True),   # a strided 1x1 with 16 output columns: AVX2 copies the rows it reads
    (1, 3, 32, 3, 2, 96, True),    # a stem onto 48 columns: AVX-512 tiles one vector x 16 channels along the row
    (2, 5, 24, 3, 2, 31, False),   # onto 16 columns in blocks of 8 (AVX-512: 8 channels x one vector), odd input
])
@pytest.mark.parametrize("unit", [AVX512, AVX2], ids=["avx512", "avx2"])
def test_packed_conv_matches_torch(unit, batch, cin, cout, k, stride, hw, relu):
    """The tiles of both units (one vector of channels by columns, two by flat pixels) on random data."""
    _matches_torch(unit, batch, cin, cout, k, stride, hw, relu)


def _matches_torch(unit, batch, cin, cout, k, stride, hw, relu):
    x = RNG.standard_normal((batch, cin, hw, hw)).astype("float32")
    w = RNG.standard_normal((cout, cin, k, k)).astype("float32")
    with unit:
        _, lib = _build(batch, cin, cout, k, stride, hw, relu)
        packed = pack_conv2d_weight(w)
    want = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), stride=stride, padding=k // 2)
    want = (torch.relu(want) if relu else want).numpy()
    out = minitvm.nd.empty(want.shape, "float32")
    lib(minitvm.nd.array(x), minitvm.nd.array(packed), out)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("unit, block, columns, hw", [(AVX512, 16, 16, 16), (AVX2, 8, 8, 24)], ids=["avx512", "avx2"])
def test_schedule_is_a_register_tile_with_vector_channels(unit, block, columns, hw):
    """Rows that are not whole pairs of vectors (AVX-512: 16 columns, AVX2: 24) keep the tile of
    channel vectors."""
    with unit:  # the tile is sized for the vector unit in scope (the host's when none is)
        text = _schedule(1, 16, 32, 3, 1, hw, True, block).mod["main"].script()
    assert re.search(rf"oo_1 in T.vectorized\((T.int64\()?{block}\b", text)  # o1: one weight vector per step
    # x1: AVX-512, 16 columns of one zmm = 16 accumulators; AVX2, 8 columns of one ymm = 8
    assert re.search(rf"xx_1 in T.unroll\((T.int64\()?{columns}\b", text), text
    assert 'scope="local"' in text


@pytest.mark.parametrize("unit, channels, stride", [(AVX512, 8, 1), (AVX2, 4, 1), (AVX512, 8, 2), (AVX2, 4, 2)],
                         ids=["avx512", "avx2", "avx512-stride2", "avx2-stride2"])
def test_rows_of_two_vectors_tile_along_the_row(unit, channels, stride):
    """Output rows of two whole vectors (32 columns: AVX-512 2 x 16, AVX2 4 x 8 -- AVX2 then
    tiles 4 channels) accumulate along the row: the weight is broadcast, the input row loaded
    as vectors, and the write-back stores rows of the NCHW output (no transpose).  Stride 2
    reads a padding copy with the even and odd columns apart."""
    with unit:
        text = _schedule(1, 8, 16, 3, stride, 32 * stride, True, 16 if unit is AVX512 else 8).mod["main"].script()
    assert re.search(rf"oo_1 in T.unroll\((T.int64\()?{channels}\b", text), text
    assert re.search(r"xx_1 in T.unroll\((T.int64\()?2\b", text), text
    assert re.search(rf"xx_2 in T.vectorized\((T.int64\()?{unit.lanes}\b", text), text
    assert "conv2d_nchw_packed_local[v_i0, v_i1, v_i2, v_i3]" in text, text  # read back in NCHW order
    if stride == 2:
        assert "v_rx % 2, v_xx + v_rx // 2]" in text, text


@pytest.mark.parametrize("unit, channels, vectors, block", [(AVX512, 16, 1, 16), (AVX512, 8, 1, 8), (AVX2, 4, 2, 8)],
                         ids=["avx512", "avx512-block8", "avx2"])
def test_strided_rows_of_odd_vectors_tile_along_the_row(unit, channels, vectors, block):
    """A stride-2 conv onto rows of whole vectors that are not pairs of them (48 columns: 3 AVX-512
    vectors; AVX2's 6 are pairs) tiles along the row on AVX-512 too, one vector of columns by the
    accumulators' worth of channels of the block (16, or all 8 of a block of 8), from the padding
    copy with even and odd columns apart; stride 1 onto the same rows keeps the channel-vector tile."""
    with unit:
        text = _schedule(1, 3, 32, 3, 2, 96, True, block).mod["main"].script()
        stride1 = _schedule(1, 3, 32, 3, 1, 48, True, block).mod["main"].script()
    assert re.search(rf"oo_1 in T.unroll\((T.int64\()?{channels}\b", text), text
    assert re.search(rf"xx_1 in T.unroll\((T.int64\()?{vectors}\b", text), text
    assert re.search(rf"xx_2 in T.vectorized\((T.int64\()?{unit.lanes}\b", text), text
    assert "conv2d_nchw_packed_local[v_i0, v_i1, v_i2, v_i3]" in text, text  # read back in NCHW order
    assert "v_rx % 2, v_xx + v_rx // 2]" in text, text
    if unit is AVX512:
        assert re.search(rf"oo_1 in T.vectorized\((T.int64\()?{block}\b", stride1), stride1


def test_stem_block_is_one_vector_on_avx512_for_an_image_stem():
    """ResNet's 3 -> 64 7x7 stride-2 stem onto 112 columns (whole vectors, not pairs): one vector
    of channels on AVX-512, where :func:`packed_block` alone takes two (flat pixels); None for
    AVX2, more input channels, stride 1, rows of pairs of vectors, an odd padded width."""
    stem = ((64, 3, 7, 7), (2, 2), (3, 3, 3, 3), (1, 1))
    with AVX512:
        assert packed_block(64, 3 * 7 * 7) == 32
        assert conv2d_module.stem_block(*stem, 224) == 16
        assert conv2d_module.stem_block((64, 16, 7, 7), *stem[1:], 224) is None  # not an image's channels
        assert conv2d_module.stem_block(stem[0], (1, 1), *stem[2:], 224) is None
        assert conv2d_module.stem_block(*stem, 256) is None  # 128 columns: pairs of vectors (_row_tile)
        assert conv2d_module.stem_block(*stem, 223) is None  # 229 padded columns: no even/odd halves
    with AVX2:
        assert conv2d_module.stem_block(*stem, 224) is None


def test_stem_tiles_two_rows_along_the_row_and_pads_with_whole_vectors():
    """A stem on AVX-512 (3 -> 16 7x7 stride 2 onto 48 columns, a block of one vector) tiles 8
    channels x 2 output rows x one vector of columns, and its padding copy walks the padded
    buffer (even columns, then odd ones) -- whole-vector stores of a row read at stride 2 --
    instead of scattering each vector of the input row; a stem with more input channels keeps
    16 channels x 1 row."""
    with AVX512:
        text = _schedule(1, 3, 16, 7, 2, 96, True, 16).mod["main"].script()
        other = _schedule(1, 8, 16, 7, 2, 96, True, 16).mod["main"].script()
    assert re.search(r"oo_1 in T.unroll\((T.int64\()?8\b", text), text
    assert re.search(r"yy_1 in T.unroll\((T.int64\()?2\b", text), text
    assert re.search(r"xx_2 in T.vectorized\((T.int64\()?16\b", text), text
    assert re.search(r"pad_temp\[v0, v1, v2, v3, v4\] = .*X\[v0, v1, v2 - 3, v4 \* 2 \+ v3 - 3\]", text), text
    assert re.search(r"oo_1 in T.unroll\((T.int64\()?16\b", other) and "yy_1 in T.unroll" not in other, other
    assert "pad_temp[v_i0, v_i1, v_i2, v_i3 % 2, v_i3 // 2]" in other, other


@pytest.mark.parametrize("batch, cout, hw", [(1, 16, 96), (2, 32, 80), (1, 64, 224)])
def test_stem_rows_match_torch(batch, cout, hw):
    """The stem's tile of two rows (AVX-512, a block of one vector) on random data."""
    x = RNG.standard_normal((batch, 3, hw, hw)).astype("float32")
    w = RNG.standard_normal((cout, 3, 7, 7)).astype("float32")
    with AVX512:
        lib = minitvm.build(_schedule(batch, 3, cout, 7, 2, hw, True, 16).mod, target="llvm")
        packed = pack_conv2d_weight(w, 16)
    want = torch.relu(torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), stride=2, padding=3)).numpy()
    out = minitvm.nd.empty(want.shape, "float32")
    lib(minitvm.nd.array(x), minitvm.nd.array(packed), out)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4)


def test_a_batch_of_whole_images_per_thread_runs_image_by_image(monkeypatch):
    """8 images on 2 threads: the batch loop is the parallel loop and each image's padding is
    computed under it, before its tiles (one parallel region); 3 images do not split evenly and
    keep blocks of rows on threads, each padding its own rows."""
    monkeypatch.setenv("MINITVM_NUM_THREADS", "2")
    with AVX2:
        text = _schedule(8, 16, 16, 3, 1, 32, True).mod["main"].script()
        uneven = _schedule(3, 16, 16, 3, 1, 32, True).mod["main"].script()
    assert text.count("T.parallel") == 1 and re.search(r"for nn in T.parallel\((T.int64\()?8\)", text), text
    assert text.index('T.sblock("pad_temp")') > text.index("for nn in T.parallel"), text
    assert uneven.count("T.parallel") == 1 and "for nn_yy_0_fused in T.parallel" in uneven, uneven
    _matches_torch(AVX2, 8, 16, 16, 3, 1, 32, True)
    _matches_torch(AVX2, 4, 16, 32, 1, 2, 32, False)  # a strided 1x1: its row copy per image


def test_strided_pointwise_conv_copies_the_rows_it_reads():
    """A 1x1 stride-2 convolution whose output rows are a pair of vectors (AVX2: 16 columns)
    reads every other row and column: they are copied out first, and the tile along the row
    loads them as vectors; on AVX-512 (16 columns: one vector) it reads its input in place."""
    with AVX2:
        text = _schedule(1, 16, 32, 1, 2, 32, False).mod["main"].script()
    assert 'T.sblock("strided_rows")' in text and "X[v_nn, v_cc, v_yy * 2, v_xx * 2]" in text, text
    assert re.search(r"xx_2 in T.vectorized\((T.int64\()?8\b", text), text
    with AVX512:
        assert "strided_rows" not in _schedule(1, 16, 32, 1, 2, 32, False).mod["main"].script()


@pytest.mark.parametrize("unit, block, pixels", [(AVX512, 32, 8), (AVX2, 16, 6)], ids=["avx512", "avx2"])
def test_two_vectors_of_channels_tile_flat_pixels(unit, block, pixels):
    """A block of two vectors runs over the output plane's pixels flattened, in tiles of as many
    as leave registers for two weight vectors and a broadcast (AVX2: 16 x 6 = 12 ymm accumulators,
    AVX-512: 32 x 8); a 9 x 9 plane is 81 pixels (and 9 columns have no divisor near the tile:
    :func:`pixel_tile`), so the last tile runs past it (its reads clamped to pixel 80) and
    writes back its own pixel only."""
    with unit:
        assert packed_block(64) == block and pixel_tile(block) == pixels == pixel_tile(block, 9)
        text = _schedule(1, 16, 64, 3, 1, 9, True).mod["main"].script()
    assert re.search(rf"pp_1 in T.unroll\((T.int64\()?{pixels}\b", text), text
    assert re.search(rf"oo_1 in T.vectorized\((T.int64\()?{block}\b", text), text
    assert "T.min(v_pp, 80)" in text and f"pp_0 * {pixels} + ax1 < 81)" in text, text


@pytest.mark.parametrize("unit, widths", [(AVX512, {7: 7, 14: 7, 28: 7, 56: 8, 12: 6, 9: 8}),
                                          (AVX2, {7: 6, 14: 6, 28: 6, 56: 6, 10: 5, 12: 6})], ids=["avx512", "avx2"])
def test_pixel_tiles_within_rows_when_a_divisor_of_the_width_is_near_the_tile(unit, widths):
    """A tile that divides the output width, at least ROW_PIXEL_TILE_SHARE of the registers' tile,
    stays within one row (its pixels at one address plus constants) and makes the plane whole
    tiles: AVX-512 takes 7 pixels on ResNet's 7, 14 and 28 columns (none run past the plane);
    AVX2 keeps 6 there (4 and 2 are too few) and takes 5 on 10 columns.  Results as torch's."""
    with unit:
        assert {w: pixel_tile(2 * unit.lanes, w) for w in widths} == widths
        text = _schedule(1, 16, 64, 3, 1, 7, True).mod["main"].script()
    assert re.search(rf"pp_1 in T.unroll\((T.int64\()?{widths[7]}\b", text), text
    assert ("T.min(v_pp, 48)" in text) == (widths[7] != 7), text
    _matches_torch(unit, 1, 16, 64, 3, 1, 7, True)
    _matches_torch(unit, 2, 32, 64, 3, 2, 28, False)  # stride 2 onto 14 x 14
    _matches_torch(unit, 1, 24, 64, 3, 1, 10, True)


@pytest.mark.parametrize("cpu, block, pixels", [(AVX512_CPU, 32, 8), (AVX2_CPU, 16, 6)], ids=["avx512", "avx2"])
def test_tile_follows_the_host_cpu(cpu, block, pixels):
    """Outside a ``with unit:`` the host's vector unit sizes block and tile (checked as text:
    AVX-512 code cannot run here)."""
    with pretend_cpu(cpu):
        assert packed_block(128) == block and pixel_tile(block) == pixels
        text = _schedule(2, 8, 128, 3, 2, 18, False).mod["main"].script()  # (9 x 9: no divisor near the tile)
    assert re.search(rf"pp_1 in T.unroll\((T.int64\()?{pixels}\b", text), text


@pytest.mark.parametrize("batch, cin, cout, k, stride, hw, relu", [
    (1, 16, 64, 3, 1, 7, True),     # 49 pixels: AVX2 (6 a tile) past the plane, AVX-512 7 whole tiles
    (2, 3, 64, 7, 2, 23, False),    # a stem: 7 x 7 stride 2, 12 x 12 = 144 pixels, no epilogue
    (1, 32, 64, 1, 2, 14, True),    # a strided 1x1 projection, 7 x 7
])
@pytest.mark.parametrize("unit", [AVX512, AVX2], ids=["avx512", "avx2"])
def test_flat_pixel_tiles_match_torch(unit, batch, cin, cout, k, stride, hw, relu):
    with unit:
        assert pixel_tile(packed_block(cout, cin * k * k)) is not None
    _matches_torch(unit, batch, cin, cout, k, stride, hw, relu)


@pytest.mark.parametrize("unit", [AVX512, AVX2], ids=["avx512", "avx2"])
def test_small_planes_reduce_in_chunks_of_channels(unit):
    """On AVX-512, on a plane whose partial sums fit L1 (7 x 7) the reduction runs in chunks of
    REDUCTION_CHUNK channels outside the pixel tiles, the write-back after the last chunk; a
    large plane (56 x 56 with 32 channels: 400 KB of partial sums) on one thread keeps the whole
    reduction inside each tile, as AVX2 does on every plane (on threads, AVX-512 runs it in
    groups of rows: test_padded_flat_convs_on_threads_run_groups_of_rows).  Results as torch's,
    with and without ReLU, batch 1 and 2."""
    with unit:
        text = _schedule(1, 48, 64, 3, 1, 7, True).mod["main"].script()
    with unit, _one_thread():
        large = _schedule(1, 48, 64, 3, 1, 56, True).mod["main"].script()
    chunked = re.search(r"for rc_0, pp_0, rc_1 in T.grid\((T.int64\()?3\)?, ", text)
    assert bool(chunked) == (unit is AVX512), text
    assert "rc_0" not in large and re.search(r"for rc, ry in T.grid\((T.int64\()?48\b", large), large
    _matches_torch(unit, 1, 48, 64, 3, 1, 7, True)
    _matches_torch(unit, 2, 32, 64, 3, 2, 14, False)  # stride 2 onto 7 x 7, two images
    _matches_torch(unit, 1, 64, 64, 3, 1, 14, True)  # 14 x 14: 196 pixels


@pytest.mark.parametrize("unit", [AVX512, AVX2], ids=["avx512", "avx2"])
def test_medium_planes_reduce_in_chunks_over_groups_of_tiles(unit, monkeypatch):
    """On AVX-512, a plane whose partial sums outgrow L1 but not GROUPED_CHUNKS_MAX_PLANE_BYTES
    (28 x 28 x 32 channels: 100 KB) runs the reduction in chunks over groups of pixel tiles
    (112 tiles of 7 pixels in groups of 28: 25 KB of partial sums), prefetching the next chunk's
    weights, and writes each group back after its last chunk; the groups and blocks of channels
    are the parallel loop.  AVX2 keeps the whole reduction in each tile.  Results as torch's: a
    26 x 26 plane (85 tiles of 8, the last one past the plane, in groups of 17), stride 2 onto
    28 x 28 with two images, 64 channels on 28 x 28.  A large plane (56 x 56: 400 KB) is grouped
    only when whole images run on each thread (4 images on 2 threads), not at batch 1 on one
    thread (on two, groups of rows: test_padded_flat_convs_on_threads_run_groups_of_rows)."""
    monkeypatch.setenv("MINITVM_NUM_THREADS", "2")
    with unit, _one_thread():  # (on threads: groups of whole rows, each padding its own)
        text = _schedule(1, 48, 64, 3, 1, 28, True).mod["main"].script()
        large = [_schedule(1, 32, 64, 3, 1, 56, True).mod["main"].script()]
    with unit:
        large.append(_schedule(4, 32, 64, 3, 1, 56, True).mod["main"].script())
    assert "rc_0" not in large[0] and ("rc_0" in large[1]) == (unit is AVX512), large
    grouped = re.search(r"for rc_0, pp_0_1, rc_1 in T.grid\((T.int64\()?3\)?, (T.int64\()?28\)?, ", text)
    assert bool(grouped) == (unit is AVX512), text
    if unit is AVX512:
        assert "nn_oo_0_pp_0_0_fused" in text, text  # 2 blocks x 4 groups (on one thread, serial)
        assert "T.prefetch" in text and text.index("T.prefetch") < text.index("for ry"), text
        # the write-back of the group's 196 pixels, after the chunks
        assert re.search(r"in T.vectorized\((T.int64\()?196\)", text) and text.rindex("T.vectorized") > \
            text.index("rc_1"), text
    else:
        assert "rc_0" not in text and "prefetch" not in text, text
    _matches_torch(unit, 1, 48, 64, 3, 1, 28, True)
    _matches_torch(unit, 1, 32, 64, 3, 1, 26, True)
    _matches_torch(unit, 2, 32, 64, 3, 2, 56, False)
    _matches_torch(unit, 1, 64, 64, 3, 1, 28, False)
    _matches_torch(unit, 4, 32, 64, 3, 1, 56, True)


@pytest.mark.parametrize("unit", [AVX512, AVX2], ids=["avx512", "avx2"])
def test_chunks_prefetch_the_next_chunks_weights(unit):
    """A reduction in chunks prefetches, at each input channel of each pixel tile, cache lines of
    the same channel of the next chunk (the last chunk: of its own last channel), the tiles taking
    turns through its 18 lines (3 x 3 x 32 weights: 3 lines a tile over 7 tiles); without chunks
    (AVX2, large planes) nothing is prefetched.  Results as torch's: the stride-2 and 2-image
    cases of test_small_planes_reduce_in_chunks_of_channels run the same schedules."""
    with unit:
        sch_avx512 = _schedule(1, 48, 64, 3, 1, 7, True)
        text = sch_avx512.mod["main"].script()
        large = _schedule(1, 48, 64, 3, 1, 56, True).mod["main"].script()
    assert "prefetch" not in large
    if unit is AVX2:
        assert "prefetch" not in text
        return
    # which weights each chunk's tiles prefetch: every line of the next chunk's, by value
    func = sch_avx512.mod["main"]
    loops, hints = {}, []

    def visit(n):
        if isinstance(n, tir.For):
            loops[n.loop_var.name] = n.loop_var
        if isinstance(n, tir.Call) and n.op == "tir.prefetch":
            hints.append(n)

    tir.post_order_visit(func.body, visit)
    want_flags = [0, conv2d_module.PREFETCH_LOCALITY, 1]  # read, the locality chosen, data
    assert len(hints) == 3 and all([int(a.value) for a in h.args[1:]] == want_flags for h in hints), text
    analyzer = minitvm.arith.Analyzer()
    chunk, channels, lines_per_channel = 16, 48, 3 * 3 * 32 // 16
    for rc0 in range(3):
        seen = set()
        for p0 in range(7):
            for rc1 in range(chunk):
                # (the parallel loop over blocks of channels at the first block)
                values = {loops["rc_0"]: rc0, loops["pp_0"]: p0, loops["rc_1"]: rc1, loops["nn_oo_0_fused"]: 0}
                for h in hints:
                    load = h.args[0].args[0]
                    o0, c, ry, rx, o = (int(analyzer.simplify(tir.stmt_functor.substitute(
                        i, {v: tir.const(x, v.dtype) for v, x in values.items()})))
                        for i in load.indices)
                    assert o0 == 0 and o % 16 == 0
                    seen.add((c, (ry * 3 + rx) * 32 + o))
        following = range((rc0 + 1) * chunk, (rc0 + 2) * chunk) if rc0 < 2 else [channels - 1]
        want = {(c, k * 16) for c in following for k in range(lines_per_channel)}
        assert seen == want, (rc0, sorted(seen - want)[:5], sorted(want - seen)[:5])
    assert text.index("T.prefetch") < text.index("for ry")  # at the top of each input channel
    minitvm.ir.assert_structural_equal(func, minitvm.script.from_source(text))  # the hints print and parse back
    _matches_torch(unit, 1, 48, 64, 3, 1, 7, True)


class _one_thread:
    """Schedule as for one thread (``parallel_threads()`` 1): a padded flat-pixel convolution's
    rows then make no groups for the threads (:func:`_pixel_row_groups`)."""

    def __enter__(self):
        self._patch = pytest.MonkeyPatch()
        self._patch.setattr(conv2d_module, "parallel_threads", lambda: 1)
        self._patch.setattr(conv2d_module, "ROW_GROUPS_PER_THREAD", 10 ** 6)

    def __exit__(self, *exc):
        self._patch.undo()


@pytest.mark.parametrize("batch, cin, cout, k, stride, hw, rows, padded", [
    (1, 48, 64, 3, 1, 28, 2, 4),     # 28 x 28: 14 groups of 2 rows, each padding 4
    (1, 32, 64, 3, 1, 56, 4, 6),     # 56 x 56: 14 groups of 4 (28 KB of partial sums)
    (1, 32, 64, 3, 2, 56, 2, 5),     # stride 2 onto 28 x 28: 2 output rows read 5 input rows
    (3, 32, 64, 3, 1, 28, 2, 4),     # 3 images (not whole ones per thread): (image, group) on threads
    (4, 48, 64, 3, 1, 28, 7, 9),     # whole images per thread: each image's 4 groups on its thread
])
@pytest.mark.parametrize("unit", [AVX512, AVX2], ids=["avx512", "avx2"])
def test_padded_flat_convs_on_threads_run_groups_of_rows(unit, batch, cin, cout, k, stride, hw, rows, padded,
                                                         monkeypatch):
    """On AVX-512 a padded flat-pixel convolution on threads runs groups of whole output rows on
    the threads (one parallel region): each group pads the input rows it reads, halo included,
    then runs every block of channels over them in chunks of input channels, without the weight
    prefetch, and writes each block back after its last chunk; with whole images per thread the
    images are the parallel loop and each runs its groups so.  AVX2 keeps the padding before and
    the blocks of channels on threads (or the images, each padded whole).  Results as torch's."""
    monkeypatch.setenv("MINITVM_NUM_THREADS", "2")
    with unit:
        text = _schedule(batch, cin, cout, k, stride, hw, True).mod["main"].script()
    out = (hw - 1) // stride + 1
    groups = out // rows
    images = batch == 4  # (on 2 threads)
    if unit is AVX2:
        assert text.count("T.parallel") == (1 if images else 2) and "pp_0_0" not in text, text
    elif images:
        assert re.search(r"for nn in T.parallel\((T.int64\()?4\b", text) and text.count("T.parallel") == 1, text
        assert re.search(rf"for pp_0_0 in range\((T.int64\()?{groups}\)?\)", text), text
    else:
        fused = re.search(r"for (nn_pp_0_0_fused|pp_0_0) in T.parallel\((T.int64\()?(\d+)\)?\)", text)
        assert fused and int(fused.group(3)) == batch * groups and text.count("T.parallel") == 1, text
    if unit is AVX512:
        pad = text.index('T.sblock("pad_temp")')
        assert text.index("T.parallel") < pad < text.index("for oo_0 in range"), text  # padded in the chunk
        # the rows it pads: the group's and the window's halo
        assert re.search(rf"for ax0, ax1 in T.grid\((T.int64\()?{cin}\)?, (T.int64\()?{padded}\)?\)", text), text
        assert "rc_0" in text and "prefetch" not in text, text
        assert re.search(rf"for ax1 in T.vectorized\((T.int64\()?{rows * out}\)?\)", text), text  # the write-back
    _matches_torch(unit, batch, cin, cout, k, stride, hw, True)


def test_large_convs_run_on_threads_padding_too(monkeypatch):
    monkeypatch.setenv("MINITVM_NUM_THREADS", "2")  # (3 images do not split into whole ones per thread)
    small = _schedule(1, 8, 32, 3, 1, 16, True).mod["main"].script()  # 0.6M multiply-adds: one thread
    assert "T.parallel" not in small
    large = _schedule(3, 16, 32, 3, 1, 16, True).mod["main"]  # 3.5M: two threads
    parallel = []
    tir.post_order_visit(large.body, lambda s: parallel.append(s) if isinstance(s, tir.For)
                         and s.kind == tir.ForKind.PARALLEL else None)
    # the conv's blocks of rows, each padding the rows it reads (else the serial part of the kernel)
    assert len(parallel) == 1, large.script()
    assert large.script().index('T.sblock("pad_temp")') > large.script().index("T.parallel")


def test_rule_declines_other_kernels():
    X = te.placeholder((1, 4, 8, 8), "float32", name="X")
    W = te.placeholder((8, 4, 3, 3), "float32", name="W")
    f = te.create_prim_func([X, W, topi.nn.conv2d_nchw(X, W, 1, 1)])
    assert schedule_conv2d_nchw_packed(tir.Schedule(minitvm.IRModule({"main": f}))) is False


@pytest.mark.parametrize("unit", [AVX512, AVX2], ids=["avx512", "avx2"])
def test_large_flat_convs_of_a_batch_run_image_by_image(unit):
    """A static batch of images each worth threads (a 64 -> 64 3x3 conv on 32 x 32: 38M
    multiply-adds per image) runs one image after another: the batch loop serial outside, the
    image's padding and then its tiles on threads; results as torch's."""
    with unit:
        text = _schedule(2, 64, 64, 3, 1, 32, True).mod["main"].script()
        small = _schedule(2, 16, 64, 3, 1, 16, True).mod["main"].script()  # 2.4M per image: batch fused
    assert re.search(r"for nn in range\((T.int64\()?2\b", text), text
    assert text.count("T.parallel") == 2 and "nn_oo_0_pp_0_fused" not in text, text
    assert "nn_oo_0_pp_0_fused in T.parallel" in small, small
    _matches_torch(unit, 2, 64, 64, 3, 1, 32, True)
    _matches_torch(unit, 3, 64, 64, 3, 2, 45, False)  # strided, 23 x 23 (20M per image): a last tile past it


@pytest.mark.parametrize("unit", [AVX512, AVX2], ids=["avx512", "avx2"])
def test_large_flat_convs_of_whole_images_per_thread_run_the_images_on_threads(unit, monkeypatch):
    """A batch of such images that splits into at least two whole ones per thread (4 on 2
    threads) puts the batch loop on threads instead: one parallel region, each image's padding
    computed by its thread under it, then its tiles; results as torch's."""
    monkeypatch.setenv("MINITVM_NUM_THREADS", "2")
    with unit:
        text = _schedule(4, 64, 64, 3, 1, 32, True).mod["main"].script()
    assert text.count("T.parallel") == 1 and re.search(r"for nn in T.parallel\((T.int64\()?4\)", text), text
    assert text.index('T.sblock("pad_temp")') > text.index("for nn in T.parallel"), text
    _matches_torch(unit, 4, 64, 64, 3, 1, 32, True)


@pytest.mark.parametrize("batch, cin, cout, k, stride, hw", [
    (1, 16, 16, 3, 1, 32),   # rows of two vectors: 32 rows in 8 blocks of 4
    (1, 16, 32, 3, 2, 32),   # stride 2: the padding with even and odd columns apart, per block
    (3, 16, 32, 3, 1, 16),   # a batch that does not split into whole images: (image, block) on threads
    (1, 12, 24, 3, 1, 27),   # odd sizes: channel-vector tiles, 27 rows in 9 blocks of 3
    (1, 8, 16, 5, 2, 45),    # a 5 x 5 window, stride 2: 23 rows, one per block, each padding 5
    (1, 8, 16, 3, 2, 63),    # stride 2, 32 rows of an odd padded width (65: 33 even columns, 32 odd)
])
@pytest.mark.parametrize("unit", [AVX512, AVX2], ids=["avx512", "avx2"])
def test_padding_is_computed_per_block_of_rows_on_threads(unit, batch, cin, cout, k, stride, hw, monkeypatch):
    """A padded convolution on threads runs blocks of output rows (all channel blocks of a block
    in one chunk), and each block first pads the input rows it reads, window halo included:
    one parallel region, the padded rows written and read by the same core."""
    monkeypatch.setenv("MINITVM_NUM_THREADS", "2")
    with unit:
        text = _schedule(batch, cin, cout, k, stride, hw, True).mod["main"].script()
    assert text.count("T.parallel") == 1, text
    assert text.index('T.sblock("pad_temp")') > text.index("T.parallel"), text
    _matches_torch(unit, batch, cin, cout, k, stride, hw, True)


def test_short_reductions_pad_before_their_tiles(monkeypatch):
    """A 3-channel stem (27 multiply-adds per output) keeps its padding before the tiles on AVX2;
    AVX-512 pads per block of rows (one parallel region) for it too."""
    monkeypatch.setenv("MINITVM_NUM_THREADS", "2")
    with AVX2:
        text = _schedule(1, 3, 32, 3, 2, 128, True).mod["main"].script()
    assert text.count("T.parallel") == 2 and text.index('T.sblock("pad_temp")') < text.index("nn_oo_0_yy_fused"), text
    with AVX512:
        text = _schedule(1, 3, 32, 3, 2, 96, True, 16).mod["main"].script()
    assert text.count("T.parallel") == 1 and "nn_yy_0_fused" in text, text
    assert text.index("nn_yy_0_fused") < text.index('T.sblock("pad_temp")'), text  # padded inside the chunk


def test_weights_larger_than_the_padded_image_keep_channel_blocks_on_threads(monkeypatch):
    """256 -> 32 channels on 8 x 8 (73K weights, a 25.6K padded image): each chunk of rows would
    read all the weights, so the channel blocks stay on threads, the padding before them."""
    monkeypatch.setenv("MINITVM_NUM_THREADS", "2")
    with AVX2:
        text = _schedule(1, 256, 32, 3, 1, 8, True).mod["main"].script()
    assert text.count("T.parallel") == 2 and text.index('T.sblock("pad_temp")') < text.index("nn_oo_0_yy_fused"), text
    _matches_torch(AVX2, 1, 256, 32, 3, 1, 8, True)


def test_padding_per_block_of_rows_with_a_symbolic_batch(monkeypatch):
    """A batch known only at run time keeps its images serial and the blocks of one image's rows
    on threads, each padding its own rows; results as torch's for 1 and 3 images."""
    monkeypatch.setenv("MINITVM_NUM_THREADS", "2")
    n = te.var("n", "int64")
    with AVX2:
        X = te.placeholder((n, 16, 32, 32), "float32", name="X")
        W = te.placeholder((2, 16, 3, 3, 8), "float32", name="W")
        sch = tir.Schedule(minitvm.IRModule({"main": te.create_prim_func([X, W, conv2d_nchw_packed(X, W, 1, 1)])}))
        assert schedule_conv2d_nchw_packed(sch)
        lib = minitvm.build(sch.mod, target="llvm")
    text = sch.mod["main"].script()
    assert text.count("T.parallel") == 1 and text.index('T.sblock("pad_temp")') > text.index("T.parallel"), text
    w = RNG.standard_normal((16, 16, 3, 3)).astype("float32")
    for batch in (1, 3):
        x = RNG.standard_normal((batch, 16, 32, 32)).astype("float32")
        want = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1).numpy()
        out = minitvm.nd.empty(want.shape, "float32")
        lib(minitvm.nd.array(x), minitvm.nd.array(pack_conv2d_weight(w, 8)), out)
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4)
