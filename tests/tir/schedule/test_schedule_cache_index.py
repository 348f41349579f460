"""sch.cache_index: index arithmetic precomputed into integer buffers before the block."""

import pytest

import minitvm
from minitvm import tir
from minitvm.script import tir as T


@T.prim_func
def upsample(A: T.Buffer((2, 12, 12), "float32"), B: T.Buffer((2, 24, 24), "float32")):
    for c, i, j in T.grid(2, 24, 24):
        with T.block("B"):
            vc, vi, vj = T.axis.remap("SSS", [c, i, j])
            B[vc, vi, vj] = A[vc, vi // 4 + vj // 4, vj // 2] + A[vc, vi // 2, vj // 2]


def test_each_index_expression_gets_a_stage(trace_replays):
    sch = tir.Schedule(upsample)
    stages = sch.cache_index("B", "global")
    assert [b.name for b in stages] == ["index_0", "index_1", "index_2"]
    text = sch.mod.script()
    # the most complex expression first; its buffer spans the loops it depends on
    assert 'index_var_0 = T.alloc_buffer((24, 24), "int32", strides=(1,))' in text
    assert "index_var_0[v0, v1] = v0 // 4 + v1 // 4" in text
    body = sch.get(sch.get_block("B")).body.script()
    assert "A[vc, index_var_0[vi, vj], index_var_1[vj]]" in body
    trace_replays(sch, upsample)


def test_two_dimensional_cache_is_not_built_with_one_stride():
    # TVM gives every cache buffer strides=[1]; a 2-D one cannot be flattened (as in TVM)
    sch = tir.Schedule(upsample)
    sch.cache_index("B", "global")
    with pytest.raises(ValueError, match="strides"):
        minitvm.build(sch.mod, target="llvm")


def test_threshold_keeps_only_repeated_expressions(same_numbers):
    sch = tir.Schedule(upsample)
    stages = sch.cache_index("B", "global", cse_thresh=2)
    assert [b.name for b in stages] == ["index_0"]  # only vj // 2 occurs twice
    assert "index_var_0[vj]" in sch.get(sch.get_block("B")).body.script()
    same_numbers(upsample, sch.mod)


def test_negative_threshold_is_refused():
    with pytest.raises(tir.ScheduleError, match="negative"):
        tir.Schedule(upsample).cache_index("B", "global", cse_thresh=-1)
