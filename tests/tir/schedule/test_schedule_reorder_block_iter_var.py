"""sch.reorder_block_iter_var: permute a block's iterators without changing what it computes."""

import pytest

from minitvm import tir
from minitvm.script import tir as T


@T.prim_func
def bmm(A: T.Buffer((3, 8, 5), "float32"), B: T.Buffer((3, 5, 6), "float32"), C: T.Buffer((3, 8, 6), "float32")):
    for b, i, j, k in T.grid(3, 8, 6, 5):
        with T.block("C"):
            vb, vi, vj, vk = T.axis.remap("SSSR", [b, i, j, k])
            with T.init():
                C[vb, vi, vj] = T.float32(0)
            C[vb, vi, vj] = C[vb, vi, vj] + A[vb, vi, vk] * B[vb, vk, vj]


def test_iterators_and_bindings_move_together(same_numbers, trace_replays):
    sch = tir.Schedule(bmm)
    sch.reorder_block_iter_var("C", [3, 0, 2, 1])
    block = sch.get(sch.get_block("C"))
    assert [iv.var.name for iv in block.iter_vars] == ["vk", "vb", "vj", "vi"]
    assert [iv.iter_type for iv in block.iter_vars] == ["reduce", "spatial", "spatial", "spatial"]
    assert "T.axis.remap(\"RSSS\", [k, b, j, i])" in sch.mod.script()
    trace_replays(sch, bmm)
    same_numbers(bmm, sch.mod)


@pytest.mark.parametrize("order", [[0, 1, 2], [0, 1, 2, 4], [0, 0, 1, 2], [-1, 0, 1, 2]])
def test_not_a_permutation_is_refused(order):
    sch = tir.Schedule(bmm)
    with pytest.raises(tir.ScheduleError, match="not a permutation"):
        sch.reorder_block_iter_var("C", order)
