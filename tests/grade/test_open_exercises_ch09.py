"""Chapter 9's GPU exercises graded by properties (9.1-9.3, 9.5, 9.6), proven both ways.

Their graders read the launch shape, shared and local memory and global traffic from the
emulator's report instead of comparing a program: the solutions pass in ``test_ch09.py``; here
another good answer passes too, and answers a learner plausibly gives first -- the loop split the
wrong way round, the axes swapped, a copy every thread makes whole, no local accumulator, the
local blocking without shared memory, tiles too large for the budget -- fail with a message that
says what is missing. 9.8 keeps the course's staging (the chapter's tensorize section builds on
it); a copy left outside the tile loops fails naming where it belongs.
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import pytest

from minitvm import s_tir
from minitvm.grade.messages import learner_message
from minitvm.grade.plugin import GRADING_CONFIG
from minitvm.testing import gpu_programs as gp
from minitvm.transform import PassContext
from solutions import ch09 as solved

ch09 = importlib.import_module("test_ch09")


def _fails(grader, *args, **answer) -> str:
    """The learner's message when ``grader`` grades ``answer`` (it must fail)."""
    with PassContext(config=GRADING_CONFIG), pytest.raises(Exception) as failure:
        grader(SimpleNamespace(**answer), *args)
    return learner_message(failure.value, "(hint)") or str(failure.value)


def _passes(grader, *args, **answer) -> None:
    with PassContext(config=GRADING_CONFIG):
        grader(SimpleNamespace(**answer), *args)


# ------------------------------------------------------------------ 9.1-9.3: launch shapes, shared copy


def _split_bound(mod, factors):
    """Block "C"'s loop split by ``factors``: the first part bound to blocks, the rest (fused) to threads."""
    sch = s_tir.Schedule(mod)
    loops = sch.split(sch.get_loops(sch.get_sblock("C"))[0], factors)
    sch.bind(loops[0], "blockIdx.x")
    sch.bind(sch.fuse(*loops[1:]) if len(loops) > 2 else loops[1], "threadIdx.x")
    return sch


def test_bind_elementwise_by_its_launch_shape():
    # another good answer: the loop split in three, the inner two fused back into the thread loop
    _passes(ch09.test_bind_elementwise, 1024, 128,
            bind_elementwise=lambda mod, nthread: _split_bound(mod, [None, 2, nthread // 2]))
    # the factors the wrong way round: nthread blocks of n // nthread threads
    message = _fails(ch09.test_bind_elementwise, 1024, 128,
                     bind_elementwise=lambda mod, nthread: _split_bound(mod, [nthread, None]))
    assert "expected 8 blocks of 128 threads, got grid (128, 1, 1), block (8, 1, 1)" in message, message


def _axes_swapped(mod, tile):
    """Rows on the x axes: right numbers, but neighbouring threads write addresses a row apart."""
    sch = s_tir.Schedule(mod)
    i, j = sch.get_loops(sch.get_sblock("B"))
    i0, i1 = sch.split(i, [None, tile])
    j0, j1 = sch.split(j, [None, tile])
    sch.reorder(i0, j0, i1, j1)
    for loop, axis in ((i0, "blockIdx.x"), (j0, "blockIdx.y"), (i1, "threadIdx.x"), (j1, "threadIdx.y")):
        sch.bind(loop, axis)
    return sch


def test_bind_2d_tiles_wants_x_along_the_columns():
    message = _fails(ch09.test_bind_2d_tiles, bind_2d_tiles=_axes_swapped)
    assert "blockIdx.x should run over columns" in message, message


def _every_thread_copies(mod, nthread):
    """The shared copy under the thread loop, but not shared out: every thread writes all of it."""
    sch = solved.bind_elementwise(mod, nthread)
    block = sch.get_sblock("C")
    sch.compute_at(sch.cache_read(block, 0, "shared"), sch.get_loops(block)[-1])
    return sch


def test_window_sum_shared_refuses_a_copy_every_thread_makes():
    message = _fails(ch09.test_window_sum_shared, window_sum_shared=_every_thread_copies)
    assert "SharedMemoryRaceError" in message, message
    message = _fails(ch09.test_window_sum_shared, window_sum_shared=solved.bind_elementwise)
    assert "A is not cached in shared memory" in message, message


# ------------------------------------------------------------------ 9.5: local tiles


def _tiles_of(mod, v, local):
    """The course's shape with k left whole: 8 x 8 threads of v x v tiles, accumulated in a local
    cache (another good answer) or, with ``local`` False, straight into C in global memory."""
    sch = s_tir.Schedule(mod)
    block = sch.get_sblock("C")
    cache = sch.cache_write(block, 0, "local") if local else None
    i, j, k = sch.get_loops(block)
    (i0, i1, i2), (j0, j1, j2) = (sch.split(loop, [None, 8, v]) for loop in (i, j))
    sch.reorder(i0, j0, i1, j1, k, i2, j2)
    for loop, axis in ((i0, "blockIdx.y"), (j0, "blockIdx.x"), (i1, "threadIdx.y"), (j1, "threadIdx.x")):
        sch.bind(loop, axis)
    if local:
        sch.reverse_compute_at(cache, j1)
        sch.decompose_reduction(block, k)
    return sch


def test_matmul_local_tiles_by_its_shape_and_local_memory():
    _passes(ch09.test_matmul_local_tiles, 4, matmul_local_tiles=lambda mod, v: _tiles_of(mod, v, local=True))
    message = _fails(ch09.test_matmul_local_tiles, 4, matmul_local_tiles=lambda mod, v: _tiles_of(mod, v, local=False))
    assert "accumulate a 4 x 4 tile in local memory" in message, message


# ------------------------------------------------------------------ 9.6 (open): shared tiles


def _course(*tiles):
    return lambda mod: gp.matmul_shared_blocking(s_tir.Schedule(mod), *tiles)


def _a_only_shared(mod):
    """The local blocking with only A staged in shared memory: B still streams from global."""
    sch = gp.matmul_local_blocking(s_tir.Schedule(mod), 8, 8, 8, 8, 8)
    block = sch.get_sblock("C_update")  # decompose_reduction split "C" into its init and update
    k0 = sch.get_loops(block)[4]
    cache = sch.cache_read(block, 1, "shared")  # the update reads C_local, A, B
    sch.compute_at(cache, k0)
    inner = sch.fuse(*sch.get_loops(cache)[-2:])
    _, ty, tx = sch.split(inner, [None, 8, 8])
    sch.bind(ty, "threadIdx.y")
    sch.bind(tx, "threadIdx.x")
    return sch


def test_matmul_shared_tiles_accepts_another_tiling():
    """16 x 16 threads of 4 x 4 tiles each: not the course's 64 threads, as good."""
    _passes(ch09.test_matmul_shared_tiles, matmul_shared_tiles=_course(4, 4, 16, 16, 8))


@pytest.mark.parametrize("answer, says", [
    (lambda mod: gp.matmul_local_blocking(s_tir.Schedule(mod), 8, 8, 8, 8, 8), "nothing is staged in shared memory"),
    (_course(8, 8, 8, 8, 32), "over the 8192 B budget"),
    (_course(8, 8, 16, 16, 8), "1 thread block(s)"),
    (_a_only_shared, "at least 16x less is wanted"),
], ids=["local-only", "k-by-32", "one-block", "only-A-shared"])
def test_matmul_shared_tiles_names_the_missing_property(answer, says):
    message = _fails(ch09.test_matmul_shared_tiles, matmul_shared_tiles=answer)
    assert says in message, message


# ------------------------------------------------------------------ 9.8: the course's staging


def _accumulator_at_root(mod, tile):
    """The operands staged per piece, the accumulator a whole copy of C written back at the end."""
    sch = s_tir.Schedule(mod)
    i, j, k = sch.get_loops(sch.get_sblock("matmul"))
    (i0, i1), (j0, j1), (k0, k1) = (sch.split(loop, [None, tile]) for loop in (i, j, k))
    sch.reorder(i0, j0, k0, i1, j1, k1)
    block = sch.blockize(i1)
    sch.compute_at(sch.cache_read(block, 0, "global.A_reg"), k0)
    sch.compute_at(sch.cache_read(block, 1, "global.B_reg"), k0)
    sch.cache_write(block, 0, "global.accumulator")
    sch.decompose_reduction(block, k0)
    return sch


def test_stage_tile_blocks_says_where_a_copy_belongs():
    message = _fails(ch09.test_stage_tile_blocks, 64, 8, stage_tile_blocks=_accumulator_at_root)
    assert "'C_global.accumulator' sits under 2 loops, not 4: it belongs after the loop over k's tiles" \
        in message, message
