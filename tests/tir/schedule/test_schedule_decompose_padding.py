"""sch.decompose_padding: a padding block split into a constant fill and an in-bound copy."""

import pytest

from minitvm import tir
from minitvm.script import tir as T


@T.prim_func
def pad_then_sum(X: T.Buffer((4, 10, 10), "float32"), Y: T.Buffer((4, 10, 10), "float32")):
    P = T.alloc_buffer((4, 14, 14))
    for c, h, w in T.grid(4, 14, 14):
        with T.block("P"):
            vc, vh, vw = T.axis.remap("SSS", [c, h, w])
            P[vc, vh, vw] = T.if_then_else(2 <= vh and vh < 12 and 2 <= vw and vw < 12,
                                           X[vc, vh - 2, vw - 2], T.float32(-1))
    for c, h, w, r, s in T.grid(4, 10, 10, 5, 5):
        with T.block("Y"):
            vc, vh, vw, vr, vs = T.axis.remap("SSSRR", [c, h, w, r, s])
            with T.init():
                Y[vc, vh, vw] = T.float32(0)
            Y[vc, vh, vw] = Y[vc, vh, vw] + P[vc, vh + vr, vw + vs]


def _names(sch):
    return [r.block.name_hint for r, _ in tir.schedule.tree.block_realizes(sch.mod["main"].body)]


@pytest.mark.parametrize("at", [0, 1, 2])
def test_fill_then_copy_computes_the_same(at, same_numbers, trace_replays):
    sch = tir.Schedule(pad_then_sum)
    assert sch.can_decompose_padding("P", sch.get_loops("P")[at])
    fill = sch.decompose_padding("P", sch.get_loops("P")[at])
    assert fill.name == "P_pad_const" and _names(sch) == ["root", "P_pad_const", "P", "Y"]
    inner = sch.get(sch.get_block("P"))
    assert [int(iv.dom.extent.value) for iv in inner.iter_vars] == [4, 10, 10]
    assert "X[vc, vh, vw]" in sch.mod.script()  # the in-bound copy reads without offsets
    trace_replays(sch, pad_then_sum)
    same_numbers(pad_then_sum, sch.mod)


def test_after_tiling_the_copy_is_guarded(same_numbers):
    sch = tir.Schedule(pad_then_sum)
    _, h, _ = sch.get_loops("P")
    sch.split(h, factors=[2, 7])
    sch.decompose_padding("P", sch.get_loops("P")[1])
    assert "T.where" in sch.mod.script()
    same_numbers(pad_then_sum, sch.mod)


def test_trivial_predicate_and_non_padding_blocks_are_refused():
    @T.prim_func
    def no_pad(X: T.Buffer((8,), "float32"), Y: T.Buffer((8,), "float32")):
        for i in range(8):
            with T.block("P"):
                vi = T.axis.spatial(8, i)
                Y[vi] = T.if_then_else(0 <= vi and vi < 8, X[vi], T.float32(0))

    sch = tir.Schedule(no_pad)
    (i,) = sch.get_loops("P")
    assert not sch.can_decompose_padding("P", i)
    with pytest.raises(tir.ScheduleError, match="trivial"):
        sch.decompose_padding("P", i)
    sch = tir.Schedule(pad_then_sum)
    with pytest.raises(tir.ScheduleError, match="not a complete block"):
        sch.decompose_padding("Y", sch.get_loops("Y")[0])  # a reduction is no padding block
    assert len(sch.trace.insts) >= 1 and "decompose_padding" not in "\n".join(sch.trace.as_python())
