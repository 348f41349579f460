"""blockize: the outer/inner division of block iterators, reductions with T.init, and
blockizing several sibling blocks at once."""

from minitvm import tir
from minitvm.script import tir as T


@T.prim_func
def row_sums(A: T.Buffer((32, 48), "float32"), B: T.Buffer((32,), "float32")):
    for i, k in T.grid(32, 48):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk] * T.float32(2)


@T.prim_func
def two_maps(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16, 8), "float32"), C: T.Buffer((16, 8), "float32")):
    for i in range(16):
        for j in range(8):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] + T.float32(1)
        for j in range(8):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = A[vi, vj] * T.float32(3)


def test_blockize_split_reduction_moves_init_to_outer_block(same_numbers, trace_replays):
    sch = tir.Schedule(row_sums)
    i, k = sch.get_loops("B")
    k0, k1 = sch.split(k, factors=[None, 16])
    outer = sch.blockize(k1)
    block = sch.get(outer)
    # the outer block reduces over k0: it owns the init, the inner block only accumulates
    assert [iv.iter_type for iv in block.iter_vars] == ["spatial", "reduce"]
    assert block.init is not None and sch.get(sch.get_block("B")).init is None
    assert [iv.dom.extent.value for iv in block.iter_vars] == [32, 3]
    same_numbers(row_sums, sch.mod)
    trace_replays(sch, row_sums)


def test_blockize_inner_iterators_are_rebased_on_outer_ones(same_numbers):
    sch = tir.Schedule(row_sums)
    i, k = sch.get_loops("B")
    i0, i1 = sch.split(i, factors=[None, 4])
    sch.blockize(i1)
    text = sch.mod.script()
    # vi = vi_o * 4 + vi_i; the whole reduction is inside, so the inner k stays an iterator
    assert "vi_o * 4 + vi_i" in text and "B[vi_o * 4:vi_o * 4 + 4]" in text
    same_numbers(row_sums, sch.mod)


def test_blockize_a_loop_split_twice_divides_the_sum_of_multiples(same_numbers, trace_replays):
    # k = k0 * 16 + k1_0 * 8 + k1_1: blockizing k1_1 (8 wide) takes k0 * 2 + k1_0 as the outer part
    sch = tir.Schedule(row_sums)
    i, k = sch.get_loops("B")
    k0, k1 = sch.split(k, factors=[None, 16])
    k1_0, k1_1 = sch.split(k1, factors=[None, 8])
    outer = sch.blockize(k1_1)
    block = sch.get(outer)
    assert [iv.dom.extent.value for iv in block.iter_vars] == [32, 6]
    assert "T.axis.reduce(6, k_0 * 2 + k_1_0)" in sch.mod.script()
    same_numbers(row_sums, sch.mod)
    trace_replays(sch, row_sums)


def test_blockize_without_unit_iterators():
    @T.prim_func
    def unit_outer(A: T.Buffer((1, 64), "float32"), B: T.Buffer((1, 64), "float32")):
        for i, j in T.grid(1, 64):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj]

    kept = tir.Schedule(unit_outer)
    kept.blockize(kept.get_loops("B")[1])
    dropped = tir.Schedule(unit_outer)
    dropped.blockize(dropped.get_loops("B")[1], preserve_unit_iters=False)
    assert str(kept.get(kept.get_block("B_o")).iter_vars[0].dom.extent) == "1"
    assert "T.axis.spatial(1, i)" in kept.mod.script()
    assert "T.axis.spatial(1, 0)" in dropped.mod.script()
    assert "B[0, vj_i]" in dropped.mod.script()


def test_blockize_two_sibling_blocks(same_numbers, trace_replays):
    sch = tir.Schedule(two_maps)
    outer = sch.blockize([sch.get_block("B"), sch.get_block("C")])
    block = sch.get(outer)
    assert block.name_hint == "outer_B_C_"
    # both blocks read all of A's row vi_o, and each writes its own output row
    assert [str(r) for r in block.reads] == ["A[vi_o, 0:8]"]
    assert sorted(str(w) for w in block.writes) == ["B[vi_o, 0:8]", "C[vi_o, 0:8]"]
    same_numbers(two_maps, sch.mod)
    trace_replays(sch, two_maps)
