"""sch.pad_einsum: a padded iteration domain with zero-padded copies of the buffers."""

import numpy as np
import pytest

import minitvm
from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.script import tir as T


@T.prim_func
def matmul(A: T.Buffer((12, 7), "float32"), B: T.Buffer((7, 16), "float32"), C: T.Buffer((12, 16), "float32")):
    for i, j, k in T.grid(12, 16, 7):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = 0.0
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@T.prim_func
def matmul_padded(A: T.Buffer((12, 7), "float32"), B: T.Buffer((7, 16), "float32"),
                  C: T.Buffer((12, 16), "float32")):
    A_pad = T.alloc_buffer((16, 8))
    B_pad = T.alloc_buffer((8, 16))
    C_pad = T.alloc_buffer((16, 16))
    for i0, i1 in T.grid(16, 8):
        with T.block("A_pad"):
            v0, v1 = T.axis.remap("SS", [i0, i1])
            A_pad[v0, v1] = T.if_then_else(v0 < 12 and v1 < 7, A[v0, v1], T.float32(0))
    for i0, i1 in T.grid(8, 16):
        with T.block("B_pad"):
            v0, v1 = T.axis.remap("SS", [i0, i1])
            B_pad[v0, v1] = T.if_then_else(v0 < 7, B[v0, v1], T.float32(0))
    for i, j, k in T.grid(16, 16, 8):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C_pad[vi, vj] = 0.0
            C_pad[vi, vj] = C_pad[vi, vj] + A_pad[vi, vk] * B_pad[vk, vj]
    for i0, i1 in T.grid(12, 16):
        with T.block("C_pad"):
            v0, v1 = T.axis.remap("SS", [i0, i1])
            C[v0, v1] = C_pad[v0, v1]


@T.prim_func
def shifted(A: T.Buffer((9,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi + 1]


@T.prim_func
def row_sums(a: T.handle, s: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n, 16))
    S = T.match_buffer(s, (n,))
    for i, k in T.grid(n, 16):
        with T.block("S"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                S[vi] = 0.0
            S[vi] = S[vi] + A[vi, vk]


def test_pad_einsum_pads_inputs_with_zeros_and_crops_the_output(same_numbers, trace_replays):
    sch = tir.Schedule(matmul)
    sch.pad_einsum("C", [8, 8, 8])  # 12 -> 16, 16 stays, 7 -> 8
    assert_structural_equal(sch.mod["main"], matmul_padded.with_attr("global_symbol", "matmul"))
    trace_replays(sch, matmul)
    same_numbers(matmul, sch.mod)


def test_pad_einsum_with_a_symbolic_extent(trace_replays):
    sch = tir.Schedule(row_sums)
    sch.pad_einsum(sch.get_block("S"), [4, 1])
    text = sch.mod["main"].script()
    assert "A_pad = T.alloc_buffer(((n + 3) // 4 * 4, 16))" in text
    assert "T.if_then_else(v0 < n, A[v0, v1], T.float32(0.0))" in text
    trace_replays(sch, row_sums)
    f = minitvm.build(sch.mod)
    a = np.random.default_rng(0).random((10, 16), dtype="float32")
    out = minitvm.nd.array(np.zeros(10, "float32"))
    f["row_sums"](minitvm.nd.array(a), out)
    np.testing.assert_allclose(out.numpy(), a.sum(axis=1), rtol=1e-5)


def test_pad_einsum_refuses_a_non_einsum_access():
    sch = tir.Schedule(shifted)
    with pytest.raises(tir.ScheduleError, match="block B is not an Einsum computation: it accesses A"):
        sch.pad_einsum("B", [16])


@pytest.mark.parametrize("padding", [[8, 8], [8, 0, 8]])
def test_pad_einsum_refuses_bad_padding(padding):
    sch = tir.Schedule(matmul)
    with pytest.raises(tir.ScheduleError, match="must be 3 positive integers"):
        sch.pad_einsum("C", padding)


def test_pad_einsum_refuses_loops_shared_with_another_block():
    sch = tir.Schedule(matmul)
    sch.cache_write(sch.get_block("C"), 0, "local")
    sch.reverse_compute_at(sch.get_block("C_local"), sch.get_loops(sch.get_block("C"))[0])
    with pytest.raises(tir.ScheduleError, match="also runs block"):
        sch.pad_einsum("C", [8, 8, 8])


@T.prim_func
def row_max(A: T.Buffer((4, 7), "float32"), M: T.Buffer((4,), "float32")):
    for i, k in T.grid(4, 7):
        with T.block("M"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                M[vi] = T.float32(-1e30)
            M[vi] = T.max(M[vi], A[vi, vk])


@T.prim_func
def row_exp_sum(A: T.Buffer((4, 7), "float32"), S: T.Buffer((4,), "float32")):
    for i, k in T.grid(4, 7):
        with T.block("S"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                S[vi] = 0.0
            S[vi] = S[vi] + T.exp(A[vi, vk])


@pytest.mark.parametrize("func, why", [(row_max, "its update is not `Y = Y \\+ x`"),
                                       (row_exp_sum, "is not zero where the padded inputs are zero")])
def test_pad_einsum_refuses_a_reduction_that_zeros_would_change(func, why):
    # zero-padded steps of a max (or of a sum of exp) would change the result
    sch = tir.Schedule(func)
    with pytest.raises(tir.ScheduleError, match=f"reduction iterator\\(s\\) vk of block .*: .*{why}"):
        sch.pad_einsum(sch.get_block("M" if func is row_max else "S"), [1, 8])


def test_pad_einsum_of_spatial_iterators_only_keeps_a_max_exact(same_numbers):
    sch = tir.Schedule(row_max)
    sch.pad_einsum("M", [8, 1])  # only the rows are padded: padded rows are cropped away
    same_numbers(row_max, sch.mod)
