"""compute_inline / reverse_compute_inline through affine index maps, predicates and
opaque accesses, as TVM does them."""

import numpy as np
import pytest

import minitvm
from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.script import tir as T


def _blocks(func):
    names = []
    tir.post_order_visit(func.body, lambda n: names.append(n.name_hint) if isinstance(n, tir.Block) else None)
    return names


def _call(mod, *arrays):
    arrays = [minitvm.nd.array(a) for a in arrays]
    lib = minitvm.build(mod, target="llvm")
    lib[mod["main"].attrs["global_symbol"]](*arrays)  # exported under its global_symbol
    return [a.numpy() for a in arrays]


# -- compute_inline ----------------------------------------------------------------------------


@T.prim_func
def guarded_consumer(A: T.Buffer((32, 16), "float32"), C: T.Buffer((32, 16), "float32")):
    B = T.alloc_buffer((32, 16))
    for i, j in T.grid(32, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(3)
    for i, j in T.grid(32, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.where(B[i, j] > T.float32(0))
            C[vi, vj] = B[vi, vj] - T.float32(1)


def test_compute_inline_reaches_into_block_predicates(same_numbers):
    sch = tir.Schedule(guarded_consumer)
    sch.compute_inline(sch.get_block("B"))
    func = sch.mod["main"]
    assert _blocks(func) == ["C", "root"]
    realize = func.body.block.body.body.body
    text = func.script()
    assert "T.where(A[i, j] * T.float32(3.0) > T.float32(0.0))" in text
    assert realize.block.reads[0].buffer.name == "A"
    same_numbers(guarded_consumer, sch.mod)


@T.prim_func
def reshaping_producer(A: T.Buffer((256,), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    for v in range(256):
        with T.block("B"):
            vv = T.axis.spatial(256, v)
            B[vv // 16, vv % 16] = A[vv] + T.float32(5)
    for i, j in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vj, vi] * T.float32(2)


def test_compute_inline_inverts_a_reshaping_store():
    sch = tir.Schedule(reshaping_producer)
    sch.compute_inline(sch.get_block("B"))
    text = sch.mod["main"].script()
    # B[vj, vi] is the element the producer computed at vv = vi + vj * 16
    assert "C[vi, vj] = (A[vi + vj * 16] + T.float32(5.0)) * T.float32(2.0)" in text
    a = np.random.default_rng(1).standard_normal(256).astype("float32")
    _, c = _call(sch.mod, a, np.zeros((16, 16), "float32"))
    np.testing.assert_allclose(c, ((a + 5) * 2).reshape(16, 16).T, rtol=1e-6)


@T.prim_func
def repeated_store(A: T.Buffer((16,), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    for v in range(16):
        with T.block("B"):
            vv = T.axis.spatial(16, v)
            B[vv, vv] = A[vv]
    for i, j in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj]


def test_compute_inline_refuses_a_store_that_is_not_one_to_one():
    sch = tir.Schedule(repeated_store)
    with pytest.raises(tir.ScheduleError, match="bijective affine map"):
        sch.compute_inline(sch.get_block("B"))


@T.prim_func
def opaque_lookup(table: T.Buffer((64,), "int8"), x: T.Buffer((8,), "float32"), y: T.Buffer((8,), "float32")):
    tmp = T.alloc_buffer((8,))
    for i in range(8):
        with T.block("tmp"):
            vi = T.axis.spatial(8, i)
            tmp[vi] = x[vi] + T.float32(1)
    for i in range(8):
        with T.block("y"):
            vi = T.axis.spatial(8, i)
            T.evaluate(table.access_ptr("r"))
            y[vi] = tmp[vi] * T.float32(2)


def test_access_ptr_reads_show_in_the_block_signature_and_survive_inlining():
    assert [r.buffer.name for r in opaque_lookup.body.block.body[1].body.block.reads] == ["table", "tmp"]
    sch = tir.Schedule(opaque_lookup)
    sch.compute_inline(sch.get_block("tmp"))
    block = sch.get(sch.get_block("y"))
    # the read-only pointer is a read of the whole table, never a write
    assert [(r.buffer.name, r.region[0].extent.value) for r in block.reads] == [("table", 64), ("x", 1)]
    assert [w.buffer.name for w in block.writes] == ["y"]


def test_opaque_data_pointer_use_is_read_and_written():
    @T.prim_func
    def f(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(8):
            with T.block("x"):
                vi = T.axis.spatial(8, i)
                T.evaluate(T.call_extern("touch", B.data, dtype=""))
                B[vi] = A[vi]

    block = f.body.block.body.body.block
    assert [(r.buffer.name, r.region[0].extent.value) for r in block.reads] == [("A", 1), ("B", 8)]
    assert [(w.buffer.name, w.region[0].extent.value) for w in block.writes] == [("B", 8)]


# -- reverse_compute_inline ------------------------------------------------------------------------


@T.prim_func
def flat_consumer(A: T.Buffer((64, 64), "float32"), C: T.Buffer((4, 16, 8, 8), "float32")):
    B = T.alloc_buffer((64, 64))
    for i, j in T.grid(64, 64):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + T.float32(1)
    for a, b, c, d in T.grid(4, 16, 8, 8):
        with T.block("C"):
            va, vb, vc, vd = T.axis.remap("SSSS", [a, b, c, d])
            C[va, vb, vc, vd] = B[(((va * 16 + vb) * 8 + vc) * 8 + vd) // 64,
                                  (((va * 16 + vb) * 8 + vc) * 8 + vd) % 64] * T.float32(-2)


def test_reverse_compute_inline_inverts_a_flattening_load(same_numbers, trace_replays):
    sch = tir.Schedule(flat_consumer)
    sch.reverse_compute_inline(sch.get_block("C"))
    text = sch.mod["main"].script()
    assert _blocks(sch.mod["main"]) == ["B", "root"]
    # the consumer's iterators, recovered from the element (vi, vj) the producer writes
    assert ("C[(vj + vi * 64) // 1024, (vj + vi * 64) // 64 % 16, (vj + vi * 64) // 8 % 8, "
            "(vj + vi * 64) % 8] = (A[vi, vj] + T.float32(1.0)) * T.float32(-2.0)") in text
    same_numbers(flat_consumer, sch.mod)
    trace_replays(sch, flat_consumer)
    a = np.random.default_rng(2).standard_normal((64, 64)).astype("float32")
    _, c = _call(sch.mod, a, np.zeros((4, 16, 8, 8), "float32"))
    np.testing.assert_allclose(c, ((a + 1) * -2).reshape(4, 16, 8, 8), rtol=1e-6)


@T.prim_func
def split_consumer(A: T.Buffer((32, 8), "float32"), D: T.Buffer((1, 4, 8, 8), "float32")):
    B = T.alloc_buffer((32, 8))
    for i, j in T.grid(32, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * A[vi, vj]
    for u, a, b, c in T.grid(1, 4, 8, 8):
        with T.block("D"):
            vu, va, vb, vc = T.axis.remap("SSSS", [u, a, b, c])
            D[vu, va, vb, vc] = B[va * 8 + vb, vc] + B[va * 8 + vb, vc]


def test_reverse_compute_inline_with_a_unit_iterator_and_repeated_loads():
    sch = tir.Schedule(split_consumer)
    sch.reverse_compute_inline(sch.get_block("D"))
    text = sch.mod["main"].script()
    # vu, in no index of B, keeps its only value; B read twice becomes the producer's value twice
    assert "D[0, vi // 8, vi % 8, vj] = A[vi, vj] * A[vi, vj] + A[vi, vj] * A[vi, vj]" in text
    a = np.random.default_rng(3).standard_normal((32, 8)).astype("float32")
    _, d = _call(sch.mod, a, np.zeros((1, 4, 8, 8), "float32"))
    np.testing.assert_allclose(d, (2 * a * a).reshape(1, 4, 8, 8), rtol=1e-6)


@T.prim_func
def cropping_consumer(A: T.Buffer((16, 16), "float32"), C: T.Buffer((15, 13), "float32")):
    B = T.alloc_buffer((16, 16))
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] - T.float32(4)
    for i, j in T.grid(15, 13):
        with T.block("C"):
            ci, cj = T.axis.remap("SS", [i, j])
            C[ci, cj] = B[ci, cj] * T.float32(0.5)


def test_reverse_compute_inline_guards_an_overcomputing_producer(same_numbers):
    sch = tir.Schedule(cropping_consumer)
    sch.reverse_compute_inline(sch.get_block("C"))
    realize = sch.mod["main"].body.block.body.body.body
    assert realize.block.name_hint == "B"
    assert "T.where(i < 15 and j < 13)" in sch.mod["main"].script()
    same_numbers(cropping_consumer, sch.mod)
    a = np.random.default_rng(4).standard_normal((16, 16)).astype("float32")
    _, c = _call(sch.mod, a, np.zeros((15, 13), "float32"))
    np.testing.assert_allclose(c, (a[:15, :13] - 4) * 0.5, rtol=1e-6)


@T.prim_func
def accumulate_then_transpose(A: T.Buffer((6, 10), "float32"), Y: T.Buffer((10, 6), "float32")):
    S = T.alloc_buffer((6, 10))
    for i, k in T.grid(6, 10):
        with T.block("S"):
            vi, vk = T.axis.remap("SS", [i, k])
            T.reads(A[vi, vk])
            T.writes(S[vi, vk])
            with T.init():
                S[vi, vk] = T.float32(1)
            S[vi, vk] = S[vi, vk] + A[vi, vk] * T.float32(2)
    for k, i in T.grid(10, 6):
        with T.block("Y"):
            vk, vi = T.axis.remap("SS", [k, i])
            Y[vk, vi] = S[vi, vk]


def test_reverse_compute_inline_into_a_producer_with_init():
    # a block with T.init but only spatial iterators (each point starts from the init value)
    sch = tir.Schedule(accumulate_then_transpose)
    sch.reverse_compute_inline(sch.get_block("Y"))
    block = sch.get(sch.get_block("S"))
    text = sch.mod["main"].script()
    assert "Y[vk, vi] = T.float32(1.0)" in text and "Y[vk, vi] = Y[vk, vi] + A[vi, vk] * T.float32(2.0)" in text
    # the output it accumulates into is implied by T.init, not listed as a read
    assert [r.buffer.name for r in block.reads] == ["A"] and [w.buffer.name for w in block.writes] == ["Y"]
    a = np.random.default_rng(5).standard_normal((6, 10)).astype("float32")
    _, y = _call(sch.mod, a, np.full((10, 6), 7, "float32"))
    np.testing.assert_allclose(y, (1 + 2 * a).T, rtol=1e-6)


def test_reverse_compute_inline_with_a_symbolic_extent(same_numbers):
    @T.prim_func
    def f(a: T.handle, c: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (T.int64(1), n))
        C = T.match_buffer(c, (T.int64(1), n), "float16")
        B = T.alloc_buffer((T.int64(1), n))
        for _unit, j in T.grid(T.int64(1), n):
            with T.block("B"):
                vi = T.axis.spatial(T.int64(1), T.int64(0))
                vj = T.axis.spatial(n, j)
                B[vi, vj] = A[vi, vj] + T.float32(1)
        for i, j in T.grid(T.int64(1), n):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = T.Cast("float16", B[vi, vj])

    sch = tir.Schedule(f)
    sch.reverse_compute_inline(sch.get_block("C"))
    block = sch.get(sch.get_block("B"))
    assert sch.mod["main"].body.block.body.body.body.predicate.value == 1  # no guard needed
    assert block.writes[0].buffer.name == "C" and block.writes[0].region[0].min.name == "vi"
    a = np.random.default_rng(6).standard_normal((1, 37)).astype("float32")
    _, c = _call(sch.mod, a, np.zeros((1, 37), "float16"))
    np.testing.assert_allclose(c, (a + 1).astype("float16"))


@pytest.mark.parametrize("load", ["B[vi * 4 + vj, vi * 4 + vj]", "B[vi, vj] + B[vj, vi]"])
def test_reverse_compute_inline_refuses_loads_it_cannot_invert(load):
    source = f"""
@T.prim_func
def f(A: T.Buffer((16, 16), "float32"), C: T.Buffer((4, 4), "float32")):
    B = T.alloc_buffer((16, 16))
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj]
    for i, j in T.grid(4, 4):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = {load}
"""
    from minitvm.script import from_source

    sch = tir.Schedule(from_source(source))
    before = sch.mod
    with pytest.raises(tir.ScheduleError, match="cannot reverse_compute_inline block C"):
        sch.reverse_compute_inline(sch.get_block("C"))
    assert sch.mod is before


def test_reverse_compute_inline_refuses_a_producer_that_does_not_cover_the_consumer():
    @T.prim_func
    def f(A: T.Buffer((8,), "float32"), C: T.Buffer((16,), "float32")):
        B = T.alloc_buffer((16,))
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi]
        for i in range(16):
            with T.block("C"):
                vi = T.axis.spatial(16, i)
                C[vi] = B[vi]

    sch = tir.Schedule(f)
    with pytest.raises(tir.ScheduleError,
                       match=r"not a stage pipeline: block C reads B\[0:16\], but its producer B writes only B\[0:8\]"):
        sch.reverse_compute_inline(sch.get_block("C"))


def test_reverse_compute_inline_refuses_a_consumer_of_two_produced_buffers():
    @T.prim_func
    def f(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
        B = T.alloc_buffer((8,))
        D = T.alloc_buffer((8,))
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi]
        for i in range(8):
            with T.block("D"):
                vi = T.axis.spatial(8, i)
                D[vi] = A[vi] * T.float32(2)
        for i in range(8):
            with T.block("C"):
                vi = T.axis.spatial(8, i)
                C[vi] = B[vi] + D[vi]

    sch = tir.Schedule(f)
    with pytest.raises(tir.ScheduleError, match="must read a single buffer that another block produces"):
        sch.reverse_compute_inline(sch.get_block("C"))


def test_reverse_compute_inline_refuses_a_predicated_consumer():
    @T.prim_func
    def f(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
        B = T.alloc_buffer((8,))
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi]
        for i in range(8):
            with T.block("C"):
                vi = T.axis.spatial(8, i)
                T.where(i < 6)
                C[vi] = B[vi]

    sch = tir.Schedule(f)
    with pytest.raises(tir.ScheduleError, match="has a predicate"):
        sch.reverse_compute_inline(sch.get_block("C"))
    assert_structural_equal(sch.mod["main"], f)
