"""DefaultCPUSchedule: rule-based default CPU schedules keep results and add parallel/vector loops."""

from __future__ import annotations

import re

import numpy as np
import pytest

import minitvm
import minitvm.tir.transform as tt
import minitvm.tir.transform.default_schedule as ds
from minitvm.ir import IRModule
from minitvm.script import tir as T
from minitvm.tir.transform.default_schedule import (
    apply_default_schedule,
    schedule_elementwise,
    schedule_matmul_like,
    schedule_matmul_nt,
    schedule_reduction,
)
from minitvm.tir.vector_unit import AVX2, AVX512, SSE, VectorUnit


def matmul(n, m, k):
    @T.prim_func
    def main(A: T.Buffer((n, k), "float32"), B: T.Buffer((k, m), "float32"), C: T.Buffer((n, m), "float32")):
        for i, j, r in T.grid(n, m, k):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, r])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    return main


@T.prim_func
def matmul_add_relu(A: T.Buffer((64, 128), "float32"), B: T.Buffer((128, 96), "float32"),
                    bias: T.Buffer((96,), "float32"), D: T.Buffer((64, 96), "float32")):
    Y = T.alloc_buffer((64, 96), "float32")
    Z = T.alloc_buffer((64, 96), "float32")
    for i, j, k in T.grid(64, 96, 128):
        with T.block("matmul"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                Y[vi, vj] = T.float32(0)
            Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
    for i, j in T.grid(64, 96):
        with T.block("add"):
            vi, vj = T.axis.remap("SS", [i, j])
            Z[vi, vj] = Y[vi, vj] + bias[vj]
    for i, j in T.grid(64, 96):
        with T.block("relu"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = T.max(Z[vi, vj], T.float32(0))


@T.prim_func
def add(A: T.Buffer((128, 256), "float32"), B: T.Buffer((128, 256), "float32"),
        C: T.Buffer((128, 256), "float32")):
    for i, j in T.grid(128, 256):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] + B[vi, vj]


@T.prim_func
def add_relu(A: T.Buffer((4, 100), "float32"), B: T.Buffer((4, 100), "float32"),
             C: T.Buffer((4, 100), "float32")):
    Y = T.alloc_buffer((4, 100), "float32")
    for i, j in T.grid(4, 100):
        with T.block("add"):
            vi, vj = T.axis.remap("SS", [i, j])
            Y[vi, vj] = A[vi, vj] + B[vi, vj]
    for i, j in T.grid(4, 100):
        with T.block("relu"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = T.max(Y[vi, vj], T.float32(0))


@T.prim_func
def softmax(A: T.Buffer((64, 512), "float32"), S: T.Buffer((64, 512), "float32")):
    mx = T.alloc_buffer((64,), "float32")
    e = T.alloc_buffer((64, 512), "float32")
    sm = T.alloc_buffer((64,), "float32")
    for i, k in T.grid(64, 512):
        with T.block("max"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                mx[vi] = T.float32(-3.0e38)
            mx[vi] = T.max(mx[vi], A[vi, vk])
    for i, j in T.grid(64, 512):
        with T.block("exp"):
            vi, vj = T.axis.remap("SS", [i, j])
            e[vi, vj] = T.exp(A[vi, vj] - mx[vi])
    for i, k in T.grid(64, 512):
        with T.block("sum"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                sm[vi] = T.float32(0)
            sm[vi] = sm[vi] + e[vi, vk]
    for i, j in T.grid(64, 512):
        with T.block("div"):
            vi, vj = T.axis.remap("SS", [i, j])
            S[vi, vj] = e[vi, vj] / sm[vi]


def _run(func, target, args):
    lib = minitvm.build(func.with_attr("global_symbol", "main"), target=target)
    arrs = [minitvm.nd.array(a) for a in args]
    lib["main"](*arrs)
    return arrs[-1].numpy()


def _check_same(func, inputs, out_shape, targets=("llvm", "python")):
    """Scheduled and unscheduled functions give the same result on both targets."""
    sched = apply_default_schedule(func)
    assert sched.attrs.get("tir.is_scheduled") is True
    for target in targets:
        args = [*inputs, np.zeros(out_shape, "float32")]
        want = _run(func, target, [a.copy() for a in args])
        got = _run(sched, target, [a.copy() for a in args])
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    return sched


def _rand(*shape, seed=0):
    return np.random.default_rng(seed + len(shape)).standard_normal(shape).astype("float32")


@pytest.fixture(autouse=True)
def avx512_register_tiles():
    """The structures below are AVX-512's register tiles (32 registers of 16 lanes): the vector
    unit is pinned so that they read the same on every machine (the kernels still run on this
    one's; test_register_tiles_fit_the_vector_unit checks the other units)."""
    with AVX512:
        yield


@pytest.fixture(autouse=True)
def two_threads(monkeypatch):
    """Large matmuls cut their columns into blocks for the threads parallel loops run on:
    pinned to 2 (this machine's, and CI's) so that the structures read the same everywhere."""
    monkeypatch.setattr(ds, "parallel_threads", lambda: 2)


@pytest.fixture(params=[False, True], ids=["small", "parallel"])
def parallel(request, monkeypatch):
    """Run a test twice: with the default thresholds (these small kernels stay serial, as
    measured faster) and with the thresholds at 0 (the parallel variant of every rule)."""
    if request.param:
        monkeypatch.setattr(ds, "MATMUL_PARALLEL_WORK", 0)
        monkeypatch.setattr(ds, "CONV_PARALLEL_WORK", 0)
        monkeypatch.setattr(ds, "DEPTHWISE_PARALLEL_WORK", 0)
        monkeypatch.setattr(ds, "ELEMENTWISE_PARALLEL_WORK", 0)
        monkeypatch.setattr(ds, "TRANSPOSE_PARALLEL_WORK", 0)
        monkeypatch.setattr(ds, "ROW_REDUCTION_PARALLEL_WORK", 0)
        monkeypatch.setattr(ds, "GEMV_PARALLEL_WORK", 0)
    return request.param


def _has_parallel(text, parallel):
    assert ("T.parallel" in text) == parallel, text


def _matches_torch_conv_bias_relu(sched, x, w, b, out_shape, unit=None):
    """The scheduled conv + bias + ReLU computes torch's numbers (built under ``unit`` if given)."""
    import contextlib

    import torch

    want = torch.relu(torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b))).numpy()
    with unit if unit is not None else contextlib.nullcontext():
        got = _run(sched, "llvm", [x, w, b, np.zeros(out_shape, "float32")])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_matmul_64(parallel):
    a, b = _rand(64, 64), _rand(64, 64, seed=1)
    sched = _check_same(matmul(64, 64, 64), [a, b], (64, 64))
    text = sched.script()
    assert "T.vectorized" in text and "T.unroll" in text
    assert 'scope="local"' in text  # the cache_write register tile
    _has_parallel(text, parallel)
    # B is packed into 32-wide column panels when the work is large (here: with the thresholds at 0)
    assert ("B_global = T.alloc_buffer((2, 64, 32))" in text) == parallel
    np.testing.assert_allclose(_run(sched, "llvm", [a, b, np.zeros((64, 64), "float32")]), a @ b,
                               rtol=1e-4, atol=1e-4)


def test_large_matmul_is_parallel_by_default():
    # scheduled only (not run): 256^3 is above MATMUL_PARALLEL_WORK; 8 panels of 32 columns in
    # 4 column blocks, two per thread; 12-row tiles (AVX-512)
    text = apply_default_schedule(matmul(256, 256, 256)).script()
    assert "for j_0 in T.parallel(4)" in text and "T.vectorized(32)" in text and "T.unroll(12)" in text


@pytest.mark.parametrize("threads, blocks", [(2, 4), (4, 8), (32, 0)], ids=["2-threads", "4-threads", "too-few-panels"])
def test_a_large_matmul_packs_each_column_block_on_the_thread_that_uses_it(monkeypatch, threads, blocks):
    """256 x 512 x 128 on AVX2: 32 panels of 16 columns.  With 2 (4) threads the columns are cut
    into 4 (8) blocks, two per thread; the parallel loop runs over the blocks and packs each
    block's panels inside it, into a buffer of that block alone.  32 threads would want 64
    blocks, more than the panels: B is then packed by a parallel pass of its own and the row
    tiles run in parallel.  Every variant computes A @ B."""
    monkeypatch.setattr(ds, "parallel_threads", lambda: threads)
    a, b = _rand(256, 128), _rand(128, 512, seed=1)
    with AVX2:
        sched = _check_same(matmul(256, 512, 128), [a, b], (256, 512), targets=("llvm",))
    lowered = minitvm.lower(sched.with_attr("global_symbol", "main")).script()
    if blocks:
        block_loop = lowered.index(f"for j_0 in T.parallel({blocks}):")
        assert lowered.index(f"B_global = T.allocate([{128 * 512 // blocks}]") > block_loop, lowered
    else:
        assert "for ax0 in T.parallel(128):" in lowered and "for i_00 in T.parallel(42):" in lowered, lowered
    assert "B_global[ax1_0 * 2048 + ax0 * 16 + ax1_1]" in lowered  # 16-float vectors into the panels


def test_single_row_matmul_with_odd_columns_takes_the_whole_row():
    """1 x 300 @ 300 x 100 (a batch-1 dense whose weight FoldConstant transposed): the 100 outputs
    are one tile of vectors, not 4-wide tiles (which ran 5x slower on mlc_mnist's 5408 -> 100)."""
    a, b = _rand(1, 300), _rand(300, 100, seed=1)
    sched = _check_same(matmul(1, 100, 300), [a, b], (1, 100))
    assert "T.vectorized(100)" in sched.script()
    np.testing.assert_allclose(_run(sched, "llvm", [a, b, np.zeros((1, 100), "float32")]), a @ b,
                               rtol=1e-4, atol=1e-4)


def _register_tile(text: str, unrolled: str, vector: str) -> tuple[int, int]:
    """(rows, lanes) of the register tile in a schedule's text: the extents of the unrolled
    loop ``unrolled`` and the vectorized loop ``vector`` inside it."""
    rows = re.search(rf"for {unrolled} in T.unroll\((?:T.int64\()?(\d+)", text)
    lanes = re.search(rf"for {vector} in T.vectorized\((?:T.int64\()?(\d+)", text)
    assert rows and lanes, text
    return int(rows.group(1)), int(lanes.group(1))


def test_a_matmul_with_a_prime_number_of_columns_takes_two_vector_tiles_and_a_peeled_one(parallel):
    # 67 columns (as ViT's 197 tokens) have no divisor to tile by: register tiles of two vectors
    # (AVX-512, the fixture's unit: 12 x 32), the last, partial one a piece of its own -- not
    # scalar columns under a vectorized loop around k, nor one row per tile
    a, b = _rand(24, 16), _rand(16, 67, seed=1)
    sched = _check_same(matmul(24, 67, 16), [a, b], (24, 67))
    text = sched.script()
    assert _register_tile(text, "i_1", "j_1") == (12, 32) and "_j_01_partition" in text, text
    assert "T.vectorized(3)" in text, text  # the partial tile's write-back: 67 - 2 x 32 columns
    _has_parallel(text, parallel)
    np.testing.assert_allclose(_run(sched, "llvm", [a, b, np.zeros((24, 67), "float32")]), a @ b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("unit, matmul_tile, conv_tile", [(AVX512, (12, 32), (16, 16)), (AVX2, (6, 16), (4, 16)),
                                                          (SSE, (6, 8), (2, 16))], ids=["avx512", "avx2", "sse"])
def test_register_tiles_fit_the_vector_unit(unit, matmul_tile, conv_tile):
    """A register tile fits the unit's registers (AVX-512's 12 x 32 tile would need 48 of AVX2's
    16 ymm and spill on every step): a matmul of many rows keeps its accumulators and one row of
    B and a broadcast of A in them, a convolution's accumulators half of them; the rules size
    the tiles for the unit in scope, and the kernels stay right."""
    a, b = _rand(64, 128), _rand(128, 256, seed=1)
    conv, conv_shape = conv_bias_relu(1, 16, 16, 32, 3)
    x, w, bias = _rand(1, 16, 16, 16), _rand(32, 16, 3, 3, seed=2), _rand(32, seed=3)
    with unit:
        mm = _check_same(matmul(64, 256, 128), [a, b], (64, 256)).script()
        cv = _check_same(conv, [x, w, bias], conv_shape).script()
    rows, lanes = _register_tile(mm, "i_1", "j_2")  # (2M multiply-adds: the parallel, packed-B schedule)
    vectors = -(-lanes // unit.lanes)
    assert (rows, lanes) == matmul_tile and rows * vectors + vectors + 1 <= unit.registers
    assert _register_tile(cv, "o_1", "x_1") == conv_tile


@pytest.mark.parametrize("unit, rows, main_tiles", [(AVX2, 6, 21), (AVX512, 12, 10)], ids=["avx2", "avx512"])
def test_a_large_matmul_tile_takes_the_rows_the_registers_hold_and_peels_the_rest(unit, rows, main_tiles):
    """130 rows: AVX2's 6 x 16 tile (12 ymm accumulators) does not divide them, nor AVX-512's
    12 x 32 (24 zmm); the rows past the last whole tile get a loop of their own (loop_partition), so the
    main loop runs without the split's guard, and the partial tile (TightenGuardedLoops) loops
    over its rows alone; both pieces compute the right numbers.  Both
    pieces are inside the parallel loop over column blocks."""
    a, b = _rand(130, 256), _rand(256, 128, seed=1)
    with unit:
        sched = _check_same(matmul(130, 128, 256), [a, b], (130, 128), targets=("llvm",))
    text = sched.script()
    assert _register_tile(text, "i_1", "j_2") == (rows, 2 * unit.lanes)
    assert "for j_0 in T.parallel(4):" in text and "_partition" in text, text
    lowered = minitvm.lower(sched.with_attr("global_symbol", "main")).script()
    assert re.search(rf"for i_00(, j_1)? in (range|T.grid)\({main_tiles}\b", lowered), lowered
    main_piece = lowered[lowered.index("for i_00"):]
    partial_tile = main_piece.index("C_local = T.allocate", main_piece.index("C_local = T.allocate") + 1)
    # the split's guard is gone from both: the partial tile runs only its 130 - rows x main_tiles rows
    assert "if " not in main_piece, lowered
    assert f"in T.unroll({130 - rows * main_tiles})" in main_piece[partial_tile:], lowered


def test_a_target_enters_its_vector_unit():
    """``with target:`` (as ``minitvm.compile`` runs its pipeline) schedules for the target's
    registers, whatever machine this is: without AVX-512 the tile is AVX2's."""
    with minitvm.target.Target("llvm -mcpu=x86-64 -mattr=+avx2,+fma"):
        assert VectorUnit.current() is AVX2
        text = apply_default_schedule(matmul(64, 256, 128)).script()
    assert _register_tile(text, "i_1", "j_2") == (6, 16)
    assert VectorUnit.current() is AVX512  # the fixture's, again
    with minitvm.target.Target("llvm -mcpu=x86-64 -mattr=+avx512f"):
        assert VectorUnit.current() is AVX512


def test_matmul_add_relu_fused(parallel):
    a, b, bias = _rand(64, 128), _rand(128, 96, seed=1), _rand(96)
    sched = _check_same(matmul_add_relu, [a, b, bias], (64, 96))
    text = sched.script()
    assert "T.vectorized" in text
    _has_parallel(text, parallel)
    assert 'block("add")' not in text  # inlined into the relu epilogue
    # relu reads the register tile, never Y (64 rows: whole 12-row tiles and a peeled piece, after
    # which Y's allocation is left behind unused: lowering drops it)
    assert "Y_local" in text and "Y[" not in text
    lowered = minitvm.lower(sched.with_attr("global_symbol", "main")).script()
    assert "Y_local = T.allocate" in lowered and "Y = T.allocate" not in lowered, lowered
    want = np.maximum(a @ b + bias, 0)
    np.testing.assert_allclose(_run(sched, "llvm", [a, b, bias, np.zeros((64, 96), "float32")]), want,
                               rtol=1e-4, atol=1e-4)


def test_dense_batch1(parallel):
    x, w = _rand(1, 784), _rand(784, 256, seed=1)
    sched = _check_same(matmul(1, 256, 784), [x, w], (1, 256))
    text = sched.script()
    assert "T.vectorized(128)" in text  # i == 1: only j is tiled, wide
    _has_parallel(text, parallel)
    if parallel:
        assert "for j_0 in T.parallel(2)" in text


def nt_dense_relu(rows, n, k):
    """``relu(x @ W.T + b)`` reading ``W[j, k]`` directly (what FuseTransposeMatmul + FuseTIR give)."""
    @T.prim_func
    def main(X: T.Buffer((rows, k), "float32"), W: T.Buffer((n, k), "float32"), bias: T.Buffer((n,), "float32"),
             D: T.Buffer((rows, n), "float32")):
        Y = T.alloc_buffer((rows, n), "float32")
        for i, j, r in T.grid(rows, n, k):
            with T.block("NT_matmul"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, r])
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + X[vi, vk] * W[vj, vk]
        for i, j in T.grid(rows, n):
            with T.block("relu"):
                vi, vj = T.axis.remap("SS", [i, j])
                D[vi, vj] = T.max(Y[vi, vj] + bias[vj], T.float32(0))

    return main


@pytest.mark.parametrize("rows", [1, 4, 3])
def test_dense_with_transposed_weight_is_a_vectorized_dot_product(rows, parallel):
    x, w, bias = _rand(rows, 784), _rand(256, 784, seed=1), _rand(256)
    sched = _check_same(nt_dense_relu(rows, 256, 784), [x, w, bias], (rows, 256))
    text = sched.script()
    # rfactor along k: 16 partial sums per output in one vector, added up after the k loop
    assert "NT_matmul_rf" in text and "T.vectorized(16)" in text and "T.unroll" in text
    _has_parallel(text, parallel)
    want = np.maximum(x @ w.T + bias, 0)
    np.testing.assert_allclose(_run(sched, "llvm", [x, w, bias, np.zeros((rows, 256), "float32")]), want,
                               rtol=1e-4, atol=1e-4)


def test_nt_rule_declines_plain_and_many_row_matmuls():
    assert not schedule_matmul_nt(minitvm.tir.Schedule(matmul(1, 256, 784)))  # B[k, j]: not transposed
    assert not schedule_matmul_nt(minitvm.tir.Schedule(nt_dense_relu(64, 32, 64)))  # many rows: the tiled rule
    assert "NT_matmul_rf" not in apply_default_schedule(nt_dense_relu(64, 32, 64)).script()


def test_elementwise_add(parallel):
    a, b = _rand(128, 256), _rand(128, 256, seed=1)
    sched = _check_same(add, [a, b], (128, 256))
    text = sched.script()
    assert "T.vectorized(16)" in text
    _has_parallel(text, parallel)


def test_elementwise_chain_is_inlined():
    a, b = _rand(4, 100), _rand(4, 100, seed=1)
    sched = _check_same(add_relu, [a, b], (4, 100))
    text = sched.script()
    assert 'block("add")' not in text and "T.vectorized(16)" in text  # 400 = 25 x 16


def test_softmax_like(parallel):
    a = _rand(64, 512)
    sched = _check_same(softmax, [a], (64, 512))
    text = sched.script()
    _has_parallel(text, parallel)
    assert text.count("T.vectorized(16)") == 2  # exp and divide
    # its max starts at -3e38, not the lowest float: no partial results (rfactor refuses), so the
    # reductions stay serial, 8 rows side by side
    assert text.count("for k in range(512):") == 2 and text.count("T.unroll(8)") == 4, text
    if parallel:
        assert text.count("T.parallel(64)") == 2 and text.count("T.parallel(8)") == 2, text
    want = np.exp(a - a.max(1, keepdims=True))
    want /= want.sum(1, keepdims=True)
    np.testing.assert_allclose(_run(sched, "llvm", [a, np.zeros((64, 512), "float32")]), want,
                               rtol=1e-4, atol=1e-5)


def test_a_softmax_over_heads_runs_its_rows_on_threads_through_a_batch_of_one(parallel):
    """Attention scores (batch 1, 3 heads, 37 x 37 here; ViT's 197): the rows are under a batch
    loop of one, so every block's (batch, head, row) loops are fused and run on threads, not the
    batch loop alone; numpy's result."""
    from minitvm import te, topi

    x = te.placeholder((1, 3, 37, 37), "float32", name="x")
    sched = apply_default_schedule(te.create_prim_func([x, topi.nn.softmax(x, axis=-1)]))
    text = sched.script()
    _has_parallel(text, parallel)
    if parallel:
        assert text.count("T.parallel(111)") == 1, text  # 3 x 37 rows, every block under them
    a = _rand(1, 3, 37, 37)
    want = np.exp(a - a.max(-1, keepdims=True))
    want /= want.sum(-1, keepdims=True)
    np.testing.assert_allclose(_run(sched, "llvm", [a, np.zeros_like(a)]), want, rtol=1e-4, atol=1e-5)


@T.prim_func
def attention(Q: T.Buffer((2, 16, 8), "float32"), K: T.Buffer((2, 8, 48), "float32"),
              V: T.Buffer((2, 48, 32), "float32"), Out: T.Buffer((2, 16, 32), "float32")):
    # softmax(Q K) V over 2 heads, as FuseAttention makes it one PrimFunc (K already transposed)
    S = T.alloc_buffer((2, 16, 48), "float32")
    mx = T.alloc_buffer((2, 16), "float32")
    e = T.alloc_buffer((2, 16, 48), "float32")
    sm = T.alloc_buffer((2, 16), "float32")
    P = T.alloc_buffer((2, 16, 48), "float32")
    for b, i, j, k in T.grid(2, 16, 48, 8):
        with T.block("qk"):
            vb, vi, vj, vk = T.axis.remap("SSSR", [b, i, j, k])
            with T.init():
                S[vb, vi, vj] = T.float32(0)
            S[vb, vi, vj] = S[vb, vi, vj] + Q[vb, vi, vk] * K[vb, vk, vj]
    for b, i, k in T.grid(2, 16, 48):
        with T.block("max"):
            vb, vi, vk = T.axis.remap("SSR", [b, i, k])
            with T.init():
                mx[vb, vi] = T.float32(-3.0e38)
            mx[vb, vi] = T.max(mx[vb, vi], S[vb, vi, vk])
    for b, i, j in T.grid(2, 16, 48):
        with T.block("exp"):
            vb, vi, vj = T.axis.remap("SSS", [b, i, j])
            e[vb, vi, vj] = T.exp(S[vb, vi, vj] - mx[vb, vi])
    for b, i, k in T.grid(2, 16, 48):
        with T.block("sum"):
            vb, vi, vk = T.axis.remap("SSR", [b, i, k])
            with T.init():
                sm[vb, vi] = T.float32(0)
            sm[vb, vi] = sm[vb, vi] + e[vb, vi, vk]
    for b, i, j in T.grid(2, 16, 48):
        with T.block("div"):
            vb, vi, vj = T.axis.remap("SSS", [b, i, j])
            P[vb, vi, vj] = e[vb, vi, vj] / sm[vb, vi]
    for b, i, j, k in T.grid(2, 16, 32, 48):
        with T.block("pv"):
            vb, vi, vj, vk = T.axis.remap("SSSR", [b, i, j, k])
            with T.init():
                Out[vb, vi, vj] = T.float32(0)
            Out[vb, vi, vj] = Out[vb, vi, vj] + P[vb, vi, vk] * V[vb, vk, vj]


def test_matmuls_inside_a_softmax_kernel_run_along_output_rows(parallel):
    # the reduction rule takes the fused attention kernel; its two matmuls get the k loop outside
    # the output row, which is vectorized (the zeroing too) -- not a scalar dot product per output
    q, k, v = _rand(2, 16, 8), _rand(2, 8, 48, seed=1), _rand(2, 48, 32, seed=2)
    sched = _check_same(attention, [q, k, v], (2, 16, 32))
    text = sched.script()
    _has_parallel(text, parallel)
    assert re.search(r"for k, j_0 in T.grid\(8, 3\):\n\s+for j_1 in T.vectorized\(16\)", text), text
    assert re.search(r"for k, j_0 in T.grid\(48, 2\):\n\s+for j_1 in T.vectorized\(16\)", text), text
    assert text.count("j_1_init in T.vectorized(16)") == 2
    s = q @ k
    p = np.exp(s - s.max(-1, keepdims=True))
    want = (p / p.sum(-1, keepdims=True)) @ v
    got = _run(sched, "llvm", [q, k, v, np.zeros((2, 16, 32), "float32")])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_rules_decline_other_kinds():
    from minitvm.tir import Schedule

    assert schedule_matmul_like(Schedule(add)) is False
    assert schedule_elementwise(Schedule(softmax)) is False
    assert schedule_reduction(Schedule(add)) is False


def test_pass_on_module_marks_and_skips_scheduled():
    mod = IRModule({"main": matmul(64, 64, 64), "add": add})
    out = tt.DefaultCPUSchedule()(mod)
    for _gv, f in out.items():
        assert f.attrs.get("tir.is_scheduled") is True
    # already scheduled functions are left alone
    again = tt.DefaultCPUSchedule()(out)
    for gv, f in again.items():
        assert f is out[gv]


def test_mlp_relax_pipeline_with_default_schedule():
    """The quick-start MLP: FuseTIR's fused PrimFuncs (matmul+add+relu at batch 1, T.int64
    shapes) are all scheduled and the VM's result is unchanged."""
    from minitvm import relax
    from minitvm.relax.pipeline import optimization_passes, vm_lowering_passes
    from minitvm.testing.nn_models import export_quick_start_mlp
    from minitvm.transform import Sequential

    mod, spec = export_quick_start_mlp(1)
    mod = Sequential(optimization_passes())(mod)
    mod = tt.DefaultCPUSchedule()(mod)
    prims = [f for _, f in mod.items() if isinstance(f, minitvm.tir.PrimFunc)]
    assert prims and all(f.attrs.get("tir.is_scheduled") for f in prims)
    mod = Sequential(vm_lowering_passes())(mod)
    vm = relax.VirtualMachine(minitvm.compile(mod, minitvm.target.Target("llvm")), minitvm.cpu())
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 784)).astype("float32")
    params = [(rng.standard_normal(p.shape) * 0.1).astype("float32") for _, p in spec]
    w1, b1, w2, b2 = params
    want = np.maximum(x @ w1.T + b1, 0) @ w2.T + b2
    np.testing.assert_allclose(vm["forward"](x, *params).numpy(), want, rtol=1e-4, atol=1e-4)


def conv_bias_relu(n, ci, hw, co, k, stride=1, groups=1, pad=None):
    """topi's conv2d_nchw (with its padding block) followed by a bias add and relu, as FuseTIR makes it."""
    from minitvm import te, topi

    x = te.placeholder((n, ci, hw, hw), "float32", name="x")
    w = te.placeholder((co, ci // groups, k, k), "float32", name="w")
    b = te.placeholder((co,), "float32", name="b")
    y = topi.nn.conv2d_nchw(x, w, stride=stride, padding=k // 2 if pad is None else pad, groups=groups)
    out = topi.nn.relu(topi.add(y, topi.reshape(b, (1, co, 1, 1))))
    return te.create_prim_func([x, w, b, out]), tuple(int(d) for d in out.shape)


@pytest.mark.parametrize("n, ci, hw, co, k, stride, groups", [
    (1, 8, 12, 16, 3, 1, 1),    # a 3x3 conv with padding
    (1, 3, 13, 6, 5, 2, 1),     # strided, odd sizes (13 -> 7 columns)
    (2, 8, 10, 8, 3, 1, 8),     # depthwise
    (2, 16, 7, 32, 1, 1, 1),    # pointwise (no padding block)
])
def test_conv2d_is_tiled_vectorized_and_matches_torch(n, ci, hw, co, k, stride, groups, parallel):
    import torch

    func, out_shape = conv_bias_relu(n, ci, hw, co, k, stride, groups)
    x, w, b = _rand(n, ci, hw, hw), _rand(co, ci // groups, k, k, seed=1), _rand(co, seed=2)
    sched = _check_same(func, [x, w, b], out_shape)
    text = sched.script()
    assert "T.vectorized" in text and 'scope="local"' in text and "T.unroll" in text
    _has_parallel(text, parallel)
    want = torch.relu(torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b),
                                                 stride=stride, padding=k // 2, groups=groups)).numpy()
    got = _run(sched, "llvm", [x, w, b, np.zeros(out_shape, "float32")])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n, c, hw, mult, pad, rows", [
    (1, 16, 12, 1, 0, 10),    # TF-style: padding done by a pad kernel before, the conv's own copy inlined
    (2, 8, 30, 2, 1, 6),      # padding in the kernel, a channel multiplier of 2, rows of 2 vectors
])
def test_a_stride_1_depthwise_conv_tiles_whole_rows_per_channel(n, c, hw, mult, pad, rows, parallel):
    """Depthwise at stride 1: per channel a tile of whole output rows (``rows`` of them) that
    each window tap updates with a shifted input row; numbers as torch's.  (30 columns: 6 rows,
    not 10 -- a row is 16 + 8 + 4 + 2 lanes, 4 registers, and 10 rows of them spilled.)"""
    import torch

    func, out_shape = conv_bias_relu(n, c, hw, c * mult, 3, 1, c, pad=pad)
    x, w, b = _rand(n, c, hw, hw), _rand(c * mult, 1, 3, 3, seed=1), _rand(c * mult, seed=2)
    assert ds.schedule_depthwise_conv2d(minitvm.tir.Schedule(IRModule({"main": func})))
    sched = _check_same(func, [x, w, b], out_shape)
    text = sched.script()
    assert f"in T.unroll({rows}):" in text and 'scope="local"' in text, text
    assert ('sblock("pad_temp")' in text) == (pad > 0), text  # a copy without padding is inlined
    _has_parallel(text, parallel or np.prod(out_shape) * 9 > ds.DEPTHWISE_PARALLEL_WORK)  # (the 30 x 30: 259K)
    want = torch.relu(torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b),
                                                 padding=pad, groups=c)).numpy()
    got = _run(sched, "llvm", [x, w, b, np.zeros(out_shape, "float32")])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("hw", [13, 12])
def test_a_stride_2_depthwise_conv_reads_a_deinterleaved_copy(hw, parallel):
    """Stride 2: the padded copy holds even columns, then odd ones; the taps read it as
    contiguous rows.  TF "same" padding: 13 -> 14 columns (7 even, 7 odd), 12 -> 13 (the slot
    after the last odd column is never read)."""
    import torch

    from minitvm import te, topi

    x = te.placeholder((2, 16, hw, hw), "float32", name="x")
    w = te.placeholder((16, 1, 3, 3), "float32", name="w")
    out = topi.nn.conv2d_nchw(x, w, stride=2, padding=(0, 0, 1, 1), groups=16)
    func = te.create_prim_func([x, w, out])
    xs, ws = _rand(2, 16, hw, hw), _rand(16, 1, 3, 3, seed=1)
    assert ds.schedule_depthwise_conv2d(minitvm.tir.Schedule(IRModule({"main": func})))
    sched = _check_same(func, [xs, ws], (2, 16, 6, 6))
    text = sched.script()
    assert f"pad_temp = T.sblock_alloc_buffer((2, 16, {hw + 1}, 2, 7))" in text, text  # the deinterleaved copy
    _has_parallel(text, parallel)
    want = torch.nn.functional.conv2d(torch.nn.functional.pad(torch.from_numpy(xs), (0, 1, 0, 1)),
                                      torch.from_numpy(ws), stride=2, groups=16).numpy()
    np.testing.assert_allclose(_run(sched, "llvm", [xs, ws, np.zeros((2, 16, 6, 6), "float32")]), want,
                               rtol=1e-4, atol=1e-4)


def _scheduled_by(rule, func, unit):
    """``func`` scheduled by the default-schedule ``rule`` under vector ``unit`` (the rule must take it)."""
    with unit:
        sch = minitvm.tir.Schedule(IRModule({"main": func}))
        assert rule(sch)
    return sch.mod["main"]


def _scheduled_stride_2_depthwise(unit, hw, pad, mult=1):
    """A 3-channel 3x3 stride-2 depthwise conv (``mult`` outputs per channel) over 2 images of
    ``hw`` x ``hw``, scheduled by the depthwise rule under ``unit``: (function, output shape)."""
    from minitvm import te, topi

    x = te.placeholder((2, 3, hw, hw), "float32", name="x")
    w = te.placeholder((3 * mult, 1, 3, 3), "float32", name="w")
    out = topi.nn.conv2d_nchw(x, w, stride=2, padding=pad, groups=3)
    sched = _scheduled_by(ds.schedule_depthwise_conv2d, te.create_prim_func([x, w, out]), unit)
    return sched, tuple(int(d) for d in out.shape)


@pytest.mark.parametrize("unit", [AVX2, AVX512], ids=["avx2", "avx512"])
@pytest.mark.parametrize("hw, pad, mult, cut", [(72, (0, 0, 1, 1), 1, True), (69, (0, 0, 1, 1), 1, False),
                                                (66, 1, 1, False), (72, (0, 0, 1, 1), 2, False)],
                         ids=["tf-even", "tf-odd", "symmetric", "multiplier"])
def test_a_wide_stride_2_depthwise_copy_is_cut_into_its_padding_and_inside(unit, hw, pad, mult, cut):
    """Rows of more than a register per parity, TF padding (none before, one after an even
    width), one input plane per output plane: the padded copy is cut (loop_partition) into its
    zero border and its inside, which copies without the padding test, still one plane per
    iteration of the convolution's loop (its buffer one plane, not all of them).  An odd width,
    padding before, a channel multiplier: the whole rows as before.  Numbers as torch's on
    AVX2's and AVX-512's tiles."""
    import torch

    from minitvm.target.tir_build import lower_to_module

    sched, out_shape = _scheduled_stride_2_depthwise(unit, hw, pad, mult)
    text = sched.script()
    assert ("_partition" in text) == cut, text
    lowered = lower_to_module(sched.with_attr("global_symbol", "main"))["main"].script()
    assert (lowered.count("if_then_else") == 0) == cut, lowered
    plane = int(re.search(r"pad_temp = T.allocate\(\[(\d+)\]", lowered).group(1))
    assert plane <= (hw + 2) ** 2 + 2 * (hw + 2), lowered  # one padded plane, not the 6 of the tensor
    xs, ws = _rand(2, 3, hw, hw), _rand(3 * mult, 1, 3, 3, seed=1)
    padded = torch.nn.functional.pad(torch.from_numpy(xs), (0, 1, 0, 1) if pad != 1 else (1, 1, 1, 1))
    want = torch.nn.functional.conv2d(padded, torch.from_numpy(ws), stride=2, groups=3).numpy()
    np.testing.assert_allclose(_run(sched, "llvm", [xs, ws, np.zeros(out_shape, "float32")]), want,
                               rtol=1e-4, atol=1e-4)


def _depthwise_reference(x, w, stride, pad):
    """numpy: a depthwise 3x3 convolution of ``x`` (N, C, H, W) zero-padded by ``pad`` (top,
    left, bottom, right)."""
    top, left, bottom, right = pad
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    oh, ow = (xp.shape[2] - 3) // stride + 1, (xp.shape[3] - 3) // stride + 1
    out = np.zeros((x.shape[0], x.shape[1], oh, ow), "float64")
    for kh in range(3):
        for kw in range(3):
            window = xp[:, :, kh:kh + stride * (oh - 1) + 1:stride, kw:kw + stride * (ow - 1) + 1:stride]
            out += window * w[None, :, 0, kh, kw, None, None]
    return out.astype("float32")


@pytest.mark.parametrize("unit", [AVX2, AVX512], ids=["avx2", "avx512"])
@pytest.mark.parametrize("hw, pad, rows", [(112, (0, 0, 1, 1), True), (100, (0, 0, 1, 1), True),
                                           (113, (0, 0, 1, 1), False), (113, (1, 1, 1, 1), False),
                                           (56, (0, 0, 1, 1), False)],
                         ids=["tf-112", "tf-100", "tf-odd-113", "symmetric-113", "small-56"])
def test_a_large_stride_2_depthwise_plane_is_copied_per_row_tile(unit, hw, pad, rows):
    """A padded plane of more than ``DEPTHWISE_COPY_PLANE_BYTES`` with TF padding (MobileNetV2's
    96 x 112 -> 56): its deinterleaved copy is made per tile of output rows, inside the row-tile
    loop (its buffer a few rows, not a plane), each parity row aligned to a register, and the
    copy's vector loop tests only the row (one branch per row vector, no per-lane padding test).
    An odd width, padding before, a plane that fits: a plane at a time, as before.  Numbers as
    numpy's on AVX2's and AVX-512's tiles."""
    from minitvm.target.tir_build import lower_to_module
    from minitvm.tir.analysis import uses_var
    from minitvm.tir.expr import Call
    from minitvm.tir.functor import post_order_visit
    from minitvm.tir.stmt import For, ForKind

    sched, out_shape = _scheduled_stride_2_depthwise(unit, hw, pad)
    low = lower_to_module(sched.with_attr("global_symbol", "main"))["main"]
    lowered = low.script()
    copy = int(re.search(r"pad_temp = T.allocate\(\[(\d+)\]", lowered).group(1))
    width = (hw + pad[1] + pad[3] + 1) // 2
    assert (copy < 32 * 2 * width) == rows, lowered  # a few rows, or a whole plane
    if rows:
        tile = re.search(r"for (\w+) in range\(\d+\):\n(?:.*\n)*?\s+pad_temp = T.allocate", lowered)
        assert tile is not None and "buffer_dim_align" in sched.script(), lowered
        assert f"* {-(-width // unit.lanes) * unit.lanes * 2} +" in lowered, lowered  # aligned parity rows
        tests = []  # (vectorized loop, the if_then_else conditions under it)

        def visit(x):
            if isinstance(x, For) and x.kind == ForKind.VECTORIZED:
                found = []
                post_order_visit(x.body, lambda e: found.append(e.args[0]) if isinstance(e, Call)
                                 and e.op == "tir.if_then_else" else None)
                tests.append((x.loop_var, found))

        post_order_visit(low.body, visit)
        conds = [c for _, found in tests for c in found]
        assert conds, lowered  # the copy's row test, in its vector loop
        assert not any(uses_var(c, v) for v, found in tests for c in found), lowered
    xs, ws = _rand(2, 3, hw, hw), _rand(3, 1, 3, 3, seed=1)
    want = _depthwise_reference(xs, ws, 2, pad)
    assert want.shape == out_shape
    with unit:
        got = _run(sched, "llvm", [xs, ws, np.zeros(out_shape, "float32")])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("unit, n, by_rows", [(AVX512, 1, True), (AVX512, 2, False), (AVX2, 1, False)],
                         ids=["avx512-b1", "avx512-b2", "avx2-b1"])
def test_a_large_stride_1_depthwise_conv_of_one_image_runs_blocks_of_rows_on_threads(unit, n, by_rows):
    """AVX-512, one image, a stride-1 plane of DEPTHWISE_ROWS_ON_THREADS_MIN_PIXELS outputs
    (MobileNetV2's 32 x 112 x 112): blocks of output rows on threads, every channel in each, and
    the padded copy per channel of a block (its rows and halo, not a plane); a batch, or AVX2,
    halves of the channels as before.  Numbers as numpy's."""
    from minitvm import te, topi
    from minitvm.target.tir_build import lower_to_module

    hw = 112
    x = te.placeholder((n, 6, hw, hw), "float32", name="x")
    w = te.placeholder((6, 1, 3, 3), "float32", name="w")
    out = topi.nn.conv2d_nchw(x, w, stride=1, padding=1, groups=6)
    func = te.create_prim_func([x, w, out])
    with unit:
        tiles = hw // ds._depthwise_tile_rows(hw, hw)
    blocks = min(d for d in range(ds.DEPTHWISE_ROW_BLOCKS_PER_THREAD * ds.parallel_threads(), tiles + 1)
                 if tiles % d == 0)
    sched = _scheduled_by(ds.schedule_depthwise_conv2d, func, unit)
    text = sched.script()
    parallel = re.findall(r"in T.parallel\((?:T.int64\()?(\d+)", text)
    assert parallel == [str(blocks if by_rows else n * 6)], text
    lowered = lower_to_module(sched.with_attr("global_symbol", "main"))["main"].script()
    copy = int(re.search(r"pad_temp = T.allocate\(\[(\d+)\]", lowered).group(1))
    assert copy == (hw // blocks + 2 if by_rows else hw + 2) * (hw + 2), lowered
    xs, ws = _rand(n, 6, hw, hw), _rand(6, 1, 3, 3, seed=1)
    with unit:
        got = _run(sched, "llvm", [xs, ws, np.full((n, 6, hw, hw), np.nan, "float32")])
    np.testing.assert_allclose(got, _depthwise_reference(xs, ws, 1, (1, 1, 1, 1)), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("unit, width, rows", [(AVX512, 14, 7), (AVX512, 28, 7), (AVX512, 7, 7), (AVX512, 56, 4),
                                               (AVX512, 112, 2), (AVX2, 7, 1), (AVX2, 14, 2), (AVX2, 28, 2),
                                               (AVX2, 56, 1)])
def test_a_depthwise_tile_counts_the_registers_a_row_is_emitted_in(unit, width, rows):
    """A row of ``width`` lanes is emitted as whole registers and power-of-two pieces (AVX-512:
    14 = 8 + 4 + 2, three registers): the tile keeps rows x pieces within the unit's registers
    less DEPTHWISE_SPARE_REGISTERS (14 rows of 14 took 42 of AVX-512's 32 and spilled)."""
    with unit:
        assert ds._depthwise_tile_rows(width, width) == rows


@pytest.mark.parametrize("unit", [AVX2, AVX512], ids=["avx2", "avx512"])
@pytest.mark.parametrize("hw, stride", [(14, 1), (28, 2), (7, 1)])
def test_a_narrow_depthwise_conv_matches_numpy_on_both_units(unit, hw, stride):
    """MobileNetV2's 14 x 14 and 7 x 7 planes (stride 1) and 28 -> 14 (stride 2, TF padding):
    the tile of ``_depthwise_tile_rows`` rows, numbers as numpy's."""
    from minitvm import te, topi

    pad = (1, 1, 1, 1) if stride == 1 else (0, 0, 1, 1)
    x = te.placeholder((2, 5, hw, hw), "float32", name="x")
    w = te.placeholder((5, 1, 3, 3), "float32", name="w")
    out = topi.nn.conv2d_nchw(x, w, stride=stride, padding=pad, groups=5)
    func = te.create_prim_func([x, w, out])
    out_shape = tuple(int(d) for d in out.shape)
    sched = _scheduled_by(ds.schedule_depthwise_conv2d, func, unit)
    # (AVX-512 computes stride-1 rows of 7 and 14 8 and 16 wide: test_a_narrow_depthwise_row_is_...)
    width = out_shape[3] if unit is AVX2 or stride == 2 else 1 << out_shape[3].bit_length()
    with unit:
        rows = ds._depthwise_tile_rows(out_shape[2], width)
        xs, ws = _rand(2, 5, hw, hw), _rand(5, 1, 3, 3, seed=1)
        got = _run(sched, "llvm", [xs, ws, np.zeros(out_shape, "float32")])
    assert rows == 1 or f"in T.unroll({rows}):" in sched.script(), sched.script()
    np.testing.assert_allclose(got, _depthwise_reference(xs, ws, stride, pad), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("unit", [AVX2, AVX512], ids=["avx2", "avx512"])
@pytest.mark.parametrize("hw, pad, wide", [(7, (1, 1, 1, 1), 8), (14, (1, 1, 1, 1), 16), (8, (0, 0, 1, 1), 8),
                                           (9, (1, 1, 0, 0), None), (8, (1, 1, 1, 1), None)],
                         ids=["7", "14", "tf-8", "pad-before-only", "8"])
def test_a_narrow_depthwise_row_is_computed_a_power_of_two_wide_on_avx512(unit, hw, pad, wide):
    """AVX-512: a stride-1 row narrower than a register and not a power of two (7, 14) is computed
    8 or 16 wide -- its accumulator, its update and init loops -- over columns of zeros added to the
    padded copy, and written back at its own width.  Not where the columns past the copy would not
    be zeros (padding before only: the copy would read the input there), nor for a row of 8, nor on
    AVX2.  Numbers as numpy's, the image's last column (next to the dropped lanes) included."""
    from minitvm import te, topi

    x = te.placeholder((2, 5, hw, hw), "float32", name="x")
    w = te.placeholder((5, 1, 3, 3), "float32", name="w")
    out = topi.nn.conv2d_nchw(x, w, stride=1, padding=pad, groups=5)
    out_shape = tuple(int(d) for d in out.shape)
    sched = _scheduled_by(ds.schedule_depthwise_conv2d, te.create_prim_func([x, w, out]), unit)
    text = sched.script()
    width = wide if unit is AVX512 and wide else out_shape[3]
    acc = re.search(r"conv2d_nchw_local = T.sblock_alloc_buffer\(\((\d+), (\d+), (\d+), (\d+)\)", text)
    assert acc is not None and int(acc.group(4)) == width, text
    if width != out_shape[3]:
        assert text.count(f"in T.vectorized({width}):") == 2, text  # the update's and the init's columns
        assert f"in T.vectorized({out_shape[3]}):" in text, text  # the write-back's
    xs, ws = _rand(2, 5, hw, hw), _rand(5, 1, 3, 3, seed=1)
    with unit:
        got = _run(sched, "llvm", [xs, ws, np.full(out_shape, np.nan, "float32")])
    np.testing.assert_allclose(got, _depthwise_reference(xs, ws, 1, pad), rtol=1e-4, atol=1e-4)


def test_a_stride_2_depthwise_conv_without_a_copy_keeps_the_generic_rule():
    from minitvm import te, topi
    from minitvm.tir.stmt_functor import block_realizes

    x = te.placeholder((1, 16, 13, 13), "float32", name="x")
    w = te.placeholder((16, 1, 3, 3), "float32", name="w")
    func = te.create_prim_func([x, w, topi.nn.conv2d_nchw(x, w, stride=2, padding=0, groups=16)])
    names = [r.block.name_hint for r, _ in block_realizes(func.body)]

    if "pad_temp" not in names:
        assert not ds.schedule_depthwise_conv2d(minitvm.tir.Schedule(IRModule({"main": func})))
    _check_same(func, [_rand(1, 16, 13, 13), _rand(16, 1, 3, 3, seed=1)], (1, 16, 6, 6))


@pytest.mark.parametrize("hw", [8, 7])
def test_a_pointwise_conv_is_a_matmul_over_the_pixels(hw, parallel):
    """1x1, stride 1: (y, x) flattened into one pixel axis, tiles of 8 channels x two vectors of
    pixels (AVX-512: 32), written back into NCHW.  7 x 7 = 49 pixels is not whole tiles: the
    last, partial tile of pixels is a loop of its own (loop_partition) whose write-back covers
    its pixels only (not the rows they are in)."""

    func, out_shape = conv_bias_relu(2, 16, hw, 32, 1, pad=0)
    assert ds.schedule_conv2d_1x1(minitvm.tir.Schedule(IRModule({"main": func})))
    x, w, b = _rand(2, 16, hw, hw), _rand(32, 16, 1, 1, seed=1), _rand(32, seed=2)
    sched = _check_same(func, [x, w, b], out_shape)
    text = sched.script()
    assert "pad_temp" not in text, text
    assert f"v2 // {hw}, v2 % {hw}]" in text, text  # written back from the flattened pixel axis
    if hw == 8:
        assert text.count("in T.unroll(8):") == 2 and text.count("in T.vectorized(32):") == 3, text
        assert "_partition" not in text, text
    else:  # (the partial tile, 17 pixels, and so every tile, as vectors of 16: see schedule_conv2d_1x1)
        assert text.count("in T.unroll(8):") == 4 and text.count("in T.vectorized(16):") == 6, text
        assert "in T.vectorized(32):" not in text and text.count("in T.unroll(2):") == 6, text
        assert "_partition" in text and f"{hw} * {hw}" not in text and f"// {hw} * {hw}" not in text, text
    _has_parallel(text, parallel)
    _matches_torch_conv_bias_relu(sched, x, w, b, out_shape)


@pytest.mark.parametrize("unit, hw, split", [(AVX2, 7, False), (AVX2, 13, True), (AVX512, 7, True),
                                             (AVX512, 13, False)], ids=["avx2-7", "avx2-13", "avx512-7", "avx512-13"])
def test_a_pointwise_conv_whose_partial_tile_is_more_than_a_vector_runs_by_vectors(unit, hw, split):
    """A partial tile of pixels longer than one vector (AVX-512: 49 = 32 + 17; AVX2: 169 = 10 x
    16 + 9) is computed and written back as whole vectors and a guarded rest (a 17-lane
    accumulator went lane by lane through the stack: 12x slower); a shorter one stays one
    vector.  Right on both units."""

    func, out_shape = conv_bias_relu(1, 16, hw, 32, 1, pad=0)
    x, w, b = _rand(1, 16, hw, hw), _rand(32, 16, 1, 1, seed=1), _rand(32, seed=2)
    sched = _scheduled_by(ds.schedule_conv2d_1x1, func, unit)
    text = sched.script()
    assert "_partition" in text, text
    assert (f"in T.vectorized({2 * unit.lanes}):" not in text) == split, text
    assert text.count("in T.unroll(2):\n") == (6 if split else 0), text
    _matches_torch_conv_bias_relu(sched, x, w, b, out_shape)


@pytest.mark.parametrize("unit, channels, rows", [(AVX512, 96, 12), (AVX512, 1284, 12), (AVX512, 64, 8),
                                                   (AVX512, 160, 8), (AVX512, 130, 8), (AVX512, 36, 12),
                                                   (AVX2, 96, 6), (AVX2, 64, 4)])
def test_a_pointwise_tile_takes_12_channels_where_they_divide_on_avx512(unit, channels, rows):
    """AVX-512: 12 x 32 (24 accumulators) where 12 divides the output channels, else 8 x 32 as
    before (160 = 20 x 8, 130 peels its last 2); AVX2 keeps 6 x 16 (4 x 16 on 64 channels)."""
    with unit:
        assert ds._pointwise_tile(channels) == (rows, 2 * unit.lanes)


@pytest.mark.parametrize("unit, rows", [(AVX2, 6), (AVX512, 12)], ids=["avx2", "avx512"])
@pytest.mark.parametrize("epilogue", [True, False], ids=["bias_relu", "bare"])
def test_a_pointwise_conv_over_14x14_pixels_is_right_on_both_units(unit, rows, epilogue):
    """196 pixels (MobileNetV2's 14 x 14 layers): two-vector tiles of as many channels as the
    unit's registers hold beside them (AVX2 6 x 16, AVX-512 12 x 32: they divide the 48 channels,
    POINTWISE_TILE_MAX_ROWS), the partial tile peeled; the
    numbers match torch with and without an epilogue to write back through."""
    import torch

    from minitvm import te, topi

    if epilogue:
        func, out_shape = conv_bias_relu(2, 24, 14, 48, 1, pad=0)
    else:
        x_ = te.placeholder((2, 24, 14, 14), "float32", name="x")
        w_ = te.placeholder((48, 24, 1, 1), "float32", name="w")
        conv = topi.nn.conv2d_nchw(x_, w_, stride=1, padding=0)
        func, out_shape = te.create_prim_func([x_, w_, conv]), (2, 48, 14, 14)
    x, w, b = _rand(2, 24, 14, 14), _rand(48, 24, 1, 1, seed=1), _rand(48, seed=2)
    sched = _scheduled_by(ds.schedule_conv2d_1x1, func, unit)
    text = sched.script()
    assert _register_tile(text, r"\w+", r"\w+") == (rows, 2 * unit.lanes) and "_partition" in text, text
    bias = torch.from_numpy(b) if epilogue else None
    want = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), bias)
    want = (torch.relu(want) if epilogue else want).numpy()
    args = [x, w, b] if epilogue else [x, w]
    np.testing.assert_allclose(_run(sched, "llvm", [*args, np.zeros(out_shape, "float32")]), want,
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("unit, rows", [(AVX2, 6), (AVX512, 8)], ids=["avx2", "avx512"])
def test_a_pointwise_conv_of_many_channels_peels_the_channels_its_tiles_do_not_divide(unit, rows, parallel):
    """130 output channels (>= POINTWISE_PEEL_MIN_CHANNELS) over 7 x 7 pixels: whole tiles of
    ``rows`` channels, the last, partial tile of channels a piece of its own, and the partial
    tile of pixels peeled off the whole tiles of channels -- three update blocks in all; the
    numbers match torch on both units."""

    func, out_shape = conv_bias_relu(1, 16, 7, 130, 1, pad=0)
    x, w, b = _rand(1, 16, 7, 7), _rand(130, 16, 1, 1, seed=1), _rand(130, seed=2)
    sched = _scheduled_by(ds.schedule_conv2d_1x1, func, unit)
    text = sched.script()
    assert text.count(f"in T.unroll({rows}):") == 6 and text.count("_update\")") == 3, text
    _has_parallel(text, parallel)
    _matches_torch_conv_bias_relu(sched, x, w, b, out_shape)


@pytest.mark.parametrize("unit", [AVX2, AVX512], ids=["avx2", "avx512"])
@pytest.mark.parametrize("ci, co, hw, prefetched", [(96, 24, 14, True), (40, 16, 12, True), (24, 48, 14, False),
                                                    (48, 24, 7, None)],
                         ids=["project-14", "project-12", "expand", "project-7"])
def test_a_projecting_pointwise_conv_prefetches_its_input_channels_ahead(unit, ci, co, hw, prefetched):
    """A pointwise convolution to fewer channels than it reads (MobileNetV2's projections) prefetches,
    at each input channel of every tile, the tile's first and last input pixel
    ``POINTWISE_PREFETCH_CHANNELS`` channels ahead (clamped to the last channel and, in the partial
    tile, to the last pixel: the build's bounds check proves it); an expanding one does not.  7 x 7
    pixels (tiles by vectors on AVX-512) prefetch on AVX2 only.  Numbers as torch's."""

    func, out_shape = conv_bias_relu(1, ci, hw, co, 1, pad=0)
    sched = _scheduled_by(ds.schedule_conv2d_1x1, func, unit)
    if prefetched is None:
        prefetched = unit is AVX2
    text = sched.script()
    # each update's channel loop (the whole tiles' and the partial tile's) opens with two prefetches
    opened = re.findall(rf"for ax3 in range\({ci}\):\n(\s+)T.prefetch\(.*\n\1T.prefetch\(", text)
    assert (len(opened) > 0) == prefetched and text.count("T.prefetch(") == 2 * len(opened), text
    assert not prefetched or f"T.min(ax3 + {ds.POINTWISE_PREFETCH_CHANNELS}, {ci - 1})" in text, text
    x, w, b = _rand(1, ci, hw, hw), _rand(co, ci, 1, 1, seed=1), _rand(co, seed=2)
    _matches_torch_conv_bias_relu(sched, x, w, b, out_shape, unit)


@pytest.mark.parametrize("unit", [AVX2, AVX512], ids=["avx2", "avx512"])
@pytest.mark.parametrize("ci, co, hw", [(16, 48, 7), (24, 96, 14)], ids=["7x7", "14x14"])
def test_a_pointwise_conv_with_a_packed_weight_prefetches_the_next_panel(unit, ci, co, hw):
    """A constant (layout-free) weight is packed into panels of ``mi`` output channels; at each input
    channel the whole tiles prefetch the next panel's weights at that channel (clamped to the last
    output channel), and the partial tile (which re-reads its panel from L1) does not.  Numbers as
    torch's on both units."""

    func, out_shape = conv_bias_relu(1, ci, hw, co, 1, pad=0)
    func = func.with_attr("layout_free_buffers", [1])
    sched = _scheduled_by(ds.schedule_conv2d_1x1, func, unit)
    text = sched.script()
    mi = 12 if unit is AVX512 else 6  # (AVX-512's 12 rows divide 48 and 96)
    hints = re.findall(rf"T.prefetch\(T.address_of\(\w+\[T.min\(\w+ \* {mi} \+ {mi}, {co - 1}\) // {mi}, ax3,", text)
    assert len(hints) == 1 and text.count("T.prefetch(") == 1, text
    x, w, b = _rand(1, ci, hw, hw), _rand(co, ci, 1, 1, seed=1), _rand(co, seed=2)
    _matches_torch_conv_bias_relu(sched, x, w, b, out_shape, unit)


@pytest.mark.parametrize("unit", [AVX2, AVX512], ids=["avx2", "avx512"])
@pytest.mark.parametrize("ci, chunked", [(144, True), (16, False)], ids=["large-input", "small-input"])
def test_a_pointwise_conv_over_a_large_input_runs_over_chunks_of_pixels(unit, ci, chunked):
    """144 channels x 32 x 32 pixels (576 KB of input, more than POINTWISE_CHUNK_BYTES): the
    pixel tiles in chunks (AVX2: 8 tiles of 16 pixels, AVX-512: 4 of 32) outside the tiles of
    channels, so each chunk of input is read from memory once by all of them; 16 channels (64 KB)
    keep the channel tiles outside.  Numbers as torch's on both units."""

    func, out_shape = conv_bias_relu(2, ci, 32, 24, 1, pad=0)
    x, w, b = _rand(2, ci, 32, 32), _rand(24, ci, 1, 1, seed=1), _rand(24, seed=2)
    sched = _scheduled_by(ds.schedule_conv2d_1x1, func, unit)
    with unit:
        assert ds._pointwise_chunk_tiles(1024, 2 * unit.lanes, ci) == ((8 if unit is AVX2 else 4) if chunked else None)
    text = sched.script()
    # loops (n, pixel chunk ax2_0_0, channel tile ax1_0, pixel tile ax2_0_1), else (n, ax1_0, ax2_0)
    assert ("ax2_0_0" in text) == chunked, text
    if chunked:
        assert text.index("ax2_0_0") < text.index("ax1_0") < text.index("ax2_0_1"), text
    _matches_torch_conv_bias_relu(sched, x, w, b, out_shape)


@pytest.mark.parametrize("unit, n, ci, co, loops", [(AVX512, 1, 192, 32, ["96", "4"]), (AVX512, 2, 192, 32, ["8"]),
                                                    (AVX512, 1, 32, 192, ["16"]), (AVX2, 1, 192, 32, None)],
                         ids=["avx512-project", "avx512-batch", "avx512-expand", "avx2-project"])
def test_a_projection_onto_28x28_pixels_runs_its_pixel_tiles_on_threads(unit, n, ci, co, loops):
    """AVX-512, one image, 192 -> 32 channels at 28 x 28 (784 pixels: 24 tiles of 32 and a partial
    one, not whole chunks): loops (p0, o0) of the whole tiles fused on threads (24 x 4), the
    partial tile's 4 tiles of channels on threads after them; a batch keeps (n, o0), an expanding
    convolution its tiles of channels, and AVX2 (16-pixel tiles: whole chunks) its chunks of
    pixels (n, chunk, o0, p0).  Numbers as torch's."""
    func, out_shape = conv_bias_relu(n, ci, 28, co, 1, pad=0)
    x, w, b = _rand(n, ci, 28, 28), _rand(co, ci, 1, 1, seed=1), _rand(co, seed=2)
    sched = _scheduled_by(ds.schedule_conv2d_1x1, func, unit)
    text = sched.script()
    parallel = re.findall(r"in T.parallel\((\d+)\)", text)
    assert parallel == (loops or parallel) and ("ax2_0_0" in text) == (loops is None), text
    if loops == ["96", "4"]:
        assert text.index("ax2_00_ax1_0_fused") < text.index("_update"), text  # pixel tiles outside channels
    _matches_torch_conv_bias_relu(sched, x, w, b, out_shape, unit)


@pytest.mark.parametrize("unit, rows", [(AVX2, 6), (AVX512, 8)], ids=["avx2", "avx512"])
@pytest.mark.parametrize("cout", [130, 48], ids=["peeled-channels", "whole-tiles"])
def test_a_pointwise_conv_reads_its_constant_weight_packed_in_panels(unit, rows, cout):
    """Through the default pipeline a pointwise conv's constant weight is packed at compile time
    into panels of the tile's ``rows`` channels (``W[o // rows, c, 0, 0, o % rows]``, zeros past the
    last channel: 130 is no multiple of 6 or 8; AVX-512's 48 panels of 12): the kernel reads a 5-d
    weight and no copy runs per call.  A weight passed as a parameter stays as it is.  Numbers as
    torch's on both units."""
    import torch

    from minitvm import relax

    x = relax.Var("x", relax.TensorStructInfo((2, 16, 7, 7), "float32"))
    w = _rand(cout, 16, 1, 1, seed=1)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(relax.op.nn.relu(relax.op.nn.conv2d(x, relax.const(w))))
        bb.emit_func_output(gv)
    xs = _rand(2, 16, 7, 7)
    with unit:
        lowered = relax.get_pipeline("default")(bb.get())
        got = relax.VirtualMachine(minitvm.compile(bb.get(), "llvm"), minitvm.cpu())["main"](xs).numpy()
    kernels = [f for gv, f in lowered.functions.items() if gv.name_hint.startswith("fused_conv2d")]
    assert len(kernels) == 1, [gv.name_hint for gv in lowered.functions]
    text = re.sub(r"T\.int64\((\d+)\)", r"\1", kernels[0].script())
    rows = 12 if unit is AVX512 and cout % 12 == 0 else rows  # (POINTWISE_TILE_MAX_ROWS where it divides)
    panels = -(-cout // rows)
    assert f"T.Buffer(({panels}, 16, 1, 1, {rows})" in text and ds.LAYOUT_REWRITE_PREPROC not in text, text
    want = torch.relu(torch.nn.functional.conv2d(torch.from_numpy(xs), torch.from_numpy(w))).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    func, _ = conv_bias_relu(2, 16, 7, cout, 1, pad=0)  # the weight a parameter
    text = _scheduled_by(ds.schedule_conv2d_1x1, func, unit).script()
    assert ds.LAYOUT_REWRITE_PREPROC not in text and "o % " not in text


@pytest.mark.parametrize("unit, split", [(AVX2, True), (AVX512, False)], ids=["avx2", "avx512"])
def test_a_depthwise_row_of_whole_registers_is_split_into_them(unit, split):
    """16 output columns: two AVX2 registers, each its own unrolled vector op (one 16-lane op was
    legalized into a long chain); on AVX-512 one register, the row as it is; right on both."""
    import torch

    func, out_shape = conv_bias_relu(1, 8, 16, 8, 3, 1, 8, pad=1)
    x, w, b = _rand(1, 8, 16, 16), _rand(8, 1, 3, 3, seed=1), _rand(8, seed=2)
    sched = _scheduled_by(ds.schedule_depthwise_conv2d, func, unit)
    text = sched.script()
    assert (re.search(r"in T.unroll\(2\):\s+for \w+ in T.vectorized\(8\)", text) is not None) == split, text
    assert text.count("T.vectorized(16)") == (1 if split else 3), text  # (the write-back's row stays whole)
    want = torch.relu(torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b),
                                                 padding=1, groups=8)).numpy()
    np.testing.assert_allclose(_run(sched, "llvm", [x, w, b, np.zeros(out_shape, "float32")]), want,
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("unit, vectors", [(AVX2, 4), (AVX512, 2)], ids=["avx2", "avx512"])
@pytest.mark.parametrize("stride", [1, 2])
def test_a_depthwise_row_of_part_registers_is_split_into_them_and_the_rest(unit, vectors, stride):
    """28 output columns (MobileNetV2's 28 x 28 layers): whole registers and a guarded rest (AVX2
    3 x 8 + 4, AVX-512 16 + 12), in the tile and in its write-back -- one 28-lane op each went
    lane by lane through the stack; right on both units, at stride 1 and 2."""
    import torch

    size = 28 * stride
    func, out_shape = conv_bias_relu(1, 8, size, 8, 3, stride, 8, pad=1)
    x, w, b = _rand(1, 8, size, size), _rand(8, 1, 3, 3, seed=1), _rand(8, seed=2)
    sched = _scheduled_by(ds.schedule_depthwise_conv2d, func, unit)
    text = sched.script()
    lanes = unit.lanes
    split = rf"in T.unroll\({vectors}\):\s+for \w+ in T.vectorized\({lanes}\)"
    assert len(re.findall(split, text)) == 3, text  # (the tile's zeroing, its update and its write-back)
    assert "T.vectorized(28)" not in text, text
    want = torch.relu(torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b),
                                                 stride=stride, padding=1, groups=8)).numpy()
    np.testing.assert_allclose(_run(sched, "llvm", [x, w, b, np.zeros(out_shape, "float32")]), want,
                               rtol=1e-4, atol=1e-4)


def test_a_depthwise_conv_pads_each_channel_plane_inside_its_loop():
    """The padded copy is made per (image, channel) plane inside the convolution's loop nest,
    not as a pass over the whole tensor before it: one loop nest under the root block."""
    from minitvm.tir.stmt import For

    func, out_shape = conv_bias_relu(2, 8, 30, 8, 3, 1, 8, pad=1)
    sched = _check_same(func, [_rand(2, 8, 30, 30), _rand(8, 1, 3, 3, seed=1), _rand(8, seed=2)], out_shape)
    root = sched.body.block.body
    assert isinstance(root, For) and 'T.sblock("pad_temp")' in sched.script(), sched.script()


@pytest.mark.parametrize("kind", ["sum", "max"])
def test_a_global_sum_pooling_reduces_8_planes_side_by_side(kind):
    """mean over H x W: 8 channels' sums unrolled, each in its unscheduled order (bitwise equal);
    a max is left to LLVM, which vectorizes it along the plane."""
    from minitvm import te, topi

    x = te.placeholder((2, 16, 5, 7), "float32", name="x")
    red = topi.sum(x, axis=(2, 3), keepdims=True) if kind == "sum" else topi.max(x, axis=(2, 3), keepdims=True)
    out = topi.divide(red, 35.0)
    func = te.create_prim_func([x, out])
    sch = minitvm.tir.Schedule(IRModule({"main": func}))
    assert ds._schedule_plane_reduction(sch) == (kind == "sum")
    xs = _rand(2, 16, 5, 7)
    sched = _check_same(func, [xs], (2, 16, 1, 1))
    args = [xs, np.zeros((2, 16, 1, 1), "float32")]
    np.testing.assert_array_equal(_run(sched, "llvm", [a.copy() for a in args]), _run(func, "llvm", args))
    want = (xs.sum if kind == "sum" else xs.max)(axis=(2, 3), keepdims=True) / 35.0
    np.testing.assert_allclose(_run(sched, "llvm", [xs, np.zeros((2, 16, 1, 1), "float32")]), want, rtol=1e-5)
    if kind == "sum":
        assert "in T.unroll(8):" in sched.script(), sched.script()


@pytest.mark.parametrize("c, parallel_tiles", [(1280, 160), (512, None)], ids=["mobilenet-1280", "resnet-512"])
def test_a_global_sum_pooling_of_more_than_the_threshold_runs_its_channel_tiles_on_threads(c, parallel_tiles):
    """MobileNetV2's mean over 1 x 1280 x 7 x 7 (62720 elements, more than
    PLANE_REDUCTION_PARALLEL_WORK): its 160 tiles of 8 channels on threads; ResNet-18's 1 x 512 x 7 x 7
    (25088) stays serial.  Bitwise equal to the unscheduled kernel, numbers as numpy's."""
    from minitvm import te, topi

    x = te.placeholder((1, c, 7, 7), "float32", name="x")
    out = topi.divide(topi.sum(x, axis=(2, 3), keepdims=True), 49.0)
    func = te.create_prim_func([x, out])
    sch = minitvm.tir.Schedule(IRModule({"main": func}))
    assert ds._schedule_plane_reduction(sch)
    text = sch.mod["main"].script()
    assert re.findall(r"in T.parallel\((\d+)\)", text) == ([str(parallel_tiles)] if parallel_tiles else []), text
    xs = _rand(1, c, 7, 7)
    args = [xs, np.zeros((1, c, 1, 1), "float32")]
    got = _run(sch.mod["main"], "llvm", [a.copy() for a in args])
    np.testing.assert_array_equal(got, _run(func, "llvm", args))
    want = xs.astype("float64").sum(axis=(2, 3), keepdims=True) / 49.0
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_conv_followed_by_the_next_layers_padding_keeps_its_register_tile(parallel):
    # FuseOps puts the next layer's explicit pad (TF "same" padding, MobileNetV2's) after the
    # activation: the pad writes a larger buffer, so it stays a row-by-row copy after the tile
    import torch

    from minitvm import te, topi

    x = te.placeholder((2, 16, 14, 14), "float32", name="x")
    w = te.placeholder((32, 16, 1, 1), "float32", name="w")
    y = topi.nn.relu(topi.nn.conv2d_nchw(x, w, stride=1, padding=0))
    out = topi.nn.pad(y, (0, 0, 0, 0), (0, 0, 1, 1))
    func = te.create_prim_func([x, w, out])
    xs, ws = _rand(2, 16, 14, 14), _rand(32, 16, 1, 1, seed=1)
    sched = _check_same(func, [xs, ws], (2, 32, 15, 15))
    text = sched.script()
    assert 'scope="local"' in text and "T.unroll" in text and "T.vectorized(15)" in text, text
    _has_parallel(text, parallel)
    want = torch.nn.functional.pad(torch.relu(torch.nn.functional.conv2d(torch.from_numpy(xs), torch.from_numpy(ws))),
                                   (0, 1, 0, 1)).numpy()
    got = _run(sched, "llvm", [xs, ws, np.zeros((2, 32, 15, 15), "float32")])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_conv_padding_is_copied_row_by_row():
    """Each padded row is one vector (14 lanes here), not a flat loop whose lanes each divide to
    find their row and column (that copy took half of a 3x3 convolution's time)."""
    func, _ = conv_bias_relu(2, 8, 12, 16, 3, 1, 1)
    text = tt.DefaultCPUSchedule()(IRModule({"main": func}))["main"].script()
    pad_loop = text[:text.index('T.sblock("pad_temp")')].rsplit("for ", 2)
    assert "in T.vectorized(14):" in pad_loop[-1] and "in range(224):" in pad_loop[-2], pad_loop[-2:]


def test_transpose_is_copied_in_square_tiles(parallel):
    from minitvm import te, topi

    w = te.placeholder((48, 80), "float32", name="w")
    func = te.create_prim_func([w, topi.transpose(w)])
    data = _rand(48, 80)
    sched = _check_same(func, [data], (80, 48))
    text = sched.script()
    tiles = "for i0_0 in T.parallel(5):" if parallel else "for i0_0, i1_0, i0_1 in T.grid(5, 3, 16):"
    assert tiles in text and "T.vectorized(16)" in text, text
    _has_parallel(text, parallel)
    np.testing.assert_array_equal(_run(sched, "llvm", [data, np.zeros((80, 48), "float32")]), data.T)


def test_attention_heads_transposed_at_batch_8_run_on_threads():
    """GPT-2's K^T at batch 8 (32 heads x 64 x 128 tokens out of the 768-wide qkv rows): a
    transposing copy of 256K floats goes on threads (an element gathered from another row
    costs several times a flat copy's; it ran serial under the flat copies' threshold), one
    of 8K (a single head) stays serial."""
    from minitvm import te, topi

    for heads, parallel in ((32, True), (1, False)):
        w = te.placeholder((heads, 128, 64), "float32", name="w")
        func = te.create_prim_func([w, topi.transpose(w, (0, 2, 1))])
        data = _rand(heads, 128, 64)
        sched = _check_same(func, [data], (heads, 64, 128))
        text = sched.script()
        assert "T.vectorized(16)" in text, text
        _has_parallel(text, parallel)
        np.testing.assert_array_equal(_run(sched, "llvm", [data, np.zeros((heads, 64, 128), "float32")]),
                                      data.transpose(0, 2, 1))


def test_attentions_key_transpose_through_reshapes_is_copied_in_tiles():
    """ViT's K^T: the (197 tokens, 3 heads x 64) projection viewed as heads and transposed to
    (3, 64, 197), scaled, in one kernel whose indices are a reshape's flat arithmetic.  Simplified
    over the iterators' ranges they show the transpose: tiles of 16 x 16, the 197 tokens as 16-lane
    vectors with the last guarded (197 has no divisor).  Before, each of 192 rows gathered 197
    floats 768 bytes apart (30 us; tiled 10).  numpy's numbers."""
    from minitvm import relax

    x = relax.Var("x", relax.TensorStructInfo((197, 192), "float32"))
    op = relax.op
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            k = op.permute_dims(op.reshape(x, (1, 197, 3, 64)), (0, 2, 3, 1))
            gv = bb.emit_output(op.reshape(op.multiply(k, relax.const(0.125, "float32")), (3, 64, 197)))
        bb.emit_func_output(gv)
    mod = relax.get_pipeline("zero")(bb.get())
    (func,) = [f for _, f in mod.functions_items() if not isinstance(f, relax.Function)]
    sched = apply_default_schedule(func)
    text = sched.script()
    assert "T.vectorized(T.int64(16))" in text and re.search(r"T\.where\(.*< T\.int64\(197\)\)", text), text
    xs = _rand(197, 192)
    got = _run(sched, "llvm", [xs, np.zeros((3, 64, 197), "float32")])
    np.testing.assert_array_equal(got, xs.reshape(197, 3, 64).transpose(1, 2, 0) * np.float32(0.125))


@pytest.mark.parametrize("shape, before, after, row", [
    ((1, 3, 24, 24), (0, 0, 0, 0), (0, 0, 1, 1), 25),     # TF "same" padding of a stride-2 stem
    ((2, 40, 7, 7), (0, 0, 1, 1), (0, 0, 1, 1), 9),       # rows shorter than a vector
])
def test_a_standalone_pad_is_copied_row_by_row(shape, before, after, row, parallel):
    """A pad kernel of its own (FuseOps leaves MobileNetV2's explicit pads alone) is vectorized
    along its rows, as the convolution's padding is: flattened, every lane divided to find its
    row and column and the copy ran at 0.4 GFLOP/s."""
    from minitvm import te, topi

    x = te.placeholder(shape, "float32", name="x")
    out = topi.nn.pad(x, before, after)
    func = te.create_prim_func([x, out])
    out_shape = tuple(int(d) for d in out.shape)
    data = _rand(*shape)
    sched = _check_same(func, [data], out_shape)
    text = sched.script()
    assert f"in T.vectorized({row}):" in text, text
    _has_parallel(text, parallel)
    want = np.pad(data, list(zip(before, after)))
    np.testing.assert_array_equal(_run(sched, "llvm", [data, np.zeros(out_shape, "float32")]), want)


@pytest.mark.parametrize("hw", [14, 7, 12])
def test_a_subsampling_slice_onto_short_rows_is_copied_row_by_row(hw, parallel):
    """``x[:, :, ::2, ::2]`` onto rows shorter than a vector (ResNet's downsampling shortcuts
    read their input so: 28 x 28 -> 14 x 14, 14 -> 7): by rows, each row one strided load and a
    shuffle; flattened, every lane found its row and column by a division and loaded alone
    (58 us against 4 for 128 x 28 x 28 -> 14 x 14)."""
    from minitvm import te, topi

    shape = (2, 6, 2 * hw, 2 * hw)
    x = te.placeholder(shape, "float32", name="x")
    out = topi.strided_slice(x, [0, 0, 0, 0], list(shape), [1, 1, 2, 2])
    func = te.create_prim_func([x, out])
    data = _rand(*shape)
    sched = _check_same(func, [data], (2, 6, hw, hw))
    text = sched.script()
    assert f"in T.vectorized(T.int64({hw})):" in text or f"in T.vectorized({hw}):" in text, text
    _has_parallel(text, parallel)
    got = _run(sched, "llvm", [data, np.zeros((2, 6, hw, hw), "float32")])
    np.testing.assert_array_equal(got, data[:, :, ::2, ::2])


def test_a_broadcast_add_is_vectorized_along_rows(parallel):
    """``x[b, i, j] + bias[j]``: by rows the bias row is one contiguous vector per row."""
    from minitvm import te, topi

    x = te.placeholder((2, 24, 48), "float32", name="x")
    b = te.placeholder((48,), "float32", name="b")
    func = te.create_prim_func([x, b, topi.add(x, b)])
    xs, bs = _rand(2, 24, 48), _rand(48, seed=1)
    sched = _check_same(func, [xs, bs], (2, 24, 48))
    assert "in T.vectorized(48):" in sched.script()
    np.testing.assert_allclose(_run(sched, "llvm", [xs, bs, np.zeros((2, 24, 48), "float32")]), xs + bs, rtol=1e-6)


def _dynamic(build):
    """A function of a symbolic batch ``n``, from TE."""
    from minitvm import te, tir

    n = tir.Var("n", "int64")
    tensors = build(n, te)
    return te.create_prim_func(tensors)


@pytest.mark.parametrize("kind", ["dense_relu", "softmax", "conv", "add"])
def test_a_dynamic_batch_is_scheduled_and_runs_at_several_sizes(kind, parallel):
    from minitvm import topi

    def dense_relu(n, te):
        x, w = te.placeholder((n, 64), "float32", name="x"), te.placeholder((64, 48), "float32", name="w")
        return [x, w, topi.nn.relu(topi.nn.matmul(x, w))]

    def softmax(n, te):
        x = te.placeholder((n, 40), "float32", name="x")
        return [x, topi.nn.softmax(x)]

    def conv(n, te):
        x, w = te.placeholder((n, 4, 9, 9), "float32", name="x"), te.placeholder((8, 4, 3, 3), "float32", name="w")
        return [x, w, topi.nn.conv2d_nchw(x, w, padding=1)]

    def add(n, te):
        a, b = te.placeholder((n, 40), "float32", name="a"), te.placeholder((n, 40), "float32", name="b")
        return [a, b, topi.add(a, b)]

    func = _dynamic({"dense_relu": dense_relu, "softmax": softmax, "conv": conv, "add": add}[kind])
    sched = apply_default_schedule(func)
    text = sched.script()
    assert sched.attrs.get("tir.is_scheduled") and "T.vectorized" in text, text
    assert "T.parallel" not in text or parallel  # unknown work: threads only when one row is a lot
    for n in (1, 5):
        shapes = {"dense_relu": [(n, 64), (64, 48), (n, 48)], "softmax": [(n, 40), (n, 40)],
                  "conv": [(n, 4, 9, 9), (8, 4, 3, 3), (n, 8, 9, 9)], "add": [(n, 40)] * 3}[kind]
        inputs = [_rand(*s, seed=n) for s in shapes[:-1]]
        want = _run(func, "llvm", [*inputs, np.zeros(shapes[-1], "float32")])
        got = _run(sched, "llvm", [*inputs, np.zeros(shapes[-1], "float32")])
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@T.prim_func
def row_sum_of_squares(A: T.Buffer((2, 16, 48), "float32"), S: T.Buffer((2, 16), "float32")):
    for b, i, k in T.grid(2, 16, 48):
        with T.block("sq"):
            vb, vi, vk = T.axis.remap("SSR", [b, i, k])
            with T.init():
                S[vb, vi] = T.float32(0)
            S[vb, vi] = S[vb, vi] + A[vb, vi, vk] * A[vb, vi, vk]


def test_a_sum_of_squares_over_rows_sums_8_rows_side_by_side_in_their_own_order():
    # a layer norm's variance is a multiply-accumulate too, but no operand runs along the output
    # rows: vectorizing them would gather, so the matmul treatment leaves it alone; the rows are
    # taken 8 at a time inside the reduction loop, each summed in its serial order: the same
    # numbers as the unscheduled function, bit for bit
    # (alone in a function the GEMV rule takes it first: the reduction rule is asked directly)
    a = _rand(2, 16, 48)
    sch = minitvm.tir.Schedule(row_sum_of_squares)
    assert schedule_reduction(sch) is True
    text = sch.mod["main"].script()
    assert re.search(r"for k in range\(48\):\n\s+for i_1 in T.unroll\(8\):", text), text
    for target in ("llvm", "python"):
        got = _run(sch.mod["main"], target, [a, np.zeros((2, 16), "float32")])
        np.testing.assert_array_equal(got, _run(row_sum_of_squares, target, [a, np.zeros((2, 16), "float32")]))
        np.testing.assert_allclose(got, (a * a).sum(-1), rtol=1e-5)


def test_a_softmax_row_of_197_reduces_in_16_partial_results_and_runs_every_block_per_row(parallel):
    # ViT's attention rows (197 keys): the max and the sum each in 16 partial results side by side
    # (a vector; the last 5 columns guarded), every block under one loop over the 3 x 197 rows, the
    # exp and divide vectorized; numpy's numbers
    from minitvm import te, topi

    x = te.placeholder((1, 3, 197, 197), "float32", name="x")
    sched = apply_default_schedule(te.create_prim_func([x, topi.nn.softmax(x, axis=-1)]))
    text = sched.script()
    _has_parallel(text, True)  # 116,427 elements: above the threshold either way
    assert text.count("T.parallel(591)") == 1, text
    assert text.count('_rf_update"') == 2 and text.count("T.vectorized(16)") == 4, text
    assert re.search(r"T\.where\(ax1 \* \S*16\S* \+ ax0 < \S*197", text), text  # the last partial vector
    a = _rand(1, 3, 197, 197)
    want = np.exp(a - a.max(-1, keepdims=True))
    want /= want.sum(-1, keepdims=True)
    np.testing.assert_allclose(_run(sched, "llvm", [a, np.zeros_like(a)]), want, rtol=1e-5, atol=1e-6)


def test_a_mean_over_channels_is_not_taken_a_row_at_a_time():
    # x - mean over the channels of NCHW: the mean has one value per (n, h, w), not per output row
    # (n, c, h): under the row loop it would be recomputed for every channel -- the row rule
    # declines, the serial rule takes it; numpy's numbers
    from minitvm import te, topi
    from minitvm.tir.schedule import ScheduleError
    from minitvm.tir.transform.default_schedule import schedule_row_reduction

    x = te.placeholder((1, 8, 4, 40), "float32", name="x")
    y = te.compute(x.shape, lambda n, c, h, w: x[n, c, h, w] - topi.sum(x, axis=1, keepdims=True)[n, 0, h, w] / 8,
                   name="y")
    func = te.create_prim_func([x, y])
    with pytest.raises(ScheduleError, match="one value per row"):
        schedule_row_reduction(minitvm.tir.Schedule(func))
    sched = apply_default_schedule(func)
    a = _rand(1, 8, 4, 40)
    np.testing.assert_allclose(_run(sched, "llvm", [a, np.zeros_like(a)]), a - a.mean(1, keepdims=True),
                               rtol=1e-5, atol=1e-5)


def test_a_check_before_a_max_is_computed_in_the_max_not_stored():
    """torch's safe softmax asks each row whether any score is finite: ``max(astype(not(x ==
    -inf), int8))``, fused into one kernel.  The comparison, the not and the cast are each read
    once by the next step: they are inlined into the max (no buffer of their own), whose rows go
    8 side by side -- the kept axis of one between them and the reduction is skipped.  numpy's
    answer on rows with and without finite scores."""
    from minitvm import relax

    f32 = "float32"
    x = relax.Var("x", relax.TensorStructInfo((1, 3, 20, 37), f32))
    op = relax.op
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            finite = op.astype(op.logical_not(op.equal(x, relax.const(float("-inf"), f32))), "int8")
            gv = bb.emit_output(op.max(finite, axis=[-1], keepdims=True))
        bb.emit_func_output(gv)
    mod = relax.get_pipeline("zero")(bb.get())
    (func,) = [f for gv, f in mod.functions_items() if gv.name_hint.startswith("fused_equal")]
    sched = apply_default_schedule(func)
    text = sched.script()
    assert "sblock_alloc_buffer" not in text and len(re.findall(r"^\s+with T.sblock\(", text, re.M)) == 2, text
    assert re.search(r"for i2_1 in T.unroll\((T.int64\()?8", text), text
    xs = _rand(1, 3, 20, 37)
    xs[0, 1, 4] = -np.inf
    xs[0, 2, :, ::2] = -np.inf
    want = np.isfinite(xs).max(-1, keepdims=True).astype("int8")
    for f in (func, sched):
        got = _run(f, "llvm", [xs, np.zeros((1, 3, 20, 1), "int8")])
        np.testing.assert_array_equal(got, want)
