"""Loop primitives: split, fuse, reorder, parallel/vectorize/unroll, annotate."""

import pytest

from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.script import tir as T


@T.prim_func
def add_2d(A: T.Buffer((32, 48), "float32"), B: T.Buffer((32, 48), "float32")):
    for i, j in T.grid(32, 48):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + T.float32(1)


@T.prim_func
def matmul(A: T.Buffer((16, 32), "float32"), B: T.Buffer((32, 24), "float32"), C: T.Buffer((16, 24), "float32")):
    for i, j, k in T.grid(16, 24, 32):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def test_split_gives_readable_bindings(same_numbers):
    sch = tir.Schedule(add_2d)
    i, j = sch.get_loops(sch.get_block("B"))
    j0, j1 = sch.split(j, factors=[None, 16])

    @T.prim_func
    def expected(A: T.Buffer((32, 48), "float32"), B: T.Buffer((32, 48), "float32")):
        for i, j_0, j_1 in T.grid(32, 3, 16):
            with T.block("B"):
                vi = T.axis.spatial(32, i)
                vj = T.axis.spatial(48, j_0 * 16 + j_1)
                B[vi, vj] = A[vi, vj] + T.float32(1)

    assert_structural_equal(sch.mod["main"].with_attr(expected.attrs), expected)
    same_numbers(add_2d, sch.mod)


def test_non_dividing_split_adds_a_predicate(same_numbers):
    sch = tir.Schedule(add_2d)
    _, j = sch.get_loops(sch.get_block("B"))
    j0, j1 = sch.split(j, factors=[None, 10])
    assert sch.get(j0).extent.value == 5
    realize = sch.mod["main"].body.block.body.body.body.body
    assert "j_0 * 10 + j_1 < 48" in realize.predicate.script()
    same_numbers(add_2d, sch.mod)


def test_loops_of_a_padded_three_way_split_reorder(same_numbers):
    # the guard spells the row as (i_0 * 2 + i_1) * 3 + i_2, the binding as i_0 * 6 + i_1 * 3 + i_2:
    # the same padding guard, which TVM's reorder accepts (a row-block, column, row-tile order)
    sch = tir.Schedule(matmul)
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1, i2 = sch.split(i, factors=[None, 2, 3])
    j0, j1 = sch.split(j, factors=[None, 8])
    sch.reorder(i0, j0, i1, k, i2, j1)
    realize = sch.mod["main"].body.block.body
    for _ in range(6):
        realize = realize.body
    assert "(i_0 * 2 + i_1) * 3 + i_2 < 16" in realize.predicate.script()
    assert [sch.get(lp).loop_var.name for lp in sch.get_loops(sch.get_block("C"))] == \
        ["i_0", "j_0", "i_1", "k", "i_2", "j_1"]
    same_numbers(matmul, sch.mod)


def test_fuse_then_split(same_numbers):
    sch = tir.Schedule(add_2d)
    i, j = sch.get_loops(sch.get_block("B"))
    f = sch.fuse(i, j)
    assert sch.get(f).extent.value == 32 * 48
    outer, inner = sch.split(f, factors=[None, 64])
    text = sch.mod.script()
    assert "(i_j_fused_0 * 64 + i_j_fused_1) // 48" in text and "% 48" in text
    same_numbers(add_2d, sch.mod)


def test_reorder_and_kinds(same_numbers):
    sch = tir.Schedule(matmul)
    i, j, k = sch.get_loops(sch.get_block("C"))
    sch.reorder(k, i, j)
    sch.parallel(i)
    sch.vectorize(j)
    loops = [sch.get(lp) for lp in sch.get_loops(sch.get_block("C"))]
    assert [lp.loop_var.name for lp in loops] == ["k", "i", "j"]
    assert [lp.kind for lp in loops] == ["serial", "parallel", "vectorized"]
    same_numbers(matmul, sch.mod)


def test_unroll_and_annotate():
    sch = tir.Schedule(matmul)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    sch.unroll(k)
    sch.annotate(i, "pragma_note", 3)
    sch.annotate(block, "meta", "x")
    assert sch.get(k).kind == "unrolled" and sch.get(i).annotations == {"pragma_note": 3}
    assert sch.get(block).annotations == {"meta": "x"}
    sch.unannotate(i, "pragma_note")
    assert sch.get(i).annotations == {}


def test_schedule_works_on_a_copy():
    sch = tir.Schedule(matmul)
    i, _, _ = sch.get_loops(sch.get_block("C"))
    before = sch.mod
    copy = sch.copy()
    sch.split(i, factors=[4, 4])
    assert copy.mod is before and sch.mod is not before
    assert matmul.body.block.body.loop_var.name == "i"


def test_sampling_is_deterministic_and_replayable():
    def sample(seed):
        sch = tir.Schedule(matmul, seed=seed)
        i, j, k = sch.get_loops(sch.get_block("C"))
        factors = sch.sample_perfect_tile(k, n=3, max_innermost_factor=8)
        choice = sch.sample_categorical([1, 2, 4], [0.2, 0.3, 0.5])
        sch.split(k, factors=factors)
        return sch, [int(f) for f in factors], int(choice)

    a, fa, ca = sample(7)
    b, fb, cb = sample(7)
    assert fa == fb and ca == cb
    assert fa[0] * fa[1] * fa[2] == 32 and fa[2] <= 8
    replay = tir.Schedule(matmul)
    a.trace.apply_to_schedule(replay)
    assert_structural_equal(replay.mod, a.mod)
    assert "sample_perfect_tile" in str(a.trace)


def test_get_producers_consumers_and_children():
    from minitvm.testing.tir_builders import mm_relu

    sch = tir.Schedule(mm_relu())
    y, c = sch.get_block("Y"), sch.get_block("C")
    assert [b.name for b in sch.get_consumers(y)] == ["C"]
    assert [b.name for b in sch.get_producers(c)] == ["Y"]
    root = sch.get_block("root")
    assert [b.name for b in sch.get_child_blocks(root)] == ["Y", "C"]


@pytest.mark.parametrize("work", ["split", "fuse"])
def test_trace_prints_python(work):
    sch = tir.Schedule(add_2d)
    i, j = sch.get_loops(sch.get_block("B"))
    if work == "split":
        sch.split(i, factors=[None, 8])
    else:
        sch.fuse(i, j)
    text = str(sch.trace)
    assert f"sch.{work}(" in text and "sch.get_loops(block=b0)" in text
