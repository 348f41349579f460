"""Every primitive's main misuse raises ScheduleError in words, and changes nothing."""

import pytest

from minitvm import tir
from minitvm.ir import structural_equal
from minitvm.script import tir as T


@T.prim_func
def two_stage(A: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    B = T.alloc_buffer((64, 64), "float32")
    for i, j in T.grid(64, 64):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j, k in T.grid(64, 64, 64):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + B[vi, vk]


def _sch():
    sch = tir.Schedule(two_stage)
    return sch, sch.get_block("B"), sch.get_block("C")


def _fails(sch, action, *patterns):
    before = sch.mod
    with pytest.raises(tir.ScheduleError) as err:
        action()
    for p in patterns:
        assert p in str(err.value), f"{p!r} not in: {err.value}"
    assert sch.mod is before and structural_equal(sch.mod, before)
    return str(err.value)


def test_get_block_unknown_name():
    sch, _, _ = _sch()
    _fails(sch, lambda: sch.get_block("D"), "no block named 'D'", "['B', 'C']")


def test_split_bad_factors():
    sch, b, _ = _sch()
    i, _ = sch.get_loops(b)
    _fails(sch, lambda: sch.split(i, factors=[None, None]), "at most one factor may be None")
    _fails(sch, lambda: sch.split(i, factors=[2, 4]), "product 8 is smaller than the extent")
    _fails(sch, lambda: sch.split(i, factors=[0, None]), "factor 0 is not positive")


def test_fuse_not_nested():
    sch, b, c = _sch()
    i, _ = sch.get_loops(b)
    ci, _, _ = sch.get_loops(c)
    _fails(sch, lambda: sch.fuse(i, ci), "is not the only statement directly inside i")


def test_reorder_not_nested():
    sch, b, c = _sch()
    i, j = sch.get_loops(b)
    _, _, k = sch.get_loops(c)
    _fails(sch, lambda: sch.reorder(i, k), "cannot reorder i, k: k is not nested under i")


def test_parallel_reduction_loop():
    sch, _, c = _sch()
    _, _, k = sch.get_loops(c)
    _fails(sch, lambda: sch.parallel(k), "cannot parallelize loop k", "reduction iterator vk of block C")
    _fails(sch, lambda: sch.vectorize(k), "cannot vectorize loop k")


def test_stale_loop_reference():
    sch, b, _ = _sch()
    i, _ = sch.get_loops(b)
    sch.split(i, factors=[None, 8])
    _fails(sch, lambda: sch.parallel(i), "loop i no longer exists")


def test_compute_at_loop_without_consumer():
    sch, b, c = _sch()
    bi, _ = sch.get_loops(b)
    sch2 = tir.Schedule(two_stage)
    _fails(sch, lambda: sch.compute_at(c, bi), "block C is an output block")
    ci, _, _ = sch2.get_loops(sch2.get_block("C"))
    _fails(sch2, lambda: sch2.reverse_compute_at(sch2.get_block("B"), ci),
           "is not an ancestor of any producer of block B")


def test_compute_inline_of_a_reduction():
    sch, _, c = _sch()
    _fails(sch, lambda: sch.compute_inline(c), "cannot compute_inline block C")


def test_decompose_reduction_without_init():
    sch, b, _ = _sch()
    i, _ = sch.get_loops(b)
    _fails(sch, lambda: sch.decompose_reduction(b, i), "block B: it has no T.init")


def test_rfactor_spatial_loop():
    sch, _, c = _sch()
    i, _, _ = sch.get_loops(c)
    _fails(sch, lambda: sch.rfactor(i, 0), "i is bound to a spatial iterator of block C")


def test_cache_write_bad_index():
    sch, b, _ = _sch()
    _fails(sch, lambda: sch.cache_write(b, 3, "local"), "block B writes 1 buffer; buffer index 3 is out of range")


def test_tensorize_unknown_intrinsic():
    sch, _, c = _sch()
    _, _, k = sch.get_loops(c)
    _fails(sch, lambda: sch.tensorize(k, "no_such_intrin"), "no tensor intrinsic named 'no_such_intrin'")


def test_blockize_blocks_not_consecutive():
    @T.prim_func
    def three(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32"),
              D: T.Buffer((8,), "float32")):
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi]
        for i in range(8):
            with T.block("C"):
                vi = T.axis.spatial(8, i)
                C[vi] = A[vi]
        for i in range(8):
            with T.block("D"):
                vi = T.axis.spatial(8, i)
                D[vi] = A[vi]

    sch = tir.Schedule(three)
    _fails(sch, lambda: sch.blockize([sch.get_block("B"), sch.get_block("D")]), "consecutive siblings")


def test_reverse_compute_at_inside_a_reduction():
    from minitvm.testing.tir_builders import mm_relu

    sch = tir.Schedule(mm_relu(8, 8, 8))
    _, _, k = sch.get_loops(sch.get_block("Y"))
    _fails(sch, lambda: sch.reverse_compute_at(sch.get_block("C"), k),
           "loop k drives the reduction of producer Y")
