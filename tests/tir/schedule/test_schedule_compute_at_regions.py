"""compute_at / reverse_compute_at: how the moved block's iteration ranges are solved from what
its partners under the loop need (shifted, reversed and divided accesses, guards where the
needed range leaves the block's domain), where it is inserted (``index``), and blocks nested
inside blockized partners."""

import numpy as np
import pytest

from minitvm import tir
from minitvm.script import tir as T


@T.prim_func
def shifted_sum(A: T.Buffer((34,), "float32"), C: T.Buffer((32,), "float32")):
    B = T.alloc_buffer((34,), "float32")
    for i in range(34):
        with T.block("B"):
            vi = T.axis.spatial(34, i)
            B[vi] = A[vi] * T.float32(2)
    for i in range(32):
        with T.block("C"):
            vi = T.axis.spatial(32, i)
            T.reads(B[vi:vi + 3])  # stated: minitvm infers the hull of two reads as the whole buffer
            T.writes(C[vi])
            C[vi] = B[vi] + B[vi + 2]


@T.prim_func
def reversed_copy(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16,), "float32")
    for i in range(16):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            B[vi] = A[vi] + T.float32(1)
    for i in range(16):
        with T.block("C"):
            vi = T.axis.spatial(16, i)
            C[vi] = B[15 - vi]


@T.prim_func
def halves(A: T.Buffer((24,), "float32"), B: T.Buffer((8,), "float32"), C: T.Buffer((24,), "float32")):
    X = T.alloc_buffer((24,), "float32")
    Y = T.alloc_buffer((8,), "float32")
    for i in range(24):
        with T.block("X"):
            vi = T.axis.spatial(24, i)
            X[vi] = A[vi] + T.float32(1)
    for i in range(8):
        with T.block("Y"):
            vi = T.axis.spatial(8, i)
            Y[vi] = B[vi] * T.float32(3)
    for i in range(24):
        with T.block("C"):
            vi = T.axis.spatial(24, i)
            C[vi] = T.if_then_else(vi < 16, X[vi], Y[vi // 2 - 8] + X[vi])


@T.prim_func
def sum_then_scale(A: T.Buffer((16, 32), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16,), "float32")
    for i, k in T.grid(16, 32):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]
    for i in range(16):
        with T.block("C"):
            vi = T.axis.spatial(16, i)
            C[vi] = B[vi] * T.float32(0.5)


def _block_realize(sch, name):
    return next(r for r, _ in __import__("minitvm.tir.schedule.tree", fromlist=["x"]).block_realizes(
        sch.mod["main"].body) if r.block.name_hint == name)


def test_compute_at_covers_the_union_of_shifted_reads(same_numbers):
    sch = tir.Schedule(shifted_sum)
    (i,) = sch.get_loops("C")
    i0, _ = sch.split(i, factors=[None, 8])
    sch.compute_at("B", i0)
    # C's tile reads B[i_0*8 : i_0*8 + 10]: ten elements per tile, no guard needed
    (_, ax0) = sch.get_loops("B")
    assert sch.get(ax0).extent.value == 10
    assert str(_block_realize(sch, "B").iter_values[0]) == "i_0 * 8 + ax0"
    same_numbers(shifted_sum, sch.mod)


def test_compute_at_inverts_a_reversed_index(same_numbers):
    sch = tir.Schedule(reversed_copy)
    (i,) = sch.get_loops("C")
    sch.compute_at("B", i)
    # C[vi] needs B[15 - vi]: the producer runs exactly at that point
    realize = _block_realize(sch, "B")
    assert str(realize.iter_values[0]) == "15 - i"
    assert sch.get_loops("B") and len(sch.get_loops("B")) == 1
    same_numbers(reversed_copy, sch.mod)


def test_compute_at_guards_what_the_domain_does_not_cover(same_numbers):
    sch = tir.Schedule(halves)
    (i,) = sch.get_loops("C")
    sch.compute_at("Y", i)
    sch.compute_at("X", i)
    # Y is needed at i // 2 - 8, outside its domain for i < 16: guarded, constant on the left
    # (TVM's form for a lower-bound guard)
    assert str(_block_realize(sch, "Y").predicate).startswith("8 <= ")
    assert str(_block_realize(sch, "X").predicate) == "T.bool(True)" or _block_realize(sch, "X").predicate.value
    same_numbers(halves, sch.mod)


def test_compute_at_index_picks_the_place_among_siblings(same_numbers):
    sch = tir.Schedule(halves)
    (i,) = sch.get_loops("C")
    sch.compute_at("X", i)
    sch.compute_at("Y", i, index=0)  # before X, which does not depend on Y
    names = [r.block.name_hint for r in _children(sch.get(i))]
    assert names == ["Y", "X", "C"]
    same_numbers(halves, sch.mod)
    with pytest.raises(tir.ScheduleError, match="index 3 is not a valid position"):
        sch2 = tir.Schedule(halves)
        (j,) = sch2.get_loops("C")
        sch2.compute_at("X", j, index=3)


def _children(loop):
    from minitvm.tir.schedule.tree import blocks_under

    return blocks_under(loop.body)


def test_reverse_compute_at_moves_a_consumer_after_a_reduction(same_numbers):
    sch = tir.Schedule(sum_then_scale)
    i, _ = sch.get_loops("B")
    sch.reverse_compute_at("C", i)
    assert [r.block.name_hint for r in _children(sch.get(i))] == ["B", "C"]
    same_numbers(sum_then_scale, sch.mod)


def test_reverse_compute_at_of_a_reduction_consumer(same_numbers):
    @T.prim_func
    def scale_then_sum(A: T.Buffer((16, 32), "float32"), C: T.Buffer((16,), "float32")):
        B = T.alloc_buffer((16, 32), "float32")
        for i, k in T.grid(16, 32):
            with T.block("B"):
                vi, vk = T.axis.remap("SS", [i, k])
                B[vi, vk] = A[vi, vk] * T.float32(3)
        for i, k in T.grid(16, 32):
            with T.block("C"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    C[vi] = T.float32(0)
                C[vi] = C[vi] + B[vi, vk]

    sch = tir.Schedule(scale_then_sum)
    i, _ = sch.get_loops("B")
    sch.reverse_compute_at("C", i)  # TVM moves reduction blocks after their producers too
    loops = sch.get_loops("C")
    assert [sch.get(lp).extent.value for lp in loops] == [16, 32]
    same_numbers(scale_then_sum, sch.mod)


def test_compute_at_under_a_blockized_consumer(same_numbers):
    sch = tir.Schedule(shifted_sum)
    (i,) = sch.get_loops("C")
    i0, i1 = sch.split(i, factors=[None, 8])
    sch.blockize(i1)
    sch.compute_at("B", i0)
    # the outer block C_o is the consumer; its region (in vi_o) is what B must cover
    (_, ax0) = sch.get_loops("B")
    assert sch.get(ax0).extent.value == 10
    same_numbers(shifted_sum, sch.mod)


def test_moved_block_numbers_match_numpy():
    import minitvm

    sch = tir.Schedule(halves)
    (i,) = sch.get_loops("C")
    sch.compute_at("Y", i)
    sch.compute_at("X", i)
    rng = np.random.default_rng(7)
    a = rng.standard_normal(24).astype("float32")
    b = rng.standard_normal(8).astype("float32")
    c = minitvm.nd.array(np.zeros(24, "float32"))
    minitvm.build(sch.mod)["halves"](minitvm.nd.array(a), minitvm.nd.array(b), c)
    idx = np.arange(24)
    want = np.where(idx < 16, a + 1, b[np.clip(idx // 2 - 8, 0, 7)] * 3 + a + 1)
    np.testing.assert_allclose(c.numpy(), want, rtol=1e-6)
