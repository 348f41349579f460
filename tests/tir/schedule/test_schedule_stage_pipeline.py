"""compute_at, reverse_compute_at and the inlining primitives refuse a block scope that is not
a stage pipeline (a consumer reads elements its producers never write), as TVM does; scopes
whose producers cover their consumers -- tiled, padded, or written by several blocks -- pass."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import tir
from minitvm.script import tir as T


@T.prim_func
def half_written(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16,), "float32")
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            B[vi] = A[vi] * 2.0
    for j in range(16):
        with T.block("C"):
            vj = T.axis.spatial(16, j)
            C[vj] = B[vj] + 1.0


@T.prim_func
def two_halves(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16,), "float32")
    for i in range(8):
        with T.block("B0"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] * 2.0
    for i in range(8):
        with T.block("B1"):
            vi = T.axis.spatial(8, i)
            B[vi + 8] = A[vi + 8] * 3.0
    for j in range(16):
        with T.block("C"):
            vj = T.axis.spatial(16, j)
            C[vj] = B[vj] + 1.0


@T.prim_func
def chain(A: T.Buffer((10, 10), "float32"), C: T.Buffer((10, 10), "float32")):
    B = T.alloc_buffer((10, 10), "float32")
    for i, j in T.grid(10, 10):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * 2.0
    for i, j in T.grid(10, 10):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + 1.0


PRIMITIVES = {
    "compute_at": lambda s: s.compute_at(s.get_block("B"), s.get_loops(s.get_block("C"))[0]),
    "reverse_compute_at": lambda s: s.reverse_compute_at(s.get_block("C"), s.get_loops(s.get_block("B"))[0]),
    "compute_inline": lambda s: s.compute_inline(s.get_block("B")),
    "reverse_compute_inline": lambda s: s.reverse_compute_inline(s.get_block("C")),
}


@pytest.mark.parametrize("name", sorted(PRIMITIVES))
def test_a_half_written_buffer_is_refused_naming_the_reads_and_the_short_binding(name):
    sch = tir.Schedule(half_written)
    before = sch.mod.script()
    with pytest.raises(tir.ScheduleError) as err:
        PRIMITIVES[name](sch)
    text = str(err.value)
    assert "not a stage pipeline" in text
    assert "block C reads B[0:16], but its producer B writes only B[0:8]" in text
    assert "run vi over [0, 7] of its domain [0, 15]" in text
    assert sch.mod.script() == before  # a refused primitive leaves the schedule unchanged


def test_primitives_that_do_not_rely_on_the_cover_still_apply():
    # TVM's parallel/vectorize check the block's iterator types, not the region cover
    sch = tir.Schedule(half_written)
    sch.parallel(sch.get_loops(sch.get_block("B"))[0])
    sch.vectorize(sch.get_loops(sch.get_block("C"))[0])


def test_two_producers_that_together_cover_the_consumer_pass():
    from minitvm.tir.schedule.stage_pipeline import check_stage_pipeline

    root = two_halves.body.block
    check_stage_pipeline(root, (), "test")  # B0 writes B[0:8], B1 B[8:16]: C's reads are covered
    sch = tir.Schedule(two_halves)
    sch.parallel(sch.get_loops(sch.get_block("C"))[0])
    rng = np.random.default_rng(0)
    a = rng.standard_normal(16).astype("float32")
    c = np.empty(16, "float32")
    minitvm.build(sch.mod)["two_halves"](a, c)
    np.testing.assert_allclose(c, np.concatenate([a[:8] * 2, a[8:] * 3]) + 1, rtol=1e-6)


@pytest.mark.parametrize("factor", [3, 4])  # 3: a padded split with a guard; 4: exact tiles
def test_tiled_and_padded_producers_still_compute_at(factor):
    sch = tir.Schedule(chain)
    i, j = sch.get_loops(sch.get_block("C"))
    io, ii = sch.split(i, factors=[None, factor])
    sch.compute_at(sch.get_block("B"), io)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((10, 10)).astype("float32")
    c = np.empty((10, 10), "float32")
    minitvm.build(sch.mod)["chain"](a, c)
    np.testing.assert_allclose(c, a * 2 + 1, rtol=1e-6)
