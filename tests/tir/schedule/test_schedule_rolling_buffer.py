"""sch.rolling_buffer: a tiled producer keeps only a circular window of its buffer."""

import pytest

from minitvm import tir
from minitvm.script import tir as T


@T.prim_func
def box_sums(A: T.Buffer((3, 14), "float32"), C: T.Buffer((3, 10), "float32")):
    # two stacked width-3 box filters: C[i] = sum_k B[i + k], B[i] = sum_k A[i + k]
    B = T.alloc_buffer((3, 12))
    for c, i, k in T.grid(3, 12, 3):
        with T.block("B"):
            vc, vi, vk = T.axis.remap("SSR", [c, i, k])
            with T.init():
                B[vc, vi] = T.float32(0)
            B[vc, vi] = B[vc, vi] + A[vc, vi + vk]
    for c, i, k in T.grid(3, 10, 3):
        with T.block("C"):
            vc, vi, vk = T.axis.remap("SSR", [c, i, k])
            with T.init():
                C[vc, vi] = T.float32(0)
            C[vc, vi] = C[vc, vi] + B[vc, vi + vk]


@T.prim_func
def pools(A: T.Buffer((10, 10), "float32"), C: T.Buffer((6, 6), "float32")):
    B = T.alloc_buffer((8, 8))
    for h, w, r, s in T.grid(8, 8, 3, 3):
        with T.block("B"):
            vh, vw, vr, vs = T.axis.remap("SSRR", [h, w, r, s])
            with T.init():
                B[vh, vw] = T.float32(-1e30)
            B[vh, vw] = T.max(B[vh, vw], A[vh + vr, vw + vs])
    for h, w, r, s in T.grid(6, 6, 3, 3):
        with T.block("C"):
            vh, vw, vr, vs = T.axis.remap("SSRR", [h, w, r, s])
            with T.init():
                C[vh, vw] = T.float32(-1e30)
            C[vh, vw] = T.max(C[vh, vw], B[vh + vr, vw + vs])


def _tiled(func, loop_index, factor):
    sch = tir.Schedule(func)
    loops = sch.get_loops(sch.get_block("C"))
    outer, _ = sch.split(loops[loop_index], [None, factor])
    sch.compute_at(sch.get_block("B"), outer)
    return sch


def test_window_shrinks_buffer_and_keeps_results(same_numbers, trace_replays):
    sch = _tiled(box_sums, 1, 5)  # 2 tiles of 5 outputs; each needs 7 rows of B, 2 shared
    sch.rolling_buffer(sch.get_block("B"), 0)
    b = sch.get(sch.get_block("B"))
    assert [int(s.value) for s in b.writes[0].buffer.shape] == [3, 7]
    assert b.iter_vars[1].iter_type == "opaque"
    realize_text = sch.mod.script()
    assert "T.where" in realize_text and "% 7" in realize_text
    trace_replays(sch, box_sums)
    assert "rolling_buffer" in "\n".join(sch.trace.as_python())
    same_numbers(box_sums, sch.mod)


def test_outermost_overlapping_loop_picks_the_axis(same_numbers):
    # under (h, w_0) each step needs B rows h..h+2 and columns w_0*3..w_0*3+4: both overlap
    # their neighbours, and the outermost loop, h, decides (TVM's rule): 3 rows are kept
    sch = _tiled(pools, 1, 3)
    sch.rolling_buffer("B", 0)
    assert [int(s.value) for s in sch.get(sch.get_block("B")).writes[0].buffer.shape] == [3, 8]
    same_numbers(pools, sch.mod)


def test_untiled_block_is_refused():
    sch = tir.Schedule(box_sums)
    with pytest.raises(tir.ScheduleError, match="not a loop"):
        sch.rolling_buffer("B", 0)


def test_output_block_is_refused():
    sch = _tiled(box_sums, 1, 5)
    with pytest.raises(tir.ScheduleError, match="output block"):
        sch.rolling_buffer("C", 0)


def test_window_without_overlap_is_refused():
    @T.prim_func
    def pointwise(A: T.Buffer((12,), "float32"), C: T.Buffer((12,), "float32")):
        B = T.alloc_buffer((12,))
        for i in range(12):
            with T.block("B"):
                vi = T.axis.spatial(12, i)
                B[vi] = A[vi] * 2.0
        for i in range(12):
            with T.block("C"):
                vi = T.axis.spatial(12, i)
                C[vi] = B[vi] + 1.0

    sch = _tiled(pointwise, 0, 4)
    with pytest.raises(tir.ScheduleError, match="rolling pattern"):
        sch.rolling_buffer("B", 0)


def test_second_writer_is_refused():
    @T.prim_func
    def two_writers(A: T.Buffer((8,), "float32"), C: T.Buffer((6,), "float32")):
        B = T.alloc_buffer((8,))
        for t in range(2):
            for i in range(4):
                with T.block("B0"):
                    vi = T.axis.spatial(8, t * 4 + i)
                    B[vi] = A[vi]
            for i in range(4):
                with T.block("B1"):
                    vi = T.axis.spatial(8, t * 4 + i)
                    B[vi] = B[vi] + 1.0
            for i in range(3):
                with T.block("C"):
                    vi = T.axis.spatial(6, t * 3 + i)
                    C[vi] = B[vi]

    with pytest.raises(tir.ScheduleError, match="write-after-write"):
        tir.Schedule(two_writers).rolling_buffer("B0", 0)
