"""Minimal cases the fuzzer found, kept as plain tests.

Each test is the shrunk failing example (simplified by hand where that kept the failure),
with a comment saying what was wrong and where it was fixed.
"""

import numpy as np
import pytest

import minitvm
from minitvm import te, tir
from minitvm.testing import tir_builders as tb
from minitvm.testing.fuzz import assert_round_trip
from minitvm.tir.expr import Add, FloorDiv, IntImm


def test_sum_of_a_term_that_folds_to_zero_round_trips():
    # te.sum(floormod(A[k], 1)): the source folds to 0, and the combiner substituted it
    # without folding, giving `out[()] + 0`, which TVMScript parses back as `out[()]`.
    # Fixed in minitvm/te/reduction.py (the combiner folds what it substitutes).
    A = te.placeholder((3,), "int32", name="A")
    k = te.reduce_axis((0, 3), "k")
    out = te.compute((), lambda: te.sum(tir.floormod(A[k], 1), axis=k), name="out")
    func = te.create_prim_func([A, out])
    assert "+ 0" not in func.script()
    assert_round_trip(func)
    result = minitvm.nd.array(np.array(5, "int32"))
    minitvm.build(func, target="llvm")["main"](minitvm.nd.array(np.array([4, -2, 7], "int32")), result)
    assert result.numpy() == 0


@pytest.mark.parametrize("value,expected", [
    (lambda v: Add(v, IntImm("int32", 0)), [0, 1, 2, 3]),
    (lambda v: Add(IntImm("int32", 2), IntImm("int32", 3)), [5, 5, 5, 5]),
    (lambda v: FloorDiv(v, IntImm("int32", 1)), [0, 1, 2, 3]),
], ids=["v+0", "2+3", "v//1"])
def test_expressions_the_parser_would_fold_print_as_nodes(value, expected):
    # An unfolded `v + 0`, `2 + 3` or `v // 1` (seen in a fused kernel's read region) printed with its
    # operator parsed back folded. Fixed in minitvm/script/printer/__init__.py (prints T.Add(v, 0) ...)
    # and minitvm/script/tir.py (T.Add & co build the node itself).
    A = tb.buffer("A", (4,), "int32")
    body = tb.grid((4,), lambda i: tb.block("B", [("S", 4, i)], body=lambda v: tb.store(A, (v,), value(v))))
    func = tb.prim_func("f", [A], body)
    assert_round_trip(func)
    data = minitvm.nd.array(np.full(4, 9, "int32"))
    minitvm.build(func, target="llvm")["f"](data)
    np.testing.assert_array_equal(data.numpy(), expected)


@pytest.mark.parametrize("primitive", ["cache_write", "cache_read"])
def test_caching_the_same_buffer_twice_names_blocks_uniquely(primitive):
    # cache_write on the copy block of an earlier cache_write (and cache_read of a buffer
    # cached before) made a second block with the same name, e.g. two "out_global": every
    # later get_block of it failed. Fixed in minitvm/tir/schedule/data.py (unique names).
    A = te.placeholder((4,), "float32", name="A")
    B = te.compute((4,), lambda i: A[i] * 2, name="out")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    first = getattr(sch, primitive)(sch.get_block("out"), 0, "global")
    second = getattr(sch, primitive)(first, 0, "global")
    assert first.name != second.name
    names = [line.split('"')[1] for line in sch.mod["main"].script().splitlines() if "T.block(" in line]
    assert len(names) == len(set(names)), names
    sch.get_block(second.name)
    a = np.random.default_rng(2).standard_normal(4).astype("float32")
    out = minitvm.nd.array(np.full(4, 7, "float32"))
    minitvm.build(sch.mod, target="llvm")["main"](minitvm.nd.array(a), out)
    np.testing.assert_allclose(out.numpy(), a * 2)


def test_rfactor_twice_names_blocks_uniquely():
    # A second rfactor of the same reduction made a second block "T0_rf".
    # Fixed in minitvm/tir/schedule/rfactor.py (unique names).
    A = te.placeholder((6,), "float32", name="A")
    k = te.reduce_axis((0, 6), "k")
    B = te.compute((), lambda: te.sum(A[k], axis=k), name="T0")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    rf = sch.rfactor(sch.get_loops(sch.get_block("T0"))[0], 0)
    rf2 = sch.rfactor(sch.get_loops(sch.get_block("T0"))[0], 0)
    assert (rf.name, rf2.name) == ("T0_rf", "T0_rf_1")
    a = np.random.default_rng(3).standard_normal(6).astype("float32")
    out = minitvm.nd.array(np.array(7, "float32"))
    minitvm.build(sch.mod, target="llvm")["main"](minitvm.nd.array(a), out)
    np.testing.assert_allclose(out.numpy(), a.sum(), rtol=1e-5)


def test_cache_read_of_the_accumulator_after_decompose_reduction_is_refused():
    # After decompose_reduction the update block reads and writes its output `out`;
    # cache_read of `out` redirected the writes too, into the cache, so `out` kept the
    # init value (-3.4e38 for a max). Fixed in minitvm/tir/schedule/data.py: refused (now in
    # cache.py, as TVM: the buffer has two writers, init and update, and a cache needs one).
    A = te.placeholder((2, 3), "float32", name="A")
    k = te.reduce_axis((0, 3), "k")
    B = te.compute((2,), lambda i: te.max(A[i, k], axis=k), name="out")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    block = sch.get_block("out")
    sch.decompose_reduction(block, sch.get_loops(block)[0])
    before = sch.mod
    with pytest.raises(tir.ScheduleError, match="must be written by a single block"):
        sch.cache_read(block, 0, "global")
    assert sch.mod is before
    sch.cache_read(block, 1, "global")  # A, only read, can still be cached
    a = np.random.default_rng(4).standard_normal((2, 3)).astype("float32")
    out = minitvm.nd.array(np.zeros(2, "float32"))
    minitvm.build(sch.mod, target="llvm")["main"](minitvm.nd.array(a), out)
    np.testing.assert_allclose(out.numpy(), a.max(axis=1))


def test_reverse_compute_inline_of_a_consumer_reading_part_of_its_producer_is_guarded():
    # out[i, j] = T1[i, j] for j < 1 while T1 has 2 columns: reverse_compute_inline moved the
    # store into T1's block, which runs for every column, writing out[i, 1] past out's end
    # (the interpreter raised IndexError; LLVM code wrote out of bounds).
    # Fixed in minitvm/tir/schedule/compute_inline.py: as TVM, the producer block gets the
    # predicate that keeps the moved store inside the consumer's domain.
    A = te.placeholder((2, 2), "int32", name="A")
    T1 = te.compute((2, 2), lambda i, j: A[i, j] * 3, name="T1")
    out = te.compute((2, 1), lambda i, j: T1[i, j], name="out")
    sch = tir.Schedule(te.create_prim_func([A, out]))
    sch.reverse_compute_inline(sch.get_block("out"))
    assert "T.where(" in sch.mod.script()
    a = np.random.default_rng(7).integers(-50, 50, (2, 2)).astype("int32")
    result = minitvm.nd.array(np.zeros((2, 1), "int32"))
    minitvm.build(sch.mod, target="llvm")["main"](minitvm.nd.array(a), result)
    np.testing.assert_array_equal(result.numpy(), a[:, :1] * 3)


def test_reverse_compute_at_of_a_padded_consumer_is_refused():
    # The default pipeline fused matmul (4x3) with pad (to 5x4) and moved the pad block under
    # the matmul's loop: it then ran only over the 4x3 points the matmul writes, and the
    # padding row and column of the output were never written (garbage, flaky results).
    # Fixed in minitvm/tir/schedule/compute.py: the consumer must still cover its domain.
    A = te.placeholder((4, 3), "float32", name="A")
    T = te.compute((4, 3), lambda i, j: A[i, j] * 2, name="T")
    P = te.compute((5, 4), lambda i, j: tir.if_then_else(te.all(i < 4, j < 3), T[i, j], tir.const(0.0, "float32")),
                   name="P")
    sch = tir.Schedule(te.create_prim_func([A, P]))
    before = sch.mod
    with pytest.raises(tir.ScheduleError, match="never run"):
        sch.reverse_compute_at(sch.get_block("P"), sch.get_loops(sch.get_block("T"))[0])
    assert sch.mod is before
