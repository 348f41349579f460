"""sch.transform_block_layout: new block iterators f(old ones), new loops over them."""

import numpy as np
import pytest

import minitvm
from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.script import tir as T


@T.prim_func
def scale(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16, 8), "float32")):
    for i, j in T.grid(16, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * 2.0


@T.prim_func
def scale_fused(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16, 8), "float32")):
    for i in range(128):
        with T.block("B"):
            vi = T.axis.spatial(128, i)
            B[vi // 8, vi % 8] = A[vi // 8, vi % 8] * 2.0


@T.prim_func
def reduce_sum(A: T.Buffer((1, 6, 4, 5), "float32"), B: T.Buffer((6, 4), "float32")):
    for n, i, j, k in T.grid(1, 6, 4, 5):
        with T.block("sum"):
            vn, vi, vj, vk = T.axis.remap("SSSR", [n, i, j, k])
            with T.init():
                B[vi, vj] = 0.0
            B[vi, vj] = B[vi, vj] + A[vn, vi, vj, vk]


@T.prim_func
def reduce_sum_fused(A: T.Buffer((1, 6, 4, 5), "float32"), B: T.Buffer((6, 4), "float32")):
    for ax0, ax1 in T.grid(5, 24):
        with T.block("sum"):
            v0, v1 = T.axis.remap("RS", [ax0, ax1])
            with T.init():
                B[v1 // 4, v1 % 4] = 0.0
            B[v1 // 4, v1 % 4] = B[v1 // 4, v1 % 4] + A[0, v1 // 4, v1 % 4, v0]


@pytest.mark.parametrize("by_name", [True, False])
def test_transform_block_layout_fuses_iterators(by_name, same_numbers, trace_replays):
    sch = tir.Schedule(scale)
    sch.transform_block_layout("B" if by_name else sch.get_block("B"), lambda i, j: (i * 8 + j,))
    assert_structural_equal(sch.mod["main"], scale_fused.with_attr("global_symbol", "scale"))
    trace_replays(sch, scale)
    same_numbers(scale, sch.mod)


def test_transform_block_layout_moves_the_reduction_outside(same_numbers, trace_replays):
    sch = tir.Schedule(reduce_sum)
    sch.transform_block_layout("sum", lambda n, i, j, k: (k, n * 24 + i * 4 + j))
    assert_structural_equal(sch.mod["main"], reduce_sum_fused.with_attr("global_symbol", "reduce_sum"))
    trace_replays(sch, reduce_sum)
    same_numbers(reduce_sum, sch.mod)


def test_transform_block_layout_permutes(same_numbers):
    sch = tir.Schedule(scale)
    sch.transform_block_layout("B", lambda i, j: (j, i))
    loops = [sch.get(lp) for lp in sch.get_loops(sch.get_block("B"))]
    assert [lp.extent.value for lp in loops] == [8, 16]
    same_numbers(scale, sch.mod)


@pytest.mark.parametrize("index_map", [lambda i, j: (i + j,), lambda i, j: (i * 8 + j, j),
                                       lambda i, j: (i * 4 + j,)])
def test_transform_block_layout_refuses_maps_that_are_not_bijective(index_map):
    sch = tir.Schedule(scale)
    with pytest.raises(tir.ScheduleError, match="block B: .*bijective"):
        sch.transform_block_layout("B", index_map)


def test_transform_block_layout_refuses_mixing_spatial_and_reduction():
    sch = tir.Schedule(reduce_sum)
    with pytest.raises(tir.ScheduleError, match="mixes spatial and reduction"):
        sch.transform_block_layout("sum", lambda n, i, j, k: (n, i, j * 5 + k))


def test_transform_block_layout_refuses_a_non_trivial_binding():
    sch = tir.Schedule(scale)
    sch.split(sch.get_loops(sch.get_block("B"))[0], factors=[4, 4])
    with pytest.raises(tir.ScheduleError, match="not trivial"):
        sch.transform_block_layout("B", lambda i, j: (i * 8 + j,))


def test_transform_block_layout_refuses_a_map_of_the_wrong_arity():
    sch = tir.Schedule(scale)
    with pytest.raises(tir.ScheduleError, match="takes 1 indices but there are 2"):
        sch.transform_block_layout("B", lambda i: (i,))


@T.prim_func
def batched_rows(a: T.handle, c: T.handle):
    n = T.int64()
    A = T.match_buffer(a, (T.int64(4), n), "float32")
    C = T.match_buffer(c, (T.int64(4) * n,), "float32")
    for i, j in T.grid(T.int64(4), n):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi * n + vj] = A[vi, vj] + T.float32(1)


@T.prim_func
def batched_rows_fused(a: T.handle, c: T.handle):
    n = T.int64()
    A = T.match_buffer(a, (T.int64(4), n), "float32")
    C = T.match_buffer(c, (T.int64(4) * n,), "float32")
    for ax0 in range(n * T.int64(4)):
        with T.block("C"):
            v0 = T.axis.spatial(n * T.int64(4), ax0)
            C[v0] = A[v0 // n, v0 % n] + T.float32(1)


def test_transform_block_layout_fuses_a_symbolic_extent():
    sch = tir.Schedule(batched_rows)
    n = batched_rows.buffer_map[batched_rows.params[0]].shape[1]
    sch.transform_block_layout("C", lambda i, j: (i * n + j,))
    assert_structural_equal(sch.mod["main"], batched_rows_fused.with_attr("global_symbol", "batched_rows"),
                            map_free_vars=True)
    a = np.random.default_rng(0).random((4, 5), dtype="float32")
    out = minitvm.nd.array(np.zeros(20, "float32"))
    minitvm.build(sch.mod)["batched_rows"](minitvm.nd.array(a), out)
    np.testing.assert_allclose(out.numpy(), (a + 1).reshape(-1), rtol=1e-6)


@T.prim_func
def scale_split(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16, 8), "float32")):
    for ax0, ax1, ax2 in T.grid(4, 8, 4):
        with T.block("B"):
            v0, v1, v2 = T.axis.remap("SSS", [ax0, ax1, ax2])
            B[v0 * 4 + v2, v1] = A[v0 * 4 + v2, v1] * 2.0


def test_transform_block_layout_splits_an_iterator(same_numbers, trace_replays):
    sch = tir.Schedule(scale)
    sch.transform_block_layout("B", lambda i, j: (i // 4, j, i % 4))
    assert_structural_equal(sch.mod["main"], scale_split.with_attr("global_symbol", "scale"))
    trace_replays(sch, scale)
    same_numbers(scale, sch.mod)


@pytest.mark.parametrize("index_map", [lambda i, j: (i // 4, j, i % 8), lambda i, j: (i // 4, j),
                                       lambda i, j: (i % 4, j)])
def test_transform_block_layout_refuses_pieces_that_do_not_tile(index_map):
    sch = tir.Schedule(scale)
    with pytest.raises(tir.ScheduleError, match="block B: the pieces .* do not split vi exactly once"):
        sch.transform_block_layout("B", index_map)
