"""bind and shared/local caches as a GPU schedule uses them (the MLC course's window sum)."""

import pytest

from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.script import tir as T
from minitvm.tir.schedule import ScheduleError


@T.prim_func
def window_sum(A: T.Buffer((1027,), "float32"), B: T.Buffer((1024,), "float32")):
    for i in range(1024):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi] + A[vi + 1] + A[vi + 2]


@T.prim_func
def window_sum_shared(A: T.Buffer((1027,), "float32"), B: T.Buffer((1024,), "float32")):
    A_shared = T.alloc_buffer((1027,), scope="shared")
    for i_0 in T.thread_binding(8, thread="blockIdx.x"):
        for i_1 in T.thread_binding(128, thread="threadIdx.x"):
            for ax0 in range(130):
                with T.block("A_shared"):
                    v0 = T.axis.spatial(1027, i_0 * 128 + ax0)
                    T.reads(A[v0])
                    T.writes(A_shared[v0])
                    A_shared[v0] = A[v0]
            with T.block("C"):
                vi = T.axis.spatial(1024, i_0 * 128 + i_1)
                T.reads(A_shared[vi:vi + 3])
                T.writes(B[vi])
                B[vi] = A_shared[vi] + A_shared[vi + 1] + A_shared[vi + 2]


def _bound_window_sum():
    sch = tir.Schedule(window_sum)
    i, = sch.get_loops("C")
    i0, i1 = sch.split(i, [None, 128])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    return sch, i1


def test_reads_of_shifted_loads_are_one_window():
    # A[vi], A[vi + 1], A[vi + 2] read the window A[vi:vi + 3], not the whole of A
    region = window_sum.body.block.body.body.block.reads[0].region[0]
    assert str(region.extent) == "3"


def test_compute_at_under_thread_loop_covers_the_whole_block():
    # a shared cache is seen by every threadIdx of a block: its region is relaxed over them
    # (130 = 128 threads + 2 halo elements), not over blockIdx
    sch, i1 = _bound_window_sum()
    cache = sch.cache_read("C", 0, "shared")
    sch.compute_at(cache, i1)
    assert_structural_equal(sch.mod["main"].body, window_sum_shared.body, map_free_vars=True)


def test_compute_at_of_a_local_cache_is_per_thread():
    sch, i1 = _bound_window_sum()
    cache = sch.cache_read("C", 0, "local")
    sch.compute_at(cache, i1)
    loops = sch.get_loops(cache)
    assert sch.get(loops[-1]).extent.value == 3  # one thread's window only


def test_bind_refuses_an_unknown_thread_axis():
    sch = tir.Schedule(window_sum)
    i, = sch.get_loops("C")
    with pytest.raises(ScheduleError, match=r"bind loop i to 'threadIdx\.w'.*not a GPU thread axis"):
        sch.bind(i, "threadIdx.w")


def test_unroll_after_bind_drops_the_binding():
    sch = tir.Schedule(window_sum)
    i, = sch.get_loops("C")
    sch.bind(i, "blockIdx.x")
    sch.unroll(i)
    loop = sch.get(i)
    assert loop.kind == "unrolled" and loop.thread_binding is None


def test_bind_refuses_a_reduction_over_blocks():
    @T.prim_func
    def rowsum(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8,), "float32")):
        for i, k in T.grid(8, 8):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]

    sch = tir.Schedule(rowsum)
    _, k = sch.get_loops("B")
    with pytest.raises(ScheduleError, match="bind to blockIdx.x loop k.*reduction"):
        sch.bind(k, "blockIdx.x")
