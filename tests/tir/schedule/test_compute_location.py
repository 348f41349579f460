"""compute_at, reverse_compute_at, compute_inline, reverse_compute_inline, decompose_reduction."""

from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.script import tir as T


@T.prim_func
def two_stage(A: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    B = T.alloc_buffer((64, 64), "float32")
    for i, j in T.grid(64, 64):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(64, 64):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


def test_compute_at_computes_only_the_tile(same_numbers):
    sch = tir.Schedule(two_stage)
    i, j = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, factors=[None, 8])
    sch.compute_at(sch.get_block("B"), i0)

    @T.prim_func
    def expected(A: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
        B = T.alloc_buffer((64, 64), "float32")
        for i_0 in range(8):
            for ax0, ax1 in T.grid(8, 64):
                with T.block("B"):
                    vi = T.axis.spatial(64, i_0 * 8 + ax0)
                    vj = T.axis.spatial(64, ax1)
                    B[vi, vj] = A[vi, vj] * T.float32(2)
            for i_1, j in T.grid(8, 64):
                with T.block("C"):
                    vi = T.axis.spatial(64, i_0 * 8 + i_1)
                    vj = T.axis.spatial(64, j)
                    C[vi, vj] = B[vi, vj] + T.float32(1)

    assert_structural_equal(sch.mod["main"].with_attr(expected.attrs), expected)
    same_numbers(two_stage, sch.mod)


def test_reverse_compute_at(same_numbers):
    sch = tir.Schedule(two_stage)
    i, j = sch.get_loops(sch.get_block("B"))
    j0, j1 = sch.split(j, factors=[None, 16])
    sch.reverse_compute_at(sch.get_block("C"), j0)
    loops = sch.get_loops(sch.get_block("C"))
    assert [sch.get(lp).extent.value for lp in loops] == [64, 4, 16]
    same_numbers(two_stage, sch.mod)


def test_compute_inline_removes_the_intermediate(same_numbers):
    sch = tir.Schedule(two_stage)
    sch.compute_inline(sch.get_block("B"))

    @T.prim_func
    def expected(A: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
        for i, j in T.grid(64, 64):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = A[vi, vj] * T.float32(2) + T.float32(1)

    assert_structural_equal(sch.mod["main"].with_attr(expected.attrs), expected)
    assert sch.mod["main"].body.block.alloc_buffers == ()
    same_numbers(two_stage, sch.mod)


def test_reverse_compute_inline(same_numbers):
    sch = tir.Schedule(two_stage)
    sch.reverse_compute_inline(sch.get_block("C"))
    text = sch.mod.script()
    assert 'block("C")' not in text and "C[vi, vj] = A[vi, vj] * T.float32(2.0) + T.float32(1.0)" in text
    same_numbers(two_stage, sch.mod)


def test_decompose_reduction(same_numbers):
    from minitvm.testing.tir_builders import mm_relu

    func = mm_relu(16, 16, 16)
    sch = tir.Schedule(func)
    y = sch.get_block("Y")
    i, j, k = sch.get_loops(y)
    init = sch.decompose_reduction(y, k)
    assert init.name == "Y_init" and sch.get(y).name_hint == "Y_update"
    assert sch.get(init).init is None and sch.get(y).init is None
    same_numbers(func, sch.mod)
