"""sch.storage_align: a block annotation that lowering turns into padded strides."""

import numpy as np
import pytest

import minitvm
from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.script import tir as T
from minitvm.tir.transform.storage_align import aligned_strides


@T.prim_func
def two_stage(A: T.Buffer((32, 16), "float32"), C: T.Buffer((32, 16), "float32")):
    B = T.alloc_buffer((32, 16))
    for i in range(32):
        for j in range(16):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * 2.0
        for j in range(16):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[vi, vj] + 1.0


@T.prim_func
def two_stage_aligned(A: T.Buffer((32, 16), "float32"), C: T.Buffer((32, 16), "float32")):
    B = T.alloc_buffer((32, 16))
    for i in range(32):
        for j in range(16):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.block_attr({"buffer_dim_align": [[0, 0, 16, 3]]})
                B[vi, vj] = A[vi, vj] * 2.0
        for j in range(16):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[vi, vj] + 1.0


@T.prim_func
def staged_3d(A: T.Buffer((4, 6, 8), "float32"), C: T.Buffer((4, 6, 8), "float32")):
    B = T.alloc_buffer((4, 6, 8))
    for i, j, k in T.grid(4, 6, 8):
        with T.block("B"):
            vi, vj, vk = T.axis.remap("SSS", [i, j, k])
            B[vi, vj, vk] = A[vi, vj, vk] + 1.0
    for i, j, k in T.grid(4, 6, 8):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSS", [i, j, k])
            C[vi, vj, vk] = B[3 - vi, vj, 7 - vk] * 3.0


def test_storage_align_records_the_annotation(trace_replays):
    sch = tir.Schedule(two_stage)
    sch.storage_align("B", 0, axis=0, factor=16, offset=3)
    assert_structural_equal(sch.mod["main"], two_stage_aligned.with_attr("global_symbol", "two_stage"))
    trace_replays(sch, two_stage)


def test_storage_align_again_on_the_same_axis_replaces_the_entry(trace_replays):
    sch = tir.Schedule(two_stage)
    block = sch.get_block("B")
    sch.storage_align(block, 0, axis=0, factor=16, offset=0)
    sch.storage_align(block, 0, axis=-2, factor=16, offset=3)  # -2 is axis 0
    assert_structural_equal(sch.mod["main"], two_stage_aligned.with_attr("global_symbol", "two_stage"))
    trace_replays(sch, two_stage)


def test_aligned_strides_pad_each_axis_to_k_factor_plus_offset():
    shape = tuple(minitvm.tir.const(s, "int32") for s in (4, 6, 8))
    strides = [s.value for s in aligned_strides(shape, {1: (16, 1), 0: (32, 0)})]
    assert strides[2] == 1 and strides[1] == 17  # 8 -> 17 = 16 * 1 + 1
    assert strides[0] == 128 and strides[0] >= 6 * 17  # 102 -> 128 = 32 * 4


def test_storage_align_pads_the_lowered_buffer_and_computes_the_same(same_numbers):
    sch = tir.Schedule(staged_3d)
    sch.storage_align("B", 0, axis=1, factor=16, offset=1)
    sch.storage_align("B", 0, axis=0, factor=32, offset=0)
    lowered = minitvm.tir.transform.lowered(sch.mod)["main"].script()
    assert "T.allocate([477]" in lowered  # 3 * 128 + 5 * 17 + 7 * 1 + 1 elements
    assert "* 128" in lowered and "* 17" in lowered
    same_numbers(staged_3d, sch.mod)


def test_storage_align_with_compacted_allocation_still_computes_the_same(same_numbers):
    # B is compacted to one row per i; the alignment applies to the compacted shape
    sch = tir.Schedule(two_stage)
    sch.storage_align("B", 0, axis=0, factor=16, offset=3)
    same_numbers(two_stage, sch.mod)
    args = [np.random.default_rng(1).random((32, 16), dtype="float32"), np.zeros((32, 16), "float32")]
    f = minitvm.build(sch.mod)
    out = minitvm.nd.array(args[1])
    f["two_stage"](minitvm.nd.array(args[0]), out)
    np.testing.assert_allclose(out.numpy(), args[0] * 2 + 1, rtol=1e-6)


@pytest.mark.parametrize("factor", [0, -1])
def test_storage_align_refuses_a_factor_that_is_not_positive(factor):
    sch = tir.Schedule(two_stage)
    with pytest.raises(tir.ScheduleError, match="factor must be a positive number"):
        sch.storage_align("B", 0, axis=0, factor=factor, offset=3)


def test_storage_align_refuses_a_parameter():
    sch = tir.Schedule(two_stage)
    with pytest.raises(tir.ScheduleError, match="C .*not allocated by a block"):
        sch.storage_align("C", 0, axis=0, factor=16, offset=3)


def test_storage_align_refuses_a_bad_index_or_axis():
    sch = tir.Schedule(two_stage)
    with pytest.raises(tir.ScheduleError, match="write index 2 is out of range"):
        sch.storage_align("B", 2, axis=0, factor=16, offset=3)
    with pytest.raises(tir.ScheduleError, match=r"axis must be in \[-2, 2\); got 2"):
        sch.storage_align("B", 0, axis=2, factor=16, offset=3)


def test_storage_align_refuses_a_malformed_annotation():
    sch = tir.Schedule(two_stage)
    sch.annotate("B", "buffer_dim_align", [0])
    with pytest.raises(tir.ScheduleError, match="expected a list of \\[buffer_index, axis"):
        sch.storage_align("B", 0, axis=0, factor=16, offset=3)


@T.prim_func
def matmul(A: T.Buffer((32, 32), "float32"), B: T.Buffer((32, 32), "float32"), C: T.Buffer((32, 32), "float32")):
    for i, j, k in T.grid(32, 32, 32):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = 0.0
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def test_storage_align_of_a_shared_tile_under_compute_at(same_numbers):
    # the GPU pattern: a shared-memory copy of an A tile, rows padded to avoid bank conflicts
    sch = tir.Schedule(matmul)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    io, ii = sch.split(i, [None, 8])
    ko, ki = sch.split(k, [None, 8])
    sch.reorder(io, j, ko, ii, ki)
    a_shared = sch.cache_read(block, 0, "shared")
    sch.compute_at(a_shared, ko)
    sch.storage_align(a_shared, 0, axis=-2, factor=16, offset=4)
    lowered = minitvm.tir.transform.lowered(sch.mod)["main"].script()
    # the tile lives in one k step (8 x 8, as TVM compacts it): row stride 8 -> 20 = 16 + 4
    assert "A_shared[ax0 * 20 + " in lowered
    same_numbers(matmul, sch.mod)
